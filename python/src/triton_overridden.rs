//! [`RunOverride`]: whether `kernel[grid](...)` and the layers above a dispatched object must
//! call its `run` through Python, as Triton's own `__getitem__` (`self.run(...)`) and
//! `Autotuner.run` / `Heuristics.run` (`self.fn.run(...)`) do, because that `run` is not
//! Triton's: a subclass overrides it, or the instance was given its own (`kernel.run = f`,
//! through `DispatchedRun`). Set from Python (`set_run_overridden`); the dispatcher's own
//! `run` method (what `super().run(...)` or the override's saved original calls) never looks.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The slow path's reason for a call made while the flag is set.
pub(crate) const RUN_OVERRIDDEN: &str = "run overridden";

/// See the module docs.
#[derive(Default)]
pub(crate) struct RunOverride(AtomicBool);

impl RunOverride {
    pub(crate) fn set(&self, overridden: bool) {
        self.0.store(overridden, Ordering::Relaxed);
    }

    /// A call as `kernel[grid](...)` or the layer above makes it (`self.run(...)` in Triton):
    /// where the flag is set, handed to the Python side's `slow(reason, args, kwargs, grid,
    /// warmup)` (which calls the object's `run`); else `serve()`.
    #[inline]
    pub(crate) fn route<'py>(
        &self,
        slow: &Py<PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        (grid, warmup): (&Bound<'py, PyAny>, &Bound<'py, PyAny>),
        serve: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !self.0.load(Ordering::Relaxed) {
            return serve();
        }
        let py = args.py();
        // Read, not changed, there (unpacked into the `run` call).
        let kwargs = kwargs.cloned().unwrap_or_else(|| PyDict::new(py));
        slow.bind(py)
            .call1((RUN_OVERRIDDEN, args, kwargs, grid, warmup))
    }
}
