//! Facts of the HIP runtime that generated launch code relies on: its entry points with their
//! C signatures and the constants it passes, from the HIP 7.1 headers (`hip_runtime_api.h`,
//! `driver_types.h`, `hip_version.h` 7.1.25424, as Triton 3.9 bundles them in
//! `triton/backends/amd/include/hip`). No Rust crate of HIP bindings is maintained with the
//! module API; this file is the one place these facts live.

use crate::lir::{Signature, Ty};

/// Environment variable naming the HIP runtime library to load instead of searching for it.
pub const LIBAMDHIP64_PATH_ENV: &str = "SAFECALL_LIBAMDHIP64_PATH";
/// The names tried with `dlopen`, in order, when the variable is not set: the development
/// name, then the sonames of ROCm 7 and ROCm 6 (`dlopen` of a soname also finds a runtime a
/// library in the process already loaded, such as PyTorch's).
pub const LIBAMDHIP64: [&str; 3] = ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6"];

/// `hipSuccess`.
pub const SUCCESS: i64 = 0;
/// `hipDeviceAttributeMaxSharedMemoryPerBlock` (`hipDeviceAttribute_t`).
pub const ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: i64 = 74;
/// `HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES` (`hipFunction_attribute`): a kernel's static LDS.
pub const FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: i64 = 1;

/// `hipErrorInvalidValue`: what `hipPointerGetAttribute` returns for host memory.
pub const ERROR_INVALID_VALUE: i64 = 1;
/// `HIP_POINTER_ATTRIBUTE_DEVICE_POINTER` (`hipPointer_attribute`).
pub const POINTER_ATTRIBUTE_DEVICE_POINTER: i64 = 3;
/// `HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` (`hipFunction_attribute`).
pub const FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: i64 = 0;
/// `HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: a kernel's scratch (spill) bytes per thread.
pub const FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: i64 = 3;
/// `HIP_FUNC_ATTRIBUTE_NUM_REGS`.
pub const FUNC_ATTRIBUTE_NUM_REGS: i64 = 4;

/// `sizeof(hipDeviceProp_tR0600)`, what `hipGetDevicePropertiesR0600` fills (the symbol
/// `hipGetDeviceProperties` names in the headers).
pub const DEVICE_PROP_SIZE: usize = 1472;
/// The `hipDeviceProp_tR0600` fields Triton's AMD driver reports (`get_device_properties`),
/// by C name: (byte offset, C type: `int`, `size_t`, or `char[256]`).
pub const DEVICE_PROP_FIELDS: [(&str, usize, &str); 10] = [
    ("sharedMemPerBlock", 296, "size_t"),
    ("regsPerBlock", 304, "int"),
    ("warpSize", 308, "int"),
    ("clockRate", 348, "int"),
    ("multiProcessorCount", 388, "int"),
    ("memoryClockRate", 608, "int"),
    ("memoryBusWidth", 612, "int"),
    ("maxThreadsPerMultiProcessor", 624, "int"),
    ("cooperativeLaunch", 688, "int"),
    ("gcnArchName", 1160, "char[256]"),
];

/// Largest grid dimensions `hipModuleLaunchKernel` takes (it counts blocks in `unsigned int`).
pub const MAX_GRID: [i64; 3] = [u32::MAX as i64; 3];
/// Largest block dimensions of AMD GPUs (`hipDeviceProp_t::maxThreadsDim` of every CDNA and
/// RDNA device).
pub const MAX_BLOCK: [i64; 3] = [1024, 1024, 1024];
/// Most threads in one block (`maxThreadsPerBlock`).
pub const MAX_THREADS_PER_BLOCK: i64 = 1024;
/// Most threads in one dimension of a launch (grid times block): the runtime computes the
/// global work size in 32 bits.
pub const MAX_WORK_SIZE: i64 = u32::MAX as i64;
/// Device ordinals below this have their modules cached in module data; a launch on a higher
/// one is an error (no machine has that many AMD GPUs).
pub const CACHED_DEVICES: u32 = 64;

/// `hipLaunchAttributeCooperative` (`hipLaunchAttributeID`): an `int`, whether the grid is
/// cooperative.
pub const LAUNCH_ATTRIBUTE_COOPERATIVE: i64 = 2;
/// The cluster dimension attribute (three `int`s at the start of the value), as Triton 3.9's AMD
/// launcher passes it (`driver.c`: `attributes[0].id = 4`); the HIP 7.1 headers name no cluster
/// attribute.
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: i64 = 4;
/// `sizeof(HIP_LAUNCH_CONFIG)`, what `hipDrvLaunchKernelEx` reads.
pub const CONFIG_SIZE: u32 = 56;
/// Offsets of `gridDimX`, `gridDimY`, `gridDimZ` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_GRID: [usize; 3] = [0, 4, 8];
/// Offsets of `blockDimX`, `blockDimY`, `blockDimZ` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_BLOCK: [usize; 3] = [12, 16, 20];
/// Offset of `sharedMemBytes` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_SHARED_MEM: usize = 24;
/// Offset of `hStream` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_STREAM: usize = 32;
/// Offset of `attrs` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_ATTRS: usize = 40;
/// Offset of `numAttrs` in `HIP_LAUNCH_CONFIG`.
pub const CONFIG_NUM_ATTRS: usize = 48;
/// `sizeof(hipLaunchAttribute)`.
pub const ATTR_SIZE: u32 = 72;
/// Offset of `id` in `hipLaunchAttribute`.
pub const ATTR_ID: usize = 0;
/// Offset of `val` in `hipLaunchAttribute`, where every member of the value union starts.
pub const ATTR_VALUE: usize = 8;

/// A HIP runtime entry point generated code calls, resolved once per module into a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `const char* hipGetErrorName(hipError_t)`
    GetErrorName,
    /// `const char* hipGetErrorString(hipError_t)`
    GetErrorString,
    /// `hipError_t hipInit(unsigned int flags)`
    Init,
    /// `hipError_t hipGetDevice(int* device)`
    GetDevice,
    /// `hipError_t hipSetDevice(int device)`
    SetDevice,
    /// `hipError_t hipModuleLoadData(hipModule_t* module, const void* image)`
    ModuleLoadData,
    /// `hipError_t hipModuleUnload(hipModule_t module)`
    ModuleUnload,
    /// `hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const
    /// char* name)`
    ModuleGetFunction,
    /// `hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int device)`
    DeviceGetAttribute,
    /// `hipError_t hipFuncGetAttribute(int* value, hipFunction_attribute attr, hipFunction_t
    /// function)`
    FuncGetAttribute,
    /// `hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gridX, gridY, gridZ,
    /// blockX, blockY, blockZ, unsigned sharedMemBytes, hipStream_t stream, void**
    /// kernelParams, void** extra)`
    ModuleLaunchKernel,
    /// `hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned gridX, gridY,
    /// gridZ, blockX, blockY, blockZ, unsigned sharedMemBytes, hipStream_t stream, void**
    /// kernelParams)`
    ModuleLaunchCooperativeKernel,
    /// `hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG* config, hipFunction_t f,
    /// void** kernelParams, void** extra)`: launches with a cluster. Optional (older runtimes
    /// lack it): a null table entry, reported by the launch that needs it.
    DrvLaunchKernelEx,
}

impl Entry {
    /// Every entry, in table order.
    pub const ALL: [Entry; 13] = [
        Entry::GetErrorName,
        Entry::GetErrorString,
        Entry::Init,
        Entry::GetDevice,
        Entry::SetDevice,
        Entry::ModuleLoadData,
        Entry::ModuleUnload,
        Entry::ModuleGetFunction,
        Entry::DeviceGetAttribute,
        Entry::FuncGetAttribute,
        Entry::ModuleLaunchKernel,
        Entry::ModuleLaunchCooperativeKernel,
        Entry::DrvLaunchKernelEx,
    ];

    /// Whether a runtime without this entry still serves the launches that do not call it.
    pub fn optional(self) -> bool {
        self == Entry::DrvLaunchKernelEx
    }

    /// The exported symbol (`dlsym` resolves it).
    pub fn name(self) -> &'static str {
        match self {
            Entry::GetErrorName => "hipGetErrorName",
            Entry::GetErrorString => "hipGetErrorString",
            Entry::Init => "hipInit",
            Entry::GetDevice => "hipGetDevice",
            Entry::SetDevice => "hipSetDevice",
            Entry::ModuleLoadData => "hipModuleLoadData",
            Entry::ModuleUnload => "hipModuleUnload",
            Entry::ModuleGetFunction => "hipModuleGetFunction",
            Entry::DeviceGetAttribute => "hipDeviceGetAttribute",
            Entry::FuncGetAttribute => "hipFuncGetAttribute",
            Entry::ModuleLaunchKernel => "hipModuleLaunchKernel",
            Entry::ModuleLaunchCooperativeKernel => "hipModuleLaunchCooperativeKernel",
            Entry::DrvLaunchKernelEx => "hipDrvLaunchKernelEx",
        }
    }

    /// The C signature (`hipError_t`, enums and `unsigned` are 32-bit; handles are pointers).
    pub fn signature(self) -> Signature {
        use Ty::{I32, Ptr};
        let launch: [Ty; 11] = [Ptr, I32, I32, I32, I32, I32, I32, I32, Ptr, Ptr, Ptr];
        let (params, ret): (&[Ty], Ty) = match self {
            Entry::GetErrorName | Entry::GetErrorString => (&[I32], Ptr),
            Entry::Init | Entry::SetDevice => (&[I32], I32),
            Entry::GetDevice | Entry::ModuleUnload => (&[Ptr], I32),
            Entry::ModuleLoadData => (&[Ptr, Ptr], I32),
            Entry::ModuleGetFunction => (&[Ptr, Ptr, Ptr], I32),
            Entry::DeviceGetAttribute => (&[Ptr, I32, I32], I32),
            Entry::FuncGetAttribute => (&[Ptr, I32, Ptr], I32),
            Entry::ModuleLaunchKernel => (&launch, I32),
            Entry::ModuleLaunchCooperativeKernel => (&launch[..10], I32),
            Entry::DrvLaunchKernelEx => (&[Ptr, Ptr, Ptr, Ptr], I32),
        };
        Signature::new(params.to_vec(), Some(ret))
    }

    /// Byte offset of the entry in the module's runtime table.
    pub fn offset(self) -> usize {
        Entry::ALL.iter().position(|e| *e == self).expect("listed") * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_have_distinct_offsets() {
        let offsets: Vec<usize> = Entry::ALL.iter().map(|e| e.offset()).collect();
        assert_eq!(
            offsets,
            (0..Entry::ALL.len()).map(|i| i * 8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn constants_match_the_headers() {
        // The double's values are checked against the HIP headers by compiling them
        // (tests/fake_hip/tests/header.rs).
        use safecall_fake_hip::abi;
        assert_eq!(SUCCESS, i64::from(abi::hipSuccess));
        assert_eq!(
            ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            i64::from(abi::hipDeviceAttributeMaxSharedMemoryPerBlock)
        );
        assert_eq!(
            FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            i64::from(abi::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        );
        assert_eq!(ERROR_INVALID_VALUE, i64::from(abi::hipErrorInvalidValue));
        assert_eq!(
            POINTER_ATTRIBUTE_DEVICE_POINTER,
            i64::from(abi::HIP_POINTER_ATTRIBUTE_DEVICE_POINTER)
        );
        assert_eq!(
            FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            i64::from(abi::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        );
        assert_eq!(
            FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            i64::from(abi::HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        );
        assert_eq!(
            FUNC_ATTRIBUTE_NUM_REGS,
            i64::from(abi::HIP_FUNC_ATTRIBUTE_NUM_REGS)
        );
        assert_eq!(DEVICE_PROP_SIZE, abi::PROP_SIZE);
        assert_eq!(
            LAUNCH_ATTRIBUTE_COOPERATIVE,
            i64::from(abi::hipLaunchAttributeCooperative)
        );
        assert_eq!(
            LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            i64::from(abi::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        );
        use abi::launch_layout as l;
        assert_eq!(CONFIG_SIZE as usize, l::CONFIG_SIZE);
        assert_eq!(
            CONFIG_GRID,
            [l::CONFIG_GRID_X, l::CONFIG_GRID_Y, l::CONFIG_GRID_Z]
        );
        assert_eq!(
            CONFIG_BLOCK,
            [l::CONFIG_BLOCK_X, l::CONFIG_BLOCK_Y, l::CONFIG_BLOCK_Z]
        );
        assert_eq!(CONFIG_SHARED_MEM, l::CONFIG_SHARED_MEM);
        assert_eq!(CONFIG_STREAM, l::CONFIG_STREAM);
        assert_eq!(CONFIG_ATTRS, l::CONFIG_ATTRS);
        assert_eq!(CONFIG_NUM_ATTRS, l::CONFIG_NUM_ATTRS);
        assert_eq!(ATTR_SIZE as usize, l::ATTR_SIZE);
        assert_eq!(ATTR_ID, l::ATTR_ID);
        assert_eq!(ATTR_VALUE, l::ATTR_VALUE);
        // The cluster's three `int`s fit in the value.
        const { assert!(3 * 4 <= l::ATTR_VALUE_SIZE) };
        for (name, offset, _) in DEVICE_PROP_FIELDS {
            let found = abi::PROP_OFFSETS.iter().find(|(n, _)| *n == name);
            assert_eq!(found.map(|(_, o)| *o), Some(offset), "{name}");
        }
    }

    #[test]
    fn launches_take_eleven_and_ten_arguments() {
        assert_eq!(Entry::ModuleLaunchKernel.signature().params.len(), 11);
        assert_eq!(
            Entry::ModuleLaunchCooperativeKernel
                .signature()
                .params
                .len(),
            10
        );
    }
}
