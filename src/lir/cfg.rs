//! Control-flow and def-use helpers shared by the [verifier](super::verify::verify()) and the backends:
//! successors, the variable an instruction defines, the variables it uses, and the reverse
//! postorder of a function's reachable blocks.

use super::{BlockId, Callee, Function, Inst, Terminator, Var};

impl Terminator {
    /// The blocks control can go to next (none for a return).
    #[inline]
    pub fn successors(&self) -> impl Iterator<Item = BlockId> + use<> {
        let (first, second) = match *self {
            Terminator::Jump(target) => (Some(target), None),
            Terminator::Branch {
                then_block,
                else_block,
                ..
            } => (Some(then_block), Some(else_block)),
            Terminator::Return(_) => (None, None),
        };
        first.into_iter().chain(second)
    }

    /// The variable the terminator reads (a branch condition or a returned value).
    #[inline]
    pub fn used(&self) -> Option<Var> {
        match *self {
            Terminator::Jump(_) => None,
            Terminator::Branch { cond, .. } => Some(cond),
            Terminator::Return(value) => value,
        }
    }
}

impl Inst {
    /// The variable the instruction assigns, if any.
    #[inline]
    pub fn dst(&self) -> Option<Var> {
        match self {
            Inst::Iconst { dst, .. }
            | Inst::Fconst { dst, .. }
            | Inst::Copy { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Icmp { dst, .. }
            | Inst::Fcmp { dst, .. }
            | Inst::Select { dst, .. }
            | Inst::Convert { dst, .. }
            | Inst::Load { dst, .. }
            | Inst::StackAddr { dst, .. }
            | Inst::PtrAdd { dst, .. }
            | Inst::SymbolAddr { dst, .. }
            | Inst::AtomicCas { dst, .. } => Some(*dst),
            Inst::Call { dst, .. } => *dst,
            Inst::Store { .. } | Inst::Source(_) => None,
        }
    }

    /// Calls `f` with each variable the instruction reads, in operand order (an indirect
    /// call's target first, then its arguments).
    #[inline]
    pub fn for_each_use(&self, mut f: impl FnMut(Var)) {
        match self {
            Inst::Copy { src, .. } | Inst::Unary { src, .. } | Inst::Convert { src, .. } => f(*src),
            Inst::Binary { a, b, .. } | Inst::Icmp { a, b, .. } | Inst::Fcmp { a, b, .. } => {
                f(*a);
                f(*b);
            }
            Inst::Select { cond, a, b, .. } => {
                f(*cond);
                f(*a);
                f(*b);
            }
            Inst::Load { addr, .. } => f(*addr),
            Inst::PtrAdd { ptr, offset, .. } => {
                f(*ptr);
                f(*offset);
            }
            Inst::Store { addr, value, .. } => {
                f(*addr);
                f(*value);
            }
            Inst::AtomicCas {
                addr,
                expected,
                replacement,
                ..
            } => {
                f(*addr);
                f(*expected);
                f(*replacement);
            }
            Inst::Call { callee, args, .. } => {
                if let Callee::Indirect(target, _) = callee {
                    f(*target);
                }
                args.iter().copied().for_each(f);
            }
            Inst::Iconst { .. }
            | Inst::Fconst { .. }
            | Inst::StackAddr { .. }
            | Inst::SymbolAddr { .. }
            | Inst::Source(_) => {}
        }
    }
}

/// The blocks reachable from the entry, in reverse postorder: every block comes after its
/// dominators, so a single-assignment variable's definition is visited before its uses.
/// Successors that do not exist are skipped (the [verifier](super::verify::verify()) reports them).
pub fn reverse_postorder(func: &Function) -> Vec<BlockId> {
    let n = func.blocks.len();
    let mut visited = vec![false; n];
    let mut post = Vec::with_capacity(n);
    if n == 0 {
        return post;
    }
    // Iterative depth-first search: (block, index of the next successor to visit).
    let mut stack = vec![(0usize, 0usize)];
    visited[0] = true;
    while let Some(top) = stack.last_mut() {
        let (block, next) = *top;
        match func.blocks[block].term.successors().nth(next) {
            Some(succ) => {
                top.1 += 1;
                let s = succ.0 as usize;
                if s < n && !visited[s] {
                    visited[s] = true;
                    stack.push((s, 0));
                }
            }
            None => {
                post.push(BlockId(block as u32));
                stack.pop();
            }
        }
    }
    post.reverse();
    post
}

/// For each block, whether it is reachable from the entry.
pub fn reachable(func: &Function) -> Vec<bool> {
    let mut reachable = vec![false; func.blocks.len()];
    for b in reverse_postorder(func) {
        reachable[b.0 as usize] = true;
    }
    reachable
}

/// The predecessors of each block (reachable or not), in block order, each listed once per
/// edge.
pub fn predecessors(func: &Function) -> Vec<Vec<BlockId>> {
    let mut preds = vec![Vec::new(); func.blocks.len()];
    for (i, block) in func.blocks.iter().enumerate() {
        for succ in block.term.successors() {
            if let Some(list) = preds.get_mut(succ.0 as usize) {
                list.push(BlockId(i as u32));
            }
        }
    }
    preds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::builder::FuncBuilder;
    use crate::lir::{IntCC, Linkage, Signature, Ty};

    /// block0 -> (block1 | block2) -> block3, plus an unreachable block4 -> block3.
    fn diamond() -> Function {
        let mut b = FuncBuilder::new("f", Linkage::Local, Signature::new(vec![Ty::I32], None));
        let (then_b, else_b, join, dead) =
            (b.new_block(), b.new_block(), b.new_block(), b.new_block());
        let zero = b.iconst(Ty::I32, 0);
        let c = b.icmp(IntCC::Eq, b.param(0), zero);
        b.branch(c, then_b, else_b);
        for from in [then_b, else_b, dead] {
            b.switch_to(from);
            b.jump(join);
        }
        b.switch_to(join);
        b.ret(None);
        b.finish()
    }

    #[test]
    fn reverse_postorder_puts_dominators_first_and_skips_unreachable_blocks() {
        let f = diamond();
        let order = reverse_postorder(&f);
        assert_eq!(order.first(), Some(&BlockId(0)));
        assert_eq!(order.last(), Some(&BlockId(3)));
        assert_eq!(order.len(), 4);
        assert!(!order.contains(&BlockId(4)));
        assert_eq!(reachable(&f), vec![true, true, true, true, false]);
    }

    #[test]
    fn predecessors_list_every_edge() {
        let f = diamond();
        let preds = predecessors(&f);
        assert_eq!(preds[3], vec![BlockId(1), BlockId(2), BlockId(4)]);
        assert_eq!(preds[0], Vec::<BlockId>::new());
    }

    #[test]
    fn uses_and_definitions_of_instructions() {
        let f = diamond();
        let cmp = &f.blocks[0].insts[1];
        let mut used = Vec::new();
        cmp.for_each_use(|v| used.push(v));
        assert_eq!(used, vec![Var(0), Var(1)]);
        assert_eq!(cmp.dst(), Some(Var(2)));
        assert_eq!(f.blocks[0].term.used(), Some(Var(2)));
        assert_eq!(
            f.blocks[0].term.successors().collect::<Vec<_>>(),
            vec![BlockId(1), BlockId(2)]
        );
    }
}
