//! The baseline compiler: lowered modules to x86-64 machine code in one pass, for the JIT's
//! first tier.
//!
//! Every lowered instruction becomes a short fixed sequence of machine instructions (see
//! `isel`): operands are read from the variables' stack slots (or are immediates, for
//! variables defined by a constant), the result is computed in a scratch register and written
//! back to its slot. There is no register allocator, no SSA construction and no optimization
//! beyond three local rules: constants become immediates, a comparison that only feeds the
//! branch after it becomes `cmp` + `jcc`, and cold blocks are laid out after the others.
//! Instructions are encoded by `cranelift-assembler-x64`, the encoder Cranelift's own x64
//! backend uses (already built with Cranelift, and tested against XED and capstone).
//!
//! The output is an [`Image`]: the code of every function in one buffer, the data objects, and
//! the relocations that [`Image::link`] resolves when it copies them into executable memory.
//!
//! x86-64 (System V) only.

mod asm;
mod call;
mod float;
mod frame;
mod isel;
mod link;
mod relocatable;
#[cfg(test)]
mod tests;

use crate::lir::{self, DataId, FuncId, ImportId, Inst, Symbol, Terminator};
use asm::{Asm, Label};
use frame::Frame;
use isel::{Addressing, FnGen};
pub(crate) use relocatable::{FRAME_SETUP, FrameStep, compile_relocatable};

backend_error!(
    /// A function the baseline compiler cannot compile (today: stack slots aligned beyond 16
    /// bytes).
    BaselineError,
    "baseline"
);

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

/// Compiles every function of `module`; `imports[i]` is the address of import `i`. The
/// functions `switchable` lists get a [`Stub`] in front.
pub fn compile(
    module: &lir::Module,
    imports: &[u64],
    switchable: &[FuncId],
) -> Result<Image, BaselineError> {
    let mut a = Asm::default();
    // Room for the code of a typical module (about 12 bytes per lowered instruction), so that
    // the buffer rarely grows.
    a.buf.0.reserve(12 * module.inst_count() + 64);
    let mut relocs = Vec::new();
    let mut stubs = Vec::with_capacity(switchable.len());
    let mut func_offsets = Vec::with_capacity(module.functions.len());
    for (i, func) in module.functions.iter().enumerate() {
        a.align(16);
        if switchable.contains(&FuncId(i as u32)) {
            // `movabs r11, &pointer; jmp [r11]`: r11 is neither an argument nor callee-saved.
            let at = a.pos();
            let slot_imm = a.mov_abs(asm::reg::R11, 0);
            asm::emit!(
                a,
                jmpq_m(cranelift_assembler_x64::GprMem::Mem(asm::mem(
                    asm::reg::R11,
                    0
                )))
            );
            stubs.push(Stub {
                func: FuncId(i as u32),
                at,
                slot_imm,
            });
            a.align(16);
        }
        func_offsets.push(a.pos());
        compile_function(
            &mut a,
            module,
            func,
            Addressing::Absolute { imports },
            &mut relocs,
        )?;
    }
    Ok(Image {
        code: a.buf.0,
        func_offsets,
        relocs,
        stubs,
    })
}

/// Appends the code of `func`, a function of `module`, to `a`, and its relocations (at
/// positions in `a`) to `relocs`.
fn compile_function(
    a: &mut Asm,
    module: &lir::Module,
    func: &lir::Function,
    addressing: Addressing<'_>,
    relocs: &mut Vec<Reloc>,
) -> Result<(), BaselineError> {
    let frame = Frame::new(func, |inst| match inst {
        Inst::Call { callee, .. } => {
            frame::stack_words(module.callee_sig(callee).params.iter().copied())
        }
        _ => 0,
    })
    .map_err(|e| BaselineError(e.0))?;
    let mut g = FnGen {
        a,
        f: func,
        module,
        addressing,
        frame,
        relocs,
        blocks: Vec::new(),
    };
    g.function();
    Ok(())
}

impl FnGen<'_> {
    /// Compiles the function: hot blocks in order, then cold ones.
    fn function(&mut self) {
        let f = self.f;
        self.blocks = self.a.labels(f.blocks.len());
        let order: Vec<usize> = (0..f.blocks.len())
            .filter(|&b| b == 0 || !f.blocks[b].cold)
            .chain((1..f.blocks.len()).filter(|&b| f.blocks[b].cold))
            .collect();
        self.prologue();
        for (k, &b) in order.iter().enumerate() {
            let next = order.get(k + 1).map(|&n| self.blocks[n]);
            self.block(b, next);
        }
        self.a.finish_function();
    }

    /// Whether the last instruction of `block` is a comparison read only by its branch.
    fn fused_compare(&self, block: &lir::Block) -> bool {
        let Terminator::Branch { cond, .. } = &block.term else {
            return false;
        };
        match block.insts.last() {
            Some(Inst::Icmp { dst, .. }) => {
                dst == cond
                    && !self.f.vars[dst.0 as usize].mutable
                    && self.frame.vars[dst.0 as usize].uses == 1
            }
            _ => false,
        }
    }

    fn block(&mut self, b: usize, next: Option<Label>) {
        let block = &self.f.blocks[b];
        let label = self.blocks[b];
        self.a.bind(label);
        let fused = self.fused_compare(block);
        let n = block.insts.len() - usize::from(fused);
        for inst in &block.insts[..n] {
            self.inst(inst);
        }
        match &block.term {
            Terminator::Jump(to) => {
                let t = self.blocks[to.0 as usize];
                if Some(t) != next {
                    self.a.jmp(t);
                }
            }
            Terminator::Branch {
                cond,
                then_block,
                else_block,
            } => {
                let cc = match block.insts.last() {
                    Some(Inst::Icmp { cc, a, b, .. }) if fused => self.icmp(*cc, *a, *b),
                    _ => {
                        self.test_cond(*cond);
                        asm::Cond::Ne
                    }
                };
                let (t, e) = (
                    self.blocks[then_block.0 as usize],
                    self.blocks[else_block.0 as usize],
                );
                if Some(t) == next {
                    self.a.jcc(cc.invert(), e);
                } else {
                    self.a.jcc(cc, t);
                    if Some(e) != next {
                        self.a.jmp(e);
                    }
                }
            }
            Terminator::Return(v) => self.ret(*v),
        }
    }
}
