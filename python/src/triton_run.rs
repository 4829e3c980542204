//! The dispatchers' `run(*args, grid=..., warmup=..., **kwargs)` (`JITFunction.run`'s,
//! `Autotuner.run`'s and `Heuristics.run`'s protocol, as Triton's layers, Helion's launcher and
//! Inductor call it) as builtins called with CPython's tuple and dictionary (`METH_VARARGS |
//! METH_KEYWORDS`): these callers pass `*args` and keywords (Python's `CALL_FUNCTION_EX`), so
//! CPython has both built already. The tuple is used as it is; `grid` and `warmup` are looked
//! up in the dictionary, which a kernel's dispatcher then binds as it is, leaving the two out
//! (`triton_binding`), and which is copied without them for a layer. The pyo3 method this
//! replaces matched every keyword's name against them and built its `**kwargs` dictionary
//! anew (callgrind, the installed dispatch's `kernel.run(*args, grid=, warmup=False,
//! BLOCK=128)` on Triton 3.9, `PYTHONHASHSEED=0` / `1`: 15,206 / 15,078 instructions per call;
//! with a copy of the dictionary 14,660 / 14,532; bound as it is 14,145 / 14,017). A
//! vectorcall builtin, tried first, is handed the dictionary unpacked, then builds the tuple
//! again (it counted 14,824 where the copying one counted 14,604, with random hash seeds).
//!
//! A call without `grid` or `warmup` goes to the dispatcher's Python side as
//! `slow("grid or warmup missing", args, kwargs, None, None)`, which calls Triton's own `run`
//! with the keywords as given: Triton's error, raised where Triton raises it.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::ffi;
use pyo3::intern;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::triton_autotune::AutotuneDispatch;
use crate::triton_binding::without_run_keywords;
use crate::triton_dispatch::TritonDispatch;
use crate::triton_heuristics::HeuristicsDispatch;

/// `METH_VARARGS | METH_KEYWORDS` (CPython's `methodobject.h`, the stable ABI's).
const METH_VARARGS_KEYWORDS: c_int = 0x0001 | 0x0002;

/// A method definition CPython reads (never writes) for the builtins made from it.
struct Definition(ffi::PyMethodDef);

// SAFETY: the definition is immutable static data (pointers to static strings and a function).
unsafe impl Sync for Definition {}

/// A `run` builtin's definition, with `doc` its docstring (its first line the
/// `__text_signature__` `inspect.signature` reads, Triton's method's).
const fn definition(doc: &'static std::ffi::CStr) -> Definition {
    Definition(ffi::PyMethodDef {
        ml_name: c"run".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionWithKeywords: run_call,
        },
        ml_flags: METH_VARARGS_KEYWORDS,
        ml_doc: doc.as_ptr(),
    })
}

/// A kernel's `run` (`JITFunction.run`'s signature).
static KERNEL_RUN: Definition = definition(
    c"run($self, /, *args, grid, warmup, **kwargs)\n--\n\nJITFunction.run's protocol, dispatched",
);

/// An autotuned kernel's or a heuristics layer's `run` (`Autotuner.run`'s and
/// `Heuristics.run`'s signature).
static LAYER_RUN: Definition = definition(
    c"run($self, /, *args, **kwargs)\n--\n\nAutotuner.run's or Heuristics.run's protocol, dispatched",
);

/// The dispatcher `dispatcher` (a [`TritonDispatch`], [`AutotuneDispatch`] or
/// [`HeuristicsDispatch`]) bound to its `run` builtin.
pub(crate) fn function<'py>(dispatcher: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = dispatcher.py();
    let definition: *const ffi::PyMethodDef = if dispatcher.is_instance_of::<TritonDispatch>() {
        &KERNEL_RUN.0
    } else {
        &LAYER_RUN.0
    };
    // SAFETY: a static definition of the right flags; the new function holds a reference to
    // `dispatcher`, the `self` its calls get; no module.
    unsafe {
        let f = ffi::PyCFunction_NewEx(
            definition.cast_mut(),
            dispatcher.as_ptr(),
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, f)
    }
}

/// The builtin's C function: `slf` the dispatcher, `args` the positional arguments (a tuple),
/// `kwargs` the keywords (a dictionary, or NULL).
unsafe extern "C" fn run_call(
    slf: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // CPython calls this with the interpreter lock held. `attach` counts the thread as attached
    // for the call, as pyo3's own methods do, so that a `Py` or `PyErr` the dispatch drops (a
    // memo entry replaced, an error replaced by another) is released at once, not pooled.
    Python::attach(|py| {
        let result = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: `slf` is the dispatcher `function` bound, `args` a tuple and `kwargs`
            // NULL or a dictionary, all alive for the call (CPython's `METH_VARARGS |
            // METH_KEYWORDS` contract).
            let (slf, args, kwargs) = unsafe {
                (
                    Borrowed::from_ptr(py, slf),
                    Borrowed::from_ptr(py, args).cast_unchecked::<PyTuple>(),
                    Borrowed::from_ptr_or_opt(py, kwargs).map(|k| k.cast_unchecked::<PyDict>()),
                )
            };
            run(&slf, &args, kwargs.as_deref())
        }));
        // A panic is pyo3's `PanicException` (a `BaseException`), as from its own methods.
        crate::c_entry::returned(py, result, |text| {
            PanicException::new_err(format!("safecall's Triton dispatch panicked: {text}"))
        })
    })
}

/// One call of the protocol (see the module docs).
fn run<'py>(
    slf: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let (grid_word, warmup_word) = (intern!(py, "grid"), intern!(py, "warmup"));
    let found = match kwargs {
        Some(kwargs) => (kwargs.get_item(grid_word)?, kwargs.get_item(warmup_word)?),
        None => (None, None),
    };
    let (Some(kwargs), (Some(grid), Some(warmup))) = (kwargs, found) else {
        // As the caller gave them.
        let kwargs = kwargs.cloned().unwrap_or_else(|| PyDict::new(py));
        let none = py.None().into_bound(py);
        return slow(slf)?.call1(("grid or warmup missing", args, kwargs, &none, &none));
    };
    if let Ok(d) = slf.cast::<TritonDispatch>() {
        // Bound with `grid` and `warmup` left out (`triton_binding`): no copy.
        return d.get().call_with(args, Some(kwargs), true, &grid, &warmup);
    }
    // A layer's other keywords, in a dictionary of their own: the caller's is left as it was
    // (a C caller may pass its own).
    let rest = if kwargs.len() == 2 {
        None
    } else {
        Some(without_run_keywords(kwargs)?)
    };
    let rest = rest.as_ref();
    if let Ok(d) = slf.cast::<AutotuneDispatch>() {
        d.get().serve(args, rest, &grid, &warmup)
    } else {
        slf.cast::<HeuristicsDispatch>()?
            .get()
            .serve(args, rest, &grid, &warmup)
    }
}

/// The dispatcher's Python side's `slow(reason, args, kwargs, grid, warmup)`.
fn slow<'py>(slf: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    Ok(if let Ok(d) = slf.cast::<TritonDispatch>() {
        d.get().slow_function(py).clone()
    } else if let Ok(d) = slf.cast::<AutotuneDispatch>() {
        d.get().slow_function(py).clone()
    } else {
        slf.cast::<HeuristicsDispatch>()?
            .get()
            .slow_function(py)
            .clone()
    })
}
