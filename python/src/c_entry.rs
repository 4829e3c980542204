//! What the hand-written C entry points (`triton_run`'s builtin, `triton_fast_call`'s
//! launcher) share: a call's outcome, a panic caught at the boundary included, in CPython's
//! return convention (no panic unwinds across `extern "C"`).

use pyo3::ffi;
use pyo3::prelude::*;

/// `result` (of `catch_unwind` around the call) as CPython's return: the object as a new
/// reference, or NULL with the error set; a panic becomes `panicked(its text)`.
pub(crate) fn returned<'py>(
    py: Python<'py>,
    result: std::thread::Result<PyResult<Bound<'py, PyAny>>>,
    panicked: impl FnOnce(String) -> PyErr,
) -> *mut ffi::PyObject {
    let error = match result {
        Ok(Ok(value)) => return value.into_ptr(),
        Ok(Err(e)) => e,
        Err(panic) => panicked(safecall_runtime::capi::panic_text(panic.as_ref())),
    };
    error.restore(py);
    std::ptr::null_mut()
}
