//! Operators with defined semantics: arithmetic, comparisons, shifts taken modulo the width,
//! and the integer division family (no hardware trap, a ValueError for a zero divisor).

use crate::ir::{BinOp, FloatType, ScalarType, Type};
use crate::lir::{self, FloatCC, IntCC, Ty, Var};

use super::super::context::FnCtx;
use super::super::half;
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

/// `a op b` for operands of type `operand` (as the verifier typed them); `constant_rhs` is the
/// right operand when it is an integer literal (a division by a non-zero constant needs no
/// zero check). The short-circuit `&&` and `||` are lowered by the caller.
pub(super) fn lower_binary(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    operand: &Type,
    a: Var,
    b: Var,
    constant_rhs: Option<i64>,
) -> Result<Var, LowerError> {
    match operand {
        // Devices and dtypes compare by their packed bits.
        Type::Device | Type::DType => {
            let cc = match op {
                BinOp::Eq => IntCC::Eq,
                BinOp::Ne => IntCC::Ne,
                BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::Rem
                | BinOp::FloorDiv
                | BinOp::FloorMod
                | BinOp::CeilDiv
                | BinOp::Min
                | BinOp::Max
                | BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor
                | BinOp::Shl
                | BinOp::Shr
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or => {
                    return Err(LowerError::internal(format!(
                        "operator {op:?} is not defined on devices or dtypes"
                    )));
                }
            };
            Ok(fx.b.icmp(cc, a, b))
        }
        Type::Scalar(ScalarType::Float(ft)) if ft.is_half() => half_compare(fx, op, *ft, a, b),
        Type::Scalar(ScalarType::Float(_)) => float_binary(fx, op, a, b),
        Type::Scalar(s) => {
            let signed = matches!(s, ScalarType::Int(t) if t.is_signed());
            Ok(int_binary(fx, op, a, b, signed, constant_rhs))
        }
        other @ (Type::Str | Type::Bytes | Type::Shape | Type::Func | Type::Tensor | Type::Any) => {
            Err(LowerError::internal(format!(
                "operator {op:?} applied to a value of type {other}"
            )))
        }
    }
}

/// A comparison of two halves: both widened to `f32` (exact), then compared as floats (so NaN
/// is unordered and `-0 == +0`). Halves have no arithmetic (the typing rules refuse it).
fn half_compare(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    ft: FloatType,
    a: Var,
    b: Var,
) -> Result<Var, LowerError> {
    match op {
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let wide_a = half::widen(&mut fx.b, a, ft, FloatType::F32);
            let wide_b = half::widen(&mut fx.b, b, ft, FloatType::F32);
            float_binary(fx, op, wide_a, wide_b)
        }
        BinOp::Add
        | BinOp::Sub
        | BinOp::Mul
        | BinOp::Div
        | BinOp::Rem
        | BinOp::FloorDiv
        | BinOp::FloorMod
        | BinOp::CeilDiv
        | BinOp::Min
        | BinOp::Max
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::And
        | BinOp::Or => Err(LowerError::internal(format!(
            "operator {op:?} is not defined on {}",
            ft.keyword()
        ))),
    }
}

fn float_binary(fx: &mut FnCtx<'_, '_>, op: BinOp, a: Var, b: Var) -> Result<Var, LowerError> {
    use lir::BinOp as L;
    let arith = match op {
        BinOp::Add => Some(L::Fadd),
        BinOp::Sub => Some(L::Fsub),
        BinOp::Mul => Some(L::Fmul),
        BinOp::Div => Some(L::Fdiv),
        BinOp::Min => Some(L::Fmin),
        BinOp::Max => Some(L::Fmax),
        BinOp::Rem
        | BinOp::FloorDiv
        | BinOp::FloorMod
        | BinOp::CeilDiv
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::Eq
        | BinOp::Ne
        | BinOp::Lt
        | BinOp::Le
        | BinOp::Gt
        | BinOp::Ge
        | BinOp::And
        | BinOp::Or => None,
    };
    if let Some(lop) = arith {
        return Ok(fx.b.binary(lop, a, b));
    }
    let cc = match op {
        BinOp::Eq => FloatCC::Eq,
        BinOp::Ne => FloatCC::Ne,
        BinOp::Lt => FloatCC::Lt,
        BinOp::Le => FloatCC::Le,
        BinOp::Gt => FloatCC::Gt,
        BinOp::Ge => FloatCC::Ge,
        BinOp::Add
        | BinOp::Sub
        | BinOp::Mul
        | BinOp::Div
        | BinOp::Rem
        | BinOp::FloorDiv
        | BinOp::FloorMod
        | BinOp::CeilDiv
        | BinOp::Min
        | BinOp::Max
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::And
        | BinOp::Or => {
            return Err(LowerError::internal(format!(
                "operator {op:?} is not defined on floats"
            )));
        }
    };
    Ok(fx.b.fcmp(cc, a, b))
}

/// Integer (and bool, ptr) operators; `signed` picks signed comparisons, division, shifts.
fn int_binary(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    a: Var,
    b: Var,
    signed: bool,
    constant_rhs: Option<i64>,
) -> Var {
    use lir::BinOp as L;
    let cmp = |cc_s: IntCC, cc_u: IntCC| if signed { cc_s } else { cc_u };
    match op {
        BinOp::Add => fx.b.binary(L::Iadd, a, b),
        BinOp::Sub => fx.b.binary(L::Isub, a, b),
        BinOp::Mul => fx.b.binary(L::Imul, a, b),
        BinOp::Div | BinOp::Rem | BinOp::FloorDiv | BinOp::FloorMod | BinOp::CeilDiv => {
            lower_division(fx, op, a, b, signed, constant_rhs)
        }
        BinOp::Min => fx.b.binary(if signed { L::Smin } else { L::Umin }, a, b),
        BinOp::Max => fx.b.binary(if signed { L::Smax } else { L::Umax }, a, b),
        BinOp::BitAnd => fx.b.binary(L::And, a, b),
        BinOp::BitOr => fx.b.binary(L::Or, a, b),
        BinOp::BitXor => fx.b.binary(L::Xor, a, b),
        BinOp::Shl | BinOp::Shr => {
            // The amount is taken modulo the bit width.
            let width = i64::from(fx.b.ty(a).bytes() * 8);
            let amount = fx.b.binary_imm(L::And, b, width - 1);
            let lop = match (op, signed) {
                (BinOp::Shl, _) => L::Shl,
                (_, true) => L::Sshr,
                (_, false) => L::Ushr,
            };
            fx.b.binary(lop, a, amount)
        }
        BinOp::Eq => fx.b.icmp(IntCC::Eq, a, b),
        BinOp::Ne => fx.b.icmp(IntCC::Ne, a, b),
        BinOp::Lt => fx.b.icmp(cmp(IntCC::Slt, IntCC::Ult), a, b),
        BinOp::Le => fx.b.icmp(cmp(IntCC::Sle, IntCC::Ule), a, b),
        BinOp::Gt => fx.b.icmp(cmp(IntCC::Sgt, IntCC::Ugt), a, b),
        BinOp::Ge => fx.b.icmp(cmp(IntCC::Sge, IntCC::Uge), a, b),
        // Bools are 0 or 1, so these are the logical operators (without short-circuit, which
        // `lower_expr` gives them before they get here).
        BinOp::And => fx.b.binary(L::And, a, b),
        BinOp::Or => fx.b.binary(L::Or, a, b),
    }
}

/// Integer division family with defined semantics: division by zero raises a ValueError,
/// `MIN / -1` wraps to `MIN` and `MIN % -1` is 0 (never a hardware trap).
fn lower_division(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    a: Var,
    b: Var,
    signed: bool,
    constant: Option<i64>,
) -> Var {
    use lir::BinOp as L;
    let ty = fx.b.ty(a);
    if constant.is_none_or(|c| c == 0) {
        let nonzero = fx.b.icmp_imm(IntCC::Ne, b, 0);
        fx.check(nonzero, VALUE_ERROR, |fx| {
            vec![
                MsgPart::Text(format!(
                    "{}: integer division by zero: `{}` divides ",
                    fx.func.name,
                    fx.current_stmt_text()
                )),
                MsgPart::Value(if signed { Tag::I64 } else { Tag::U64 }, a),
                MsgPart::text(" by 0"),
            ]
        });
    }
    // A constant divisor other than -1 (in the operand's width) cannot overflow.
    let may_overflow =
        signed && constant.is_none_or(|c| c == -1 || c & lane_mask(ty) == lane_mask(ty));
    let (q, r) = if signed && !may_overflow {
        (fx.b.binary(L::Sdiv, a, b), fx.b.binary(L::Srem, a, b))
    } else if signed {
        let minus_one = fx.b.icmp_imm(IntCC::Eq, b, -1);
        let one = fx.b.iconst(ty, 1);
        let safe = fx.b.select(minus_one, one, b);
        let q = fx.b.binary(L::Sdiv, a, safe);
        let neg = fx.b.unary(lir::UnOp::Ineg, a);
        let q = fx.b.select(minus_one, neg, q);
        let r0 = fx.b.binary(L::Srem, a, safe);
        let zero = fx.b.iconst(ty, 0);
        let r = fx.b.select(minus_one, zero, r0);
        (q, r)
    } else {
        (fx.b.binary(L::Udiv, a, b), fx.b.binary(L::Urem, a, b))
    };
    let rem_nonzero = fx.b.icmp_imm(IntCC::Ne, r, 0);
    match op {
        BinOp::Div => q,
        BinOp::Rem => r,
        BinOp::FloorDiv | BinOp::FloorMod if signed => {
            // Adjust when the remainder is non-zero and its sign differs from the divisor's.
            let x = fx.b.binary(L::Xor, r, b);
            let differ = fx.b.icmp_imm(IntCC::Slt, x, 0);
            let adjust = fx.b.binary(L::And, rem_nonzero, differ);
            if op == BinOp::FloorDiv {
                let q1 = fx.b.binary_imm(L::Isub, q, 1);
                fx.b.select(adjust, q1, q)
            } else {
                let r1 = fx.b.binary(L::Iadd, r, b);
                fx.b.select(adjust, r1, r)
            }
        }
        BinOp::FloorDiv => q,
        BinOp::FloorMod => r,
        BinOp::CeilDiv => {
            let bump = if signed {
                let x = fx.b.binary(L::Xor, r, b);
                let same = fx.b.icmp_imm(IntCC::Sge, x, 0);
                fx.b.binary(L::And, rem_nonzero, same)
            } else {
                rem_nonzero
            };
            let q1 = fx.b.binary_imm(L::Iadd, q, 1);
            fx.b.select(bump, q1, q)
        }
        BinOp::Add
        | BinOp::Sub
        | BinOp::Mul
        | BinOp::Min
        | BinOp::Max
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr
        | BinOp::Eq
        | BinOp::Ne
        | BinOp::Lt
        | BinOp::Le
        | BinOp::Gt
        | BinOp::Ge
        | BinOp::And
        | BinOp::Or => unreachable!("not a division operator"),
    }
}

/// All ones in the width of an integer type (as an `i64`).
fn lane_mask(ty: Ty) -> i64 {
    match ty.bytes() {
        8 => -1,
        n => (1i64 << (n * 8)) - 1,
    }
}
