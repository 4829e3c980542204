//! The baseline compiler's local rules (see the module's documentation), each where it could
//! change a result: branches split into a jump per comparison, comparisons the flags still hold,
//! comparisons in a slot against constants, addresses kept in `r10`, unused instructions left
//! out, constant returns inlined, zero-extended loads read as they are.

use super::tests::{as_fn, link};
use crate::lir::builder::FuncBuilder;
use crate::lir::{BinOp, Callee, FuncId, Function, IntCC, Linkage, Signature, Ty, Var};

/// `f(params) -> i64`: 1 when `cond` (built by `body`) holds, else 0, through a branch.
fn branch_fn(params: Vec<Ty>, body: impl FnOnce(&mut FuncBuilder) -> Var) -> Function {
    let mut b = FuncBuilder::new("f", Linkage::Export, Signature::new(params, Some(Ty::I64)));
    let cond = body(&mut b);
    let (yes, no) = (b.new_block(), b.new_block());
    b.branch(cond, yes, no);
    b.switch_to(yes);
    let one = b.iconst(Ty::I64, 1);
    b.ret(Some(one));
    b.switch_to(no);
    let zero = b.iconst(Ty::I64, 0);
    b.ret(Some(zero));
    b.finish()
}

/// Whether `code` contains a `setcc` (`0f 90`..`0f 9f`).
fn has_setcc(code: &[u8]) -> bool {
    code.windows(2)
        .any(|w| w[0] == 0x0f && (0x90..=0x9f).contains(&w[1]))
}

const EDGES: [i64; 9] = [0, 1, -1, 2, 7, 16, i64::MIN, i64::MAX, -7];

#[test]
fn branches_on_combined_comparisons_decide_as_the_values_do_with_no_setcc() {
    // (x == 0 || y > 7) && !(x <u y)
    let f = branch_fn(vec![Ty::I64, Ty::I64], |b| {
        let (x, y) = (b.param(0), b.param(1));
        let zero = b.icmp_imm(IntCC::Eq, x, 0);
        let big = b.icmp_imm(IntCC::Sgt, y, 7);
        let either = b.binary(BinOp::Or, zero, big);
        let below = b.icmp(IntCC::Ult, x, y);
        let one = b.iconst(Ty::I8, 1);
        let not_below = b.binary(BinOp::Xor, below, one);
        b.binary(BinOp::And, either, not_below)
    });
    let code = link(vec![f]);
    // The whole condition is jumps: no comparison is materialized.
    let bytes = code.code();
    assert!(!has_setcc(bytes), "a setcc in {bytes:02x?}");
    // SAFETY: `f(i64, i64) -> i64`.
    let f: extern "C" fn(i64, i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    for x in EDGES {
        for y in EDGES {
            let want = (x == 0 || y > 7) && (x as u64) >= (y as u64);
            assert_eq!(f(x, y), i64::from(want), "x = {x}, y = {y}");
        }
    }
}

#[test]
fn a_comparison_whose_operand_is_reassigned_before_the_branch_reads_the_old_value() {
    // m = x; c = m == 0; m = 5; if c || y == 7
    let f = branch_fn(vec![Ty::I64, Ty::I64], |b| {
        let (x, y) = (b.param(0), b.param(1));
        let m = b.mutable_var(Ty::I64);
        b.assign(m, x);
        let c = b.icmp_imm(IntCC::Eq, m, 0);
        b.assign_iconst(m, 5);
        let seven = b.icmp_imm(IntCC::Eq, y, 7);
        b.binary(BinOp::Or, c, seven)
    });
    let code = link(vec![f]);
    // SAFETY: `f(i64, i64) -> i64`.
    let f: extern "C" fn(i64, i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    assert_eq!(f(0, 0), 1, "m was 0 when compared");
    assert_eq!(f(5, 0), 0, "m was 5 only after the comparison");
    assert_eq!(f(5, 7), 1);
}

#[test]
fn an_and_with_a_value_that_is_not_a_boolean_is_tested_as_a_value() {
    // flag & (x == 0): a flag of 2 and a true comparison are 0, though both are non-zero.
    let f = branch_fn(vec![Ty::I8, Ty::I64], |b| {
        let (flag, x) = (b.param(0), b.param(1));
        let zero = b.icmp_imm(IntCC::Eq, x, 0);
        b.binary(BinOp::And, flag, zero)
    });
    let code = link(vec![f]);
    // SAFETY: `f(i8, i64) -> i64`.
    let f: extern "C" fn(u8, i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    assert_eq!(f(2, 0), 0);
    assert_eq!(f(3, 0), 1);
    assert_eq!(f(1, 1), 0);
}

#[test]
fn a_comparison_read_by_a_select_and_the_branch_gives_both_its_value() {
    // c = x < y; r = c ? x : y; if c { r + 100 } else { r }
    let sig = Signature::new(vec![Ty::I64, Ty::I64], Some(Ty::I64));
    let mut b = FuncBuilder::new("f", Linkage::Export, sig);
    let (x, y) = (b.param(0), b.param(1));
    let c = b.icmp(IntCC::Slt, x, y);
    let r = b.select(c, x, y);
    let (yes, no) = (b.new_block(), b.new_block());
    b.branch(c, yes, no);
    b.switch_to(yes);
    let r100 = b.binary_imm(BinOp::Iadd, r, 100);
    b.ret(Some(r100));
    b.switch_to(no);
    b.ret(Some(r));
    let code = link(vec![b.finish()]);
    // SAFETY: `f(i64, i64) -> i64`.
    let f: extern "C" fn(i64, i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    for x in EDGES {
        for y in EDGES {
            let want = if x < y { x.wrapping_add(100) } else { y };
            assert_eq!(f(x, y), want, "x = {x}, y = {y}");
        }
    }
}

/// Calls `check(ty, cc, k, xs)` for every integer width, every condition and each constant of
/// the shared edges plus `extra`, with the operand values `xs` to compare with `k`.
fn every_comparison(extra: i64, mut check: impl FnMut(Ty, IntCC, i64, [i64; 10])) {
    use IntCC::*;
    let ccs = [Eq, Ne, Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge];
    let constants = [
        0,
        1,
        -1,
        0x7f,
        0x80,
        -0x80,
        0x7fff_ffff,
        -0x8000_0000,
        extra,
    ];
    for ty in [Ty::I8, Ty::I16, Ty::I32, Ty::I64] {
        for cc in ccs {
            for k in constants {
                let xs = [
                    0,
                    1,
                    -1,
                    0x7f,
                    0x80,
                    -0x81,
                    0x7fff_ffff,
                    0x8000_0000,
                    k,
                    k - 1,
                ];
                check(ty, cc, k, xs);
            }
        }
    }
}

#[test]
fn comparisons_of_a_slot_with_a_constant_order_every_width_as_the_widened_values() {
    every_comparison(0x1_0000_0000, |ty, cc, k, xs| {
        // f(x, pad) = x cc k: `x` is in its slot (the last parameter is the one held in a
        // register), so the comparison reads the slot.
        let sig = Signature::new(vec![ty, Ty::I64], Some(Ty::I8));
        let mut b = FuncBuilder::new("f", Linkage::Export, sig);
        let c = b.icmp_imm(cc, b.param(0), k);
        b.ret(Some(c));
        let code = link(vec![b.finish()]);
        // SAFETY: `f(int, i64) -> i8`, the integer passed in a 64-bit register.
        let f: extern "C" fn(i64, i64) -> u8 = unsafe { as_fn(code.functions[0]) };
        for x in xs {
            let want = crate::lir::fold::icmp(cc, ty, x, k);
            assert_eq!(f(x, 0) != 0, want, "{ty} {x} {cc:?} {k}");
        }
    });
}

#[test]
fn loaded_narrow_values_compare_as_their_width_says() {
    // v = load.i32 [p]; (v <u 0x7fffffff) * 2 + (v <s 0)
    let sig = Signature::new(vec![Ty::Ptr], Some(Ty::I8));
    let mut b = FuncBuilder::new("f", Linkage::Export, sig);
    let v = b.load(Ty::I32, b.param(0), 0);
    let big = b.iconst(Ty::I32, 0x7fff_ffff);
    let below = b.icmp(IntCC::Ult, v, big);
    let zero = b.iconst(Ty::I32, 0);
    let negative = b.icmp(IntCC::Slt, v, zero);
    let twice = b.binary(BinOp::Iadd, below, below);
    let r = b.binary(BinOp::Iadd, twice, negative);
    b.ret(Some(r));
    let code = link(vec![b.finish()]);
    // SAFETY: `f(*const u32) -> i8`; the pointer is valid for the call.
    let f: extern "C" fn(*const u32) -> u8 = unsafe { as_fn(code.functions[0]) };
    assert_eq!(f(&0x8000_0000), 1);
    assert_eq!(f(&5), 2);
    assert_eq!(f(&0xffff_ffff), 1);
}

#[test]
fn addresses_kept_in_a_register_follow_reassignments_joins_and_calls() {
    // g(q) = [q + 8] (its load sets the register too). f(p, q, which):
    //   a = [p]; m = p; if which { m = q; [p + 8] } else { [m] }; b = [m] (a join: the
    //   register holds p on one way in, m on the other); m = q; c = [m]; d = [p] after g(q);
    //   a + 10 b + 100 c + 1000 d + 10000 g(q)
    let mut g = FuncBuilder::new(
        "g",
        Linkage::Local,
        Signature::new(vec![Ty::Ptr], Some(Ty::I64)),
    );
    let at8 = g.load(Ty::I64, g.param(0), 8);
    g.ret(Some(at8));
    let sig = Signature::new(vec![Ty::Ptr, Ty::Ptr, Ty::I8], Some(Ty::I64));
    let mut b = FuncBuilder::new("f", Linkage::Export, sig);
    let (p, q, which) = (b.param(0), b.param(1), b.param(2));
    let a = b.load(Ty::I64, p, 0);
    let m = b.mutable_var(Ty::Ptr);
    b.assign(m, p);
    let (set, keep, join) = (b.new_block(), b.new_block(), b.new_block());
    b.branch(which, set, keep);
    b.switch_to(set);
    b.assign(m, q);
    b.load(Ty::I64, p, 8);
    b.jump(join);
    b.switch_to(keep);
    b.load(Ty::I64, m, 0);
    b.jump(join);
    b.switch_to(join);
    let bv = b.load(Ty::I64, m, 0);
    b.assign(m, q);
    let c = b.load(Ty::I64, m, 0);
    let _ = b.load(Ty::I64, p, 0);
    let gq = b
        .call(Callee::Func(FuncId(0)), Some(Ty::I64), vec![q])
        .unwrap();
    let d = b.load(Ty::I64, p, 0);
    let mut sum = a;
    for (v, k) in [(bv, 10), (c, 100), (d, 1000), (gq, 10000)] {
        let scaled = b.binary_imm(BinOp::Imul, v, k);
        sum = b.binary(BinOp::Iadd, sum, scaled);
    }
    b.ret(Some(sum));
    let code = link(vec![g.finish(), b.finish()]);
    // SAFETY: `f(ptr, ptr, i8) -> i64`; both pointers are valid for 16 bytes.
    let f: extern "C" fn(*const i64, *const i64, u8) -> i64 = unsafe { as_fn(code.functions[1]) };
    let (pm, qm) = ([1i64, 0], [2i64, 3]);
    assert_eq!(f(pm.as_ptr(), qm.as_ptr(), 0), 1 + 10 + 200 + 1000 + 30000);
    assert_eq!(f(pm.as_ptr(), qm.as_ptr(), 1), 1 + 20 + 200 + 1000 + 30000);
}

#[test]
fn unused_instructions_generate_no_code() {
    let code = |unused: bool| {
        let sig = Signature::new(vec![Ty::I64, Ty::Ptr], Some(Ty::I64));
        let mut b = FuncBuilder::new("f", Linkage::Export, sig);
        if unused {
            let (x, p) = (b.param(0), b.param(1));
            b.binary_imm(BinOp::Iadd, x, 5);
            b.icmp_imm(IntCC::Slt, x, 3);
            b.ptr_add_imm(p, 16);
        }
        b.ret(Some(b.param(0)));
        link(vec![b.finish()]).code().to_vec()
    };
    // The same instructions; only the frame's size (an immediate) differs, as the unused
    // variables keep their slots.
    let (with, without) = (code(true), code(false));
    assert_eq!(with.len(), without.len(), "{with:02x?}\n{without:02x?}");
}

#[test]
fn a_jump_to_a_block_returning_a_constant_returns_in_place() {
    // if x == 0 { goto exit } else if x == 1 { goto exit } else { return 2 }; exit: return 7
    let sig = Signature::new(vec![Ty::I64], Some(Ty::I64));
    let mut b = FuncBuilder::new("f", Linkage::Export, sig);
    let x = b.param(0);
    let (first, second, other, exit) = (b.new_block(), b.new_block(), b.new_block(), b.new_block());
    let zero = b.icmp_imm(IntCC::Eq, x, 0);
    b.branch(zero, first, second);
    b.switch_to(first);
    b.jump(exit);
    b.switch_to(second);
    let one = b.icmp_imm(IntCC::Eq, x, 1);
    b.branch(one, exit, other);
    b.switch_to(other);
    let two = b.iconst(Ty::I64, 2);
    b.ret(Some(two));
    b.switch_to(exit);
    let seven = b.iconst(Ty::I64, 7);
    b.ret(Some(seven));
    let code = link(vec![b.finish()]);
    // Two returns in place of the jump and at the end, one for `other`: three `ret`s (c3 at
    // the end of an epilogue `mov rsp, rbp; pop rbp; ret`).
    let rets = code
        .code()
        .windows(5)
        .filter(|w| w == &[0x48, 0x89, 0xec, 0x5d, 0xc3]);
    assert_eq!(rets.count(), 3);
    // SAFETY: `f(i64) -> i64`.
    let f: extern "C" fn(i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    assert_eq!((f(0), f(1), f(5)), (7, 7, 2));
}

#[test]
fn cold_functions_keep_their_combined_conditions() {
    // The condition of the first test, in a cold function: computed as values, same results.
    let f = branch_fn(vec![Ty::I64, Ty::I64], |b| {
        b.set_cold();
        let (x, y) = (b.param(0), b.param(1));
        let zero = b.icmp_imm(IntCC::Eq, x, 0);
        let big = b.icmp_imm(IntCC::Sgt, y, 7);
        b.binary(BinOp::Or, zero, big)
    });
    let code = link(vec![f]);
    assert!(has_setcc(code.code()));
    // SAFETY: `f(i64, i64) -> i64`.
    let f: extern "C" fn(i64, i64) -> i64 = unsafe { as_fn(code.functions[0]) };
    for x in EDGES {
        for y in EDGES {
            assert_eq!(f(x, y), i64::from(x == 0 || y > 7), "x = {x}, y = {y}");
        }
    }
}

#[test]
fn comparisons_of_loaded_memory_with_constants_order_every_width_as_the_widened_values() {
    // 0x1_2000_0000_0001 does not fit an immediate: compared through a register.
    every_comparison(0x1_2000_0000_0001, |ty, cc, k, xs| {
        // f(p) = [p + 8] cc k: the load is read once, by the comparison.
        let sig = Signature::new(vec![Ty::Ptr], Some(Ty::I8));
        let mut b = FuncBuilder::new("f", Linkage::Export, sig);
        let v = b.load(ty, b.param(0), 8);
        let c = b.icmp_imm(cc, v, k);
        b.ret(Some(c));
        let code = link(vec![b.finish()]);
        // SAFETY: `f(*const i64) -> i8`; the pointer is valid for 16 bytes.
        let f: extern "C" fn(*const i64) -> u8 = unsafe { as_fn(code.functions[0]) };
        for x in xs {
            // The value at offset 8, its bytes above the type's width set.
            let high = match ty.bytes() {
                8 => 0,
                n => !((1i64 << (8 * n)) - 1),
            };
            let memory = [0i64, x | high];
            let want = crate::lir::fold::icmp(cc, ty, x, k);
            assert_eq!(f(memory.as_ptr()) != 0, want, "{ty} [{x}] {cc:?} {k}");
        }
    });
}

#[test]
fn a_load_reads_memory_before_a_later_store_to_it() {
    // v = [p]; [p] = 99; v == 5
    let sig = Signature::new(vec![Ty::Ptr], Some(Ty::I8));
    let mut b = FuncBuilder::new("f", Linkage::Export, sig);
    let p = b.param(0);
    let v = b.load(Ty::I64, p, 0);
    b.store_imm(Ty::I64, p, 0, 99);
    let c = b.icmp_imm(IntCC::Eq, v, 5);
    b.ret(Some(c));
    let code = link(vec![b.finish()]);
    // SAFETY: `f(*mut i64) -> i8`; the pointer is valid and writable for 8 bytes.
    let f: extern "C" fn(*mut i64) -> u8 = unsafe { as_fn(code.functions[0]) };
    let mut memory = 5i64;
    assert_eq!(f(&mut memory), 1);
    assert_eq!(memory, 99);
}
