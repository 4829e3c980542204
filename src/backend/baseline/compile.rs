//! Compiling a module or one function: functions laid out one after another (hot blocks in
//! order, then cold ones), each block's instructions selected by `isel` and its terminator
//! turned into jumps.

use super::asm::{self, Asm, Label};
use super::condition::Plan;
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
        scratch: Default::default(),
        base: None,
        block_tag: 0,
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
        // Each block's one predecessor, if it has exactly one (`u32::MAX`: none or several).
        let mut only_pred = vec![u32::MAX - 1; f.blocks.len()];
        for (p, block) in f.blocks.iter().enumerate() {
            for s in block.term.successors() {
                let only = &mut only_pred[s.0 as usize];
                *only = if *only == u32::MAX - 1 {
                    p as u32
                } else {
                    u32::MAX
                };
            }
        }
        self.prologue();
        for (k, &b) in order.iter().enumerate() {
            let next = order.get(k + 1).map(|&n| self.blocks[n]);
            // Registers keep what they held at the end of the block laid out before when it is
            // the only way in.
            let after_only_pred = k > 0 && only_pred[b] == order[k - 1] as u32;
            self.block(b, next, after_only_pred);
        }
        self.a.finish_function();
    }

    /// What `block` returns when it does nothing but return a constant (or nothing).
    fn constant_return(&self, block: &lir::Block) -> Option<Option<lir::Var>> {
        let Terminator::Return(value) = block.term else {
            return None;
        };
        let constant = |v: &lir::Var| self.frame.vars[v.0 as usize].konst().is_some();
        let only_constants = block.insts.iter().all(|inst| match inst {
            Inst::Iconst { dst, .. } | Inst::Fconst { dst, .. } => constant(dst),
            Inst::Source(_) => true,
            _ => false,
        });
        (only_constants && value.as_ref().is_none_or(constant)).then_some(value)
    }

    fn block(&mut self, b: usize, next: Option<Label>, after_only_pred: bool) {
        let block = &self.f.blocks[b];
        let label = self.blocks[b];
        self.a.bind(label);
        if !after_only_pred {
            self.base = None;
        }
        let plan = self.plan_branch(b, block);
        let absorbed = std::mem::take(&mut self.scratch.absorbed);
        // The absorbed instructions (ascending) are skipped.
        let (mut skip, mut next_skip) = (0, u32::MAX);
        match plan {
            Plan::Tree => next_skip = absorbed[0],
            Plan::LastCompare { .. } => next_skip = block.insts.len() as u32 - 1,
            Plan::None => {}
        }
        for (i, inst) in block.insts.iter().enumerate() {
            if i as u32 == next_skip {
                skip += 1;
                next_skip = absorbed.get(skip).copied().unwrap_or(u32::MAX);
            } else {
                self.inst(inst);
            }
        }
        self.scratch.absorbed = absorbed;
        match &block.term {
            Terminator::Jump(to) => {
                let t = self.blocks[to.0 as usize];
                if Some(t) == next {
                } else if let Some(value) = self.constant_return(&self.f.blocks[to.0 as usize]) {
                    // The epilogue is as short as the jump to it.
                    self.ret(value);
                } else {
                    self.a.jmp(t);
                }
            }
            Terminator::Branch {
                cond,
                then_block,
                else_block,
            } => {
                let (t, e) = (
                    self.blocks[then_block.0 as usize],
                    self.blocks[else_block.0 as usize],
                );
                if let Plan::LastCompare { cc, a, b } = plan {
                    let holds = self.icmp(cc, a, b);
                    self.jump_if(holds, t, e, next);
                } else if let Plan::Tree = plan {
                    self.branch_on_plan(t, e, next);
                } else {
                    let holds = self.test_cond(*cond);
                    self.jump_if(holds, t, e, next);
                }
            }
            Terminator::Return(v) => self.ret(*v),
        }
    }
}
