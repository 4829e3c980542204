//! DLPack: versions, devices, data types and tensors (`dlpack/dlpack.h`, DLPack 1.3).

use core::ffi::{c_char, c_int, c_void};

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// DLPack version this runtime produces (`DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION`).
pub const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 3 };

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// `DLDeviceType` code.
    pub device_type: i32,
    /// Device ordinal.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Number of lanes.
    pub lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// Data pointer (opaque for non-CPU devices).
    pub data: *mut c_void,
    /// Device.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// Shape, `ndim` entries.
    pub shape: *mut i64,
    /// Strides in elements, `ndim` entries; NULL means compact row-major.
    pub strides: *mut i64,
    /// Offset in bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (unversioned DLPack).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Producer context.
    pub manager_ctx: *mut c_void,
    /// Producer deleter, called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 2;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 4;

/// `DLManagedTensorVersioned`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// DLPack version of the producer.
    pub version: DLPackVersion,
    /// Producer context.
    pub manager_ctx: *mut c_void,
    /// Producer deleter, called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// `DLPackManagedTensorAllocator`.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: Option<
            unsafe extern "C" fn(
                error_ctx: *mut c_void,
                kind: *const c_char,
                message: *const c_char,
            ),
        >,
    ) -> c_int,
>;
