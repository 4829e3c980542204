//! Device memory and copies, with host memory standing in for the device's: `hipMalloc`,
//! `hipFree`, `hipMemcpy` and `hipMemset`, for programs that write inputs and read results
//! back (the self-test's AMD checks). Kernels run by the double compute nothing, so what a
//! program reads back is what it wrote.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use serde_json::json;

use super::abi::{HipError, hipErrorInvalidValue, hipSuccess};
use super::{call, current_device, write};

/// Alignment of every allocation (HIP's is at least 256 bytes).
const ALIGN: usize = 256;

/// Live allocations: address -> layout.
static ALLOCATIONS: Mutex<Option<HashMap<usize, Layout>>> = Mutex::new(None);

fn allocations<T>(f: impl FnOnce(&mut HashMap<usize, Layout>) -> T) -> T {
    let mut guard = ALLOCATIONS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// `hipMalloc(void** ptr, size_t size)`: zeroed host memory (a zero size gives NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> HipError {
    let fields = || json!({ "size": size, "device": current_device() });
    call("hipMalloc", fields, || {
        if size == 0 {
            // SAFETY: the caller passes a pointer to writable storage.
            return unsafe { write(ptr, std::ptr::null_mut()) };
        }
        let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
            return hipErrorInvalidValue;
        };
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return super::abi::hipErrorOutOfMemory;
        }
        allocations(|a| a.insert(p as usize, layout));
        // SAFETY: the caller passes a pointer to writable storage.
        unsafe { write(ptr, p.cast()) }
    })
}

/// `hipFree(void* ptr)`: NULL is a no-op; an address `hipMalloc` did not return is an error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFree(ptr: *mut c_void) -> HipError {
    call(
        "hipFree",
        || json!({ "ptr": ptr as usize }),
        || {
            if ptr.is_null() {
                return hipSuccess;
            }
            match allocations(|a| a.remove(&(ptr as usize))) {
                // SAFETY: allocated by `hipMalloc` with this layout, freed once.
                Some(layout) => unsafe {
                    std::alloc::dealloc(ptr.cast(), layout);
                    hipSuccess
                },
                None => hipErrorInvalidValue,
            }
        },
    )
}

/// Whether `[p, p + len)` lies in one live allocation.
fn in_allocation(p: usize, len: usize) -> bool {
    allocations(|a| {
        a.iter()
            .any(|(&base, l)| p >= base && p.saturating_add(len) <= base + l.size())
    })
}

/// `hipMemcpy(void* dst, const void* src, size_t size, hipMemcpyKind kind)`: a host copy;
/// the device side (by `kind`: 1 host to device, 2 device to host, 3 device to device) must
/// lie in an allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    kind: c_int,
) -> HipError {
    let fields = || json!({ "dst": dst as usize, "src": src as usize, "size": size, "kind": kind });
    call("hipMemcpy", fields, || {
        let device_ok = match kind {
            1 => in_allocation(dst as usize, size),
            2 => in_allocation(src as usize, size),
            3 => in_allocation(dst as usize, size) && in_allocation(src as usize, size),
            _ => false,
        };
        if !device_ok || dst.is_null() || src.is_null() {
            return hipErrorInvalidValue;
        }
        // SAFETY: both ranges are valid for `size` bytes (the device side checked above, the
        // host side the caller's), and `hipMemcpy`'s ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), size) };
        hipSuccess
    })
}

/// `hipMemset(void* dst, int value, size_t size)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemset(dst: *mut c_void, value: c_int, size: usize) -> HipError {
    let fields = || json!({ "dst": dst as usize, "value": value, "size": size });
    call("hipMemset", fields, || {
        if !in_allocation(dst as usize, size) {
            return hipErrorInvalidValue;
        }
        // SAFETY: the range lies in an allocation.
        unsafe { std::ptr::write_bytes(dst.cast::<u8>(), value as u8, size) };
        hipSuccess
    })
}
