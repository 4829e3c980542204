//! Python's recursion limit for native calls that call back into Python. A dispatched
//! `kernel[grid](...)` may call Python code (a `data_ptr()`, a grid function, a launch hook)
//! that calls the kernel again; Triton's own path runs Python frames there
//! (`JITFunction.run` and its generated binder), which count towards
//! `sys.getrecursionlimit()`, so an endless re-entry raises `RecursionError` before the C
//! stack runs out. The dispatch counts itself as those frames ([`RecursionGuard`]), so that it
//! raises where Triton raises.

use std::ffi::CStr;
use std::marker::PhantomData;

use pyo3::ffi;
use pyo3::prelude::*;

/// Levels of Python's recursion count, held while it lives (`Py_EnterRecursiveCall` per
/// level, then as many `Py_LeaveRecursiveCall`s when dropped). Not `Send`: it is entered and
/// left on one thread, with the interpreter attached.
pub(crate) struct RecursionGuard<'py> {
    levels: usize,
    _attached: PhantomData<Python<'py>>,
}

impl<'py> RecursionGuard<'py> {
    /// Enters `levels` levels (the Python frames the native call stands for); a
    /// `RecursionError` whose message ends with `doing` (" while ...") at the limit.
    pub(crate) fn enter(_py: Python<'py>, levels: usize, doing: &'static CStr) -> PyResult<Self> {
        let mut guard = RecursionGuard {
            levels: 0,
            _attached: PhantomData,
        };
        while guard.levels < levels {
            // SAFETY: the interpreter is attached (`_py`); `doing` is a NUL-terminated static
            // string, which CPython appends to the `RecursionError`'s message.
            if unsafe { ffi::Py_EnterRecursiveCall(doing.as_ptr()) } != 0 {
                // The levels entered so far are left when `guard` drops.
                return Err(PyErr::fetch(_py));
            }
            guard.levels += 1;
        }
        Ok(guard)
    }
}

impl Drop for RecursionGuard<'_> {
    fn drop(&mut self) {
        for _ in 0..self.levels {
            // SAFETY: each level was entered by `enter` on this thread, which is attached for
            // `'py` (the guard cannot leave it).
            unsafe { ffi::Py_LeaveRecursiveCall() };
        }
    }
}
