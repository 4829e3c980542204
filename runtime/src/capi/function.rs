//! Functions and the global function registry.

use core::ffi::{c_int, c_void};

use super::error::array_bytes;
use super::safe;
use crate::abi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIMethodInfo, TVMFFIObject, TVMFFISafeCallType, TVMFFIValue,
};
use crate::function;
use crate::rust_api::{Any, AnyView};

/// `TVMFFIFunctionCreate`.
///
/// # Safety
/// `safe_call` must follow the safe-call contract; `deleter` must accept `self_handle` once;
/// `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIFunctionCreate(
    self_handle: *mut c_void,
    safe_call: Option<TVMFFISafeCallType>,
    deleter: Option<unsafe extern "C" fn(self_handle: *mut c_void)>,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        let obj = function::new_extern_c(self_handle, safe_call, deleter);
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(obj.cast()) };
        Ok(())
    })
}

/// `TVMFFIFunctionCall`: calls the function's safe call directly (no frame of ours in
/// between beyond this one), so errors pass through unchanged.
///
/// # Safety
/// `func` must be a live Function object; `args` must hold `num_args` valid values; `result`
/// must be a writable slot holding no object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIFunctionCall(
    func: *mut c_void,
    args: *mut TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: guaranteed by the caller; the callee is a safe call and does not unwind.
    unsafe { function::call_raw(func.cast(), args, num_args, result) }
}

/// `TVMFFIFunctionGetGlobal`: a new reference, or NULL when nothing is registered.
///
/// # Safety
/// `name` must be a valid byte array; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIFunctionGetGlobal(
    name: *const TVMFFIByteArray,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        crate::module::builtins::ensure();
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(function::get_global(array_bytes(name)).cast()) };
        Ok(())
    })
}

/// `TVMFFIFunctionSetGlobal`: the registry takes its own reference.
///
/// # Safety
/// `name` must be a valid byte array; `f` NULL or a live Function object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIFunctionSetGlobal(
    name: *const TVMFFIByteArray,
    f: *mut c_void,
    allow_override: c_int,
) -> c_int {
    safe(|| {
        crate::module::builtins::ensure();
        let obj = f.cast::<TVMFFIObject>();
        let value = if obj.is_null() {
            Any::none()
        } else {
            // SAFETY: `f` is a live object; the view borrows it for the conversion.
            let view = unsafe {
                AnyView::from_raw(TVMFFIAny {
                    type_index: (*obj).type_index,
                    small_str_len: 0,
                    value: TVMFFIValue { v_obj: obj },
                })
            };
            Any::from_view(view)?
        };
        // SAFETY: guaranteed by the caller.
        function::set_global(unsafe { array_bytes(name) }, value, allow_override != 0)
    })
}

/// `TVMFFIFunctionSetGlobalFromMethodInfo`.
///
/// # Safety
/// `info` must be valid; its method a Function (anything else is a TypeError).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIFunctionSetGlobalFromMethodInfo(
    info: *const TVMFFIMethodInfo,
    allow_override: c_int,
) -> c_int {
    safe(|| {
        crate::module::builtins::ensure();
        // SAFETY: guaranteed by the caller.
        let info = unsafe { &*info };
        // SAFETY: the method info's arrays and value are valid for the call.
        unsafe {
            function::set_global_from_method_info(
                array_bytes(&info.name),
                array_bytes(&info.doc),
                array_bytes(&info.metadata),
                info.flags,
                AnyView::from_raw_ref(&info.method),
                allow_override != 0,
            )
        }
    })
}
