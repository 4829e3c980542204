//! The rest of the driver API that Triton's launcher uses (Triton 3.9,
//! `triton/backends/nvidia/driver.c`, which links `libcuda.so.1` and calls these by name, and
//! `driver.py`, which calls `cuInit` and `cuDeviceGetCount` through ctypes): the module API
//! (`cuModuleLoadData`, `cuModuleGetFunction`, `cuModuleUnload`), function attributes, device
//! attributes, pointer attributes, limits and stream capture.
//!
//! A `CUfunction` from `cuModuleGetFunction` is the same kind of handle as a `CUkernel` from
//! `cuLibraryGetKernel` (an index into the double's kernels), so `cuLaunchKernelEx` records a
//! Triton launch and a safecall launch in one format. Module handles start at [`MODULE_BASE`],
//! apart from library handles, so that one passed for the other is an invalid handle.
//!
//! The double describes two H100-like devices (compute capability 9.0, 132 multiprocessors,
//! 227 KiB of opt-in shared memory per block) and kernels of 32 registers, no local memory and
//! at most 1024 threads per block. Pointers are device memory whatever their value. It answers
//! `CUDA_ERROR_INVALID_VALUE` for attributes it does not model, as a driver does for ones it
//! does not know: Triton then takes its path for drivers without oversized shared memory
//! (`cuFuncSetCacheConfig`, then `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` set to the
//! opt-in maximum minus the kernel's static shared memory).

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::sys::{
    CUdevice_attribute_enum as Dev, CUfunction_attribute_enum as Func, CUlimit_enum,
    CUpointer_attribute_enum, CUstreamCaptureStatus_enum,
};
use serde_json::json;

use super::{
    CUresult, DEVICES, INVALID_CONTEXT, INVALID_DEVICE, INVALID_HANDLE, INVALID_IMAGE,
    INVALID_VALUE, Kernel, NOT_FOUND, SUCCESS, THREAD, context_device, image, record, registry,
    write,
};

/// The first module handle.
const MODULE_BASE: usize = 0x10_0000;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN` of the double's devices (H100).
const SHARED_OPTIN: c_int = super::OPTIN_SHARED_MEM as c_int;
/// Registers the double's kernels use.
const KERNEL_REGISTERS: c_int = 32;
/// Threads per block the double's kernels allow.
const KERNEL_MAX_THREADS: c_int = 1024;

/// The device attributes the double answers (an H100 SXM's values).
const DEVICE_ATTRIBUTES: &[(Dev, c_int)] = &[
    (Dev::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024),
    (Dev::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49_152),
    (Dev::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32),
    (Dev::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65_536),
    (Dev::CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1_980_000),
    (
        Dev::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        super::MULTIPROCESSORS as c_int,
    ),
    (Dev::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2_619_000),
    (Dev::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120),
    (Dev::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9),
    (Dev::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0),
    (
        Dev::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        233_472,
    ),
    (Dev::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1),
    (
        Dev::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        SHARED_OPTIN,
    ),
];

/// Loaded modules (each a list of kernel ids), by handle - `MODULE_BASE`.
static MODULES: Mutex<Vec<Option<Vec<usize>>>> = Mutex::new(Vec::new());
/// `CU_LIMIT_PRINTF_FIFO_SIZE` (1 MiB by default, as on a real device).
static PRINTF_FIFO: AtomicUsize = AtomicUsize::new(1 << 20);

/// The entry points of this file that `cuGetProcAddress_v2` also serves.
pub(crate) const ENTRIES: &[(&str, *const ())] = &[
    ("cuDeviceGetCount", cuDeviceGetCount as *const ()),
    ("cuDeviceGetAttribute", cuDeviceGetAttribute as *const ()),
    ("cuModuleLoadData", cuModuleLoadData as *const ()),
    ("cuModuleGetFunction", cuModuleGetFunction as *const ()),
    ("cuModuleUnload", cuModuleUnload as *const ()),
    ("cuFuncGetAttribute", cuFuncGetAttribute as *const ()),
    ("cuFuncSetAttribute", cuFuncSetAttribute as *const ()),
    ("cuFuncSetCacheConfig", cuFuncSetCacheConfig as *const ()),
    ("cuPointerGetAttribute", cuPointerGetAttribute as *const ()),
    ("cuStreamIsCapturing", cuStreamIsCapturing as *const ()),
    ("cuCtxGetLimit", cuCtxGetLimit as *const ()),
    ("cuCtxSetLimit", cuCtxSetLimit as *const ()),
    (
        "cuOccupancyMaxActiveClusters",
        cuOccupancyMaxActiveClusters as *const (),
    ),
];

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Adds the kernels of an image to the double's kernels; returns their ids.
pub(crate) fn register(kernels: Vec<image::ImageKernel>) -> Vec<usize> {
    registry(|r| {
        kernels
            .into_iter()
            .map(|k| {
                r.kernels.push(Kernel {
                    name: k.name,
                    params: k.params,
                    static_shared: k.static_shared,
                    shared_mem: HashMap::new(),
                    non_portable: Vec::new(),
                });
                r.kernels.len() - 1
            })
            .collect()
    })
}

/// The kernel id of a `CUfunction` (or `CUkernel`) handle, if it is one.
fn kernel_id(f: usize) -> Option<usize> {
    let id = f.checked_sub(1)?;
    registry(|r| (id < r.kernels.len()).then_some(id))
}

fn kernel_name(f: usize) -> Option<String> {
    registry(|r| r.kernels.get(f.checked_sub(1)?).map(|k| k.name.clone()))
}

fn static_shared(id: usize) -> u32 {
    registry(|r| r.kernels.get(id).map_or(0, |k| k.static_shared))
}

/// The device ordinal of the current context.
fn current_device() -> Option<c_int> {
    context_device(THREAD.with(|t| t.borrow().current))
}

/// `cuDeviceGetCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    if let Some(code) = record("cuDeviceGetCount", || json!({})) {
        return code;
    }
    // SAFETY: output pointer from the caller.
    unsafe { write(count, DEVICES) }
}

/// `cuDeviceGetAttribute`: the values of [`DEVICE_ATTRIBUTES`] for either device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attr: c_int,
    device: c_int,
) -> CUresult {
    let fields = json!({ "attr": attr, "device": device });
    if let Some(code) = record("cuDeviceGetAttribute", || fields) {
        return code;
    }
    if !(0..DEVICES).contains(&(device - crate::device_base())) {
        return INVALID_DEVICE;
    }
    match DEVICE_ATTRIBUTES.iter().find(|(a, _)| *a as c_int == attr) {
        // SAFETY: output pointer from the caller.
        Some((_, v)) => unsafe { write(value, *v) },
        None => INVALID_VALUE,
    }
}

/// `cuModuleLoadData`: needs a current context; reads the kernels declared in the image.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut usize, data: *const c_void) -> CUresult {
    if data.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller passes a complete image, as to the driver.
    let image = unsafe { image::read(data.cast()) };
    let fields = json!({ "image": image.summary, "image_len": image.len });
    if let Some(code) = record("cuModuleLoadData", || fields) {
        return code;
    }
    if current_device().is_none() {
        return INVALID_CONTEXT;
    }
    let Some(kernels) = image.kernels else {
        return INVALID_IMAGE;
    };
    let ids = register(kernels);
    let handle = {
        let mut modules = lock(&MODULES);
        modules.push(Some(ids));
        MODULE_BASE + modules.len() - 1
    };
    // SAFETY: output pointer from the caller.
    unsafe { write(module, handle) }
}

/// `cuModuleGetFunction`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    function: *mut usize,
    module: usize,
    name: *const c_char,
) -> CUresult {
    if name.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    if let Some(code) = record("cuModuleGetFunction", || json!({ "name": name })) {
        return code;
    }
    let ids = module
        .checked_sub(MODULE_BASE)
        .and_then(|i| lock(&MODULES).get(i).cloned().flatten());
    let Some(ids) = ids else {
        return INVALID_HANDLE;
    };
    let found = registry(|r| ids.iter().copied().find(|&id| r.kernels[id].name == name));
    match found {
        // SAFETY: output pointer from the caller.
        Some(id) => unsafe { write(function, id + 1) },
        None => NOT_FOUND,
    }
}

/// `cuModuleUnload`.
#[unsafe(no_mangle)]
pub extern "C" fn cuModuleUnload(module: usize) -> CUresult {
    if let Some(code) = record("cuModuleUnload", || json!({ "module": module })) {
        return code;
    }
    let mut modules = lock(&MODULES);
    match module
        .checked_sub(MODULE_BASE)
        .and_then(|i| modules.get_mut(i))
    {
        Some(slot @ Some(_)) => {
            *slot = None;
            SUCCESS
        }
        _ => INVALID_HANDLE,
    }
}

/// `cuFuncGetAttribute`: threads, registers, local and static shared memory, and the dynamic
/// shared memory opted in on the current context's device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(value: *mut c_int, attr: c_int, f: usize) -> CUresult {
    let fields = json!({ "attr": attr, "kernel": kernel_name(f) });
    if let Some(code) = record("cuFuncGetAttribute", || fields) {
        return code;
    }
    let Some(id) = kernel_id(f) else {
        return INVALID_HANDLE;
    };
    let answer = match attr {
        a if a == Func::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as c_int => KERNEL_MAX_THREADS,
        a if a == Func::CU_FUNC_ATTRIBUTE_NUM_REGS as c_int => KERNEL_REGISTERS,
        a if a == Func::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES as c_int => 0,
        a if a == Func::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as c_int => static_shared(id) as c_int,
        a if a == Func::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int => {
            let device = current_device().unwrap_or(0);
            registry(|r| r.kernels[id].shared_mem.get(&device).copied()).unwrap_or(0) as c_int
        }
        _ => return INVALID_VALUE,
    };
    // SAFETY: output pointer from the caller.
    unsafe { write(value, answer) }
}

/// `cuFuncSetAttribute`: the dynamic shared memory opt-in (for the current context's device,
/// at most the device's opt-in maximum minus the kernel's static shared memory) and the
/// non-portable cluster size opt-in (0 or 1).
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetAttribute(f: usize, attr: c_int, value: c_int) -> CUresult {
    let fields = json!({ "attr": attr, "value": value, "kernel": kernel_name(f) });
    if let Some(code) = record("cuFuncSetAttribute", || fields) {
        return code;
    }
    let Some(id) = kernel_id(f) else {
        return INVALID_HANDLE;
    };
    let Some(device) = current_device() else {
        return INVALID_CONTEXT;
    };
    if attr == Func::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int {
        let limit = SHARED_OPTIN - static_shared(id) as c_int;
        if !(0..=limit).contains(&value) {
            return INVALID_VALUE;
        }
        registry(|r| r.kernels[id].shared_mem.insert(device, value as u32));
        SUCCESS
    } else if attr == Func::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as c_int {
        if !(0..=1).contains(&value) {
            return INVALID_VALUE;
        }
        registry(|r| {
            let allowed = &mut r.kernels[id].non_portable;
            allowed.retain(|d| *d != device);
            if value == 1 {
                allowed.push(device);
            }
        });
        SUCCESS
    } else {
        INVALID_VALUE
    }
}

/// `cuFuncSetCacheConfig` (any preference is accepted and has no effect).
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetCacheConfig(f: usize, config: c_uint) -> CUresult {
    let fields = json!({ "config": config, "kernel": kernel_name(f) });
    if let Some(code) = record("cuFuncSetCacheConfig", || fields) {
        return code;
    }
    if kernel_id(f).is_none() {
        return INVALID_HANDLE;
    }
    SUCCESS
}

/// `cuPointerGetAttribute`: `CU_POINTER_ATTRIBUTE_DEVICE_POINTER` of a non-NULL pointer is
/// the pointer itself (every pointer is device memory to the double).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attr: c_int,
    ptr: u64,
) -> CUresult {
    if let Some(code) = record(
        "cuPointerGetAttribute",
        || json!({ "attr": attr, "ptr": ptr }),
    ) {
        return code;
    }
    if attr != CUpointer_attribute_enum::CU_POINTER_ATTRIBUTE_DEVICE_POINTER as c_int || ptr == 0 {
        return INVALID_VALUE;
    }
    // SAFETY: for this attribute the caller passes storage for a `CUdeviceptr`.
    unsafe { write(data.cast::<u64>(), ptr) }
}

/// `cuOccupancyMaxActiveClusters`: the double's model of occupancy, one cluster of
/// `clusterDim` blocks per `clusterDim` multiprocessors (a cluster dimension attribute of 1 to
/// 16 blocks in x, else `CUDA_ERROR_INVALID_CLUSTER_SIZE`; none is `CUDA_ERROR_INVALID_VALUE`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveClusters(
    out: *mut c_int,
    f: usize,
    config: *const cudarc::driver::sys::CUlaunchConfig,
) -> CUresult {
    // SAFETY: the caller passes a complete launch config with `numAttrs` attributes.
    let cluster = unsafe { config.as_ref() }.and_then(|c| {
        (0..c.numAttrs as usize)
            // SAFETY: `attrs` has `numAttrs` entries.
            .map(|i| unsafe { &*c.attrs.add(i) })
            .find(|a| a.id == cudarc::driver::sys::CUlaunchAttributeID_enum::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            // SAFETY: the attribute is a cluster dimension.
            .map(|a| unsafe { a.value.clusterDim.x })
    });
    let fields = json!({ "kernel": kernel_name(f), "cluster_x": cluster });
    if let Some(code) = record("cuOccupancyMaxActiveClusters", || fields) {
        return code;
    }
    if kernel_id(f).is_none() {
        return INVALID_HANDLE;
    }
    match cluster {
        None => INVALID_VALUE,
        Some(x) if !(1..=16).contains(&x) => super::INVALID_CLUSTER_SIZE,
        // SAFETY: output pointer from the caller.
        Some(x) => unsafe { write(out, (super::MULTIPROCESSORS / x) as c_int) },
    }
}

/// `cuStreamIsCapturing`: no stream is ever being captured.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(stream: usize, status: *mut c_int) -> CUresult {
    if let Some(code) = record("cuStreamIsCapturing", || json!({ "stream": stream })) {
        return code;
    }
    let none = CUstreamCaptureStatus_enum::CU_STREAM_CAPTURE_STATUS_NONE as c_int;
    // SAFETY: output pointer from the caller.
    unsafe { write(status, none) }
}

fn is_printf_fifo(limit: c_int) -> bool {
    limit == CUlimit_enum::CU_LIMIT_PRINTF_FIFO_SIZE as c_int
}

/// `cuCtxGetLimit`: the printf FIFO size (the one limit the double models).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CUresult {
    if let Some(code) = record("cuCtxGetLimit", || json!({ "limit": limit })) {
        return code;
    }
    if !is_printf_fifo(limit) {
        return INVALID_VALUE;
    }
    // SAFETY: output pointer from the caller.
    unsafe { write(value, PRINTF_FIFO.load(Ordering::Relaxed)) }
}

/// `cuCtxSetLimit`: the printf FIFO size.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CUresult {
    let fields = json!({ "limit": limit, "value": value });
    if let Some(code) = record("cuCtxSetLimit", || fields) {
        return code;
    }
    if !is_printf_fifo(limit) {
        return INVALID_VALUE;
    }
    PRINTF_FIFO.store(value, Ordering::Relaxed);
    SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_give_functions_that_launch_like_kernels() {
        super::super::safecall_fake_cuda_reset();
        let ptx = c".entry f(.param .u64 p, .param .u32 n)";
        let mut module = 0usize;
        // SAFETY: valid pointers.
        unsafe {
            assert_eq!(
                cuModuleLoadData(&mut module, ptx.as_ptr().cast()),
                INVALID_CONTEXT
            );
            super::super::safecall_fake_cuda_set_user_context(0);
            assert_eq!(cuModuleLoadData(&mut module, ptx.as_ptr().cast()), SUCCESS);
            let mut f = 0usize;
            assert_eq!(
                cuModuleGetFunction(&mut f, module, c"g".as_ptr()),
                NOT_FOUND
            );
            assert_eq!(
                cuModuleGetFunction(&mut f, 1, c"f".as_ptr()),
                INVALID_HANDLE
            );
            assert_eq!(cuModuleGetFunction(&mut f, module, c"f".as_ptr()), SUCCESS);
            assert_eq!(registry(|r| r.kernels[f - 1].params.clone()), vec![8, 4]);
            let dynamic = Func::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int;
            assert_eq!(
                cuFuncSetAttribute(f, dynamic, SHARED_OPTIN + 1),
                INVALID_VALUE
            );
            assert_eq!(cuFuncSetAttribute(f, dynamic, 100_000), SUCCESS);
            let mut v = 0;
            assert_eq!(cuFuncGetAttribute(&mut v, dynamic, f), SUCCESS);
            assert_eq!(v, 100_000);
            assert_eq!(cuFuncSetAttribute(f, 17, 3), INVALID_VALUE, "not modelled");
            assert_eq!(cuModuleUnload(module), SUCCESS);
            assert_eq!(cuModuleUnload(module), INVALID_HANDLE);
        }
    }

    #[test]
    fn devices_answer_by_handle_not_ordinal() {
        let major = Dev::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as c_int;
        let mut v = 0;
        // SAFETY: valid pointers.
        unsafe {
            assert_eq!(
                cuDeviceGetAttribute(&mut v, major, crate::DEVICE_BASE + 1),
                SUCCESS
            );
            assert_eq!(v, 9);
            assert_eq!(cuDeviceGetAttribute(&mut v, major, 0), INVALID_DEVICE);
            assert_eq!(
                cuDeviceGetAttribute(&mut v, -5, crate::DEVICE_BASE),
                INVALID_VALUE
            );
        }
    }
}
