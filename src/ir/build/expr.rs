//! Expression constructors, `Expr` methods and operators.

use std::ops;

use super::super::model::*;
use super::super::{half, syntax};

/// An `i64` constant.
pub fn int(value: i64) -> Expr {
    Expr::Int {
        value,
        ty: IntType::I64,
    }
}

/// An integer constant of type `ty` (for unsigned types, `value` is the bit pattern).
pub fn int_of(ty: IntType, value: i64) -> Expr {
    Expr::Int { value, ty }
}

/// A `u64` constant.
pub fn uint64(value: u64) -> Expr {
    Expr::Int {
        value: value as i64,
        ty: IntType::U64,
    }
}

/// An `f64` constant.
pub fn float(value: f64) -> Expr {
    Expr::Float {
        bits: value.to_bits(),
        ty: FloatType::F64,
    }
}

/// An `f32` constant (stored exactly, NaN payloads included).
pub fn float32(value: f32) -> Expr {
    Expr::Float {
        bits: syntax::f32_bits_to_f64(value.to_bits()),
        ty: FloatType::F32,
    }
}

/// An `f16` constant: `value` rounded to the nearest `f16`, ties to even (`float16(0.1)` is
/// the `f16` nearest to the `f64` 0.1; NaN stays NaN, large values become infinities).
pub fn float16(value: f64) -> Expr {
    half_constant(value, FloatType::F16)
}

/// A `bf16` constant: `value` rounded to the nearest `bf16`, ties to even (not truncated).
pub fn bfloat16(value: f64) -> Expr {
    half_constant(value, FloatType::BF16)
}

/// An `f16` or `bf16` constant given by its 16 bits (NaN payloads included).
pub fn half_bits(bits: u16, ty: FloatType) -> Expr {
    Expr::Float {
        bits: half::half_to_f64_bits(bits, ty),
        ty,
    }
}

fn half_constant(value: f64, ty: FloatType) -> Expr {
    half_bits(half::round_f64_bits(value.to_bits(), ty), ty)
}

/// A `bool` constant.
pub fn boolean(value: bool) -> Expr {
    Expr::Bool(value)
}

/// A string literal.
pub fn string(value: impl Into<String>) -> Expr {
    Expr::Str(value.into())
}

/// A parameter, tuple element, symbolic variable, `let` binding or loop variable.
pub fn var(name: impl Into<String>) -> Expr {
    Expr::Var(name.into())
}

/// Whether an optional parameter or any value is None.
pub fn is_none(name: impl Into<String>) -> Expr {
    Expr::IsNone(name.into())
}

/// A field of a tensor parameter.
pub fn field(tensor: impl Into<String>, field: TensorField) -> Expr {
    Expr::Field {
        tensor: tensor.into(),
        field,
    }
}

/// `select(cond, a, b)`.
pub fn select(cond: impl Into<Expr>, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    Expr::Select {
        cond: Box::new(cond.into()),
        then_value: Box::new(a.into()),
        else_value: Box::new(b.into()),
    }
}

/// A binary operation.
pub fn binary(op: BinOp, lhs: impl Into<Expr>, rhs: impl Into<Expr>) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(lhs.into()),
        rhs: Box::new(rhs.into()),
    }
}

/// `min(a, b)`.
pub fn min(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    binary(BinOp::Min, a, b)
}

/// `max(a, b)`.
pub fn max(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    binary(BinOp::Max, a, b)
}

/// `ceil_div(a, b)`.
pub fn ceil_div(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    binary(BinOp::CeilDiv, a, b)
}

/// `floordiv(a, b)`.
pub fn floordiv(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    binary(BinOp::FloorDiv, a, b)
}

/// `floormod(a, b)`.
pub fn floormod(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    binary(BinOp::FloorMod, a, b)
}

/// `cast<ty>(e)`.
pub fn cast(ty: ScalarType, e: impl Into<Expr>) -> Expr {
    Expr::Cast {
        ty,
        arg: Box::new(e.into()),
    }
}

/// `load<ty>(ptr)`.
pub fn load(ty: ScalarType, ptr: impl Into<Expr>) -> Expr {
    Expr::Load {
        ty,
        ptr: Box::new(ptr.into()),
    }
}

/// `offset(ptr, bytes)`.
pub fn offset(ptr: impl Into<Expr>, bytes: impl Into<Expr>) -> Expr {
    Expr::PtrOffset {
        ptr: Box::new(ptr.into()),
        offset: Box::new(bytes.into()),
    }
}

impl From<i64> for Expr {
    /// An `i64` constant.
    fn from(v: i64) -> Expr {
        int(v)
    }
}

impl From<bool> for Expr {
    /// A `bool` constant.
    fn from(v: bool) -> Expr {
        Expr::Bool(v)
    }
}

impl From<f64> for Expr {
    /// An `f64` constant.
    fn from(v: f64) -> Expr {
        float(v)
    }
}

impl From<f32> for Expr {
    /// An `f32` constant.
    fn from(v: f32) -> Expr {
        float32(v)
    }
}

impl Expr {
    /// `self op rhs`.
    pub fn binary(self, op: BinOp, rhs: impl Into<Expr>) -> Expr {
        binary(op, self, rhs)
    }

    /// `self == rhs`.
    pub fn equals(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Eq, self, rhs)
    }

    /// `self != rhs`.
    pub fn not_equals(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Ne, self, rhs)
    }

    /// `self < rhs`.
    pub fn lt(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Lt, self, rhs)
    }

    /// `self <= rhs`.
    pub fn le(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Le, self, rhs)
    }

    /// `self > rhs`.
    pub fn gt(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Gt, self, rhs)
    }

    /// `self >= rhs`.
    pub fn ge(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Ge, self, rhs)
    }

    /// `self && rhs` (short-circuit).
    pub fn and(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::And, self, rhs)
    }

    /// `self || rhs` (short-circuit).
    pub fn or(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Or, self, rhs)
    }

    /// `min(self, rhs)`.
    pub fn min(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Min, self, rhs)
    }

    /// `max(self, rhs)`.
    pub fn max(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::Max, self, rhs)
    }

    /// `ceil_div(self, rhs)`.
    pub fn ceil_div(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::CeilDiv, self, rhs)
    }

    /// `floordiv(self, rhs)`.
    pub fn floordiv(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::FloorDiv, self, rhs)
    }

    /// `floormod(self, rhs)`.
    pub fn floormod(self, rhs: impl Into<Expr>) -> Expr {
        binary(BinOp::FloorMod, self, rhs)
    }

    /// `~self` (bitwise not; `!` is logical not).
    pub fn bit_not(self) -> Expr {
        Expr::Unary {
            op: UnOp::BitNot,
            arg: Box::new(self),
        }
    }

    /// `cast<ty>(self)`.
    pub fn cast(self, ty: ScalarType) -> Expr {
        cast(ty, self)
    }

    /// `load<ty>(self)`.
    pub fn load(self, ty: ScalarType) -> Expr {
        load(ty, self)
    }

    /// `offset(self, bytes)`.
    pub fn offset(self, bytes: impl Into<Expr>) -> Expr {
        offset(self, bytes)
    }
}

macro_rules! binop_impls {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl ops::$trait<Expr> for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                binary(BinOp::$op, self, rhs)
            }
        }
        impl ops::$trait<i64> for Expr {
            type Output = Expr;
            /// With an `i64` constant on the right.
            fn $method(self, rhs: i64) -> Expr {
                binary(BinOp::$op, self, int(rhs))
            }
        }
    )*};
}

binop_impls! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
    Div div Div;
    Rem rem Rem;
    BitAnd bitand BitAnd;
    BitOr bitor BitOr;
    BitXor bitxor BitXor;
    Shl shl Shl;
    Shr shr Shr;
}

impl ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Unary {
            op: UnOp::Neg,
            arg: Box::new(self),
        }
    }
}

impl ops::Not for Expr {
    type Output = Expr;
    /// Logical not (of a bool); see [`Expr::bit_not`] for integers.
    fn not(self) -> Expr {
        Expr::Unary {
            op: UnOp::Not,
            arg: Box::new(self),
        }
    }
}
