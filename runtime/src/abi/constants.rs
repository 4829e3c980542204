//! Type indices, flags, device types and dtype codes (`TVMFFITypeIndex`, the `kTVMFFI*`
//! enums and DLPack's `DLDeviceType` / `DLDataTypeCode`).

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
