//! `obj.name()` through CPython's vectorcall method protocol, for the calls made once per
//! argument on every launch (`data_ptr()`).
//!
//! The extension is built for the stable ABI of Python 3.9, where pyo3's `call_method0` goes
//! through `PyObject_CallMethodObjArgs` (a C variadic call that counts and copies its
//! arguments before the same vectorcall): about 100 instructions more per call than
//! `PyObject_VectorcallMethod`, which Triton's own launcher uses. That function is exported by
//! every CPython since 3.9 with this signature (PEP 590; part of the stable ABI from 3.12,
//! unchanged), so it is declared here for the older versions the wheel also serves.

use pyo3::ffi;
use pyo3::prelude::*;

unsafe extern "C" {
    /// `PyObject_VectorcallMethod(name, args, nargsf, kwnames)`: calls method `name` of
    /// `args[0]` with the rest of `args` (CPython's `Include/cpython/abstract.h` 3.9-3.11,
    /// `Include/abstract.h` 3.12+).
    fn PyObject_VectorcallMethod(
        name: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: usize,
        kwnames: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
}

/// `value.name()`, with the result and errors of `value.call_method0(name)`.
pub(crate) fn call_method0<'py>(
    value: &Bound<'py, PyAny>,
    name: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let args = [value.as_ptr()];
    // SAFETY: the interpreter lock is held (`py`); `args` holds one borrowed, live object
    // (`self`) for the duration of the call, with no keyword names; `name` is a live `str`.
    // The result is a new reference or NULL with an exception set, which `from_owned_ptr_or_err`
    // takes over.
    unsafe {
        let result =
            PyObject_VectorcallMethod(name.as_ptr(), args.as_ptr(), 1, std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, result)
    }
}
