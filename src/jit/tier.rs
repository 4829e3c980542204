//! The JIT's tiers: the baseline compiler first on x86-64, Cranelift or LLVM on request.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::Ordering;

use super::memory::PooledMemory;
use super::{Built, JitCode, JitOptions, Resolver, Switch};
use crate::backend::{JitOutput, LoadedCode, baseline, function_index};
use crate::{Error, lir};

/// Which compiler produces a JIT module's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FirstTier {
    /// The single-pass baseline compiler (`src/backend/baseline`) when
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

/// When a module the baseline compiler compiled is compiled again, by Cranelift.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TierUp {
    /// Never (the default): the baseline code runs for the life of the module. Measured in
    /// docs/jit.md: a launcher's calls cost some 30 ns more than with Cranelift's code, so a
    /// recompile pays only after tens of thousands of calls, and then by little; host
    /// functions with loops gain more (see [`TierUp::Background`]).
    #[default]
    Never,
    /// At once, on a background thread: the module is compiled again with Cranelift
    /// ([`JitOptions::cranelift`]) and its host functions switch to that code when it is ready
    /// ([`JitModule::tiered_up`](super::JitModule::tiered_up)). Functions already handed out
    /// stay valid: their entry jumps through a pointer that the switch rewrites, which costs
    /// two instructions per call. A failed recompile leaves the baseline code in place.
    Background,
}

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
                super::build_code(&lowered, &entries, &resolver, &options)
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
