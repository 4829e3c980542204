//! The builder API: how a compiler makes IR without building strings.
//!
//! - [`ModuleBuilder`] collects externs, imported modules and functions into a [`Module`].
//! - [`FunctionBuilder`] declares parameters ([`FunctionBuilder::param`],
//!   [`FunctionBuilder::tensor`]), constraints and the return type; it derefs to a
//!   [`BlockBuilder`] for the body, whose `if`/`for` methods take closures for nested blocks.
//! - Expressions are [`Expr`] values: constructors ([`int`], [`float32`], [`var`], ...),
//!   operators (`+ - * / % & | ^ << >>`, unary `-` and `!`, also with an `i64` right-hand side),
//!   and methods ([`Expr::lt`], [`Expr::cast`], [`Expr::ceil_div`], ...). [`TensorRef`] reads
//!   tensor fields: `x.shape(0)`, `x.data()`.
//! - [`TensorSpecBuilder`] makes tensor specs with defaults: any dtype until set, compact
//!   strides, any device type, device id `Same`, byte offset `Zero`, no alignment, no index type.
//!
//! The builder does not check anything; run [`verify`](super::verify::verify) (or
//! [`ModuleBuilder::build_verified`]) before lowering.
//!
//! ```
//! use safecall::ir::build::*;
//! use safecall::ir::ErrorConvention;
//! use safecall_runtime::abi::device_type;
//!
//! let mut m = ModuleBuilder::new("kernels");
//! m.extern_fn("launch", [PTR, PTR, I64, PTR], Some(I32), ErrorConvention::NonZeroIsRaised);
//!
//! let mut f = FunctionBuilder::new("scale");
//! f.doc("y = 2 * x on the GPU.");
//! let cuda = || TensorSpecBuilder::new(["n"]).dtype_name("float32").device(device_type::CUDA);
//! let x = f.tensor("x", cuda());
//! let y = f.tensor("y", cuda());
//! f.divisible("n", 4);
//! f.assert(x.shape(0).gt(0), "ValueError", ["empty input of length ".into(), x.shape(0).into()]);
//! let grid = f.let_("grid", x.shape(0).ceil_div(int(256)));
//! let stream = f.get_stream("stream", x.device_type(), x.device_id());
//! f.for_range("i", int(0), int(2), |b, i| {
//!     b.if_then(i.equals(1), |t| {
//!         t.call_extern("launch", [x.data(), y.data(), grid.clone(), stream.clone()]);
//!     });
//! });
//! m.function(f.finish());
//!
//! let module = m.build_verified().expect("valid IR");
//! assert!(safecall::ir::print::print(&module).contains("let grid = ceil_div(x.shape[0], 256);"));
//! ```

use std::ops;

use safecall_runtime::abi::DLDataType;
use safecall_runtime::dtype::{self, DTypeParseError};

use super::model::*;
use super::verify::{VerifiedModule, VerifyError};

mod launch;
pub use launch::LaunchBuilder;

/// `bool`.
pub const BOOL: ScalarType = ScalarType::Bool;
/// `i8`.
pub const I8: ScalarType = ScalarType::Int(IntType::I8);
/// `i16`.
pub const I16: ScalarType = ScalarType::Int(IntType::I16);
/// `i32`.
pub const I32: ScalarType = ScalarType::Int(IntType::I32);
/// `i64`.
pub const I64: ScalarType = ScalarType::Int(IntType::I64);
/// `u8`.
pub const U8: ScalarType = ScalarType::Int(IntType::U8);
/// `u16`.
pub const U16: ScalarType = ScalarType::Int(IntType::U16);
/// `u32`.
pub const U32: ScalarType = ScalarType::Int(IntType::U32);
/// `u64`.
pub const U64: ScalarType = ScalarType::Int(IntType::U64);
/// `f32`.
pub const F32: ScalarType = ScalarType::Float(FloatType::F32);
/// `f64`.
pub const F64: ScalarType = ScalarType::Float(FloatType::F64);
/// `ptr`.
pub const PTR: ScalarType = ScalarType::Ptr;

// ---- expression constructors ------------------------------------------------------------

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
        bits: super::syntax::f32_bits_to_f64(value.to_bits()),
        ty: FloatType::F32,
    }
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

impl From<&TensorRef> for Expr {
    /// The tensor parameter itself (for packed-call arguments and returns).
    fn from(t: &TensorRef) -> Expr {
        t.expr()
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

// ---- tensors ----------------------------------------------------------------------------

/// A tensor parameter by name, to read its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRef {
    name: String,
}

impl TensorRef {
    /// The tensor parameter `name`.
    pub fn new(name: impl Into<String>) -> Self {
        TensorRef { name: name.into() }
    }

    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tensor itself as an expression.
    pub fn expr(&self) -> Expr {
        var(self.name.clone())
    }

    fn field(&self, f: TensorField) -> Expr {
        field(self.name.clone(), f)
    }

    /// `x.data` (`ptr`, without `byte_offset`).
    pub fn data(&self) -> Expr {
        self.field(TensorField::Data)
    }

    /// `x.shape[i]` (`i64`).
    pub fn shape(&self, i: usize) -> Expr {
        self.field(TensorField::Shape(i))
    }

    /// `x.strides[i]` (`i64`, in elements).
    pub fn stride(&self, i: usize) -> Expr {
        self.field(TensorField::Stride(i))
    }

    /// `x.ndim` (`i32`).
    pub fn ndim(&self) -> Expr {
        self.field(TensorField::NDim)
    }

    /// `x.dtype`.
    pub fn dtype(&self) -> Expr {
        self.field(TensorField::DType)
    }

    /// `x.device`.
    pub fn device(&self) -> Expr {
        self.field(TensorField::Device)
    }

    /// `x.device_type` (`i32`).
    pub fn device_type(&self) -> Expr {
        self.field(TensorField::DeviceType)
    }

    /// `x.device_id` (`i32`).
    pub fn device_id(&self) -> Expr {
        self.field(TensorField::DeviceId)
    }

    /// `x.byte_offset` (`u64`).
    pub fn byte_offset(&self) -> Expr {
        self.field(TensorField::ByteOffset)
    }
}

impl From<i64> for Dim {
    /// A constant dimension.
    fn from(v: i64) -> Dim {
        Dim::Const(v)
    }
}

impl From<i32> for Dim {
    /// A constant dimension.
    fn from(v: i32) -> Dim {
        Dim::Const(i64::from(v))
    }
}

impl From<&str> for Dim {
    /// A symbolic variable.
    fn from(v: &str) -> Dim {
        Dim::Var(v.to_owned())
    }
}

impl From<String> for Dim {
    /// A symbolic variable.
    fn from(v: String) -> Dim {
        Dim::Var(v)
    }
}

/// Parses a dtype name (`float32`, `int8x4`, ...); panics on a bad name. See
/// [`safecall_runtime::dtype::parse`] for a fallible version.
pub fn dtype(name: &str) -> DLDataType {
    match dtype::parse(name) {
        Ok(d) => d,
        Err(e) => panic!("bad dtype `{name}`: {e}"),
    }
}

/// Makes a [`TensorSpec`] with defaults: any dtype, compact strides, any device type,
/// device id [`DeviceIdPolicy::Same`], byte offset [`ByteOffsetPolicy::Zero`], no alignment
/// requirement, no index type.
///
/// ```
/// use safecall::ir::build::TensorSpecBuilder;
/// use safecall::ir::{Dim, Strides};
/// let spec = TensorSpecBuilder::new([Dim::from("m"), Dim::from(4)])
///     .dtype_name("float16")
///     .strides([Dim::from("sm"), Dim::from(1)])
///     .alignment(16)
///     .build();
/// assert_eq!(spec.strides, Strides::Exact(vec![Dim::Var("sm".into()), Dim::Const(1)]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpecBuilder {
    spec: TensorSpec,
}

impl TensorSpecBuilder {
    /// A spec of this shape (constant dims or symbolic variable names).
    pub fn new<D: Into<Dim>>(shape: impl IntoIterator<Item = D>) -> Self {
        TensorSpecBuilder {
            spec: TensorSpec {
                dtype: None,
                shape: shape.into_iter().map(Into::into).collect(),
                strides: Strides::Compact,
                device_type: None,
                device_id: DeviceIdPolicy::Same,
                byte_offset: ByteOffsetPolicy::Zero,
                alignment: None,
                index_type: None,
            },
        }
    }

    /// Requires this dtype.
    pub fn dtype(mut self, dtype: DLDataType) -> Self {
        self.spec.dtype = Some(dtype);
        self
    }

    /// Requires the dtype of this name; panics on a bad name (see [`Self::try_dtype_name`]).
    pub fn dtype_name(self, name: &str) -> Self {
        self.dtype(dtype(name))
    }

    /// Requires the dtype of this name.
    pub fn try_dtype_name(self, name: &str) -> Result<Self, DTypeParseError> {
        Ok(self.dtype(dtype::parse(name)?))
    }

    /// Accepts any dtype (the default).
    pub fn any_dtype(mut self) -> Self {
        self.spec.dtype = None;
        self
    }

    /// Requires these strides (constants or symbolic variables), one per dimension.
    pub fn strides<D: Into<Dim>>(mut self, strides: impl IntoIterator<Item = D>) -> Self {
        self.spec.strides = Strides::Exact(strides.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any strides.
    pub fn any_strides(mut self) -> Self {
        self.spec.strides = Strides::Any;
        self
    }

    /// Requires this DLPack device type (see `safecall_runtime::abi::device_type`).
    pub fn device(mut self, device_type: i32) -> Self {
        self.spec.device_type = Some(device_type);
        self
    }

    /// Sets the device-id policy.
    pub fn device_id(mut self, policy: DeviceIdPolicy) -> Self {
        self.spec.device_id = policy;
        self
    }

    /// Binds the device id to a symbolic variable.
    pub fn device_id_var(self, name: impl Into<String>) -> Self {
        self.device_id(DeviceIdPolicy::Var(name.into()))
    }

    /// Accepts a non-zero `byte_offset`.
    pub fn any_byte_offset(mut self) -> Self {
        self.spec.byte_offset = ByteOffsetPolicy::Any;
        self
    }

    /// Requires `data + byte_offset` to be aligned to `bytes` (a power of two).
    pub fn alignment(mut self, bytes: u32) -> Self {
        self.spec.alignment = Some(bytes);
        self
    }

    /// Requires the element count to fit `ty`.
    pub fn index_type(mut self, ty: IntType) -> Self {
        self.spec.index_type = Some(ty);
        self
    }

    /// The spec.
    pub fn build(self) -> TensorSpec {
        self.spec
    }
}

impl From<TensorSpecBuilder> for TensorSpec {
    fn from(b: TensorSpecBuilder) -> TensorSpec {
        b.spec
    }
}

impl From<TensorSpecBuilder> for ParamType {
    fn from(b: TensorSpecBuilder) -> ParamType {
        ParamType::Tensor(b.spec)
    }
}

impl From<TensorSpec> for ParamType {
    fn from(s: TensorSpec) -> ParamType {
        ParamType::Tensor(s)
    }
}

impl ParamType {
    /// `optional[self]`.
    pub fn optional(self) -> ParamType {
        ParamType::Optional(Box::new(self))
    }
}

impl From<&str> for MessagePart {
    /// Literal text.
    fn from(s: &str) -> MessagePart {
        MessagePart::Text(s.to_owned())
    }
}

impl From<String> for MessagePart {
    /// Literal text.
    fn from(s: String) -> MessagePart {
        MessagePart::Text(s)
    }
}

impl From<Expr> for MessagePart {
    /// A value formatted at run time.
    fn from(e: Expr) -> MessagePart {
        MessagePart::Value(e)
    }
}

// ---- statements -------------------------------------------------------------------------

/// A sequence of statements: a function body or a nested block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockBuilder {
    stmts: Vec<Stmt>,
}

impl BlockBuilder {
    /// An empty block.
    pub fn new() -> Self {
        Self::default()
    }

    /// The statements so far.
    pub fn stmts(&self) -> &[Stmt] {
        &self.stmts
    }

    /// The statements.
    pub fn into_stmts(self) -> Vec<Stmt> {
        self.stmts
    }

    /// Appends a statement.
    pub fn push(&mut self, stmt: Stmt) -> &mut Self {
        self.stmts.push(stmt);
        self
    }

    fn nested(f: impl FnOnce(&mut BlockBuilder)) -> Vec<Stmt> {
        let mut b = BlockBuilder::new();
        f(&mut b);
        b.stmts
    }

    /// `let name = value;`; returns the new name as an expression.
    pub fn let_(&mut self, name: &str, value: impl Into<Expr>) -> Expr {
        self.stmts.push(Stmt::Let {
            name: name.to_owned(),
            mutable: false,
            value: value.into(),
        });
        var(name)
    }

    /// `let mut name = value;`; returns the new name as an expression.
    pub fn let_mut(&mut self, name: &str, value: impl Into<Expr>) -> Expr {
        self.stmts.push(Stmt::Let {
            name: name.to_owned(),
            mutable: true,
            value: value.into(),
        });
        var(name)
    }

    /// `name = value;` (a `let mut` binding).
    pub fn assign(&mut self, name: &str, value: impl Into<Expr>) -> &mut Self {
        self.push(Stmt::Assign {
            name: name.to_owned(),
            value: value.into(),
        })
    }

    /// `store<ty>(ptr, value);`.
    pub fn store(
        &mut self,
        ty: ScalarType,
        ptr: impl Into<Expr>,
        value: impl Into<Expr>,
    ) -> &mut Self {
        self.push(Stmt::Store {
            ty,
            ptr: ptr.into(),
            value: value.into(),
        })
    }

    /// `if cond { then }`.
    pub fn if_then(
        &mut self,
        cond: impl Into<Expr>,
        then: impl FnOnce(&mut BlockBuilder),
    ) -> &mut Self {
        let then_body = Self::nested(then);
        self.push(Stmt::If {
            cond: cond.into(),
            then_body,
            else_body: vec![],
        })
    }

    /// `if cond { then } else { otherwise }`.
    pub fn if_else(
        &mut self,
        cond: impl Into<Expr>,
        then: impl FnOnce(&mut BlockBuilder),
        otherwise: impl FnOnce(&mut BlockBuilder),
    ) -> &mut Self {
        let then_body = Self::nested(then);
        let else_body = Self::nested(otherwise);
        self.push(Stmt::If {
            cond: cond.into(),
            then_body,
            else_body,
        })
    }

    /// `for var in start..end { body }`; the closure gets the loop variable.
    pub fn for_range(
        &mut self,
        var_name: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        body: impl FnOnce(&mut BlockBuilder, Expr),
    ) -> &mut Self {
        self.for_range_step(var_name, start, end, 1, body)
    }

    /// `for var in start..end step step { body }`.
    pub fn for_range_step(
        &mut self,
        var_name: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        step: i64,
        body: impl FnOnce(&mut BlockBuilder, Expr),
    ) -> &mut Self {
        let mut b = BlockBuilder::new();
        body(&mut b, var(var_name));
        self.push(Stmt::For {
            var: var_name.to_owned(),
            start: start.into(),
            end: end.into(),
            step,
            body: b.stmts,
        })
    }

    /// `assert cond else kind(message...);`: raise `kind` (e.g. `ValueError`) with the message
    /// unless `cond` holds. Message parts are text (`&str`) or values ([`Expr`]).
    pub fn assert(
        &mut self,
        cond: impl Into<Expr>,
        kind: &str,
        message: impl IntoIterator<Item = MessagePart>,
    ) -> &mut Self {
        self.push(Stmt::Assert {
            cond: cond.into(),
            kind: kind.to_owned(),
            message: message.into_iter().collect(),
        })
    }

    /// `call func(args);` of a declared extern C function, ignoring its result.
    pub fn call_extern(&mut self, func: &str, args: impl IntoIterator<Item = Expr>) -> &mut Self {
        self.push(Stmt::CallExtern {
            dest: None,
            func: func.to_owned(),
            args: args.into_iter().collect(),
        })
    }

    /// `let dest = call func(args);`; returns `dest` as an expression.
    pub fn call_extern_into(
        &mut self,
        dest: &str,
        func: &str,
        args: impl IntoIterator<Item = Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::CallExtern {
            dest: Some(dest.to_owned()),
            func: func.to_owned(),
            args: args.into_iter().collect(),
        });
        var(dest)
    }

    /// `call_packed callee(args);`, ignoring the result.
    pub fn call_packed(
        &mut self,
        callee: Callee,
        args: impl IntoIterator<Item = Expr>,
    ) -> &mut Self {
        self.push(Stmt::CallPacked {
            dest: None,
            callee,
            args: args.into_iter().collect(),
        })
    }

    /// `let dest = call_packed callee(args);` (an `any`); returns `dest` as an expression.
    pub fn call_packed_into(
        &mut self,
        dest: &str,
        callee: Callee,
        args: impl IntoIterator<Item = Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::CallPacked {
            dest: Some(dest.to_owned()),
            callee,
            args: args.into_iter().collect(),
        });
        var(dest)
    }

    /// `let dest = get_stream(device_type, device_id);` (a `ptr`); returns `dest`.
    pub fn get_stream(
        &mut self,
        dest: &str,
        device_type: impl Into<Expr>,
        device_id: impl Into<Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::GetStream {
            dest: dest.to_owned(),
            device_type: device_type.into(),
            device_id: device_id.into(),
        });
        var(dest)
    }

    /// `launch BINARY.KERNEL[...](args);` (see [`LaunchBuilder`]).
    pub fn launch(&mut self, launch: impl Into<Launch>) -> &mut Self {
        self.push(Stmt::Launch(Box::new(launch.into())))
    }

    /// `return value;`.
    pub fn ret(&mut self, value: impl Into<Expr>) -> &mut Self {
        self.push(Stmt::Return(Some(value.into())))
    }

    /// `return;` (for functions returning none).
    pub fn ret_none(&mut self) -> &mut Self {
        self.push(Stmt::Return(None))
    }
}

// ---- functions and modules --------------------------------------------------------------

/// Builds a [`Function`]. Derefs to the [`BlockBuilder`] of its body.
///
/// ```
/// use safecall::ir::build::*;
/// use safecall::ir::{IntType, ParamType, RetType};
/// let mut f = FunctionBuilder::new("clamp");
/// let n = f.param("n", ParamType::Int(IntType::I64));
/// f.returns(RetType::Scalar(I64));
/// f.ret(n.min(int(100)).max(int(0)));
/// let func = f.finish();
/// assert_eq!(func.params.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct FunctionBuilder {
    func: Function,
    body: BlockBuilder,
}

impl FunctionBuilder {
    /// A function with no parameters, returning none, with an empty body.
    pub fn new(name: &str) -> Self {
        FunctionBuilder {
            func: Function {
                name: name.to_owned(),
                doc: String::new(),
                params: vec![],
                constraints: vec![],
                ret: RetType::None,
                body: vec![],
            },
            body: BlockBuilder::new(),
        }
    }

    /// Sets the doc string.
    pub fn doc(&mut self, doc: &str) -> &mut Self {
        self.func.doc = doc.to_owned();
        self
    }

    /// Sets the return type.
    pub fn returns(&mut self, ret: RetType) -> &mut Self {
        self.func.ret = ret;
        self
    }

    /// Adds a parameter; returns it as an expression.
    pub fn param(&mut self, name: &str, ty: impl Into<ParamType>) -> Expr {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ty.into(),
        });
        var(name)
    }

    /// Adds a tensor parameter.
    pub fn tensor(&mut self, name: &str, spec: impl Into<TensorSpec>) -> TensorRef {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ParamType::Tensor(spec.into()),
        });
        TensorRef::new(name)
    }

    /// Adds an optional tensor parameter (a tensor or None).
    pub fn optional_tensor(&mut self, name: &str, spec: impl Into<TensorSpec>) -> TensorRef {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ParamType::Tensor(spec.into()).optional(),
        });
        TensorRef::new(name)
    }

    /// Adds the constraint `var % divisor == 0`.
    pub fn divisible(&mut self, var: &str, divisor: u64) -> &mut Self {
        self.func.constraints.push(Constraint::Divisible {
            var: var.to_owned(),
            divisor,
        });
        self
    }

    /// The function.
    pub fn finish(self) -> Function {
        Function {
            body: self.body.into_stmts(),
            ..self.func
        }
    }
}

impl ops::Deref for FunctionBuilder {
    type Target = BlockBuilder;
    fn deref(&self) -> &BlockBuilder {
        &self.body
    }
}

impl ops::DerefMut for FunctionBuilder {
    fn deref_mut(&mut self) -> &mut BlockBuilder {
        &mut self.body
    }
}

/// Builds a [`Module`].
#[derive(Clone, Debug)]
pub struct ModuleBuilder {
    module: Module,
}

impl ModuleBuilder {
    /// An empty module.
    pub fn new(name: &str) -> Self {
        ModuleBuilder {
            module: Module {
                name: name.to_owned(),
                externs: vec![],
                imported_modules: vec![],
                device_binaries: vec![],
                imports: vec![],
                system_lib_prefix: None,
                functions: vec![],
            },
        }
    }

    /// Registers functions as system-library symbols `__tvm_ffi_<prefix><name>`.
    pub fn system_lib_prefix(&mut self, prefix: &str) -> &mut Self {
        self.module.system_lib_prefix = Some(prefix.to_owned());
        self
    }

    /// Declares an extern C function.
    pub fn extern_fn(
        &mut self,
        name: &str,
        params: impl IntoIterator<Item = ScalarType>,
        ret: Option<ScalarType>,
        errors: ErrorConvention,
    ) -> &mut Self {
        self.module.externs.push(ExternFn {
            name: name.to_owned(),
            params: params.into_iter().collect(),
            ret,
            errors,
        });
        self
    }

    /// Embeds a module in the library blob.
    pub fn imported_module<'a>(
        &mut self,
        label: &str,
        kind: &str,
        payload: impl Into<Vec<u8>>,
        imports: impl IntoIterator<Item = &'a str>,
    ) -> &mut Self {
        self.module.imported_modules.push(ImportedModule {
            label: label.to_owned(),
            kind: kind.to_owned(),
            payload: payload.into(),
            imports: imports.into_iter().map(str::to_owned).collect(),
        });
        self
    }

    /// Embeds a GPU device binary whose `kernels` [`Stmt::Launch`] can launch.
    pub fn device_binary<'a>(
        &mut self,
        name: &str,
        format: BinaryFormat,
        data: impl Into<Vec<u8>>,
        kernels: impl IntoIterator<Item = &'a str>,
    ) -> &mut Self {
        self.module.device_binaries.push(DeviceBinary {
            name: name.to_owned(),
            format,
            data: data.into(),
            kernels: kernels.into_iter().map(str::to_owned).collect(),
        });
        self
    }

    /// Makes this library import the imported module `label` directly.
    pub fn import(&mut self, label: &str) -> &mut Self {
        self.module.imports.push(label.to_owned());
        self
    }

    /// Adds a function.
    pub fn function(&mut self, f: Function) -> &mut Self {
        self.module.functions.push(f);
        self
    }

    /// Builds a function with a closure and adds it.
    pub fn build_function(
        &mut self,
        name: &str,
        build: impl FnOnce(&mut FunctionBuilder),
    ) -> &mut Self {
        let mut f = FunctionBuilder::new(name);
        build(&mut f);
        self.function(f.finish())
    }

    /// The module (unverified).
    pub fn build(&self) -> Module {
        self.module.clone()
    }

    /// The module, verified.
    pub fn build_verified(&self) -> Result<VerifiedModule, Vec<VerifyError>> {
        VerifiedModule::new(self.build())
    }
}
