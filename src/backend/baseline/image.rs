//! The baseline compiler's output: the code of a module, not yet placed in memory, with the
//! relocations and switchable entries that placing it resolves (see `link`).

use crate::lir::{DataId, FuncId, ImportId, Symbol};

/// What a relocation refers to.
#[derive(Clone, Copy, Debug)]
pub enum RelocKind {
    /// `rel32` of a direct call to a function of the module.
    CallFunc(FuncId),
    /// 64-bit absolute address of a function of the module.
    AbsFunc(FuncId),
    /// 64-bit absolute address of a data object.
    AbsData(DataId),
    /// `rel32` of a call to an import through the PLT (relocatable code only).
    CallImport(ImportId),
    /// `rel32` of the GOT entry holding a symbol's address (relocatable code only).
    GotAddress(Symbol),
}

/// A place in the code to patch once addresses are known.
#[derive(Clone, Copy, Debug)]
pub struct Reloc {
    /// Byte position in the code.
    pub at: u32,
    /// Target.
    pub kind: RelocKind,
}

/// An entry that jumps through a pointer in writable memory, so that callers holding its
/// address can be switched to other code (a tier-up) by writing the pointer.
#[derive(Clone, Copy, Debug)]
pub struct Stub {
    /// The function.
    pub func: FuncId,
    /// Start of the stub in the code.
    pub at: u32,
    /// Position of the stub's 64-bit pointer address.
    pub slot_imm: u32,
}

/// The compiled code of a module, not yet placed in memory.
pub struct Image {
    /// Machine code of all functions.
    pub code: Vec<u8>,
    /// Start of each function in `code`.
    pub func_offsets: Vec<u32>,
    /// Places to patch.
    pub relocs: Vec<Reloc>,
    /// Switchable entries of the functions asked for.
    pub stubs: Vec<Stub>,
}
