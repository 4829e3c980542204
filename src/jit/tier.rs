//! The JIT's tiers: the baseline compiler first on x86-64, Cranelift or LLVM on request.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};

use super::memory::PooledMemory;
use super::{JitCode, JitOptions, SymbolAddress, SymbolBinding, resolve};
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
pub struct BaselineCode {
    memory: PooledMemory,
    /// The pointers the switchable entries jump through.
    switches: Vec<*const AtomicU64>,
}

impl BaselineCode {
    /// The pointers the switchable entries jump through, in the order of the entries.
    pub fn switches(&self) -> Vec<Switch> {
        self.switches.iter().map(|&p| Switch(p)).collect()
    }
}

impl Drop for BaselineCode {
    fn drop(&mut self) {
        // SAFETY: a `BaselineCode` is dropped with the last reference to its module's code (see
        // `JitCode`), when none of its functions can run any more.
        unsafe { cranelift_jit::JITMemoryProvider::free_memory(&mut self.memory) };
    }
}

/// The pointer a switchable entry jumps through (in the module's writable memory).
pub struct Switch(*const AtomicU64);

// SAFETY: an aligned atomic in memory that lives as long as the module's `JitCode`; the tier-up
// thread writes it only while it holds a strong reference to that code.
unsafe impl Send for Switch {}

/// Compiles `lowered` again with Cranelift on a background thread, then points `switches` (the
/// entries `entries` name, in order) at the new code, which `code` then owns. Nothing happens
/// if the module is dropped first or the compile fails.
pub fn spawn_tier_up(
    code: Weak<JitCode>,
    lowered: lir::Module,
    entries: Vec<String>,
    symbols: HashMap<String, SymbolAddress>,
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
                super::build_code(
                    &lowered,
                    &entries,
                    options.binding,
                    &symbols,
                    options.process_symbols,
                    &options,
                )
            }));
            let Ok(Ok((upper, addresses))) = built else {
                return;
            };
            let Some(code) = code.upgrade() else {
                // SAFETY: nothing refers to the recompiled code: it was never switched to.
                unsafe { super::free_code(upper) };
                return;
            };
            let mut codes = code.module.lock().unwrap_or_else(|p| p.into_inner());
            codes.push(upper);
            for (switch, address) in switches.iter().zip(addresses) {
                // SAFETY: the pointer lives in the module's memory, which `code` keeps alive.
                unsafe { &*switch.0 }.store(address as u64, Ordering::Release);
            }
        });
    // Without a thread there is no tier-up; the baseline code keeps running.
    drop(spawned);
}

/// Compiles `module` with the baseline compiler; every import is resolved up front through
/// [`resolve`]. Returns the code and the address of each function.
pub fn build_baseline(
    module: &lir::Module,
    binding: SymbolBinding,
    symbols: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
    switchable: &[lir::FuncId],
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
    let image = baseline::compile(module, &imports, switchable).map_err(Error::backend)?;
    let mut code = BaselineCode {
        memory: PooledMemory::default(),
        switches: Vec::new(),
    };
    let linked = image
        .link(module, &mut code.memory)
        .map_err(Error::backend)?;
    code.switches = linked.switches;
    Ok((code, linked.functions))
}
