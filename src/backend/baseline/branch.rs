//! Branches on combinations of comparisons: a block's branch on `a && b`, `a || b` or `!a`,
//! whose combining instructions only the branch reads, becomes a conditional jump per
//! comparison, as the Cranelift translation does (`backend::cranelift::conditions`).
//!
//! Compiled where they stand, each comparison of an argument check would be `cmp`, `setcc`
//! and a store, each combination a load, an `and`/`or` and a store, and the branch a `test`:
//! the branch per comparison is a `cmp` and a `jcc`. The comparisons the branch takes over
//! ("absorbed": read by nothing else, in the same block) are computed at the branch instead of
//! where they stand, which is exact because nothing they read is assigned in between (checked:
//! single-assignment variables never are, mutable ones are looked for), and a comparison has
//! no effect to reorder. Every other value the condition reads is tested as it is.

use super::asm::{Cond, Label};
use super::condition::{Node, Plan, Work};
use super::isel::FnGen;
use crate::lir::{BinOp, Block, Inst, Terminator, Var};

impl FnGen<'_> {
    /// Plans the branch of `block`: [`Plan::Tree`] when the branch computes some of the
    /// block's instructions (the tree and the instructions, in `absorbed`, are in
    /// `self.scratch`), [`Plan::LastCompare`] when it computes only the comparison that ends the
    /// block (the most common case, planned without the general search), [`Plan::None`] when
    /// it tests its condition as it is.
    pub fn plan_branch(&mut self, index: usize, block: &Block) -> Plan {
        let Terminator::Branch { cond, .. } = block.term else {
            return Plan::None;
        };
        // Only variables defined in this block are looked for.
        self.block_tag = index as u32 + 1;
        if !self.absorbable(cond) {
            return Plan::None;
        }
        if let Some(&Inst::Icmp { dst, cc, a, b }) = block.insts.last()
            && dst == cond
        {
            return Plan::LastCompare { cc, a, b };
        }
        let s = &mut self.scratch;
        s.nodes.clear();
        s.wanted.clear();
        s.absorbed.clear();
        s.assigned_after.clear();
        s.nodes.push(Node::Test(cond));
        s.wanted.push((cond, 0));
        for (i, inst) in block.insts.iter().enumerate().rev() {
            if self.scratch.wanted.is_empty() {
                break;
            }
            let Some(dst) = inst.dst() else {
                continue;
            };
            if self.f.vars[dst.0 as usize].mutable {
                self.scratch.assigned_after.push(dst);
                continue;
            }
            let s = &mut self.scratch;
            let Some(k) = s.wanted.iter().position(|&(v, _)| v == dst) else {
                continue;
            };
            let (_, slot) = s.wanted.swap_remove(k);
            if !self.absorbable(dst) {
                continue;
            }
            // Its operands are read at the branch instead of here.
            let s = &self.scratch;
            let (a, b) = match *inst {
                Inst::Icmp { a, b, .. } | Inst::Binary { a, b, .. } => (a, b),
                _ => continue,
            };
            if s.assigned_after.contains(&a) || s.assigned_after.contains(&b) {
                continue;
            }
            let node = match *inst {
                Inst::Icmp { cc, a, b, .. } => Node::Cmp { cc, a, b },
                // Cold functions (error paths) keep their combinations: compile time matters
                // more there.
                Inst::Binary { op, a, b, .. }
                    if !self.f.cold && self.boolean(a) && self.boolean(b) =>
                {
                    let next = self.scratch.nodes.len() as u32;
                    let (operands, count) = match op {
                        BinOp::And | BinOp::Or => ([a, b], 2),
                        BinOp::Xor if self.is_one(b) => ([a, a], 1),
                        BinOp::Xor if self.is_one(a) => ([b, b], 1),
                        _ => continue,
                    };
                    for (k, &v) in operands[..count].iter().enumerate() {
                        let absorbable = self.absorbable(v);
                        let s = &mut self.scratch;
                        s.nodes.push(Node::Test(v));
                        if absorbable {
                            s.wanted.push((v, next + k as u32));
                        }
                    }
                    match op {
                        BinOp::And => Node::And(next, next + 1),
                        BinOp::Or => Node::Or(next, next + 1),
                        _ => Node::Not(next),
                    }
                }
                _ => continue,
            };
            self.scratch.nodes[slot as usize] = node;
            self.scratch.absorbed.push(i as u32);
        }
        self.scratch.absorbed.reverse();
        if self.scratch.absorbed.is_empty() {
            Plan::None
        } else {
            Plan::Tree
        }
    }

    /// Whether `v` may be computed by the branch being planned: a comparison or combination
    /// assigned once, in its block, and read once (by the branch or a combination it
    /// computes).
    fn absorbable(&self, v: Var) -> bool {
        let info = &self.frame.vars[v.0 as usize];
        info.def_block == self.block_tag && info.uses == 1 && !self.f.vars[v.0 as usize].mutable
    }

    /// Whether `v` is known to be 0 or 1.
    fn boolean(&self, v: Var) -> bool {
        self.frame.vars[v.0 as usize].boolean
    }

    /// Whether `v` is the constant 1.
    fn is_one(&self, v: Var) -> bool {
        self.frame.vars[v.0 as usize].konst() == Some(1)
    }

    /// Compiles the planned branch: to `then` when its condition holds, else to `els`;
    /// `next` is the label bound right after it, if known.
    pub fn branch_on_plan(&mut self, then: Label, els: Label, next: Option<Label>) {
        let mut work = std::mem::take(&mut self.scratch.work);
        work.clear();
        work.push(Work::Node(0, then, els, next));
        while let Some(w) = work.pop() {
            let (n, t, f, fall) = match w {
                Work::Bind(l) => {
                    self.a.bind(l);
                    continue;
                }
                Work::Node(n, t, f, fall) => (n, t, f, fall),
            };
            match self.scratch.nodes[n as usize] {
                Node::And(x, y) => {
                    let mid = self.a.label();
                    work.push(Work::Node(y, t, f, fall));
                    work.push(Work::Bind(mid));
                    work.push(Work::Node(x, mid, f, Some(mid)));
                }
                Node::Or(x, y) => {
                    let mid = self.a.label();
                    work.push(Work::Node(y, t, f, fall));
                    work.push(Work::Bind(mid));
                    work.push(Work::Node(x, t, mid, Some(mid)));
                }
                Node::Not(x) => work.push(Work::Node(x, f, t, fall)),
                Node::Cmp { cc, a, b } => {
                    let cc = self.icmp(cc, a, b);
                    self.jump_if(cc, t, f, fall);
                }
                Node::Test(v) => {
                    let holds = self.test_cond(v);
                    self.jump_if(holds, t, f, fall);
                }
            }
        }
        self.scratch.work = work;
    }

    /// Jumps to `then` when `cc` holds, else to `els`, falling through where `fall` allows.
    pub fn jump_if(&mut self, cc: Cond, then: Label, els: Label, fall: Option<Label>) {
        if Some(then) == fall {
            self.a.jcc(cc.invert(), els);
        } else {
            self.a.jcc(cc, then);
            if Some(els) != fall {
                self.a.jmp(els);
            }
        }
    }
}
