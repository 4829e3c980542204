//! Tensors: reading a tensor parameter's fields ([`TensorRef`]) and making tensor specs
//! ([`TensorSpecBuilder`]).

use safecall_runtime::abi::DLDataType;
use safecall_runtime::dtype::{self, DTypeParseError};

use super::super::model::*;
use super::expr::{field, var};

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
            spec: TensorSpec::new(None, shape.into_iter().map(Into::into).collect()),
        }
    }

    /// A spec of any rank (`tensor[any, ...]`), with any strides (the only strides a tensor
    /// of any rank may have).
    pub fn any_rank() -> Self {
        let mut spec = TensorSpec::new(None, vec![]);
        spec.shape = TensorShape::AnyRank;
        spec.strides = Strides::Any;
        TensorSpecBuilder { spec }
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
        self.spec.device_type = DeviceTypePolicy::Code(device_type);
        self
    }

    /// Requires the device type of the other tensors built with this (`device=same`): with
    /// the default device-id policy, all such tensors are on one device.
    pub fn same_device_type(mut self) -> Self {
        self.spec.device_type = DeviceTypePolicy::Same;
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

impl From<&TensorRef> for Expr {
    /// The tensor parameter itself (for packed-call arguments and returns).
    fn from(t: &TensorRef) -> Expr {
        t.expr()
    }
}
