//! Compiling with the chosen backend's own JIT (Cranelift or LLVM): the first tier when the
//! baseline compiler is not used, and the tier-up.

use super::code::Built;
use super::options::{JitOptions, PARALLEL_MIN_INSTRUCTIONS};
use super::symbols::Resolver;
use crate::backend::{JitRequest, code_generator};
use crate::error::Error;
use crate::lir;

/// Compiles `module` with the backend of `options`; returns the code and the addresses of the
/// functions named `entries`. `data_at`: see [`JitRequest::data_at`] (empty: the code's own data).
pub(super) fn build(
    module: &lir::Module,
    entries: &[String],
    resolver: &Resolver,
    options: &JitOptions,
    data_at: &[*const u8],
) -> Result<Built, Error> {
    let generator = code_generator(options.backend, &options.cranelift, &options.llvm)?;
    let out = generator.jit(
        module,
        JitRequest {
            entries,
            lookup: resolver.lookup(),
            threads: compile_threads(module, options.compile_threads),
            data_at,
        },
    )?;
    Ok(Built {
        out,
        switches: Vec::new(),
        data: Vec::new(),
    })
}

/// How many threads compile `module` with Cranelift, for the setting `requested`.
fn compile_threads(module: &lir::Module, requested: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    if module.functions.len() < 2 || module.inst_count() < PARALLEL_MIN_INSTRUCTIONS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}
