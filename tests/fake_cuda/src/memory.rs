//! Memory, copies, streams and synchronization, for programs that run kernels and read their
//! results (`python -m safecall.selftest`): device memory is host memory here (kernels compute
//! nothing, so what a program reads back is what it wrote), allocations need a current
//! context as on a real driver, and a free of an address the double did not hand out is
//! `CUDA_ERROR_INVALID_VALUE`.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

use serde_json::json;

use crate::{
    CUresult, DEVICES, INVALID_CONTEXT, INVALID_DEVICE, INVALID_VALUE, SUCCESS, THREAD,
    context_device, record, write,
};

/// The alignment of every allocation (a real driver's is at least 256 bytes).
const ALIGN: usize = 256;

/// Live allocations: address -> layout.
static ALLOCATIONS: Mutex<Option<HashMap<u64, Layout>>> = Mutex::new(None);

fn allocations<T>(f: impl FnOnce(&mut HashMap<u64, Layout>) -> T) -> T {
    let mut guard = ALLOCATIONS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

fn has_context() -> bool {
    context_device(THREAD.with(|t| t.borrow().current)).is_some()
}

/// Whether `[ptr, ptr + len)` lies inside one live allocation.
fn inside(ptr: u64, len: usize) -> bool {
    allocations(|a| {
        a.iter().any(|(&base, layout)| {
            ptr >= base && ptr.saturating_add(len as u64) <= base + layout.size() as u64
        })
    })
}

/// `cuMemAlloc_v2`: zeroed host memory, 256-byte aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(out: *mut u64, bytes: usize) -> CUresult {
    if let Some(code) = record("cuMemAlloc_v2", || json!({ "bytes": bytes })) {
        return code;
    }
    if !has_context() {
        return INVALID_CONTEXT;
    }
    let Ok(layout) = Layout::from_size_align(bytes.max(1), ALIGN) else {
        return INVALID_VALUE;
    };
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as u64;
    if ptr == 0 {
        return 2; // CUDA_ERROR_OUT_OF_MEMORY
    }
    allocations(|a| a.insert(ptr, layout));
    // SAFETY: output pointer from the caller.
    unsafe { write(out, ptr) }
}

/// `cuMemFree_v2`.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemFree_v2(ptr: u64) -> CUresult {
    if let Some(code) = record("cuMemFree_v2", || json!({})) {
        return code;
    }
    match allocations(|a| a.remove(&ptr)) {
        // SAFETY: `ptr` was allocated with `layout` by `cuMemAlloc_v2` and is freed once.
        Some(layout) => unsafe {
            std::alloc::dealloc(ptr as *mut u8, layout);
            SUCCESS
        },
        None => INVALID_VALUE,
    }
}

/// `cuMemcpyHtoD_v2`: the destination must lie inside one allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, bytes: usize) -> CUresult {
    if let Some(code) = record("cuMemcpyHtoD_v2", || json!({ "bytes": bytes })) {
        return code;
    }
    if !inside(dst, bytes) || (src.is_null() && bytes > 0) {
        return INVALID_VALUE;
    }
    // SAFETY: `dst` spans `bytes` of a live allocation; the caller's `src` has `bytes`.
    unsafe { std::ptr::copy(src.cast::<u8>(), dst as *mut u8, bytes) };
    SUCCESS
}

/// `cuMemcpyDtoH_v2`: the source must lie inside one allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CUresult {
    if let Some(code) = record("cuMemcpyDtoH_v2", || json!({ "bytes": bytes })) {
        return code;
    }
    if !inside(src, bytes) || (dst.is_null() && bytes > 0) {
        return INVALID_VALUE;
    }
    // SAFETY: `src` spans `bytes` of a live allocation; the caller's `dst` has room for them.
    unsafe { std::ptr::copy(src as *const u8, dst.cast::<u8>(), bytes) };
    SUCCESS
}

/// `cuMemsetD8_v2`.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8_v2(dst: u64, value: u8, count: usize) -> CUresult {
    if let Some(code) = record(
        "cuMemsetD8_v2",
        || json!({ "value": value, "bytes": count }),
    ) {
        return code;
    }
    if !inside(dst, count) {
        return INVALID_VALUE;
    }
    // SAFETY: `dst` spans `count` bytes of a live allocation.
    unsafe { std::ptr::write_bytes(dst as *mut u8, value, count) };
    SUCCESS
}

/// `cuCtxSynchronize`: needs a current context; nothing is pending on the double.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    if let Some(code) = record("cuCtxSynchronize", || json!({})) {
        return code;
    }
    if has_context() {
        SUCCESS
    } else {
        INVALID_CONTEXT
    }
}

/// `cuDeviceGetName`: `safecall fake CUDA device N`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> CUresult {
    if let Some(code) = record("cuDeviceGetName", || json!({ "device": device })) {
        return code;
    }
    let ordinal = device - crate::device_base();
    if !(0..DEVICES).contains(&ordinal) {
        return INVALID_DEVICE;
    }
    let text = format!("safecall fake CUDA device {ordinal}");
    if name.is_null() || len <= text.len() as c_int {
        return INVALID_VALUE;
    }
    // SAFETY: `name` has `len` bytes, more than the text and its NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast(), text.len());
        *name.add(text.len()) = 0;
    }
    SUCCESS
}

/// Streams handed out by `cuStreamCreate` (handles from 0x5000 on, never reused).
static STREAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
const STREAM_BASE: usize = 0x5000;

/// `cuStreamCreate`: needs a current context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(out: *mut usize, flags: c_uint) -> CUresult {
    if let Some(code) = record("cuStreamCreate", || json!({ "flags": flags })) {
        return code;
    }
    if !has_context() {
        return INVALID_CONTEXT;
    }
    let handle = {
        let mut streams = STREAMS.lock().unwrap_or_else(|p| p.into_inner());
        let handle = STREAM_BASE + 16 * (streams.len() + 1);
        streams.push(handle);
        handle
    };
    // SAFETY: output pointer from the caller.
    unsafe { write(out, handle) }
}

/// `cuStreamDestroy_v2`: a handle `cuStreamCreate` did not make is invalid.
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamDestroy_v2(stream: usize) -> CUresult {
    if let Some(code) = record("cuStreamDestroy_v2", || json!({ "stream": stream })) {
        return code;
    }
    let mut streams = STREAMS.lock().unwrap_or_else(|p| p.into_inner());
    match streams.iter().position(|&s| s == stream) {
        Some(i) => {
            streams.remove(i);
            SUCCESS
        }
        None => crate::INVALID_HANDLE,
    }
}
