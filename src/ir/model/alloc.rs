//! Allocation: `let y = empty((m, n), float16, x.device);` allocates a tensor through the
//! environment allocator (`TVMFFIEnvTensorAlloc`).

use safecall_runtime::abi::DLDataType;

use super::expr::Expr;

/// `let dest = empty((d0, d1, ...), dtype, device);`: a compact row-major tensor with
/// `byte_offset` 0 from the caller's environment allocator. `dest` is a tensor in the body;
/// it is released when the function returns unless it is returned (ownership then moves to
/// the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct Alloc {
    /// The new tensor's name.
    pub dest: String,
    /// One `i64` expression per dimension (`ndim` is the length).
    pub shape: Vec<Expr>,
    /// Element type.
    pub dtype: DLDataType,
    /// Where the tensor lives.
    pub device: AllocDevice,
}

/// The device of an [`Alloc`].
#[derive(Clone, Debug, PartialEq)]
pub enum AllocDevice {
    /// A `device` value (`x.device`, a `device` parameter or binding).
    Value(Expr),
    /// `device(TYPE, ID)`: a DLPack device type and a device id, both `i32`.
    Parts {
        /// DLPack device type (`1` CPU, `2` CUDA, ...).
        device_type: Expr,
        /// Device id.
        device_id: Expr,
    },
}

impl AllocDevice {
    /// The keyword of the [`AllocDevice::Parts`] form: `device(TYPE, ID)`.
    pub const PARTS_KEYWORD: &'static str = "device";
}

impl Alloc {
    /// The keyword of the statement: `empty`.
    pub const KEYWORD: &'static str = "empty";

    /// The statement's operands in order: the dims, then the device (one value, or its type
    /// and id). The verifier, the source map and the parser's spans enumerate this.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let device: Vec<&Expr> = match &self.device {
            AllocDevice::Value(e) => vec![e],
            AllocDevice::Parts {
                device_type,
                device_id,
            } => vec![device_type, device_id],
        };
        self.shape.iter().chain(device)
    }

    /// The size in bytes of one element: `ceil(bits * lanes / 8)`.
    pub fn element_bytes(&self) -> u64 {
        (u64::from(self.dtype.bits) * u64::from(self.dtype.lanes)).div_ceil(8)
    }
}
