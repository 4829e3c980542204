//! `kernel[grid]` of a dispatched kernel: [`BoundDispatch`], the callable that launches with
//! `grid`. A call site usually subscripts with the same grid tuple object on every call (a
//! constant in its code), so the last one made for a tuple of `int`s is kept and returned again
//! for the same dispatcher and the same tuple object: no object made and freed per call. One
//! is kept for the whole process (a tuple of `int`s holds nothing else alive; the dispatcher it
//! holds lives as long as the kernel anyway).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyTuple};

use crate::triton_autotune::AutotuneDispatch;
use crate::triton_dispatch::TritonDispatch;
use crate::triton_heuristics::HeuristicsDispatch;

/// A dispatcher with its grid: `kernel[grid]`, for a kernel, an autotuned kernel or a
/// `@triton.heuristics` kernel.
#[pyclass(frozen)]
pub struct BoundDispatch {
    target: Target,
    grid: Py<PyAny>,
}

/// What a [`BoundDispatch`] calls.
pub(crate) enum Target {
    Kernel(Py<TritonDispatch>),
    Autotuned(Py<AutotuneDispatch>),
    Heuristics(Py<HeuristicsDispatch>),
}

impl Target {
    fn as_ptr(&self) -> *mut pyo3::ffi::PyObject {
        match self {
            Target::Kernel(d) => d.as_ptr(),
            Target::Autotuned(d) => d.as_ptr(),
            Target::Heuristics(d) => d.as_ptr(),
        }
    }
}

/// The last [`BoundDispatch`] made for a grid tuple of `int`s, with that tuple's address and
/// its dispatcher's (both alive while it is: it holds them).
static LAST: Mutex<Option<(usize, usize, Py<BoundDispatch>)>> = Mutex::new(None);

impl BoundDispatch {
    /// `target[grid]`: the one made last for this target and this grid tuple, else a new one.
    pub(crate) fn bound(target: Target, grid: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let py = grid.py();
        let key = (target.as_ptr() as usize, grid.as_ptr() as usize);
        let kept = grid
            .cast_exact::<PyTuple>()
            .is_ok_and(|t| t.iter().all(|g| g.is_exact_instance_of::<PyInt>()));
        if kept
            && let Some((t, g, bound)) = &*last()
            && (*t, *g) == key
        {
            return Ok(bound.clone_ref(py));
        }
        let bound = Py::new(
            py,
            BoundDispatch {
                target,
                grid: grid.clone().unbind(),
            },
        )?;
        if kept {
            // The one replaced is released after the lock (its release may run Python code).
            let _replaced = last().replace((key.0, key.1, bound.clone_ref(py)));
        }
        Ok(bound)
    }
}

fn last() -> std::sync::MutexGuard<'static, Option<(usize, usize, Py<BoundDispatch>)>> {
    // One cached object: usable whatever panicked while it was held.
    LAST.lock().unwrap_or_else(|p| p.into_inner())
}

#[pymethods]
impl BoundDispatch {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let grid = self.grid.bind(args.py());
        // `kernel[grid](...)` is `run(..., grid=grid, warmup=False)`.
        let no = PyBool::new(args.py(), false).to_owned().into_any();
        match &self.target {
            Target::Kernel(d) => d.get().call(args, kwargs, grid, &no),
            Target::Autotuned(d) => d.get().call(args, kwargs, grid, &no),
            Target::Heuristics(d) => d.get().call(args, kwargs, grid, &no),
        }
    }
}
