//! Tensor specs: what a tensor parameter is checked against (dtype, shape, strides, device,
//! byte offset, alignment, index type).

use safecall_runtime::abi::DLDataType;

use super::scalar::IntType;

/// Everything a tensor parameter is checked against.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    /// Element type; `None` accepts any.
    pub dtype: Option<DLDataType>,
    /// The dimensions, or any rank.
    pub shape: TensorShape,
    /// Stride requirements.
    pub strides: Strides,
    /// The device type accepted: any, a DLPack code, or the other tensors'.
    pub device_type: DeviceTypePolicy,
    /// How the device id relates to the other tensors'.
    pub device_id: DeviceIdPolicy,
    /// Whether a non-zero `byte_offset` is accepted.
    pub byte_offset: ByteOffsetPolicy,
    /// Required alignment in bytes of `data + byte_offset` (a power of two).
    pub alignment: Option<u32>,
    /// When set, the element count (product of dims) must fit this signed or unsigned
    /// index type (e.g. `i32` for kernels that index with 32-bit integers).
    pub index_type: Option<IntType>,
}

impl TensorSpec {
    /// A spec of this dtype and shape with the defaults of every other requirement: compact
    /// strides, any device type, the device id of the other tensors, a zero byte offset, no
    /// alignment and no index type.
    pub fn new(dtype: Option<DLDataType>, shape: Vec<Dim>) -> TensorSpec {
        TensorSpec {
            dtype,
            shape: TensorShape::Dims(shape),
            strides: Strides::Compact,
            device_type: DeviceTypePolicy::Any,
            device_id: DeviceIdPolicy::Same,
            byte_offset: ByteOffsetPolicy::Zero,
            alignment: None,
            index_type: None,
        }
    }
}

/// The shape requirement of a tensor parameter (`(d0, d1, ...)` or `any` in the text form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorShape {
    /// One entry per dimension (so `ndim` is their count).
    Dims(Vec<Dim>),
    /// Any number of dimensions of any extents (`tensor[any, ...]`): only `x.ndim`, not
    /// `x.shape[i]`, is known to the body, and the strides must be `any`.
    AnyRank,
}

impl TensorShape {
    /// The declared dimensions (none for [`TensorShape::AnyRank`]).
    pub fn dims(&self) -> &[Dim] {
        match self {
            TensorShape::Dims(dims) => dims,
            TensorShape::AnyRank => &[],
        }
    }

    /// The number of dimensions, when fixed.
    pub fn rank(&self) -> Option<usize> {
        match self {
            TensorShape::Dims(dims) => Some(dims.len()),
            TensorShape::AnyRank => None,
        }
    }
}

/// A dimension (or stride) in a tensor spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// Exactly this value.
    Const(i64),
    /// A symbolic variable.
    Var(String),
}

/// Stride requirements of a tensor parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strides {
    /// Row-major compact (NULL strides or strides equal to the compact ones; dims of extent 1
    /// and tensors with zero elements are exempt).
    Compact,
    /// Any strides; read them with [`TensorField::Stride`](super::TensorField::Stride).
    Any,
    /// One entry per dimension, each a constant or a symbolic variable (NULL strides are read
    /// as the compact ones).
    Exact(Vec<Dim>),
}

/// The device type a tensor parameter accepts (`device=` in the text form).
///
/// The device *id* is a separate requirement ([`DeviceIdPolicy`], `device_id=`): with the
/// default `device=any`, a CPU tensor and a CUDA tensor that both have device id 0 pass
/// together. `device=same` on every tensor (with the default `device_id=same`) asks for one
/// device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceTypePolicy {
    /// Any device type (`device=any`, the default).
    Any,
    /// Exactly this DLPack device type code (`device=cuda`, `device=2`; see
    /// `safecall_runtime::abi::device_type`).
    Code(i32),
    /// The device type of every other tensor with this policy (`device=same`): the first
    /// present one binds it, the later ones must match.
    Same,
}

impl DeviceTypePolicy {
    /// The required code, for [`DeviceTypePolicy::Code`].
    pub fn code(self) -> Option<i32> {
        match self {
            DeviceTypePolicy::Code(code) => Some(code),
            DeviceTypePolicy::Any | DeviceTypePolicy::Same => None,
        }
    }
}

/// Device-id relation between tensor parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceIdPolicy {
    /// Same device id as every other tensor with this policy.
    Same,
    /// Any device id.
    Free,
    /// Binds (or must match) a symbolic variable.
    Var(String),
}

/// Whether `byte_offset` may be non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOffsetPolicy {
    /// `byte_offset` must be 0.
    Zero,
    /// Any `byte_offset` (read it with [`TensorField::ByteOffset`](super::TensorField::ByteOffset)).
    Any,
}
