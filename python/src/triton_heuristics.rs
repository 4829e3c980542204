//! `HeuristicsDispatch`: the hot path of `safecall.triton.jit` for a `@triton.heuristics`
//! kernel over a dispatched one (a `@triton.jit` function, an autotuned one, or another
//! heuristics layer). It does what Triton's `Heuristics.run` does, natively around the
//! heuristics themselves (Python callables, called as Triton calls them): the keyword
//! arguments as `kernel[grid](...)` hands them to `run` (`grid`, `warmup`, then the caller's),
//! each heuristic called in order with `{**dict(zip(arg_names, args)), **kwargs}` and its value
//! added to the keyword arguments, then the inner dispatcher called directly instead of
//! `fn.run` through Python. A caller's keyword named `grid` or `warmup`, or a heuristic of that
//! name, goes to the Python side's `slow(reason, args, kwargs, grid, warmup)`, which runs
//! Triton's own `Heuristics.run`.

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::triton_autotune::AutotuneDispatch;
use crate::triton_bound::{BoundDispatch, Target};
use crate::triton_dispatch::TritonDispatch;
use crate::triton_overridden::RunOverride;

/// What a heuristics layer hands its call to.
enum Inner {
    Kernel(Py<TritonDispatch>),
    Autotuned(Py<AutotuneDispatch>),
    Heuristics(Py<HeuristicsDispatch>),
}

/// The dispatcher of one heuristics layer (see the module docs).
#[pyclass(frozen)]
pub struct HeuristicsDispatch {
    /// The `Heuristics` object: its `values` and `arg_names` are read on every call.
    heuristics: Py<PyAny>,
    inner: Inner,
    slow: Py<PyAny>,
    overridden: RunOverride,
}

#[pymethods]
impl HeuristicsDispatch {
    /// `HeuristicsDispatch(heuristics, inner, slow)`: `inner` the native dispatcher of
    /// `heuristics.fn` (a `TritonDispatch`, `AutotuneDispatch` or `HeuristicsDispatch`).
    #[new]
    fn new(heuristics: Py<PyAny>, inner: &Bound<'_, PyAny>, slow: Py<PyAny>) -> PyResult<Self> {
        let inner = if let Ok(d) = inner.cast::<TritonDispatch>() {
            Inner::Kernel(d.clone().unbind())
        } else if let Ok(d) = inner.cast::<AutotuneDispatch>() {
            Inner::Autotuned(d.clone().unbind())
        } else if let Ok(d) = inner.cast::<HeuristicsDispatch>() {
            Inner::Heuristics(d.clone().unbind())
        } else {
            return Err(PyTypeError::new_err(format!(
                "a heuristics layer's inner dispatcher must be native, not {}",
                inner.get_type().name()?
            )));
        };
        Ok(HeuristicsDispatch {
            heuristics,
            inner,
            slow,
            overridden: RunOverride::default(),
        })
    }

    /// `d[grid]`: the callable that launches with `grid`.
    fn bind(slf: Py<Self>, grid: &Bound<'_, PyAny>) -> PyResult<Py<BoundDispatch>> {
        BoundDispatch::bound(Target::Heuristics(slf), grid)
    }

    /// `Heuristics.run`'s protocol as `kernel[grid]` calls it, `run(*args, grid=...,
    /// warmup=..., **kwargs)`, as a builtin (`triton_run`); without either keyword, Triton's own
    /// `Heuristics.run` (which raises where its inner `JITFunction.run` does, after the
    /// heuristics ran).
    #[getter]
    fn run<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::triton_run::function(slf.as_any())
    }

    /// Whether calls other than `run`'s go through the object's own `run` (`triton_overridden`).
    fn set_run_overridden(&self, overridden: bool) {
        self.overridden.set(overridden);
    }
}

impl HeuristicsDispatch {
    /// The Python side's `slow(reason, args, kwargs, grid, warmup)`.
    pub(crate) fn slow_function<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.slow.bind(py)
    }

    /// A call as `kernel[grid](...)` or the layer above makes it (`self.run(...)` in Triton).
    pub(crate) fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.overridden
            .route(&self.slow, args, kwargs, (grid, warmup), || {
                self.serve(args, kwargs, grid, warmup)
            })
    }

    /// A call of the dispatcher's own `run`.
    pub(crate) fn serve<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        match self.with_heuristics(args, kwargs, grid, warmup)? {
            Ok(merged) => match &self.inner {
                Inner::Kernel(d) => d.get().call(args, Some(&merged), grid, warmup),
                Inner::Autotuned(d) => d.get().call(args, Some(&merged), grid, warmup),
                Inner::Heuristics(d) => d.get().call(args, Some(&merged), grid, warmup),
            },
            Err(reason) => {
                let kwargs = match kwargs {
                    Some(k) => k.clone(),
                    None => PyDict::new(py),
                };
                self.slow
                    .bind(py)
                    .call1((reason, args, kwargs, grid, warmup))
            }
        }
    }

    /// The caller's keyword arguments with each heuristic's value added, or why the call goes
    /// through Triton's `Heuristics.run`.
    fn with_heuristics<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Result<Bound<'py, PyDict>, &'static str>> {
        let py = args.py();
        let (grid_word, warmup_word) = (intern!(py, "grid"), intern!(py, "warmup"));
        if let Some(k) = kwargs
            && (k.contains(grid_word)? || k.contains(warmup_word)?)
        {
            return Ok(Err("keyword grid or warmup"));
        }
        let heuristics = self.heuristics.bind(py);
        let values = heuristics.getattr(intern!(py, "values"))?;
        let Ok(values) = values.cast::<PyDict>() else {
            return Ok(Err("values not a dict"));
        };
        // The items as they are when the call starts (Triton iterates the dict itself).
        let items: Bound<'py, PyList> = values.items();
        // A heuristic named `grid` or `warmup` sends the call to Triton's `Heuristics.run`
        // before any heuristic runs here (each would otherwise run twice).
        for item in items.iter() {
            let name = item.cast::<PyTuple>()?.get_item(0)?;
            if name.eq(grid_word)? || name.eq(warmup_word)? {
                return Ok(Err("a heuristic named grid or warmup"));
            }
        }
        let arg_names = heuristics.getattr(intern!(py, "arg_names"))?;
        // `run(grid=grid, warmup=warmup, *args, **kwargs)`: the keyword arguments in that order.
        let merged = PyDict::new(py);
        merged.set_item(grid_word, grid)?;
        merged.set_item(warmup_word, warmup)?;
        if let Some(k) = kwargs {
            merged.update(k.as_mapping())?;
        }
        for item in items.iter() {
            let (name, heuristic): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item.extract()?;
            // `{**dict(zip(self.arg_names, args)), **kwargs}`.
            let view = PyDict::new(py);
            for (arg_name, value) in arg_names.try_iter()?.zip(args.iter()) {
                view.set_item(arg_name?, value)?;
            }
            view.update(merged.as_mapping())?;
            merged.set_item(name, heuristic.call1((view,))?)?;
        }
        merged.del_item(grid_word)?;
        merged.del_item(warmup_word)?;
        Ok(Ok(merged))
    }
}
