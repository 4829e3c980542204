//! The JIT's tiers: the baseline compiler first on x86-64, Cranelift or LLVM on request.

use std::collections::HashMap;

use super::memory::PooledMemory;
use super::{SymbolAddress, SymbolBinding, resolve};
use crate::backend::baseline;
use crate::{Error, lir};

/// Which compiler produces a JIT module's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FirstTier {
    /// The single-pass [baseline compiler](crate::backend::baseline) when
    /// [`JitOptions::backend`](super::JitOptions::backend) is Cranelift (the default on
    /// x86-64): code in tens of microseconds, somewhat slower to run than Cranelift's. An
    /// explicit `Backend::Llvm` still compiles with LLVM, and hosts other than x86-64 use
    /// Cranelift.
    Baseline,
    /// The backend of [`JitOptions::backend`](super::JitOptions::backend), directly.
    Backend,
}

impl Default for FirstTier {
    fn default() -> Self {
        if cfg!(target_arch = "x86_64") {
            FirstTier::Baseline
        } else {
            FirstTier::Backend
        }
    }
}

/// Executable memory of a baseline-compiled module.
pub struct BaselineCode(PooledMemory);

impl Drop for BaselineCode {
    fn drop(&mut self) {
        // SAFETY: a `BaselineCode` is dropped with the last reference to its module's code (see
        // `JitCode`), when none of its functions can run any more.
        unsafe { cranelift_jit::JITMemoryProvider::free_memory(&mut self.0) };
    }
}

/// Compiles `module` with the baseline compiler; every import is resolved up front through
/// [`resolve`]. Returns the code and the address of each function.
pub fn build_baseline(
    module: &lir::Module,
    binding: SymbolBinding,
    symbols: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
) -> Result<(BaselineCode, Vec<*const u8>), Error> {
    let mut imports = Vec::with_capacity(module.imports.len());
    let mut missing = Vec::new();
    for import in &module.imports {
        match resolve(&import.name, binding, symbols, process_symbols) {
            Some(a) => imports.push(a as u64),
            None => missing.push(import.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(Error::UnresolvedSymbols(missing));
    }
    let image = baseline::compile(module, &imports).map_err(Error::backend)?;
    let mut code = BaselineCode(PooledMemory::default());
    let linked = image.link(module, &mut code.0).map_err(Error::backend)?;
    Ok((code, linked.functions))
}
