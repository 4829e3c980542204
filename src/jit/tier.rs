//! The JIT's tiers: the baseline compiler first on x86-64, Cranelift or LLVM on request.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::Ordering;

use super::code::{Built, JitCode, Switch};
use super::options::{FirstTier, JitOptions, TierUp};
use super::symbols::Resolver;
use super::worker::Job;
use crate::backend::baseline;
use crate::error::Error;
use crate::lir;

/// The tier-up of a module: a job that compiles `lowered` again with Cranelift, then points
/// `switches` (the entries `entries` name, in order) at the new code, which `code` then owns.
/// The new code uses the data objects the first tier placed at `data` (one address each, in
/// module order): one set of caches (a GPU module is loaded once, not once per tier) and one
/// copy of each device binary, so `lowered`'s data contents are not needed (see
/// [`without_data_contents`]). Nothing happens if the module is dropped first or the compile
/// fails. [`submit`](super::worker::submit) runs it.
pub(super) fn tier_up_job(
    code: Weak<JitCode>,
    lowered: lir::Module,
    entries: Vec<String>,
    resolver: Resolver,
    options: &JitOptions,
    switches: Vec<Switch>,
    data: &[*const u8],
) -> Job {
    // Plain addresses (`Send`): the first tier's memory, which `code` owns until after the
    // upper tier's code is freed (see `JitCode`'s `Drop`).
    let data: Vec<usize> = data.iter().map(|&a| a as usize).collect();
    let options = JitOptions {
        first_tier: FirstTier::Backend,
        tier_up: TierUp::Never,
        symbols: HashMap::new(),
        ..options.clone()
    };
    Box::new(move || {
        if code.strong_count() == 0 {
            // Dropped while it waited: nothing to switch.
            return;
        }
        let data: Vec<*const u8> = data.iter().map(|&a| a as *const u8).collect();
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::direct::build(&lowered, &entries, &resolver, &options, &data)
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
    })
}

/// Compiles `module` with the baseline compiler; every import is resolved up front through
/// `resolver`. With [`TierUp::Background`], the `entries` can be switched to other code.
pub(super) fn build_baseline(
    module: &lir::Module,
    entries: &[String],
    resolver: &Resolver,
    tier_up: TierUp,
) -> Result<Built, Error> {
    let switchable = match tier_up {
        TierUp::Never => false,
        TierUp::Background | TierUp::OnRequest => true,
    };
    let built = baseline::jit(module, entries, &|name| resolver.resolve(name), switchable)?;
    Ok(Built {
        out: built.out,
        switches: built.switches.into_iter().map(Switch).collect(),
        data: built.data,
    })
}

/// `module` as its tier-up needs it: the data objects' contents (device binaries of hundreds of
/// kilobytes, strings) dropped, since the tier-up's code uses the first tier's objects. Their
/// relocations stay (a few words each): which functions data refers to decides the upper
/// tier's hot and cold code (`lir::success_path`).
pub(super) fn without_data_contents(mut module: lir::Module) -> lir::Module {
    for d in &mut module.data {
        d.contents = Vec::new();
    }
    module
}
