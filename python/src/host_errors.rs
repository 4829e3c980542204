//! The error a generated host function raised, as the Python exception of its kind: its
//! kind and message read from the libtvm_ffi error object the call left on this thread.

use std::ffi::{c_int, c_void};

use pyo3::exceptions::{
    PyAttributeError, PyIndexError, PyKeyError, PyOverflowError, PyRuntimeError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;

use safecall_runtime::abi::TVMFFIObject;

/// The libtvm_ffi entry points that retrieve a raised error (the process's runtime, loaded
/// with `RTLD_GLOBAL` by `import tvm_ffi`: generated code raised the error there).
pub(crate) struct ErrorApi {
    move_from_raised: unsafe extern "C" fn(*mut *mut TVMFFIObject),
    dec_ref: unsafe extern "C" fn(*mut TVMFFIObject) -> c_int,
}

impl ErrorApi {
    /// Finds the two entry points (an error where `tvm_ffi` is not imported).
    pub(crate) fn load() -> PyResult<ErrorApi> {
        /// `dlsym(RTLD_DEFAULT, name)`.
        fn symbol(name: &std::ffi::CStr) -> PyResult<*mut c_void> {
            // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the loaded objects.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            if p.is_null() {
                return Err(PyRuntimeError::new_err(format!(
                    "{} is not loaded (import tvm_ffi first)",
                    name.to_string_lossy()
                )));
            }
            Ok(p)
        }
        let move_from_raised = symbol(c"TVMFFIErrorMoveFromRaised")?;
        let dec_ref = symbol(c"TVMFFIObjectDecRef")?;
        // SAFETY: both are libtvm_ffi's C API functions of these signatures (c_api.h 0.1.x).
        unsafe {
            Ok(ErrorApi {
                move_from_raised: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut *mut TVMFFIObject),
                >(move_from_raised),
                dec_ref: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut TVMFFIObject) -> c_int,
                >(dec_ref),
            })
        }
    }

    /// The error the host function raised, as the Python exception of its kind.
    pub(crate) fn raised(&self) -> PyErr {
        let mut obj: *mut TVMFFIObject = std::ptr::null_mut();
        // SAFETY: an output pointer; libtvm_ffi moves this thread's raised error into it.
        unsafe { (self.move_from_raised)(&mut obj) };
        if obj.is_null() {
            return PyRuntimeError::new_err("the host function failed without raising an error");
        }
        // SAFETY: `obj` is a live error object we now own.
        let cell = unsafe { safecall_runtime::error::cell(obj) };
        let text = |a: &safecall_runtime::abi::TVMFFIByteArray| {
            // SAFETY: the cell's byte arrays are valid for the object's life.
            String::from_utf8_lossy(unsafe {
                std::slice::from_raw_parts(a.data.cast::<u8>(), a.size)
            })
            .into_owned()
        };
        let (kind, message) = (text(&cell.kind), text(&cell.message));
        // SAFETY: we own one reference, released once.
        unsafe { (self.dec_ref)(obj) };
        match kind.as_str() {
            "ValueError" => PyValueError::new_err(message),
            "TypeError" => PyTypeError::new_err(message),
            "IndexError" => PyIndexError::new_err(message),
            "KeyError" => PyKeyError::new_err(message),
            "AttributeError" => PyAttributeError::new_err(message),
            "OverflowError" => PyOverflowError::new_err(message),
            _ => PyRuntimeError::new_err(message),
        }
    }
}
