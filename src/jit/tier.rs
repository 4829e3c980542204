//! The JIT's tiers: the baseline compiler first on x86-64, Cranelift or LLVM on request.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::Ordering;

use super::code::{Built, JitCode, Switch};
use super::options::{FirstTier, JitOptions, TierUp};
use super::symbols::Resolver;
use crate::backend::memory::PooledMemory;
use crate::backend::{JitOutput, LoadedCode, baseline, function_index};
use crate::error::Error;
use crate::lir;

/// Executable memory of a baseline-compiled module.
struct BaselineCode {
    memory: PooledMemory,
}

impl LoadedCode for BaselineCode {}

impl Drop for BaselineCode {
    fn drop(&mut self) {
        // SAFETY: a `BaselineCode` is dropped with the last reference to its module's code (see
        // `JitCode`), when none of its functions can run any more.
        unsafe { cranelift_jit::JITMemoryProvider::free_memory(&mut self.memory) };
    }
}

/// Compiles `lowered` again with Cranelift on a background thread, then points `switches` (the
/// entries `entries` name, in order) at the new code, which `code` then owns. Nothing happens
/// if the module is dropped first or the compile fails.
pub(super) fn spawn_tier_up(
    code: Weak<JitCode>,
    lowered: lir::Module,
    entries: Vec<String>,
    resolver: Resolver,
    options: &JitOptions,
    switches: Vec<Switch>,
) {
    let options = JitOptions {
        first_tier: FirstTier::Backend,
        tier_up: TierUp::Never,
        symbols: HashMap::new(),
        ..options.clone()
    };
    let spawned = std::thread::Builder::new()
        .name("safecall-tier-up".to_owned())
        .spawn(move || {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                super::direct::build(&lowered, &entries, &resolver, &options)
            }));
            let Ok(Ok(upper)) = built else {
                return;
            };
            let Some(code) = code.upgrade() else {
                // Nothing refers to the recompiled code (it was never switched to): dropping
                // it frees it.
                return;
            };
            let mut codes = code.module.lock().unwrap_or_else(|p| p.into_inner());
            codes.push(upper.out.code);
            for (switch, address) in switches.iter().zip(upper.out.entries) {
                // SAFETY: the pointer lives in the module's memory, which `code` keeps alive.
                unsafe { &*switch.0 }.store(address as u64, Ordering::Release);
            }
        });
    // Without a thread there is no tier-up; the baseline code keeps running.
    drop(spawned);
}

/// Compiles `module` with the baseline compiler; every import is resolved up front through
/// `resolver`. With [`TierUp::Background`], the `entries` can be switched to other code.
pub(super) fn build_baseline(
    module: &lir::Module,
    entries: &[String],
    resolver: &Resolver,
    tier_up: TierUp,
) -> Result<Built, Error> {
    let indices = entries
        .iter()
        .map(|e| function_index(module, e))
        .collect::<Result<Vec<_>, _>>()?;
    let switchable: Vec<lir::FuncId> = match tier_up {
        TierUp::Never => Vec::new(),
        TierUp::Background => indices.iter().map(|&i| lir::FuncId(i as u32)).collect(),
    };
    let mut imports = Vec::with_capacity(module.imports.len());
    let mut missing = Vec::new();
    for import in &module.imports {
        match resolver.resolve(&import.name) {
            Some(a) => imports.push(a as u64),
            None => missing.push(import.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(Error::UnresolvedSymbols(missing));
    }
    let image = baseline::compile(module, &imports, &switchable).map_err(Error::backend)?;
    let mut code = BaselineCode {
        memory: PooledMemory::default(),
    };
    let linked = image
        .link(module, &mut code.memory)
        .map_err(Error::backend)?;
    Ok(Built {
        out: JitOutput {
            entries: indices.iter().map(|&i| linked.functions[i]).collect(),
            code: Box::new(code),
        },
        switches: linked.switches.into_iter().map(Switch).collect(),
    })
}
