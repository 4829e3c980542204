//! A [`TritonLaunch`] as a builtin function with CPython's fast calling convention
//! (`METH_FASTCALL`, PEP 590): what the installed driver's `launcher_cls` returns, so that
//! Triton's `CompiledKernel.run(*args)` reaches the launch with the arguments as the array
//! CPython already holds (the items of the call's tuple), where a class's `__call__` gets the
//! tuple and reads each item through `PyTuple_GetItem` (the stable ABI has no direct access):
//! about 600 instructions less per 16-argument launch.
//!
//! `METH_FASTCALL` entered the limited API in 3.10, but its flag value and signature are the
//! same in every CPython since 3.7 (`Include/methodobject.h`), so the abi3 wheel (3.9+) uses it
//! as declared here. Keyword arguments are refused by CPython itself (`METH_FASTCALL` without
//! `METH_KEYWORDS`): Triton passes none.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::triton_launch::TritonLaunch;

/// `METH_FASTCALL` (CPython 3.7+, `Include/methodobject.h`).
const METH_FASTCALL: c_int = 0x0080;

/// The fast entry's signature (`_PyCFunctionFast`).
type FastCall = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    ffi::Py_ssize_t,
) -> *mut ffi::PyObject;

/// The method definition every launcher function shares (CPython reads it, never writes it).
struct Definition(ffi::PyMethodDef);

// SAFETY: the definition is immutable after construction and holds pointers to static data.
unsafe impl Sync for Definition {}

static DEFINITION: Definition = Definition(ffi::PyMethodDef {
    ml_name: c"launch".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        // SAFETY: CPython calls `ml_meth` as a `_PyCFunctionFast` when `ml_flags` holds
        // `METH_FASTCALL` (the union's member of that type is not declared for the limited
        // API of 3.9); both are C function pointers of the same size.
        PyCFunction: unsafe {
            std::mem::transmute::<FastCall, ffi::PyCFunction>(launch_fast as FastCall)
        },
    },
    ml_flags: METH_FASTCALL,
    ml_doc: c"launch(gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata, \
                  enter_hook, exit_hook, *args): one launch (Triton's launcher protocol)"
        .as_ptr(),
});

/// `launch` as a builtin function bound to it.
pub(crate) fn function<'py>(launch: Bound<'py, TritonLaunch>) -> PyResult<Bound<'py, PyAny>> {
    let py = launch.py();
    let definition: *const ffi::PyMethodDef = &DEFINITION.0;
    // SAFETY: the definition is static; `launch` is a live object, which the new function
    // holds a reference to (its `__self__`); no module.
    unsafe {
        let f =
            ffi::PyCFunction_NewEx(definition.cast_mut(), launch.as_ptr(), std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, f)
    }
}

/// The [`TritonLaunch`] behind `launcher` when it is one of [`function`]'s, or `launcher`
/// itself when it is a `TritonLaunch`.
pub(crate) fn native<'py>(launcher: &Bound<'py, PyAny>) -> Option<Bound<'py, TritonLaunch>> {
    if let Ok(native) = launcher.cast::<TritonLaunch>() {
        return Some(native.clone());
    }
    let ptr = launcher.as_ptr();
    // SAFETY: a live object; the function and self are read only from a builtin function
    // (checked first), whose self is owned by it while `launcher` lives.
    unsafe {
        if ffi::PyCFunction_Check(ptr) == 0 {
            return None;
        }
        let meth = ffi::PyCFunction_GetFunction(ptr)?;
        if meth as usize != launch_fast as FastCall as usize {
            return None;
        }
        let slf = ffi::PyCFunction_GetSelf(ptr);
        Bound::from_borrowed_ptr_or_opt(launcher.py(), slf)?
            .cast_into::<TritonLaunch>()
            .ok()
    }
}

/// The fast entry: `slf` the bound [`TritonLaunch`], `args` the call's `nargs` arguments.
unsafe extern "C" fn launch_fast(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this with the interpreter lock held. pyo3 does not count this
    // thread as attached (`Python::attach` would, for some 170 instructions per launch, a
    // tenth of a small launch's own work), so an owned `Py` or `PyErr` dropped here is pooled
    // until pyo3's next entry point rather than released: the launch path holds `Bound`s
    // (released at once) wherever it owns a reference, and only errors it replaces by others
    // reach the pool.
    let py = unsafe { Python::assume_attached() };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `slf` is the object `function` bound, a `TritonLaunch`, alive for the call.
        let launch = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<TritonLaunch>() };
        let items: &[Borrowed<'_, '_, PyAny>] = if nargs <= 0 {
            &[]
        } else {
            // SAFETY: CPython passes `nargs` live, non-NULL objects at `args`, held for the
            // call; `Borrowed` is `repr(transparent)` over a non-NULL object pointer.
            unsafe {
                std::slice::from_raw_parts(args.cast::<Borrowed<'_, '_, PyAny>>(), nargs as usize)
            }
        };
        launch
            .get()
            .call_items(items)
            .map(|()| py.None().into_bound(py))
    }));
    crate::c_entry::returned(py, result, |text| {
        PyRuntimeError::new_err(format!("safecall's Triton launcher panicked: {text}"))
    })
}
