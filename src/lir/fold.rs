//! Integer constant folding for [`super::builder::FuncBuilder`]: the value of an operation whose
//! operands are both constants, at the width of its type (the lowered form's wrapping
//! semantics), so that a check of constants (a launch's block dims, a constant shared-memory
//! size) decides at lowering time instead of in the generated code.

use super::{BinOp, IntCC, Ty};

/// `value` truncated to `ty`'s width and sign-extended back: the one spelling of a constant
/// of that type.
pub(crate) fn canonical(ty: Ty, value: i64) -> i64 {
    let shift = 64 - 8 * ty.bytes();
    (value << shift) >> shift
}

/// `value` at `ty`'s width, zero-extended (its unsigned reading).
fn unsigned(ty: Ty, value: i64) -> u64 {
    let bits = 8 * ty.bytes();
    if bits == 64 {
        value as u64
    } else {
        (value as u64) & ((1u64 << bits) - 1)
    }
}

/// `a op b` of two constants of integer (or pointer) type `ty`, when the operation always
/// has a value there: the wrapping arithmetic and the bitwise operations, and shifts by less
/// than the width. Divisions and everything else are left to the generated code.
pub(crate) fn binary(op: BinOp, ty: Ty, a: i64, b: i64) -> Option<i64> {
    if ty.is_float() {
        return None;
    }
    let bits = i64::from(8 * ty.bytes());
    let shift = (0..bits).contains(&b).then_some(b as u32);
    let value = match op {
        BinOp::Iadd => a.wrapping_add(b),
        BinOp::Isub => a.wrapping_sub(b),
        BinOp::Imul => a.wrapping_mul(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a.wrapping_shl(shift?),
        BinOp::Sshr => canonical(ty, a) >> shift?,
        BinOp::Ushr => (unsigned(ty, a) >> shift?) as i64,
        _ => return None,
    };
    Some(canonical(ty, value))
}

/// `a cc b` of two constants of integer (or pointer) type `ty`.
pub(crate) fn icmp(cc: IntCC, ty: Ty, a: i64, b: i64) -> bool {
    let (sa, sb) = (canonical(ty, a), canonical(ty, b));
    let (ua, ub) = (unsigned(ty, a), unsigned(ty, b));
    match cc {
        IntCC::Eq => ua == ub,
        IntCC::Ne => ua != ub,
        IntCC::Slt => sa < sb,
        IntCC::Sle => sa <= sb,
        IntCC::Sgt => sa > sb,
        IntCC::Sge => sa >= sb,
        IntCC::Ult => ua < ub,
        IntCC::Ule => ua <= ub,
        IntCC::Ugt => ua > ub,
        IntCC::Uge => ua >= ub,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_wraps_at_the_types_width() {
        assert_eq!(
            binary(BinOp::Iadd, Ty::I32, i64::from(i32::MAX), 1),
            Some(i64::from(i32::MIN))
        );
        assert_eq!(binary(BinOp::Isub, Ty::I64, 128, 1), Some(127));
        assert_eq!(binary(BinOp::Isub, Ty::I8, 0, 1), Some(-1));
        assert_eq!(
            binary(BinOp::Imul, Ty::I16, 300, 300),
            Some(i64::from((300i32 * 300) as i16))
        );
        assert_eq!(binary(BinOp::Imul, Ty::I64, i64::MAX, 2), Some(-2));
        assert_eq!(binary(BinOp::And, Ty::I8, 0xff, 0x0f), Some(0x0f));
        assert_eq!(binary(BinOp::Xor, Ty::I8, 1, 1), Some(0));
    }

    #[test]
    fn shifts_fold_only_below_the_width() {
        assert_eq!(
            binary(BinOp::Shl, Ty::I32, 1, 31),
            Some(i64::from(i32::MIN))
        );
        assert_eq!(binary(BinOp::Shl, Ty::I32, 1, 32), None);
        assert_eq!(binary(BinOp::Shl, Ty::I32, 1, -1), None);
        assert_eq!(binary(BinOp::Sshr, Ty::I8, 0x80, 7), Some(-1));
        assert_eq!(binary(BinOp::Ushr, Ty::I8, 0x80, 7), Some(1));
        assert_eq!(binary(BinOp::Ushr, Ty::I64, -1, 63), Some(1));
    }

    #[test]
    fn divisions_and_floats_are_left_alone() {
        for op in [
            BinOp::Sdiv,
            BinOp::Udiv,
            BinOp::Srem,
            BinOp::Urem,
            BinOp::Smin,
        ] {
            assert_eq!(binary(op, Ty::I64, 6, 3), None, "{op:?}");
        }
        assert_eq!(binary(BinOp::Iadd, Ty::F64, 1, 1), None);
    }

    #[test]
    fn comparisons_read_signed_and_unsigned_at_the_width() {
        // -1 as an i32 is 4294967295 unsigned, whichever way the constant was spelled.
        assert!(icmp(IntCC::Eq, Ty::I32, -1, 0xffff_ffff));
        assert!(icmp(IntCC::Slt, Ty::I32, 0xffff_ffff, 0));
        assert!(icmp(IntCC::Ugt, Ty::I32, -1, 0));
        assert!(icmp(IntCC::Ult, Ty::I64, 127, 1024));
        assert!(!icmp(IntCC::Ult, Ty::I64, -1, 1024));
        assert!(icmp(IntCC::Ule, Ty::I64, 8200, 4_294_967_295));
        assert!(icmp(IntCC::Sge, Ty::I8, 0, -128));
        assert!(icmp(IntCC::Ne, Ty::Ptr, 0, 1));
        assert!(icmp(IntCC::Sle, Ty::I16, 5, 5) && !icmp(IntCC::Sgt, Ty::I16, 5, 5));
        assert!(icmp(IntCC::Uge, Ty::I16, 5, 5) && !icmp(IntCC::Ult, Ty::I16, 5, 5));
    }
}
