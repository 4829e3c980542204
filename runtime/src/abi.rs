//! The TVM-FFI ABI: every C layout, type index and flag of `tvm/ffi/c_api.h`,
//! `tvm/ffi/extra/c_env_api.h` and `dlpack/dlpack.h` (apache-tvm-ffi 0.1.x, DLPack 1.3).
//!
//! This module is the **one place** where ABI offsets live. The runtime uses the
//! `#[repr(C)]` structs directly; code generators (the `safecall` crate's lowering)
//! use the `*_OFFSET` / `*_SIZE` constants, which are derived from these structs with
//! `core::mem::offset_of!` and so can never drift from them. `tests/layout.rs` checks
//! every size and offset against a C program compiled with the real headers.

#![allow(non_camel_case_types, non_snake_case)]

use core::ffi::{c_char, c_int, c_void};
use core::mem::{offset_of, size_of};

// ---------------------------------------------------------------------------
// Type indices (`TVMFFITypeIndex`)
// ---------------------------------------------------------------------------

/// `TVMFFITypeIndex` values. POD values are below 64, objects from 64.
pub mod type_index {
    /// Any type (only used in type schemas).
    pub const ANY: i32 = -1;
    /// None / nullptr.
    pub const NONE: i32 = 0;
    /// POD int (`v_int64`).
    pub const INT: i32 = 1;
    /// POD bool (`v_int64` is 0 or 1).
    pub const BOOL: i32 = 2;
    /// POD float (`v_float64`).
    pub const FLOAT: i32 = 3;
    /// Opaque pointer (`v_ptr`).
    pub const OPAQUE_PTR: i32 = 4;
    /// `DLDataType` (`v_dtype`).
    pub const DATA_TYPE: i32 = 5;
    /// `DLDevice` (`v_device`).
    pub const DEVICE: i32 = 6;
    /// `DLTensor*` (`v_ptr`).
    pub const DL_TENSOR_PTR: i32 = 7;
    /// `const char*` (`v_c_str`).
    pub const RAW_STR: i32 = 8;
    /// `TVMFFIByteArray*` (`v_ptr`).
    pub const BYTE_ARRAY_PTR: i32 = 9;
    /// R-value reference to an object (`v_ptr` points at the object handle slot).
    pub const OBJECT_RVALUE_REF: i32 = 10;
    /// String of up to 7 bytes stored inline (`v_bytes`, length in `small_str_len`).
    pub const SMALL_STR: i32 = 11;
    /// Bytes of up to 7 bytes stored inline (`v_bytes`, length in `small_str_len`).
    pub const SMALL_BYTES: i32 = 12;
    /// Structural-mutation marker (no new value produced).
    pub const UNCHANGED: i32 = 13;
    /// First static object type index.
    pub const STATIC_OBJECT_BEGIN: i32 = 64;
    /// `ffi.Object`.
    pub const OBJECT: i32 = 64;
    /// `ffi.String`.
    pub const STR: i32 = 65;
    /// `ffi.Bytes`.
    pub const BYTES: i32 = 66;
    /// `ffi.Error`.
    pub const ERROR: i32 = 67;
    /// `ffi.Function`.
    pub const FUNCTION: i32 = 68;
    /// `ffi.Shape`.
    pub const SHAPE: i32 = 69;
    /// `ffi.Tensor`.
    pub const TENSOR: i32 = 70;
    /// `ffi.Array`.
    pub const ARRAY: i32 = 71;
    /// `ffi.Map`.
    pub const MAP: i32 = 72;
    /// `ffi.Module`.
    pub const MODULE: i32 = 73;
    /// `ffi.OpaquePyObject`.
    pub const OPAQUE_PY_OBJECT: i32 = 74;
    /// `ffi.List`.
    pub const LIST: i32 = 75;
    /// `ffi.Dict`.
    pub const DICT: i32 = 76;
    /// `ffi.VisitInterrupt`.
    pub const VISIT_INTERRUPT: i32 = 77;
    /// `ffi.BigInt`.
    pub const BIG_INT: i32 = 78;
    /// One past the last static object index.
    pub const STATIC_OBJECT_END: i32 = 79;
    /// First dynamically allocated type index.
    pub const DYN_OBJECT_BEGIN: i32 = 128;
}

/// Bits of the `flags` argument of an object deleter.
pub mod deleter_flags {
    /// The strong count reached zero: destroy the contents.
    pub const STRONG: i32 = 1;
    /// The weak count reached zero: free the memory.
    pub const WEAK: i32 = 2;
    /// Both at once.
    pub const BOTH: i32 = STRONG | WEAK;
}

/// `TVMFFIBacktraceUpdateMode`.
pub mod backtrace_update_mode {
    /// Replace the backtrace.
    pub const REPLACE: i32 = 0;
    /// Append to the backtrace.
    pub const APPEND: i32 = 1;
}

/// `TVMFFIFieldFlagBitMask` bits used by the runtime.
pub mod field_flags {
    /// The field is writable.
    pub const WRITABLE: i64 = 1 << 0;
    /// The field has a default value.
    pub const HAS_DEFAULT: i64 = 1 << 1;
    /// The method is static.
    pub const IS_STATIC_METHOD: i64 = 1 << 2;
    /// The field's `setter` is a Function object rather than a C function pointer.
    pub const SETTER_IS_FUNCTION_OBJ: i64 = 1 << 11;
}

/// DLPack device type codes (`DLDeviceType`).
pub mod device_type {
    /// CPU.
    pub const CPU: i32 = 1;
    /// CUDA.
    pub const CUDA: i32 = 2;
    /// Pinned CUDA host memory.
    pub const CUDA_HOST: i32 = 3;
    /// OpenCL.
    pub const OPENCL: i32 = 4;
    /// Vulkan.
    pub const VULKAN: i32 = 7;
    /// Metal.
    pub const METAL: i32 = 8;
    /// Verilog simulator.
    pub const VPI: i32 = 9;
    /// ROCm.
    pub const ROCM: i32 = 10;
    /// Pinned ROCm host memory.
    pub const ROCM_HOST: i32 = 11;
    /// Reserved extension device.
    pub const EXT_DEV: i32 = 12;
    /// CUDA managed memory.
    pub const CUDA_MANAGED: i32 = 13;
    /// oneAPI.
    pub const ONE_API: i32 = 14;
    /// WebGPU.
    pub const WEBGPU: i32 = 15;
    /// Hexagon DSP.
    pub const HEXAGON: i32 = 16;
    /// Microsoft MAIA.
    pub const MAIA: i32 = 17;
    /// AWS Trainium.
    pub const TRN: i32 = 18;
}

/// DLPack data type codes (`DLDataTypeCode`).
pub mod dtype_code {
    /// Signed integer.
    pub const INT: u8 = 0;
    /// Unsigned integer.
    pub const UINT: u8 = 1;
    /// IEEE float.
    pub const FLOAT: u8 = 2;
    /// Opaque handle.
    pub const OPAQUE_HANDLE: u8 = 3;
    /// bfloat.
    pub const BFLOAT: u8 = 4;
    /// Complex.
    pub const COMPLEX: u8 = 5;
    /// Boolean.
    pub const BOOL: u8 = 6;
    /// float8 e3m4.
    pub const FLOAT8_E3M4: u8 = 7;
    /// float8 e4m3.
    pub const FLOAT8_E4M3: u8 = 8;
    /// float8 e4m3b11fnuz.
    pub const FLOAT8_E4M3B11FNUZ: u8 = 9;
    /// float8 e4m3fn.
    pub const FLOAT8_E4M3FN: u8 = 10;
    /// float8 e4m3fnuz.
    pub const FLOAT8_E4M3FNUZ: u8 = 11;
    /// float8 e5m2.
    pub const FLOAT8_E5M2: u8 = 12;
    /// float8 e5m2fnuz.
    pub const FLOAT8_E5M2FNUZ: u8 = 13;
    /// float8 e8m0fnu.
    pub const FLOAT8_E8M0FNU: u8 = 14;
    /// float6 e2m3fn.
    pub const FLOAT6_E2M3FN: u8 = 15;
    /// float6 e3m2fn.
    pub const FLOAT6_E3M2FN: u8 = 16;
    /// float4 e2m1fn.
    pub const FLOAT4_E2M1FN: u8 = 17;
}

// ---------------------------------------------------------------------------
// DLPack
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// TVM-FFI core structs
// ---------------------------------------------------------------------------

/// `TVMFFIVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TVMFFIVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

/// The version of the TVM-FFI headers this ABI mirrors (0.1.16, shipped by the
/// `apache-tvm-ffi` 0.1.15.post2 wheel).
pub const TVM_FFI_VERSION: TVMFFIVersion = TVMFFIVersion {
    major: 0,
    minor: 1,
    patch: 16,
};

/// Object deleter: `void (*deleter)(void* self, int flags)`.
pub type TVMFFIObjectDeleter = Option<unsafe extern "C" fn(obj: *mut c_void, flags: c_int)>;

/// `TVMFFIObject`: the 24-byte header at the start of every object.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIObject {
    /// Strong count in the low 32 bits, weak count in the high 32 bits.
    pub combined_ref_count: u64,
    /// Type index of the object.
    pub type_index: i32,
    /// Padding (zero).
    pub padding: u32,
    /// Deleter, called with [`deleter_flags`].
    pub deleter: TVMFFIObjectDeleter,
}

/// The value union of [`TVMFFIAny`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union TVMFFIValue {
    /// Integers and bools.
    pub v_int64: i64,
    /// Floats.
    pub v_float64: f64,
    /// Pointers of any kind.
    pub v_ptr: *mut c_void,
    /// Raw C string.
    pub v_c_str: *const c_char,
    /// Object pointer.
    pub v_obj: *mut TVMFFIObject,
    /// Data type.
    pub v_dtype: DLDataType,
    /// Device.
    pub v_device: DLDevice,
    /// Inline bytes of small strings.
    pub v_bytes: [u8; 8],
    /// Raw 64 bits.
    pub v_uint64: u64,
}

/// `TVMFFIAny`: a 16-byte tagged value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIAny {
    /// A [`type_index`] value.
    pub type_index: i32,
    /// `zero_padding`, or `small_str_len` for SmallStr / SmallBytes.
    pub small_str_len: u32,
    /// The value.
    pub value: TVMFFIValue,
}

impl TVMFFIAny {
    /// The None value, all bits zero.
    pub const NONE: TVMFFIAny = TVMFFIAny {
        type_index: type_index::NONE,
        small_str_len: 0,
        value: TVMFFIValue { v_uint64: 0 },
    };
}

impl core::fmt::Debug for TVMFFIAny {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: every bit pattern of the 8-byte union is a valid u64.
        let bits = unsafe { self.value.v_uint64 };
        f.debug_struct("TVMFFIAny")
            .field("type_index", &self.type_index)
            .field("small_str_len", &self.small_str_len)
            .field("value", &format_args!("{bits:#018x}"))
            .finish()
    }
}

/// `TVMFFIByteArray`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIByteArray {
    /// Data pointer (not NUL-terminated in general).
    pub data: *const c_char,
    /// Length in bytes.
    pub size: usize,
}

/// `TVMFFIShapeCell`: payload of a Shape object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIShapeCell {
    /// Dimensions.
    pub data: *const i64,
    /// Number of dimensions.
    pub size: usize,
}

/// `TVMFFISeqCell`: payload of Array and List objects.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFISeqCell {
    /// First element (an array of `TVMFFIAny`).
    pub data: *mut c_void,
    /// Number of elements.
    pub size: i64,
    /// Capacity.
    pub capacity: i64,
    /// Frees `data`.
    pub data_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// `update_backtrace` of an error cell.
pub type TVMFFIUpdateBacktrace =
    Option<unsafe extern "C" fn(obj: *mut c_void, backtrace: *const TVMFFIByteArray, mode: i32)>;

/// `TVMFFIErrorCell`: payload of an Error object (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIErrorCell {
    /// Error kind, e.g. `ValueError`.
    pub kind: TVMFFIByteArray,
    /// Message.
    pub message: TVMFFIByteArray,
    /// Backtrace text.
    pub backtrace: TVMFFIByteArray,
    /// Replaces or appends to the backtrace.
    pub update_backtrace: TVMFFIUpdateBacktrace,
    /// Cause (an Error object) or NULL.
    pub cause_chain: *mut c_void,
    /// Extra context object or NULL.
    pub extra_context: *mut c_void,
}

/// `TVMFFISafeCallType`.
pub type TVMFFISafeCallType = unsafe extern "C" fn(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int;

/// `TVMFFIFunctionCell`: payload of a Function object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIFunctionCell {
    /// The safe-call entry point.
    pub safe_call: Option<TVMFFISafeCallType>,
    /// C++ fast path (unused by this runtime; NULL).
    pub cpp_call: *mut c_void,
}

/// `TVMFFIOpaqueObjectCell`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIOpaqueObjectCell {
    /// The foreign handle.
    pub handle: *mut c_void,
}

/// `TVMFFIObjectAllocHeader`: the header a runtime may place before an object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIObjectAllocHeader {
    /// Frees the allocation.
    pub delete_space: Option<unsafe extern "C" fn(ptr: *mut c_void)>,
}

/// `TVMFFICustomAllocator`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFICustomAllocator {
    /// Allocates `size` bytes at `alignment` for an object of `type_index`.
    pub allocate: Option<
        unsafe extern "C" fn(
            size: usize,
            alignment: usize,
            type_index: i32,
            ctx: *mut c_void,
        ) -> *mut c_void,
    >,
    /// Passed to `allocate`.
    pub context: *mut c_void,
}

/// `TVMFFIFieldGetter`.
pub type TVMFFIFieldGetter =
    Option<unsafe extern "C" fn(field: *mut c_void, result: *mut TVMFFIAny) -> c_int>;
/// `TVMFFIObjectCreator`.
pub type TVMFFIObjectCreator = Option<unsafe extern "C" fn(result: *mut *mut c_void) -> c_int>;

/// `TVMFFIFieldInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIFieldInfo {
    /// Field name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// JSON metadata.
    pub metadata: TVMFFIByteArray,
    /// `TVMFFIFieldFlagBitMask` bits.
    pub flags: i64,
    /// Size in bytes.
    pub size: i64,
    /// Alignment in bytes.
    pub alignment: i64,
    /// Offset from the object start.
    pub offset: i64,
    /// Getter.
    pub getter: TVMFFIFieldGetter,
    /// Setter (a function pointer or a Function object, see the flags).
    pub setter: *mut c_void,
    /// Default value or factory.
    pub default_value_or_factory: TVMFFIAny,
    /// Static type index of the field.
    pub field_static_type_index: i32,
}

/// `TVMFFIMethodInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIMethodInfo {
    /// Method name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// JSON metadata.
    pub metadata: TVMFFIByteArray,
    /// Flags.
    pub flags: i64,
    /// The method (a Function in an Any).
    pub method: TVMFFIAny,
}

/// `TVMFFITypeMetadata`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeMetadata {
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// Creator.
    pub creator: TVMFFIObjectCreator,
    /// Total object size.
    pub total_size: i32,
    /// `TVMFFISEqHashKind`.
    pub structural_eq_hash_kind: i32,
}

/// `TVMFFITypeAttrColumn`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeAttrColumn {
    /// Values indexed by `type_index - begin_index`.
    pub data: *const TVMFFIAny,
    /// Number of entries.
    pub size: i32,
    /// Type index of entry 0.
    pub begin_index: i32,
}

/// `TVMFFITypeInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeInfo {
    /// Type index.
    pub type_index: i32,
    /// Depth in the type hierarchy.
    pub type_depth: i32,
    /// Type key, e.g. `ffi.String`.
    pub type_key: TVMFFIByteArray,
    /// Ancestors, `type_depth` entries.
    pub type_ancestors: *const *const TVMFFITypeInfo,
    /// Hash of the type key.
    pub type_key_hash: u64,
    /// Number of fields.
    pub num_fields: i32,
    /// Number of methods.
    pub num_methods: i32,
    /// Fields.
    pub fields: *const TVMFFIFieldInfo,
    /// Methods.
    pub methods: *const TVMFFIMethodInfo,
    /// Metadata or NULL.
    pub metadata: *const TVMFFITypeMetadata,
}

/// `TVMFFIStreamHandle`.
pub type TVMFFIStreamHandle = *mut c_void;

// ---------------------------------------------------------------------------
// Offsets and sizes for code generators
// ---------------------------------------------------------------------------

/// `sizeof(TVMFFIAny)`.
pub const ANY_SIZE: usize = size_of::<TVMFFIAny>();
/// Offset of `TVMFFIAny::type_index`.
pub const ANY_TYPE_INDEX_OFFSET: usize = offset_of!(TVMFFIAny, type_index);
/// Offset of `TVMFFIAny::small_str_len` (also `zero_padding`).
pub const ANY_SMALL_STR_LEN_OFFSET: usize = offset_of!(TVMFFIAny, small_str_len);
/// Offset of the value union of `TVMFFIAny`.
pub const ANY_VALUE_OFFSET: usize = offset_of!(TVMFFIAny, value);

/// `sizeof(TVMFFIObject)`: object payloads (cells) start here.
pub const OBJECT_HEADER_SIZE: usize = size_of::<TVMFFIObject>();
/// Offset of `TVMFFIObject::combined_ref_count`.
pub const OBJECT_REF_COUNT_OFFSET: usize = offset_of!(TVMFFIObject, combined_ref_count);
/// Offset of `TVMFFIObject::type_index`.
pub const OBJECT_TYPE_INDEX_OFFSET: usize = offset_of!(TVMFFIObject, type_index);
/// Offset of `TVMFFIObject::deleter`.
pub const OBJECT_DELETER_OFFSET: usize = offset_of!(TVMFFIObject, deleter);
/// Bytes this runtime reserves in front of every object it allocates.
pub const OBJECT_ALLOC_RESERVE: usize = 16;

/// `sizeof(TVMFFIByteArray)`.
pub const BYTE_ARRAY_SIZE: usize = size_of::<TVMFFIByteArray>();
/// Offset of `TVMFFIByteArray::data`.
pub const BYTE_ARRAY_DATA_OFFSET: usize = offset_of!(TVMFFIByteArray, data);
/// Offset of `TVMFFIByteArray::size`.
pub const BYTE_ARRAY_SIZE_OFFSET: usize = offset_of!(TVMFFIByteArray, size);

/// Offset of the shape data pointer inside a Shape object.
pub const SHAPE_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFIShapeCell, data);
/// Offset of the shape length inside a Shape object.
pub const SHAPE_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFIShapeCell, size);
/// Offset of the element pointer inside an Array object.
pub const SEQ_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFISeqCell, data);
/// Offset of the element count inside an Array object.
pub const SEQ_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFISeqCell, size);
/// Offset of the string/bytes data pointer inside a String or Bytes object.
pub const STR_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + BYTE_ARRAY_DATA_OFFSET;
/// Offset of the string/bytes length inside a String or Bytes object.
pub const STR_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + BYTE_ARRAY_SIZE_OFFSET;
/// Offset of the `safe_call` pointer inside a Function object.
pub const FUNCTION_OBJECT_SAFE_CALL_OFFSET: usize =
    OBJECT_HEADER_SIZE + offset_of!(TVMFFIFunctionCell, safe_call);
/// Offset of the embedded `DLTensor` inside a Tensor object.
pub const TENSOR_OBJECT_DLTENSOR_OFFSET: usize = OBJECT_HEADER_SIZE;

/// `sizeof(DLTensor)`.
pub const DLTENSOR_SIZE: usize = size_of::<DLTensor>();
/// Offset of `DLTensor::data`.
pub const DLTENSOR_DATA_OFFSET: usize = offset_of!(DLTensor, data);
/// Offset of `DLTensor::device` (device type; the id follows at +4).
pub const DLTENSOR_DEVICE_TYPE_OFFSET: usize =
    offset_of!(DLTensor, device) + offset_of!(DLDevice, device_type);
/// Offset of `DLTensor::device.device_id`.
pub const DLTENSOR_DEVICE_ID_OFFSET: usize =
    offset_of!(DLTensor, device) + offset_of!(DLDevice, device_id);
/// Offset of `DLTensor::ndim`.
pub const DLTENSOR_NDIM_OFFSET: usize = offset_of!(DLTensor, ndim);
/// Offset of `DLTensor::dtype` (code u8, bits u8, lanes u16).
pub const DLTENSOR_DTYPE_OFFSET: usize = offset_of!(DLTensor, dtype);
/// Offset of `DLTensor::shape`.
pub const DLTENSOR_SHAPE_OFFSET: usize = offset_of!(DLTensor, shape);
/// Offset of `DLTensor::strides`.
pub const DLTENSOR_STRIDES_OFFSET: usize = offset_of!(DLTensor, strides);
/// Offset of `DLTensor::byte_offset`.
pub const DLTENSOR_BYTE_OFFSET_OFFSET: usize = offset_of!(DLTensor, byte_offset);

/// Offset of `DLDataType::code`.
pub const DTYPE_CODE_OFFSET: usize = offset_of!(DLDataType, code);
/// Offset of `DLDataType::bits`.
pub const DTYPE_BITS_OFFSET: usize = offset_of!(DLDataType, bits);
/// Offset of `DLDataType::lanes`.
pub const DTYPE_LANES_OFFSET: usize = offset_of!(DLDataType, lanes);

/// Bit position of `DLDataType::bits` in the dtype read as one little-endian `u32` (as a
/// `TVMFFIAny` holds it, and as generated code loads it from a `DLTensor`).
pub const DTYPE_BITS_SHIFT: u32 = (DTYPE_BITS_OFFSET * 8) as u32;
/// Bit position of `DLDataType::lanes` in the dtype read as one little-endian `u32`.
pub const DTYPE_LANES_SHIFT: u32 = (DTYPE_LANES_OFFSET * 8) as u32;
/// Bit position of `DLDevice::device_id` in the device read as one little-endian `u64`.
pub const DEVICE_ID_SHIFT: u32 = (offset_of!(DLDevice, device_id) * 8) as u32;

impl DLDataType {
    /// The dtype as one little-endian `u32`: the value a `TVMFFIAny` of type `DataType`
    /// holds in its low bits and the value of a 4-byte load from `DLTensor::dtype`.
    pub const fn to_bits(self) -> u32 {
        self.code as u32
            | (self.bits as u32) << DTYPE_BITS_SHIFT
            | (self.lanes as u32) << DTYPE_LANES_SHIFT
    }
}

/// Bit position of `DLTensor::dtype` in the 8 bytes at [`DLTENSOR_NDIM_OFFSET`] read as one
/// little-endian `u64` (`ndim` is the low half).
pub const NDIM_DTYPE_DTYPE_SHIFT: u32 = ((DLTENSOR_DTYPE_OFFSET - DLTENSOR_NDIM_OFFSET) * 8) as u32;

const _: () = assert!(DLTENSOR_DTYPE_OFFSET == DLTENSOR_NDIM_OFFSET + 4);

/// `ndim` and `dtype` of a DLTensor as the one little-endian `u64` an 8-byte load at
/// [`DLTENSOR_NDIM_OFFSET`] reads: one comparison checks both.
pub const fn ndim_dtype_bits(ndim: i32, dtype: DLDataType) -> u64 {
    ndim as u32 as u64 | (dtype.to_bits() as u64) << NDIM_DTYPE_DTYPE_SHIFT
}

impl DLDevice {
    /// The device as one little-endian `u64`: the value a `TVMFFIAny` of type `Device` holds.
    pub const fn to_bits(self) -> u64 {
        self.device_type as u32 as u64 | (self.device_id as u32 as u64) << DEVICE_ID_SHIFT
    }
}

/// Offset of `TVMFFITypeInfo::type_key` (a `TVMFFIByteArray`).
pub const TYPE_INFO_TYPE_KEY_OFFSET: usize = offset_of!(TVMFFITypeInfo, type_key);

const _: () = {
    assert!(ANY_SIZE == 16);
    assert!(OBJECT_HEADER_SIZE == 24);
    assert!(DLTENSOR_SIZE == 48);
    assert!(size_of::<TVMFFIErrorCell>() == 72);
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLDevice>() == 8);
    assert!(
        DLDataType {
            code: 1,
            bits: 2,
            lanes: 3
        }
        .to_bits()
        .to_le_bytes()[DTYPE_BITS_OFFSET]
            == 2
    );
    assert!(
        DLDevice {
            device_type: 1,
            device_id: 5
        }
        .to_bits()
            >> DEVICE_ID_SHIFT
            == 5
    );
};
