//! The CUDA driver's and HIP runtime's tables of entry points, shared by every JIT module that
//! launches kernels: one helper module (`lower::gpu_helper_module`) compiled once per process,
//! binding and backend, which finds each runtime once and hands its table to each module's
//! launches. A module then lowers and compiles a call where it would embed the runtime search
//! (library paths, every entry point resolved, every failure's message): about half of the
//! lowering and compile of a one-launch module.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::build::build_code;
use super::explain::RAISE_SYMBOL;
use super::options::{JitOptions, TierUp, uses_baseline};
use super::symbols::{Resolver, SymbolAddress, SymbolBinding};
use crate::backend::Backend;
use crate::error::Error;
use crate::lower::{self, RaiseHelper};

/// The helper that fills a module's CUDA driver cell.
pub(super) const CUDA_TABLE: &str = "__safecall_jit_cuda_driver_table";
/// The helper that fills a module's HIP runtime cell.
pub(super) const HIP_TABLE: &str = "__safecall_jit_hip_runtime_table";

/// The addresses of [`CUDA_TABLE`] and [`HIP_TABLE`] for modules compiled with `options`,
/// compiled on first use (their errors raised through `raise`, the shared error helper).
pub(super) fn shared_tables(
    binding: SymbolBinding,
    options: &JitOptions,
    raise: SymbolAddress,
) -> Result<[SymbolAddress; 2], Error> {
    type Helpers = HashMap<(SymbolBinding, Backend, bool), [SymbolAddress; 2]>;
    static HELPERS: OnceLock<Mutex<Helpers>> = OnceLock::new();
    let helpers = HELPERS.get_or_init(Default::default);
    let mut map = helpers.lock().unwrap_or_else(|p| p.into_inner());
    let key = (binding, options.backend, uses_baseline(options));
    if let Some(addresses) = map.get(&key) {
        return Ok(*addresses);
    }
    let module = lower::gpu_helper_module(
        CUDA_TABLE,
        HIP_TABLE,
        RaiseHelper::External(RAISE_SYMBOL.to_owned()),
    );
    let resolver = Resolver {
        binding,
        table: HashMap::from([(RAISE_SYMBOL.to_owned(), raise)]),
        process_symbols: false,
    };
    let built = build_code(
        &module,
        &[CUDA_TABLE.to_owned(), HIP_TABLE.to_owned()],
        &resolver,
        &JitOptions {
            tier_up: TierUp::Never,
            ..options.clone()
        },
    )?;
    let [cuda, hip] = built.out.entries[..] else {
        unreachable!("two entries asked for, two given");
    };
    // SAFETY: each is an `int f(void**)` as the modules declare it; the code lives as long as
    // the process: it is leaked just below.
    let addresses = unsafe { [SymbolAddress::new(cuda), SymbolAddress::new(hip)] };
    std::mem::forget(built.out.code);
    map.insert(key, addresses);
    Ok(addresses)
}
