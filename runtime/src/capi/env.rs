//! The environment: streams, allocators, signals, the host C API, module symbols, init-once.

use core::ffi::{c_char, c_int, c_void};

use super::error::cstr_bytes;
use super::{fatal_on_error, safe};
use crate::abi::symbols::error_kind::RUNTIME_ERROR;
use crate::abi::{DLPackManagedTensorAllocator, TVMFFIStreamHandle};
use crate::env;
use crate::rust_api::Error;

/// `TVMFFIEnvSetStream`: per thread, per (device type, device id).
///
/// # Safety
/// `opt_out_original_stream` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvSetStream(
    device_type: i32,
    device_id: i32,
    stream: TVMFFIStreamHandle,
    opt_out_original_stream: *mut TVMFFIStreamHandle,
) -> c_int {
    safe(|| {
        let original = env::set_stream(device_type, device_id, stream);
        if !opt_out_original_stream.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { opt_out_original_stream.write(original) };
        }
        Ok(())
    })
}

/// `TVMFFIEnvGetStream`: NULL when none was set on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn TVMFFIEnvGetStream(device_type: i32, device_id: i32) -> TVMFFIStreamHandle {
    env::get_stream(device_type, device_id)
}

/// `TVMFFIEnvSetDLPackManagedTensorAllocator`: sets the thread's allocator (and the
/// process's when asked); reports the thread's previous one (NULL on a thread that set
/// none, as libtvm_ffi 0.1.15.post2 does).
///
/// # Safety
/// `opt_out_original_allocator` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvSetDLPackManagedTensorAllocator(
    allocator: DLPackManagedTensorAllocator,
    write_to_global_context: c_int,
    opt_out_original_allocator: *mut DLPackManagedTensorAllocator,
) -> c_int {
    safe(|| {
        let original = env::set_allocator(allocator, write_to_global_context != 0);
        if !opt_out_original_allocator.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { opt_out_original_allocator.write(original) };
        }
        Ok(())
    })
}

/// `TVMFFIEnvGetDLPackManagedTensorAllocator`: the thread's, else the process's, else NULL.
#[unsafe(no_mangle)]
pub extern "C" fn TVMFFIEnvGetDLPackManagedTensorAllocator() -> DLPackManagedTensorAllocator {
    fatal_on_error("TVMFFIEnvGetDLPackManagedTensorAllocator", || {
        Ok(env::get_allocator())
    })
}

/// `TVMFFIEnvCheckSignals`: 0, or -1 when the host (e.g. Python) has a pending signal.
#[unsafe(no_mangle)]
pub extern "C" fn TVMFFIEnvCheckSignals() -> c_int {
    super::no_unwind("TVMFFIEnvCheckSignals", env::check_signals)
}

/// `TVMFFIEnvRegisterCAPI`: `PyErr_CheckSignals`, `PyGILState_Ensure`, `PyGILState_Release`.
///
/// # Safety
/// `name` must be NUL-terminated; `symbol` a function of the documented signature (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvRegisterCAPI(name: *const c_char, symbol: *mut c_void) -> c_int {
    // SAFETY: guaranteed by the caller.
    safe(|| env::register_capi(unsafe { cstr_bytes(name) }, symbol))
}

/// `TVMFFIEnvModLookupFromImports`: `library_ctx` is the module a loader stored in a
/// library's `__tvm_ffi__library_ctx`; the function is searched in its imports (recursively),
/// then in the global registry, and cached in the module, so the result is a borrowed
/// reference valid while the module lives. With a NULL `library_ctx` (code that was not loaded
/// as a module, e.g. JIT-compiled), only the global registry is searched, and the function is
/// kept alive for the rest of the process.
///
/// # Safety
/// `library_ctx` must be NULL or a live object; `func_name` must be NUL-terminated; `out`
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvModLookupFromImports(
    library_ctx: *mut c_void,
    func_name: *const c_char,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        crate::module::builtins::ensure();
        // SAFETY: guaranteed by the caller.
        let name = unsafe { cstr_bytes(func_name) };
        let func = if library_ctx.is_null() {
            crate::function::lookup_cached(name).ok_or_else(|| {
                Error::new(
                    RUNTIME_ERROR,
                    &format!(
                        "Cannot find function {} in the imported modules or global registry.",
                        String::from_utf8_lossy(name)
                    ),
                )
            })?
        } else {
            // SAFETY: guaranteed by the caller.
            let module = unsafe { crate::module::module_from_handle(library_ctx) }?;
            module.lookup_from_imports(&String::from_utf8_lossy(name))?
        };
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(func.cast()) };
        Ok(())
    })
}

/// `TVMFFIEnvModRegisterContextSymbol`: stored for the module loader.
///
/// # Safety
/// `name` must be NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvModRegisterContextSymbol(
    name: *const c_char,
    symbol: *mut c_void,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        env::register_context_symbol(unsafe { cstr_bytes(name) }, symbol);
        Ok(())
    })
}

/// `TVMFFIEnvModRegisterSystemLibSymbol`: stored for the system-library loader.
///
/// # Safety
/// `name` must be NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvModRegisterSystemLibSymbol(
    name: *const c_char,
    symbol: *mut c_void,
) -> c_int {
    fatal_on_error("TVMFFIEnvModRegisterSystemLibSymbol", || {
        // SAFETY: guaranteed by the caller.
        env::register_system_lib_symbol(unsafe { cstr_bytes(name) }, symbol);
        Ok(0)
    })
}

/// `TVMFFIHandleInitOnce`.
///
/// # Safety
/// `handle_addr` must be a valid, pointer-aligned slot; `init_func` per the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIHandleInitOnce(
    handle_addr: *mut *mut c_void,
    init_func: unsafe extern "C" fn(result: *mut *mut c_void) -> c_int,
) -> c_int {
    // SAFETY: guaranteed by the caller.
    super::no_unwind("TVMFFIHandleInitOnce", || unsafe {
        env::init_once(handle_addr, init_func)
    })
}

/// `TVMFFIHandleDeinitOnce`.
///
/// # Safety
/// `handle_addr` must be a valid, pointer-aligned slot; `deinit_func` per the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIHandleDeinitOnce(
    handle_addr: *mut *mut c_void,
    deinit_func: unsafe extern "C" fn(handle: *mut c_void) -> c_int,
) -> c_int {
    // SAFETY: guaranteed by the caller.
    super::no_unwind("TVMFFIHandleDeinitOnce", || unsafe {
        env::deinit_once(handle_addr, deinit_func)
    })
}
