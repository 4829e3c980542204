//! The functions of an object file that run only when a call fails, compiled by the baseline
//! compiler instead of Cranelift when the settings ask for it.
//!
//! A module's error paths (the explain function re-running the checks to build a precise
//! message, the message formatters, the raise helper) are most of its code and most of its
//! compile time, and they run once per failing call, where a microsecond more is nothing next to
//! the error's own cost. The baseline compiler writes them in one pass; Cranelift keeps the
//! functions on the [success path](crate::lir::success_path), whose code is unchanged.

use cranelift_codegen::binemit::Reloc as ClifReloc;
use cranelift_module::{FuncId as ClifFuncId, Module, ModuleReloc, ModuleRelocTarget};

use super::error::CraneliftError;
use super::settings::ColdFunctions;
use super::translate::Declared;
use crate::backend::baseline::{self, RelocKind};
use crate::lir::{self, FuncId, Symbol};
use crate::target::{Arch, Target};

/// A function compiled by the baseline compiler: its Cranelift id and code length (for its
/// `.eh_frame` entry).
pub(crate) struct BaselineDefined {
    /// The function's id in the object module.
    pub id: ClifFuncId,
    /// Bytes of code.
    pub len: u32,
}

/// Which functions of `module` the baseline compiler compiles for `target` (`None`: the host)
/// under `setting`: those off the success path, on x86-64.
pub(crate) fn baseline_selection(
    module: &lir::Module,
    setting: ColdFunctions,
    target: Option<Target>,
) -> Vec<bool> {
    let arch = target.map(Target::arch).or_else(Arch::host);
    match (setting, arch) {
        (ColdFunctions::Baseline, Some(Arch::X86_64)) => {
            lir::success_path::success_path_functions(module)
                .into_iter()
                .map(|hot| !hot)
                .collect()
        }
        (ColdFunctions::Baseline, Some(Arch::Aarch64) | None) | (ColdFunctions::Cranelift, _) => {
            vec![false; module.functions.len()]
        }
    }
}

/// Compiles function `index` of `module` with the baseline compiler and defines it in `m`.
/// `None` when the baseline compiler refuses the function (a stack slot aligned beyond 16
/// bytes): Cranelift compiles it then.
pub(crate) fn define_baseline_function<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
    index: usize,
) -> Result<Option<BaselineDefined>, CraneliftError> {
    let Ok(code) = baseline::compile_relocatable(module, FuncId(index as u32)) else {
        return Ok(None);
    };
    let relocs: Vec<ModuleReloc> = code
        .relocs
        .iter()
        .map(|r| {
            let (kind, name) = match r.kind {
                RelocKind::CallFunc(f) => (
                    ClifReloc::X86CallPCRel4,
                    ModuleRelocTarget::from(declared.functions[f.0 as usize]),
                ),
                RelocKind::CallImport(i) => (
                    ClifReloc::X86CallPLTRel4,
                    ModuleRelocTarget::from(declared.imports[i.0 as usize]),
                ),
                RelocKind::GotAddress(Symbol::Func(f)) => (
                    ClifReloc::X86GOTPCRel4,
                    ModuleRelocTarget::from(declared.functions[f.0 as usize]),
                ),
                RelocKind::GotAddress(Symbol::Data(d)) => (
                    ClifReloc::X86GOTPCRel4,
                    ModuleRelocTarget::from(declared.data[d.0 as usize]),
                ),
                RelocKind::AbsFunc(_) | RelocKind::AbsData(_) => {
                    return Err(CraneliftError(format!(
                        "`{}`: the baseline compiler wrote an absolute address into \
                         position-independent code",
                        module.functions[index].name
                    )));
                }
            };
            Ok(ModuleReloc {
                offset: r.at,
                kind,
                name,
                addend: -4,
            })
        })
        .collect::<Result<_, _>>()?;
    let id = declared.functions[index];
    m.define_function_bytes(id, 16, &code.code, &relocs)
        .map_err(|e| CraneliftError(format!("defining `{}`: {e}", module.functions[index].name)))?;
    Ok(Some(BaselineDefined {
        id,
        len: code.code.len() as u32,
    }))
}

#[cfg(test)]
mod tests;
