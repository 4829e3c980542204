//! The builder's folding of constants (the arithmetic itself: `lir::fold`'s tests).

use super::super::{BinOp, Inst, IntCC, Linkage, Signature, Ty};
use super::FuncBuilder;

fn builder() -> FuncBuilder {
    let sig = Signature {
        params: vec![Ty::I64],
        ret: Some(Ty::I64),
        param_ext: Vec::new(),
        ret_ext: Default::default(),
    };
    FuncBuilder::new("f", Linkage::Local, sig)
}

fn count(mut b: FuncBuilder, what: fn(&Inst) -> bool) -> usize {
    let zero = b.iconst(Ty::I64, 0);
    b.ret(Some(zero));
    let f = b.finish();
    f.blocks
        .iter()
        .flat_map(|blk| &blk.insts)
        .filter(|i| what(i))
        .count()
}

#[test]
fn the_builder_folds_operations_of_constants_and_only_those() {
    let mut b = builder();
    let (block, one) = (b.iconst(Ty::I64, 128), b.iconst(Ty::I64, 1));
    let less = b.binary(BinOp::Isub, block, one);
    assert_eq!(b.constant(less), Some(127));
    let ok = b.icmp_imm(IntCC::Ult, less, 1024);
    assert_eq!(b.constant(ok), Some(1));
    let no = b.icmp_imm(IntCC::Sgt, block, 4096);
    assert_eq!(b.constant(no), Some(0));
    // A parameter is no constant: nothing folds through it.
    let p = b.param(0);
    let sum = b.binary(BinOp::Iadd, p, block);
    assert_eq!(b.constant(sum), None);
    let cmp = b.icmp(IntCC::Eq, sum, block);
    assert_eq!(b.constant(cmp), None);
    assert_eq!(count(b, |i| matches!(i, Inst::Binary { .. })), 1);
    let mut b = builder();
    let (x, y) = (b.iconst(Ty::I32, 7), b.iconst(Ty::I32, 9));
    b.icmp(IntCC::Slt, x, y);
    b.binary(BinOp::Imul, x, y);
    assert_eq!(
        count(b, |i| matches!(i, Inst::Icmp { .. } | Inst::Binary { .. })),
        0
    );
}

#[test]
fn a_select_on_a_constant_picks_its_operand_unless_that_may_change() {
    let mut b = builder();
    let p = b.param(0);
    let k = b.iconst(Ty::I64, 5);
    let yes = b.iconst(Ty::I8, 1);
    let no = b.iconst(Ty::I8, 0);
    assert_eq!(b.select(yes, p, k), p);
    assert_eq!(b.select(no, p, k), k);
    // A mutable operand is read when the select runs, not when it was built.
    let m = b.mutable_var(Ty::I64);
    b.assign(m, p);
    let picked = b.select(yes, m, k);
    assert_ne!(picked, m);
    assert_eq!(count(b, |i| matches!(i, Inst::Select { .. })), 1);
}
