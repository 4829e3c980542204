//! Every HIP constant and layout the double relies on, with the C names of the headers Triton
//! 3.9 bundles (`triton/backends/amd/include/hip/`, HIP 7.1.25424 by their `hip_version.h`):
//! - `hipError_t`, `hipDeviceAttribute_t` and `hipDriverProcAddressQueryResult` from
//!   `hip_runtime_api.h`;
//! - `hipFunction_attribute` and `hipPointer_attribute` from `driver_types.h`;
//! - the offsets of `hipDeviceProp_tR0600` (`hip_runtime_api.h`, the layout
//!   `hipGetDevicePropertiesR0600` fills; `hipGetDeviceProperties` is a macro for it there);
//! - the layouts of `HIP_LAUNCH_CONFIG` and `hipLaunchAttribute` (`hip_runtime_api.h`), what
//!   `hipDrvLaunchKernelEx` reads.
//!
//! The values of enumerators the headers number implicitly were read off the compiler
//! (`tests/header.rs` compiles a C file against the headers, prints each name's value and each
//! field's `offsetof`, and compares them with [`VALUES`], [`PROP_OFFSETS`] and
//! [`LAUNCH_LAYOUT`]).

#![allow(non_upper_case_globals)]

use std::ffi::c_int;

/// `hipError_t`.
pub type HipError = c_int;

macro_rules! header_values {
    ($($(#[$doc:meta])* $name:ident = $value:expr;)*) => {
        $($(#[$doc])* pub const $name: c_int = $value;)*
        /// Every enumerator above, by its C name (checked against the headers).
        pub const VALUES: &[(&str, c_int)] = &[$((stringify!($name), $value),)*];
    };
}

header_values! {
    hipSuccess = 0;
    hipErrorInvalidValue = 1;
    hipErrorOutOfMemory = 2;
    hipErrorNotInitialized = 3;
    hipErrorInvalidConfiguration = 9;
    hipErrorInvalidDeviceFunction = 98;
    hipErrorNoDevice = 100;
    hipErrorInvalidDevice = 101;
    hipErrorInvalidImage = 200;
    hipErrorInvalidContext = 201;
    hipErrorNoBinaryForGpu = 209;
    /// Also `hipErrorInvalidResourceHandle`.
    hipErrorInvalidHandle = 400;
    hipErrorNotFound = 500;
    hipErrorLaunchOutOfResources = 701;
    hipErrorLaunchFailure = 719;
    hipErrorCooperativeLaunchTooLarge = 720;
    hipErrorNotSupported = 801;
    hipErrorUnknown = 999;

    hipDeviceAttributeClockRate = 5;
    hipDeviceAttributeCooperativeLaunch = 10;
    hipDeviceAttributeComputeCapabilityMajor = 23;
    hipDeviceAttributeMaxThreadsPerBlock = 56;
    hipDeviceAttributeMaxThreadsPerMultiProcessor = 57;
    hipDeviceAttributeMemoryBusWidth = 59;
    hipDeviceAttributeMemoryClockRate = 60;
    hipDeviceAttributeComputeCapabilityMinor = 61;
    hipDeviceAttributeMultiprocessorCount = 63;
    hipDeviceAttributeMaxRegistersPerBlock = 71;
    hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
    hipDeviceAttributeSharedMemPerBlockOptin = 75;
    hipDeviceAttributeWarpSize = 87;
    hipDeviceAttributeMaxSharedMemoryPerMultiprocessor = 10002;

    HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
    HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
    HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
    HIP_FUNC_ATTRIBUTE_NUM_REGS = 4;

    HIP_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;

    HIP_GET_PROC_ADDRESS_SUCCESS = 0;
    HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1;
    HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2;

    hipLaunchAttributeCooperative = 2;
}

/// The launch attribute id of cluster dimensions (three `int`s at the start of the value), as
/// Triton 3.9's AMD launcher passes it to `hipDrvLaunchKernelEx` (`driver.c`: `attributes[0].id
/// = 4`); the HIP 7.1 headers name no cluster attribute, so this value is not checked against
/// them.
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: c_int = 4;

/// The name and text of the error codes the double returns (`hipGetErrorName`,
/// `hipGetErrorString`; names as in `hip_runtime_api.h`, the texts the double's own).
pub const ERRORS: &[(HipError, &std::ffi::CStr, &std::ffi::CStr)] = &[
    (hipSuccess, c"hipSuccess", c"no error"),
    (
        hipErrorInvalidValue,
        c"hipErrorInvalidValue",
        c"invalid argument",
    ),
    (
        hipErrorOutOfMemory,
        c"hipErrorOutOfMemory",
        c"out of memory",
    ),
    (
        hipErrorNotInitialized,
        c"hipErrorNotInitialized",
        c"initialization error",
    ),
    (
        hipErrorInvalidConfiguration,
        c"hipErrorInvalidConfiguration",
        c"invalid configuration argument",
    ),
    (
        hipErrorInvalidDeviceFunction,
        c"hipErrorInvalidDeviceFunction",
        c"invalid device function",
    ),
    (
        hipErrorNoDevice,
        c"hipErrorNoDevice",
        c"no ROCm-capable device is detected",
    ),
    (
        hipErrorInvalidDevice,
        c"hipErrorInvalidDevice",
        c"invalid device ordinal",
    ),
    (
        hipErrorInvalidImage,
        c"hipErrorInvalidImage",
        c"device kernel image is invalid",
    ),
    (
        hipErrorInvalidContext,
        c"hipErrorInvalidContext",
        c"invalid device context",
    ),
    (
        hipErrorNoBinaryForGpu,
        c"hipErrorNoBinaryForGpu",
        c"no kernel image is available for execution on the device",
    ),
    (
        hipErrorInvalidHandle,
        c"hipErrorInvalidHandle",
        c"invalid resource handle",
    ),
    (
        hipErrorNotFound,
        c"hipErrorNotFound",
        c"named symbol not found",
    ),
    (
        hipErrorLaunchOutOfResources,
        c"hipErrorLaunchOutOfResources",
        c"too many resources requested for launch",
    ),
    (
        hipErrorLaunchFailure,
        c"hipErrorLaunchFailure",
        c"unspecified launch failure",
    ),
    (
        hipErrorCooperativeLaunchTooLarge,
        c"hipErrorCooperativeLaunchTooLarge",
        c"too many blocks in cooperative launch",
    ),
    (
        hipErrorNotSupported,
        c"hipErrorNotSupported",
        c"operation not supported",
    ),
    (hipErrorUnknown, c"hipErrorUnknown", c"unknown error"),
];

macro_rules! prop_offsets {
    ($($name:ident = $offset:expr;)*) => {
        /// Offsets of the `hipDeviceProp_tR0600` fields the double fills.
        pub mod prop {
            $(pub const $name: usize = $offset;)*
        }
        /// Every offset in [`prop`], by its C field name (checked against the headers).
        pub const PROP_OFFSETS: &[(&str, usize)] = &[$((stringify!($name), $offset),)*];
    };
}

prop_offsets! {
    name = 0;
    totalGlobalMem = 288;
    sharedMemPerBlock = 296;
    regsPerBlock = 304;
    warpSize = 308;
    maxThreadsPerBlock = 320;
    maxThreadsDim = 324;
    maxGridSize = 336;
    clockRate = 348;
    major = 360;
    minor = 364;
    multiProcessorCount = 388;
    memoryClockRate = 608;
    memoryBusWidth = 612;
    l2CacheSize = 616;
    maxThreadsPerMultiProcessor = 624;
    sharedMemPerMultiprocessor = 640;
    regsPerMultiprocessor = 648;
    cooperativeLaunch = 688;
    sharedMemPerBlockOptin = 696;
    gcnArchName = 1160;
    maxSharedMemoryPerMultiProcessor = 1416;
}

/// `sizeof(hipDeviceProp_tR0600)`.
pub const PROP_SIZE: usize = 1472;
/// The length of `name` and of `gcnArchName` (`char[256]` each).
pub const PROP_NAME_LEN: usize = 256;

macro_rules! launch_layout {
    ($($(#[$doc:meta])* $name:ident = $c:literal, $value:expr;)*) => {
        /// The layout of `HIP_LAUNCH_CONFIG` and `hipLaunchAttribute` (`hip_runtime_api.h`),
        /// what `hipDrvLaunchKernelEx` reads.
        pub mod launch_layout {
            $($(#[$doc])* pub const $name: usize = $value;)*
        }
        /// Every value in [`launch_layout`], by the C expression that gives it (checked against
        /// the headers).
        pub const LAUNCH_LAYOUT: &[(&str, usize)] = &[$(($c, $value),)*];
    };
}

launch_layout! {
    /// `sizeof(HIP_LAUNCH_CONFIG)`.
    CONFIG_SIZE = "sizeof(HIP_LAUNCH_CONFIG)", 56;
    CONFIG_GRID_X = "offsetof(HIP_LAUNCH_CONFIG, gridDimX)", 0;
    CONFIG_GRID_Y = "offsetof(HIP_LAUNCH_CONFIG, gridDimY)", 4;
    CONFIG_GRID_Z = "offsetof(HIP_LAUNCH_CONFIG, gridDimZ)", 8;
    CONFIG_BLOCK_X = "offsetof(HIP_LAUNCH_CONFIG, blockDimX)", 12;
    CONFIG_BLOCK_Y = "offsetof(HIP_LAUNCH_CONFIG, blockDimY)", 16;
    CONFIG_BLOCK_Z = "offsetof(HIP_LAUNCH_CONFIG, blockDimZ)", 20;
    CONFIG_SHARED_MEM = "offsetof(HIP_LAUNCH_CONFIG, sharedMemBytes)", 24;
    CONFIG_STREAM = "offsetof(HIP_LAUNCH_CONFIG, hStream)", 32;
    CONFIG_ATTRS = "offsetof(HIP_LAUNCH_CONFIG, attrs)", 40;
    CONFIG_NUM_ATTRS = "offsetof(HIP_LAUNCH_CONFIG, numAttrs)", 48;
    /// `sizeof(hipLaunchAttribute)`.
    ATTR_SIZE = "sizeof(hipLaunchAttribute)", 72;
    ATTR_ID = "offsetof(hipLaunchAttribute, id)", 0;
    /// Where every member of the value union starts (`cooperative`, the cluster's `int`s).
    ATTR_VALUE = "offsetof(hipLaunchAttribute, val)", 8;
    /// `sizeof(hipLaunchAttributeValue)`.
    ATTR_VALUE_SIZE = "sizeof(hipLaunchAttributeValue)", 64;
}

// ---- code objects and offload bundles (not HIP headers) -----------------------------------

/// The note owner and type of a code object's metadata (LLVM's AMDGPU usage document, "Code
/// Object V3 to V6 Metadata": owner `AMDGPU`, `NT_AMDGPU_METADATA` = 32, a MessagePack map).
pub const NOTE_OWNER: &[u8] = b"AMDGPU";
pub const NT_AMDGPU_METADATA: u32 = 32;
/// `EF_AMDGPU_MACH`, the processor bits of a code object's `e_flags`, and the value for gfx942
/// (LLVM `llvm/include/llvm/BinaryFormat/ELF.h`; `llvm-readelf-19 -h` of
/// tests/kernel_params/kernels_gfx942.hsaco shows `Flags: 0x54C, gfx942, xnack, sramecc`).
pub const EF_AMDGPU_MACH: u32 = 0xff;
pub const EF_AMDGPU_MACH_AMDGCN_GFX942: u32 = 0x4c;
/// The same for gfx1250: what Triton 3.9's bundled LLVM writes in a gfx1250 code object's
/// `e_flags` (`0x449`; LLVM's `EF_AMDGPU_MACH_AMDGCN_GFX1250`, newer than llvm-readelf-19).
pub const EF_AMDGPU_MACH_AMDGCN_GFX1250: u32 = 0x49;
/// The magic that starts a clang offload bundle (clang's `ClangOffloadBundler.cpp`): then a
/// `u64` entry count and, per entry, `u64` offset (from the bundle's start), `u64` size, `u64`
/// id length and the id (e.g. `hipv4-amdgcn-amd-amdhsa--gfx942`), all little-endian.
pub const OFFLOAD_BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
