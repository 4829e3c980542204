//! Facts of the CUDA driver API and of libc that generated launch code relies on: layouts
//! and constants from cudarc's driver bindings (`cudarc::driver::sys`, CUDA 12.0), the
//! driver's entry points with their C signatures, and the libc functions that find it.

use std::mem::{offset_of, size_of};

use cudarc::driver::sys::{
    CUdevice_attribute_enum, CUdriverProcAddress_flags_enum, CUfunction_attribute_enum,
    CUlaunchAttribute, CUlaunchAttributeID_enum,
    CUlaunchAttributeValue_union__bindgen_ty_1 as ClusterDim,
    CUlaunchAttributeValue_union__bindgen_ty_4 as PreferredClusterDim, CUlaunchConfig,
    cudaError_enum,
};

use crate::ir::ClusterPolicy;

use crate::lir::{Signature, Ty};

/// Environment variable naming the driver library to load instead of searching for it.
pub const LIBCUDA_PATH_ENV: &str = "SAFECALL_LIBCUDA_PATH";
/// The driver library's name, `dlopen`ed when no loaded library provides the driver.
pub const LIBCUDA: &str = "libcuda.so.1";
/// The one entry point found with `dlsym`; every other one comes through it.
pub const GET_PROC_ADDRESS: &str = "cuGetProcAddress_v2";
/// The CUDA version whose entry points `cuGetProcAddress_v2` is asked for (12.0: the first
/// with the context-independent library API).
pub const API_VERSION: i64 = 12000;
/// `CU_GET_PROC_ADDRESS_DEFAULT`.
pub const PROC_ADDRESS_DEFAULT: i64 =
    CUdriverProcAddress_flags_enum::CU_GET_PROC_ADDRESS_DEFAULT as i64;
/// `CUDA_SUCCESS`.
pub const SUCCESS: i64 = cudaError_enum::CUDA_SUCCESS as i64;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub const MAX_DYNAMIC_SHARED_SIZE_BYTES: i64 =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as i64;
/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION as i64;
/// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: a kernel's static shared memory.
pub const SHARED_SIZE_BYTES: i64 =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as i64;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
pub const NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i64 =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as i64;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: the most shared memory (static
/// and dynamic) a block may opt in to.
pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: i64 =
    CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as i64;
/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
pub const LAUNCH_ATTRIBUTE_COOPERATIVE: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_COOPERATIVE as i64;
/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`.
pub const LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE as i64;
/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` (programmatic dependent launch).
pub const LAUNCH_ATTRIBUTE_PDL: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION as i64;
/// `CU_LAUNCH_ATTRIBUTE_PRIORITY`.
pub const LAUNCH_ATTRIBUTE_PRIORITY: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_PRIORITY as i64;
/// `CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`.
pub const LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: i64 =
    CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION as i64;
/// The first driver version (`cuDriverGetVersion`, 1000 * major + 10 * minor) that knows
/// [`LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`]: CUDA 12.8.
pub const PREFERRED_CLUSTER_DRIVER: i64 = 12080;
/// Most blocks in a cluster without [`NON_PORTABLE_CLUSTER_SIZE_ALLOWED`].
pub const PORTABLE_CLUSTER_SIZE: i64 = 8;

/// The `CUclusterSchedulingPolicy` value of a policy (the model's [`ClusterPolicy::cuda_value`]).
pub fn cluster_policy(policy: ClusterPolicy) -> i64 {
    policy.cuda_value() as i64
}

/// Dynamic shared memory a kernel may use without opting in with
/// [`MAX_DYNAMIC_SHARED_SIZE_BYTES`].
pub const DEFAULT_SHARED_MEM_LIMIT: i64 = 48 * 1024;
/// Largest grid dimensions (the same on every device CUDA 12 supports, compute capability
/// 5.0 and later).
pub const MAX_GRID: [i64; 3] = [(1 << 31) - 1, 65535, 65535];
/// Largest block dimensions (likewise).
pub const MAX_BLOCK: [i64; 3] = [1024, 1024, 64];
/// Most threads in one block (likewise).
pub const MAX_THREADS_PER_BLOCK: i64 = 1024;
/// Device ordinals below this have their primary context and shared-memory opt-ins cached
/// in module data; higher ones ask the driver on each launch.
pub const CACHED_DEVICES: u32 = 64;

/// `sizeof(CUlaunchConfig)`.
pub const CONFIG_SIZE: u32 = size_of::<CUlaunchConfig>() as u32;
/// Offsets of `gridDimX`, `gridDimY`, `gridDimZ` in `CUlaunchConfig`.
pub const CONFIG_GRID: [usize; 3] = [
    offset_of!(CUlaunchConfig, gridDimX),
    offset_of!(CUlaunchConfig, gridDimY),
    offset_of!(CUlaunchConfig, gridDimZ),
];
/// Offsets of `blockDimX`, `blockDimY`, `blockDimZ` in `CUlaunchConfig`.
pub const CONFIG_BLOCK: [usize; 3] = [
    offset_of!(CUlaunchConfig, blockDimX),
    offset_of!(CUlaunchConfig, blockDimY),
    offset_of!(CUlaunchConfig, blockDimZ),
];
/// Offset of `sharedMemBytes` in `CUlaunchConfig`.
pub const CONFIG_SHARED_MEM: usize = offset_of!(CUlaunchConfig, sharedMemBytes);
/// Offset of `hStream` in `CUlaunchConfig`.
pub const CONFIG_STREAM: usize = offset_of!(CUlaunchConfig, hStream);
/// Offset of `attrs` in `CUlaunchConfig`.
pub const CONFIG_ATTRS: usize = offset_of!(CUlaunchConfig, attrs);
/// Offset of `numAttrs` in `CUlaunchConfig`.
pub const CONFIG_NUM_ATTRS: usize = offset_of!(CUlaunchConfig, numAttrs);
/// `sizeof(CUlaunchAttribute)`.
pub const ATTR_SIZE: u32 = size_of::<CUlaunchAttribute>() as u32;
/// Offset of `id` in `CUlaunchAttribute`.
pub const ATTR_ID: usize = offset_of!(CUlaunchAttribute, id);
/// Offset of `value` in `CUlaunchAttribute`: where the `int` members of the value union
/// (`cooperative`, `programmaticStreamSerializationAllowed`, `priority`,
/// `clusterSchedulingPolicyPreference`) live, as every member of a C union starts there.
pub const ATTR_VALUE: usize = offset_of!(CUlaunchAttribute, value);
/// Offsets of `value.preferredClusterDim.{x,y,z}` in `CUlaunchAttribute`.
pub const ATTR_PREFERRED_CLUSTER_DIM: [usize; 3] = [
    offset_of!(CUlaunchAttribute, value) + offset_of!(PreferredClusterDim, x),
    offset_of!(CUlaunchAttribute, value) + offset_of!(PreferredClusterDim, y),
    offset_of!(CUlaunchAttribute, value) + offset_of!(PreferredClusterDim, z),
];
/// Offsets of `value.clusterDim.{x,y,z}` in `CUlaunchAttribute`.
pub const ATTR_CLUSTER_DIM: [usize; 3] = [
    offset_of!(CUlaunchAttribute, value) + offset_of!(ClusterDim, x),
    offset_of!(CUlaunchAttribute, value) + offset_of!(ClusterDim, y),
    offset_of!(CUlaunchAttribute, value) + offset_of!(ClusterDim, z),
];

/// The driver workaround Triton applies after encoding a tiled descriptor (following a CUTLASS
/// change): with a driver of at most this version ...
pub const TMA_WORKAROUND_MAX_DRIVER: i64 = 13010;
/// ... and a tensor spanning fewer bytes than this ...
pub const TMA_WORKAROUND_SPAN: i64 = 128 * 1024;
/// ... this bit of the descriptor's 64-bit word [`TMA_WORKAROUND_WORD`] is cleared.
pub const TMA_WORKAROUND_BIT: u32 = 21;
/// The word the workaround edits.
pub const TMA_WORKAROUND_WORD: usize = 1;

/// A driver entry point generated code calls, resolved once per module into a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `CUresult cuGetErrorName(CUresult, const char**)`
    GetErrorName,
    /// `CUresult cuGetErrorString(CUresult, const char**)`
    GetErrorString,
    /// `CUresult cuInit(unsigned)`
    Init,
    /// `CUresult cuDeviceGet(CUdevice*, int ordinal)`
    DeviceGet,
    /// `CUresult cuCtxGetCurrent(CUcontext*)`
    CtxGetCurrent,
    /// `CUresult cuCtxGetDevice(CUdevice*)`
    CtxGetDevice,
    /// `CUresult cuCtxSetCurrent(CUcontext)`
    CtxSetCurrent,
    /// `CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice)`
    DevicePrimaryCtxRetain,
    /// `CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned* flags, int* active)`
    DevicePrimaryCtxGetState,
    /// `CUresult cuLibraryLoadData(CUlibrary*, const void* image, CUjit_option*, void**,
    /// unsigned, CUlibraryOption*, void**, unsigned)`
    LibraryLoadData,
    /// `CUresult cuLibraryUnload(CUlibrary)`
    LibraryUnload,
    /// `CUresult cuLibraryGetKernel(CUkernel*, CUlibrary, const char* name)`
    LibraryGetKernel,
    /// `CUresult cuKernelSetAttribute(CUfunction_attribute, int value, CUkernel, CUdevice)`
    KernelSetAttribute,
    /// `CUresult cuKernelGetAttribute(int*, CUfunction_attribute, CUkernel, CUdevice)`
    KernelGetAttribute,
    /// `CUresult cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice)`
    DeviceGetAttribute,
    /// `CUresult cuDriverGetVersion(int*)`
    DriverGetVersion,
    /// `CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void** params, void** extra)`
    LaunchKernelEx,
    /// `CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t rank,
    /// void* address, const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t*
    /// box, const cuuint32_t* element_strides, interleave, swizzle, l2_promotion, oob_fill)`
    TensorMapEncodeTiled,
    /// `CUresult cuTensorMapEncodeIm2col(CUtensorMap*, CUtensorMapDataType, cuuint32_t rank,
    /// void* address, const cuuint64_t* dims, const cuuint64_t* strides, const int* lower,
    /// const int* upper, cuuint32_t channels, cuuint32_t pixels, const cuuint32_t*
    /// element_strides, interleave, swizzle, l2_promotion, oob_fill)`
    TensorMapEncodeIm2col,
}

impl Entry {
    /// Every entry, in table order.
    pub const ALL: [Entry; 19] = [
        Entry::GetErrorName,
        Entry::GetErrorString,
        Entry::Init,
        Entry::DeviceGet,
        Entry::CtxGetCurrent,
        Entry::CtxGetDevice,
        Entry::CtxSetCurrent,
        Entry::DevicePrimaryCtxRetain,
        Entry::DevicePrimaryCtxGetState,
        Entry::LibraryLoadData,
        Entry::LibraryUnload,
        Entry::LibraryGetKernel,
        Entry::KernelSetAttribute,
        Entry::KernelGetAttribute,
        Entry::DeviceGetAttribute,
        Entry::DriverGetVersion,
        Entry::LaunchKernelEx,
        Entry::TensorMapEncodeTiled,
        Entry::TensorMapEncodeIm2col,
    ];

    /// The name `cuGetProcAddress_v2` resolves (the base name, without a version suffix).
    pub fn name(self) -> &'static str {
        match self {
            Entry::GetErrorName => "cuGetErrorName",
            Entry::GetErrorString => "cuGetErrorString",
            Entry::Init => "cuInit",
            Entry::DeviceGet => "cuDeviceGet",
            Entry::CtxGetCurrent => "cuCtxGetCurrent",
            Entry::CtxGetDevice => "cuCtxGetDevice",
            Entry::CtxSetCurrent => "cuCtxSetCurrent",
            Entry::DevicePrimaryCtxRetain => "cuDevicePrimaryCtxRetain",
            Entry::DevicePrimaryCtxGetState => "cuDevicePrimaryCtxGetState",
            Entry::LibraryLoadData => "cuLibraryLoadData",
            Entry::LibraryUnload => "cuLibraryUnload",
            Entry::LibraryGetKernel => "cuLibraryGetKernel",
            Entry::KernelSetAttribute => "cuKernelSetAttribute",
            Entry::KernelGetAttribute => "cuKernelGetAttribute",
            Entry::DeviceGetAttribute => "cuDeviceGetAttribute",
            Entry::DriverGetVersion => "cuDriverGetVersion",
            Entry::LaunchKernelEx => "cuLaunchKernelEx",
            Entry::TensorMapEncodeTiled => "cuTensorMapEncodeTiled",
            Entry::TensorMapEncodeIm2col => "cuTensorMapEncodeIm2col",
        }
    }

    /// The C signature (`CUresult` and `CUdevice` are `int`; handles are pointers).
    pub fn signature(self) -> Signature {
        use Ty::{I32, Ptr};
        let params: &[Ty] = match self {
            Entry::GetErrorName | Entry::GetErrorString => &[I32, Ptr],
            Entry::Init => &[I32],
            Entry::DeviceGet => &[Ptr, I32],
            Entry::CtxGetCurrent | Entry::CtxGetDevice | Entry::CtxSetCurrent => &[Ptr],
            Entry::DriverGetVersion => &[Ptr],
            Entry::KernelGetAttribute => &[Ptr, I32, Ptr, I32],
            Entry::DeviceGetAttribute => &[Ptr, I32, I32],
            Entry::LibraryUnload => &[Ptr],
            Entry::DevicePrimaryCtxRetain => &[Ptr, I32],
            Entry::DevicePrimaryCtxGetState => &[I32, Ptr, Ptr],
            Entry::LibraryLoadData => &[Ptr, Ptr, Ptr, Ptr, I32, Ptr, Ptr, I32],
            Entry::LibraryGetKernel => &[Ptr, Ptr, Ptr],
            Entry::KernelSetAttribute => &[I32, I32, Ptr, I32],
            Entry::LaunchKernelEx => &[Ptr, Ptr, Ptr, Ptr],
            Entry::TensorMapEncodeTiled => {
                &[Ptr, I32, I32, Ptr, Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32]
            }
            Entry::TensorMapEncodeIm2col => &[
                Ptr, I32, I32, Ptr, Ptr, Ptr, Ptr, Ptr, I32, I32, Ptr, I32, I32, I32, I32,
            ],
        };
        Signature::new(params.to_vec(), Some(I32))
    }

    /// Byte offset of the entry in the module's driver table.
    pub fn offset(self) -> usize {
        Entry::ALL.iter().position(|e| *e == self).expect("listed") * 8
    }
}

/// `cuGetProcAddress_v2(const char*, void**, int version, cuuint64_t flags,
/// CUdriverProcAddressQueryResult*)`.
pub fn get_proc_address_signature() -> Signature {
    Signature::new(
        vec![Ty::Ptr, Ty::Ptr, Ty::I32, Ty::I64, Ty::Ptr],
        Some(Ty::I32),
    )
}

/// The libc functions launch code imports (the only imports besides the TVM-FFI C API).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Libc {
    /// `char* getenv(const char*)`
    Getenv,
    /// `void* dlopen(const char*, int)`
    Dlopen,
    /// `void* dlsym(void*, const char*)`
    Dlsym,
    /// `char* dlerror(void)`
    Dlerror,
}

impl Libc {
    /// Every function, for resolvers (the JIT).
    pub const ALL: [Libc; 4] = [Libc::Getenv, Libc::Dlopen, Libc::Dlsym, Libc::Dlerror];

    /// The C symbol.
    pub fn name(self) -> &'static str {
        match self {
            Libc::Getenv => "getenv",
            Libc::Dlopen => "dlopen",
            Libc::Dlsym => "dlsym",
            Libc::Dlerror => "dlerror",
        }
    }

    /// The C signature.
    pub fn signature(self) -> Signature {
        let params = match self {
            Libc::Getenv => vec![Ty::Ptr],
            Libc::Dlopen => vec![Ty::Ptr, Ty::I32],
            Libc::Dlsym => vec![Ty::Ptr, Ty::Ptr],
            Libc::Dlerror => vec![],
        };
        Signature::new(params, Some(Ty::Ptr))
    }

    /// The address of this function in the running process (for JIT-compiled code).
    pub fn address(self) -> *const u8 {
        match self {
            Libc::Getenv => libc::getenv as *const u8,
            Libc::Dlopen => libc::dlopen as *const u8,
            Libc::Dlsym => libc::dlsym as *const u8,
            Libc::Dlerror => libc::dlerror as *const u8,
        }
    }
}

/// `dlopen` flags: resolve everything now, keep the driver's symbols to itself.
pub const RTLD_NOW_LOCAL: i64 = (libc::RTLD_NOW | libc::RTLD_LOCAL) as i64;
/// `RTLD_DEFAULT`: `dlsym` searches every library loaded globally.
pub const RTLD_DEFAULT: i64 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_cuda_12_headers() {
        // CUlaunchConfig: seven u32s, then the stream pointer, the attribute pointer and
        // their count; CUlaunchAttribute: a u32 id, padding and a 64-byte value union.
        assert_eq!(CONFIG_GRID, [0, 4, 8]);
        assert_eq!(CONFIG_BLOCK, [12, 16, 20]);
        assert_eq!(CONFIG_SHARED_MEM, 24);
        assert_eq!(
            (CONFIG_STREAM, CONFIG_ATTRS, CONFIG_NUM_ATTRS),
            (32, 40, 48)
        );
        assert_eq!(CONFIG_SIZE, 56);
        assert_eq!((ATTR_ID, ATTR_CLUSTER_DIM, ATTR_SIZE), (0, [8, 12, 16], 72));
        assert_eq!((ATTR_VALUE, ATTR_PREFERRED_CLUSTER_DIM), (8, [8, 12, 16]));
        assert_eq!(RTLD_DEFAULT, libc::RTLD_DEFAULT as i64);
    }

    #[test]
    fn entries_have_distinct_offsets() {
        let offsets: Vec<usize> = Entry::ALL.iter().map(|e| e.offset()).collect();
        assert_eq!(
            offsets,
            (0..Entry::ALL.len()).map(|i| i * 8).collect::<Vec<_>>()
        );
    }
}
