//! The runtime's device and version queries, errors, `hipGetProcAddress` and synchronization.
//!
//! The double's devices are alike: an MI300X's attributes (gfx942, 304 compute units, 64-wide
//! wavefronts, 64 KiB of LDS per workgroup, compute capability 9.4 as HIP reports it), or on a
//! thread that chose gfx1250 ([`ARCHS`]), the same with that processor's name and 32-wide
//! wavefronts.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

use serde_json::json;

use super::abi::{self, HipError, hipErrorInvalidDevice, hipErrorInvalidValue, hipSuccess};
use super::{DEVICES, QUIET, THREAD, call, current_device, text, write};

/// What `hipDriverGetVersion` and `hipRuntimeGetVersion` report unless a test sets it: HIP
/// 6.4.43482 (ROCm 6.4), as `HIP_VERSION` numbers it (major * 10^7 + minor * 10^5 + patch).
pub const DEFAULT_DRIVER_VERSION: c_int = 60_443_482;
/// A processor the double's devices can be: its `gcnArchName` (target id and features), the
/// `EF_AMDGPU_MACH` value of its code objects and its wavefront width.
pub struct Arch {
    pub name: &'static str,
    pub mach: u32,
    pub warp_size: c_int,
}

/// The processors the double's devices can be: gfx942 (MI300X, the default) and gfx1250
/// (32-wide wavefronts, thread-block clusters: Triton's `num_ctas` above 1), which a thread
/// chooses with `safecall_fake_hip_set_arch`. Every other attribute stays the MI300X's.
pub const ARCHS: [Arch; 2] = [
    Arch {
        name: "gfx942:sramecc+:xnack-",
        mach: abi::EF_AMDGPU_MACH_AMDGCN_GFX942,
        warp_size: 64,
    },
    Arch {
        name: "gfx1250",
        mach: abi::EF_AMDGPU_MACH_AMDGCN_GFX1250,
        warp_size: 32,
    },
];

/// The processor of this thread's devices.
pub fn arch() -> &'static Arch {
    &ARCHS[THREAD.with(|t| t.borrow().arch)]
}
/// Compute units of each device.
pub const MULTIPROCESSORS: u32 = 304;
/// LDS a workgroup may use, static and dynamic together.
pub const MAX_SHARED: u32 = 64 * 1024;
/// Threads a workgroup may have.
pub const MAX_BLOCK: u32 = 1024;
/// Blocks of a cooperative grid that fit on one compute unit at once (the double's model of
/// occupancy, whatever the kernel).
pub const CO_RESIDENT_BLOCKS_PER_CU: u32 = 2;

/// The device attributes the double answers (an MI300X's values).
const DEVICE_ATTRIBUTES: &[(c_int, c_int)] = &[
    (
        abi::hipDeviceAttributeMaxSharedMemoryPerBlock,
        MAX_SHARED as c_int,
    ),
    (
        abi::hipDeviceAttributeSharedMemPerBlockOptin,
        MAX_SHARED as c_int,
    ),
    (
        abi::hipDeviceAttributeMaxSharedMemoryPerMultiprocessor,
        MAX_SHARED as c_int,
    ),
    (
        abi::hipDeviceAttributeMultiprocessorCount,
        MULTIPROCESSORS as c_int,
    ),
    (abi::hipDeviceAttributeCooperativeLaunch, 1),
    (
        abi::hipDeviceAttributeMaxThreadsPerBlock,
        MAX_BLOCK as c_int,
    ),
    (abi::hipDeviceAttributeMaxThreadsPerMultiProcessor, 2048),
    (abi::hipDeviceAttributeComputeCapabilityMajor, 9),
    (abi::hipDeviceAttributeComputeCapabilityMinor, 4),
    (abi::hipDeviceAttributeMaxRegistersPerBlock, 65_536),
    (abi::hipDeviceAttributeClockRate, 2_100_000),
    (abi::hipDeviceAttributeMemoryClockRate, 1_300_000),
    (abi::hipDeviceAttributeMemoryBusWidth, 8192),
];

fn valid_device(ordinal: c_int) -> bool {
    (0..DEVICES).contains(&ordinal)
}

/// `hipInit`.
#[unsafe(no_mangle)]
pub extern "C" fn hipInit(flags: c_uint) -> HipError {
    call("hipInit", || json!({ "flags": flags }), || hipSuccess)
}

fn driver_version() -> c_int {
    match THREAD.with(|t| t.borrow().driver_version) {
        0 => DEFAULT_DRIVER_VERSION,
        v => v,
    }
}

/// `hipDriverGetVersion`: [`DEFAULT_DRIVER_VERSION`] unless
/// `safecall_fake_hip_set_driver_version` said otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDriverGetVersion(out: *mut c_int) -> HipError {
    // SAFETY: output pointer from the caller.
    call(
        "hipDriverGetVersion",
        || json!({}),
        || unsafe { write(out, driver_version()) },
    )
}

/// `hipRuntimeGetVersion`: the same number as `hipDriverGetVersion`, as in HIP.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(out: *mut c_int) -> HipError {
    // SAFETY: output pointer from the caller.
    call(
        "hipRuntimeGetVersion",
        || json!({}),
        || unsafe { write(out, driver_version()) },
    )
}

/// `hipGetDeviceCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(out: *mut c_int) -> HipError {
    // SAFETY: output pointer from the caller.
    call(
        "hipGetDeviceCount",
        || json!({}),
        || unsafe { write(out, DEVICES) },
    )
}

/// `hipGetDevice`: this thread's current device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(out: *mut c_int) -> HipError {
    if QUIET.load(Ordering::Relaxed) {
        // Benchmark mode: no record, no injected failure; the answer, and a failure kept as
        // the thread's last error (as `call` keeps it).
        // SAFETY: output pointer from the caller.
        let code = unsafe { write(out, current_device()) };
        if code != hipSuccess {
            THREAD.with(|t| t.borrow_mut().last_error = code);
        }
        return code;
    }
    // SAFETY: output pointer from the caller.
    call(
        "hipGetDevice",
        || json!({}),
        || unsafe { write(out, current_device()) },
    )
}

/// `hipSetDevice`: makes `ordinal` this thread's current device.
#[unsafe(no_mangle)]
pub extern "C" fn hipSetDevice(ordinal: c_int) -> HipError {
    call(
        "hipSetDevice",
        || json!({ "device": ordinal }),
        || {
            if !valid_device(ordinal) {
                return hipErrorInvalidDevice;
            }
            THREAD.with(|t| t.borrow_mut().device = ordinal);
            hipSuccess
        },
    )
}

/// `hipDeviceGetAttribute`: the attributes in `DEVICE_ATTRIBUTES` and the warp size
/// ([`arch`]'s); others are `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetAttribute(
    out: *mut c_int,
    attr: c_int,
    device: c_int,
) -> HipError {
    let fields = || json!({ "attr": attr, "device": device });
    call("hipDeviceGetAttribute", fields, || {
        if !valid_device(device) {
            return hipErrorInvalidDevice;
        }
        if attr == abi::hipDeviceAttributeWarpSize {
            // SAFETY: output pointer from the caller.
            return unsafe { write(out, arch().warp_size) };
        }
        match DEVICE_ATTRIBUTES.iter().find(|(a, _)| *a == attr) {
            // SAFETY: output pointer from the caller.
            Some(&(_, value)) => unsafe { write(out, value) },
            None => hipErrorInvalidValue,
        }
    })
}

/// `hipGetDevicePropertiesR0600` (what `hipGetDeviceProperties` names in the headers): fills a
/// `hipDeviceProp_tR0600` (fields the double does not model are zero).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(prop: *mut u8, device: c_int) -> HipError {
    call(
        "hipGetDevicePropertiesR0600",
        || json!({ "device": device }),
        || {
            if !valid_device(device) {
                return hipErrorInvalidDevice;
            }
            // SAFETY: the caller passes storage for a whole `hipDeviceProp_tR0600`.
            unsafe { write(prop.cast::<[u8; abi::PROP_SIZE]>(), properties()) }
        },
    )
}

/// The bytes of one device's `hipDeviceProp_tR0600`.
fn properties() -> [u8; abi::PROP_SIZE] {
    use abi::prop::*;
    let mut p = [0u8; abi::PROP_SIZE];
    let mut put = |at: usize, bytes: &[u8]| p[at..at + bytes.len()].copy_from_slice(bytes);
    let attribute = |attr| {
        DEVICE_ATTRIBUTES
            .iter()
            .find(|(a, _)| *a == attr)
            .unwrap()
            .1
    };
    let int = |attr| i32::to_ne_bytes(attribute(attr));
    let size = |v: u64| v.to_ne_bytes();
    put(name, b"AMD Instinct MI300X (safecall fake)");
    put(gcnArchName, arch().name.as_bytes());
    put(totalGlobalMem, &size(192 << 30));
    put(sharedMemPerBlock, &size(u64::from(MAX_SHARED)));
    put(sharedMemPerBlockOptin, &size(u64::from(MAX_SHARED)));
    put(sharedMemPerMultiprocessor, &size(u64::from(MAX_SHARED)));
    put(
        maxSharedMemoryPerMultiProcessor,
        &size(u64::from(MAX_SHARED)),
    );
    put(
        regsPerBlock,
        &int(abi::hipDeviceAttributeMaxRegistersPerBlock),
    );
    put(regsPerMultiprocessor, &i32::to_ne_bytes(131_072));
    put(warpSize, &arch().warp_size.to_ne_bytes());
    put(
        maxThreadsPerBlock,
        &int(abi::hipDeviceAttributeMaxThreadsPerBlock),
    );
    for (i, dim) in [1024i32, 1024, 1024].iter().enumerate() {
        put(maxThreadsDim + 4 * i, &dim.to_ne_bytes());
    }
    for (i, dim) in [i32::MAX, 65_536, 65_536].iter().enumerate() {
        put(maxGridSize + 4 * i, &dim.to_ne_bytes());
    }
    put(clockRate, &int(abi::hipDeviceAttributeClockRate));
    put(major, &int(abi::hipDeviceAttributeComputeCapabilityMajor));
    put(minor, &int(abi::hipDeviceAttributeComputeCapabilityMinor));
    put(
        multiProcessorCount,
        &int(abi::hipDeviceAttributeMultiprocessorCount),
    );
    put(
        memoryClockRate,
        &int(abi::hipDeviceAttributeMemoryClockRate),
    );
    put(memoryBusWidth, &int(abi::hipDeviceAttributeMemoryBusWidth));
    put(l2CacheSize, &i32::to_ne_bytes(4 << 20));
    put(
        maxThreadsPerMultiProcessor,
        &int(abi::hipDeviceAttributeMaxThreadsPerMultiProcessor),
    );
    put(
        cooperativeLaunch,
        &int(abi::hipDeviceAttributeCooperativeLaunch),
    );
    p
}

/// `hipGetLastError`: this thread's last error, which it clears.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetLastError() -> HipError {
    let last = THREAD.with(|t| std::mem::replace(&mut t.borrow_mut().last_error, hipSuccess));
    super::record("hipGetLastError", || json!({ "error": last })).unwrap_or(last)
}

fn error_text(code: HipError) -> (&'static std::ffi::CStr, &'static std::ffi::CStr) {
    let known = abi::ERRORS.iter().find(|(c, _, _)| *c == code);
    let unknown = abi::ERRORS
        .iter()
        .find(|(c, _, _)| *c == abi::hipErrorUnknown);
    let &(_, name, text) = known.or(unknown).expect("hipErrorUnknown is listed");
    (name, text)
}

/// `hipGetErrorName` (not recorded): `hipErrorUnknown` for codes the double does not know.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorName(code: HipError) -> *const c_char {
    error_text(code).0.as_ptr()
}

/// `hipGetErrorString` (not recorded).
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorString(code: HipError) -> *const c_char {
    error_text(code).1.as_ptr()
}

/// `hipStreamSynchronize`: nothing to wait for.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamSynchronize(stream: usize) -> HipError {
    call(
        "hipStreamSynchronize",
        || json!({ "stream": stream }),
        || hipSuccess,
    )
}

/// `hipDeviceSynchronize`: nothing to wait for.
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceSynchronize() -> HipError {
    let fields = || json!({ "device": current_device() });
    call("hipDeviceSynchronize", fields, || hipSuccess)
}

/// The entry points `hipGetProcAddress` serves, by the name it is asked for.
const ENTRIES: &[(&str, *const ())] = &[
    ("hipInit", hipInit as *const ()),
    ("hipDriverGetVersion", hipDriverGetVersion as *const ()),
    ("hipRuntimeGetVersion", hipRuntimeGetVersion as *const ()),
    ("hipGetDeviceCount", hipGetDeviceCount as *const ()),
    ("hipGetDevice", hipGetDevice as *const ()),
    ("hipSetDevice", hipSetDevice as *const ()),
    ("hipDeviceGetAttribute", hipDeviceGetAttribute as *const ()),
    (
        "hipGetDevicePropertiesR0600",
        hipGetDevicePropertiesR0600 as *const (),
    ),
    ("hipGetLastError", hipGetLastError as *const ()),
    ("hipGetErrorName", hipGetErrorName as *const ()),
    ("hipGetErrorString", hipGetErrorString as *const ()),
    ("hipStreamSynchronize", hipStreamSynchronize as *const ()),
    ("hipDeviceSynchronize", hipDeviceSynchronize as *const ()),
    ("hipGetProcAddress", hipGetProcAddress as *const ()),
    ("hipMalloc", super::memory::hipMalloc as *const ()),
    ("hipFree", super::memory::hipFree as *const ()),
    ("hipMemcpy", super::memory::hipMemcpy as *const ()),
    ("hipMemset", super::memory::hipMemset as *const ()),
    ("hipModuleLoadData", super::hipModuleLoadData as *const ()),
    (
        "hipModuleLoadDataEx",
        super::hipModuleLoadDataEx as *const (),
    ),
    ("hipModuleUnload", super::hipModuleUnload as *const ()),
    (
        "hipModuleGetFunction",
        super::hipModuleGetFunction as *const (),
    ),
    (
        "hipFuncGetAttribute",
        super::hipFuncGetAttribute as *const (),
    ),
    (
        "hipPointerGetAttribute",
        super::hipPointerGetAttribute as *const (),
    ),
    (
        "hipModuleLaunchKernel",
        super::hipModuleLaunchKernel as *const (),
    ),
    (
        "hipModuleLaunchCooperativeKernel",
        super::hipModuleLaunchCooperativeKernel as *const (),
    ),
    (
        "hipDrvLaunchKernelEx",
        super::hipDrvLaunchKernelEx as *const (),
    ),
];

/// The names `hipGetProcAddress` serves (each one's address as `dlsym` finds it).
pub fn served_names() -> impl Iterator<Item = &'static str> {
    ENTRIES.iter().map(|(name, _)| *name)
}

/// `hipGetProcAddress` (HIP 6.2 and later): the entry named `symbol`. As in HIP (clr's
/// `hipGetProcAddress_common`), `hipGetDeviceProperties` asked for with `hipVersion` 600 or
/// more is `hipGetDevicePropertiesR0600`, and a name not found is `hipErrorInvalidValue` with
/// `HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND`. The double has no layout older than R0600: asked
/// with an older version, it answers `HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    hip_version: c_int,
    flags: u64,
    status: *mut c_int,
) -> HipError {
    // SAFETY: a NUL-terminated name (or null).
    let name = unsafe { text(symbol) };
    let fields = || json!({ "symbol": name, "version": hip_version, "flags": flags });
    call("hipGetProcAddress", fields, || {
        let Some(name) = name.as_deref().filter(|n| !n.is_empty()) else {
            return hipErrorInvalidValue;
        };
        if pfn.is_null() {
            return hipErrorInvalidValue;
        }
        let hidden = THREAD.with(|t| t.borrow().hidden.iter().any(|h| h == name));
        let (found, outcome) = match name {
            "hipGetDeviceProperties" if hip_version < 600 => {
                (None, abi::HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
            }
            "hipGetDeviceProperties" => (entry("hipGetDevicePropertiesR0600"), 0),
            _ => (entry(name), 0),
        };
        let found = found.filter(|_| !hidden);
        let outcome = match found {
            Some(_) => abi::HIP_GET_PROC_ADDRESS_SUCCESS,
            None if outcome != 0 => outcome,
            None => abi::HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
        };
        // SAFETY: output pointers from the caller (`status` may be null).
        unsafe {
            *pfn = found.unwrap_or(std::ptr::null_mut());
            if !status.is_null() {
                *status = outcome;
            }
        }
        if found.is_some() {
            hipSuccess
        } else {
            hipErrorInvalidValue
        }
    })
}

fn entry(name: &str) -> Option<*mut c_void> {
    ENTRIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f.cast_mut().cast())
}
