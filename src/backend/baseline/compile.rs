//! Compiling a module or one function: functions laid out one after another (hot blocks in
//! order, then cold ones), each block's instructions selected by `isel` and its terminator
//! turned into jumps.

use super::asm::{self, Asm, Label};
use super::error::BaselineError;
use super::frame::{self, Frame};
use super::image::{Image, Reloc, Stub};
use super::isel::{Addressing, FnGen};
use crate::lir::{self, FuncId, Inst, Terminator};

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
pub(super) fn compile_function(
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
