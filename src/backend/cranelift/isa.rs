//! The target ISA a compile is for, built once per purpose and settings.

use std::collections::HashMap;
use std::sync::Mutex;

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

use super::error::{CraneliftError, err};
use super::settings::CraneliftOptions;

/// What an ISA is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IsaPurpose {
    /// Relocatable objects: position-independent code with unwind info.
    Aot,
    /// In-process code: absolute addresses, no unwind tables.
    Jit,
}

/// The ISA of `options.target` (the host by default) for `purpose`, built once per purpose and settings and then shared (building
/// one detects the CPU's features and parses every setting, which a JIT compile of a small
/// function would otherwise pay each time).
pub(crate) fn host_isa(
    purpose: IsaPurpose,
    options: &CraneliftOptions,
) -> Result<OwnedTargetIsa, CraneliftError> {
    type Cache = HashMap<(IsaPurpose, CraneliftOptions), OwnedTargetIsa>;
    static ISAS: Mutex<Option<Cache>> = Mutex::new(None);
    let key = (purpose, options.clone());
    if let Some(isa) = lock(&ISAS).get_or_insert_with(HashMap::new).get(&key) {
        return Ok(isa.clone());
    }
    let isa = build_host_isa(purpose, options)?;
    lock(&ISAS)
        .get_or_insert_with(HashMap::new)
        .insert(key, isa.clone());
    Ok(isa)
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn build_host_isa(
    purpose: IsaPurpose,
    options: &CraneliftOptions,
) -> Result<OwnedTargetIsa, CraneliftError> {
    let aot = purpose == IsaPurpose::Aot;
    let mut flags = settings::builder();
    flags
        .set("opt_level", options.opt_level.name())
        .map_err(err)?;
    flags
        .set("regalloc_algorithm", options.regalloc.name())
        .map_err(err)?;
    flags
        .set("is_pic", if aot { "true" } else { "false" })
        .map_err(err)?;
    flags
        .set("unwind_info", if aot { "true" } else { "false" })
        .map_err(err)?;
    flags.set("preserve_frame_pointers", "true").map_err(err)?;
    // Cranelift's IR verifier costs a third of the compile time; the lowering's output is
    // checked by it in debug builds (and therefore in the test suite).
    flags
        .set(
            "enable_verifier",
            if options.verify || cfg!(debug_assertions) {
                "true"
            } else {
                "false"
            },
        )
        .map_err(err)?;
    let isa_builder = match options.target {
        Some(target) if !target.is_host() => {
            if !aot {
                return Err(CraneliftError(format!(
                    "the JIT generates code for the host only, not for {target}"
                )));
            }
            let triple = target.triple().parse().map_err(err)?;
            cranelift_codegen::isa::lookup(triple).map_err(err)?
        }
        _ => cranelift_native::builder().map_err(err)?,
    };
    isa_builder.finish(settings::Flags::new(flags)).map_err(err)
}
