//! Branch conditions made of comparisons, so that a branch on `a && b`, `a || b` or `!a`
//! becomes a branch per comparison.
//!
//! The argument checks of a fast path accumulate their conditions with `and` (and a check
//! such as "compact strides" is itself an `or` of comparisons). Translated as they are, each
//! comparison is computed into a register (`cmp`, `setcc`), combined (`and`/`or`) and the
//! result tested: three instructions and a register per comparison, and register pressure
//! that pushes values into callee-saved registers (saved and restored on every call). A
//! branch per comparison is a `cmp` and a conditional jump, which Cranelift fuses, with no
//! register held; the combining instruction, left unused, is dropped by Cranelift.
//!
//! The comparisons are computed where the lowered code computes them (the translation only
//! changes how the branch tests them): no load moves past a check that guards it, and each
//! outcome reaches the branch's original targets.

use crate::lir::{BinOp, Function, Inst, Var};

/// What the translation knows of a single-assignment variable a branch may test.
#[derive(Clone, Copy, Default)]
enum Kind {
    /// Anything else (the branch tests it as a value).
    #[default]
    Opaque,
    /// 0 or 1: a comparison, or a combination this module does not split.
    Boolean,
    /// The constant 1.
    One,
    /// `a && b`, both booleans.
    And(Var, Var),
    /// `a || b`, both booleans.
    Or(Var, Var),
    /// `!a` (`a ^ 1`), `a` a boolean.
    Not(Var),
}

impl Kind {
    fn boolean(self) -> bool {
        !matches!(self, Kind::Opaque)
    }
}

/// How a branch condition splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Both hold.
    And(Var, Var),
    /// Either holds.
    Or(Var, Var),
    /// It does not hold.
    Not(Var),
}

/// The kinds of a function's variables, recorded as its instructions are translated (in
/// reverse postorder: a definition before its uses).
pub struct Conditions {
    /// Empty when branches are not split.
    kinds: Vec<Kind>,
}

impl Conditions {
    /// No variable known yet; nothing is recorded nor split unless `split`.
    pub fn new(func: &Function, split: bool) -> Self {
        Conditions {
            kinds: if split {
                vec![Kind::Opaque; func.vars.len()]
            } else {
                Vec::new()
            },
        }
    }

    /// Records what `inst` (of `func`) defines, when it is a boolean a branch may split.
    pub fn record(&mut self, func: &Function, inst: &Inst) {
        if self.kinds.is_empty() {
            return;
        }
        let kind = match *inst {
            Inst::Icmp { .. } | Inst::Fcmp { .. } => Kind::Boolean,
            Inst::Iconst { value: 0, .. } => Kind::Boolean,
            Inst::Iconst { value: 1, .. } => Kind::One,
            Inst::Binary { op, a, b, .. } => {
                let (ka, kb) = (self.kind(a), self.kind(b));
                if !(ka.boolean() && kb.boolean()) {
                    return;
                }
                match op {
                    BinOp::And => Kind::And(a, b),
                    BinOp::Or => Kind::Or(a, b),
                    BinOp::Xor if matches!(kb, Kind::One) => Kind::Not(a),
                    BinOp::Xor if matches!(ka, Kind::One) => Kind::Not(b),
                    BinOp::Xor => Kind::Boolean,
                    _ => return,
                }
            }
            _ => return,
        };
        if let Some(dst) = inst.dst()
            && !func.vars[dst.0 as usize].mutable
        {
            self.kinds[dst.0 as usize] = kind;
        }
    }

    fn kind(&self, v: Var) -> Kind {
        self.kinds.get(v.0 as usize).copied().unwrap_or_default()
    }

    /// How a branch on `v` splits, if it does.
    pub fn split(&self, v: Var) -> Option<Split> {
        match self.kind(v) {
            Kind::And(a, b) => Some(Split::And(a, b)),
            Kind::Or(a, b) => Some(Split::Or(a, b)),
            Kind::Not(a) => Some(Split::Not(a)),
            Kind::Opaque | Kind::Boolean | Kind::One => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::builder::FuncBuilder;
    use crate::lir::{IntCC, Linkage, Signature, Ty};

    /// The kinds recorded for a function's instructions, in order.
    fn conditions(f: &Function) -> Conditions {
        let mut c = Conditions::new(f, true);
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            c.record(f, inst);
        }
        c
    }

    #[test]
    fn combinations_of_comparisons_split_and_other_values_do_not() {
        let mut b = FuncBuilder::new(
            "f",
            Linkage::Local,
            Signature::new(vec![Ty::I64, Ty::I8], Some(Ty::I32)),
        );
        let (x, flag) = (b.param(0), b.param(1));
        let zero = b.icmp_imm(IntCC::Eq, x, 0);
        let one = b.icmp_imm(IntCC::Eq, x, 1);
        let either = b.binary(BinOp::Or, zero, one);
        let both = b.binary(BinOp::And, either, zero);
        let t = b.iconst(Ty::I8, 1);
        let not = b.binary(BinOp::Xor, both, t);
        // A parameter may hold any byte: `and` with it is a value, not a condition.
        let masked = b.binary(BinOp::And, flag, zero);
        let m = b.mutable_var(Ty::I8);
        b.assign(m, both);
        let r = b.iconst(Ty::I32, 0);
        b.ret(Some(r));
        let f = b.finish();
        let c = conditions(&f);
        assert_eq!(c.split(either), Some(Split::Or(zero, one)));
        assert_eq!(c.split(both), Some(Split::And(either, zero)));
        assert_eq!(c.split(not), Some(Split::Not(both)));
        assert_eq!(c.split(zero), None);
        assert_eq!(c.split(masked), None);
        assert_eq!(
            c.split(m),
            None,
            "a mutable variable may be assigned anything"
        );
        let mut off = Conditions::new(&f, false);
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            off.record(&f, inst);
        }
        assert_eq!(
            off.split(both),
            None,
            "nothing splits when splitting is off"
        );
    }
}
