//! Position-independent code of single functions for object files: the baseline compiler's
//! code where compile time matters more than speed (a module's error paths, see
//! [`ColdFunctions`](crate::backend::cranelift::ColdFunctions)).
//!
//! The code reaches imports and symbols the way Cranelift's PIC code does (`call f@PLT`,
//! `mov reg, [rip + s@GOTPCREL]`, `call rel32` to the module's functions), so the object writer
//! and every linker treat both alike. The frame is always `push rbp; mov rbp, rsp`
//! ([`FRAME_SETUP`] describes it for `.eh_frame`).

use super::asm::Asm;
use super::compile::compile_function;
use super::error::BaselineError;
use super::image::Reloc;
use super::isel::Addressing;
use crate::lir::{self, FuncId};

/// The code of one function and its relocations, at offsets from the function's start.
pub struct RelocatableFunction {
    /// Machine code.
    pub code: Vec<u8>,
    /// Places the object writer relocates.
    pub relocs: Vec<Reloc>,
}

/// The prologue every baseline-compiled function starts with, as `(offset of the next
/// instruction, what it did)`: `push rbp` (1 byte) saves the caller's `rbp` at the canonical
/// frame address - 16, which is then `rsp + 16`; `mov rbp, rsp` (3 bytes) makes it `rbp + 16`.
/// Epilogues are not described, as in Cranelift's own unwind info: unwinding starts at calls.
pub(crate) const FRAME_SETUP: [(u32, FrameStep); 2] = [
    (1, FrameStep::PushedFramePointer),
    (4, FrameStep::FramePointerIsCfaBase),
];

/// One step of [`FRAME_SETUP`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameStep {
    /// The caller's `rbp` is saved at CFA - 16, and the CFA is `rsp + 16`.
    PushedFramePointer,
    /// The CFA is `rbp + 16`.
    FramePointerIsCfaBase,
}

/// Compiles function `func` of `module` to position-independent x86-64 code.
pub(crate) fn compile_relocatable(
    module: &lir::Module,
    func: FuncId,
) -> Result<RelocatableFunction, BaselineError> {
    let f = &module.functions[func.0 as usize];
    let mut a = Asm::default();
    a.buf
        .0
        .reserve(12 * f.blocks.iter().map(|b| b.insts.len()).sum::<usize>() + 64);
    let mut relocs = Vec::new();
    compile_function(&mut a, module, f, Addressing::Relocatable, &mut relocs)?;
    Ok(RelocatableFunction {
        code: a.buf.0,
        relocs,
    })
}
