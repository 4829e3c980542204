//! Objects, version and the custom allocator.

use core::ffi::{c_int, c_void};

use super::{fatal_on_error, no_unwind, safe};
use crate::abi::symbols::error_kind::RUNTIME_ERROR;
use crate::abi::{TVM_FFI_VERSION, TVMFFICustomAllocator, TVMFFIObject, TVMFFIVersion, type_index};
use crate::object;
use crate::rust_api::Error;

/// `TVMFFIGetVersion`.
///
/// # Safety
/// `out_version` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIGetVersion(out_version: *mut TVMFFIVersion) {
    // SAFETY: guaranteed by the caller.
    no_unwind("TVMFFIGetVersion", || unsafe {
        out_version.write(TVM_FFI_VERSION)
    });
}

/// `TVMFFIObjectIncRef`.
///
/// # Safety
/// `obj` must be a live object the caller holds a reference to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIObjectIncRef(obj: *mut c_void) -> c_int {
    safe(|| {
        if !obj.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { object::inc_ref(obj.cast()) };
        }
        Ok(())
    })
}

/// `TVMFFIObjectDecRef` (NULL is a no-op).
///
/// # Safety
/// `obj` must be NULL or a live object the caller holds a reference to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIObjectDecRef(obj: *mut c_void) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { object::dec_ref(obj.cast::<TVMFFIObject>()) };
        Ok(())
    })
}

/// `TVMFFIObjectCreateOpaque` (only `kTVMFFIOpaquePyObject`, as in the real runtime).
///
/// # Safety
/// `out` must be writable; `deleter` must accept `handle` once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIObjectCreateOpaque(
    handle: *mut c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(handle: *mut c_void)>,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        if type_index != type_index::OPAQUE_PY_OBJECT {
            return Err(Error::new(
                RUNTIME_ERROR,
                "Only kTVMFFIOpaquePyObject is supported for now",
            ));
        }
        let obj = object::new_opaque(handle, type_index, deleter);
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(obj.cast()) };
        Ok(())
    })
}

/// The registered custom allocator (the builtin one until another is set).
static CURRENT_ALLOCATOR: core::sync::atomic::AtomicPtr<TVMFFICustomAllocator> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// `TVMFFIGetCustomAllocator`: never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn TVMFFIGetCustomAllocator() -> *mut TVMFFICustomAllocator {
    fatal_on_error("TVMFFIGetCustomAllocator", || {
        let current = CURRENT_ALLOCATOR.load(core::sync::atomic::Ordering::Acquire);
        Ok(if current.is_null() {
            object::BUILTIN_ALLOCATOR.0.get()
        } else {
            current
        })
    })
}

/// `TVMFFISetCustomAllocator` (NULL restores the builtin allocator). Objects of this runtime
/// are allocated by the builtin allocator regardless, as in apache-tvm-ffi 0.1.x.
///
/// # Safety
/// `allocator` must be NULL or live for the rest of the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFISetCustomAllocator(allocator: *mut TVMFFICustomAllocator) -> c_int {
    safe(|| {
        CURRENT_ALLOCATOR.store(allocator, core::sync::atomic::Ordering::Release);
        Ok(())
    })
}
