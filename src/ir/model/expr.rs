//! Expressions: [`Expr`], its operators and the fields of a tensor parameter.

use super::float::FloatType;
use super::scalar::{IntType, ScalarType};

/// Fields of a tensor parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorField {
    /// `data` (without `byte_offset`), a `ptr`.
    Data,
    /// `shape[i]`, an `i64`.
    Shape(usize),
    /// `strides[i]` in elements, an `i64` (computed from the shape when the tensor has NULL strides).
    Stride(usize),
    /// `ndim`, an `i32`.
    NDim,
    /// `dtype`, a [`Type::DType`](super::Type::DType).
    DType,
    /// `device`, a [`Type::Device`](super::Type::Device).
    Device,
    /// `device.device_type`, an `i32`.
    DeviceType,
    /// `device.device_id`, an `i32`.
    DeviceId,
    /// `byte_offset`, a `u64`.
    ByteOffset,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// Arithmetic negation (wrapping for integers).
    Neg,
    /// Logical not (bool) .
    Not,
    /// Bitwise not (integers).
    BitNot,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`, wrapping for integers.
    Add,
    /// `-`, wrapping for integers.
    Sub,
    /// `*`, wrapping for integers.
    Mul,
    /// `/`: truncating for integers (raises on zero), IEEE for floats.
    Div,
    /// `%`: truncating remainder, sign of the dividend (integers only; raises on zero).
    Rem,
    /// `floordiv`: rounds toward negative infinity (integers only; raises on zero).
    FloorDiv,
    /// `floormod`: sign of the divisor (integers only; raises on zero).
    FloorMod,
    /// `ceil_div`: rounds toward positive infinity (integers only; raises on zero).
    CeilDiv,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `&` (integers).
    BitAnd,
    /// `|` (integers).
    BitOr,
    /// `^` (integers).
    BitXor,
    /// `<<` (integers; the amount is taken modulo the bit width).
    Shl,
    /// `>>`, arithmetic for signed, logical for unsigned (amount modulo the bit width).
    Shr,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `&&` on bools, short-circuit.
    And,
    /// `||` on bools, short-circuit.
    Or,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Integer constant. For unsigned types `value` holds the bit pattern (`u64::MAX` is -1).
    Int {
        /// Value.
        value: i64,
        /// Type; the value must fit.
        ty: IntType,
    },
    /// Float constant, as the bits of an `f64` (for `f32`, `f16` and `bf16`, a value exactly
    /// representable in that type, widened exactly; see [`half`](super::super::half)).
    Float {
        /// `f64::to_bits` of the value.
        bits: u64,
        /// Type.
        ty: FloatType,
    },
    /// `true` / `false`.
    Bool(bool),
    /// A string literal ([`Type::Str`](super::Type::Str)); as an extern `ptr` argument, a NUL-terminated static string.
    Str(String),
    /// A parameter, tuple element, symbolic variable, `let` binding or loop variable.
    Var(String),
    /// A field of a tensor parameter.
    Field {
        /// Tensor parameter name.
        tensor: String,
        /// Field.
        field: TensorField,
    },
    /// Unary operation.
    Unary {
        /// Operator.
        op: UnOp,
        /// Operand.
        arg: Box<Expr>,
    },
    /// Binary operation.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand, same type as `lhs`.
        rhs: Box<Expr>,
    },
    /// `select(cond, a, b)`: both arms evaluated.
    Select {
        /// A bool.
        cond: Box<Expr>,
        /// Value when true.
        then_value: Box<Expr>,
        /// Value when false, same type.
        else_value: Box<Expr>,
    },
    /// Conversion. Between integers: truncation or extension by the source's signedness.
    /// Float to integer: saturating, NaN is 0. Integer to float: nearest. To `f16`/`bf16`:
    /// nearest, ties to even (from floats only); from them: exact. `bool` to integer:
    /// 0/1; integer to `bool`: `!= 0`. `ptr` to and from `i64`/`u64`. From [`Type::Any`](super::Type::Any): a
    /// checked conversion raising a TypeError when the value does not have the target type.
    Cast {
        /// Target type.
        ty: ScalarType,
        /// Operand.
        arg: Box<Expr>,
    },
    /// `ptr + offset` bytes (`offset` is an `i64`).
    PtrOffset {
        /// Base pointer.
        ptr: Box<Expr>,
        /// Byte offset.
        offset: Box<Expr>,
    },
    /// `load<ty>(ptr)`.
    Load {
        /// Loaded type.
        ty: ScalarType,
        /// Address.
        ptr: Box<Expr>,
    },
    /// Whether an optional parameter or an Any value is None.
    IsNone(String),
}
