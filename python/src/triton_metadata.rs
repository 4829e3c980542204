//! The packed metadata of a launcher call (`CompiledKernel.packed_metadata`: `num_warps`,
//! `num_ctas`, shared memory, as the kernel's backend packs them), checked against the
//! kernel's own: Triton's launchers launch with the tuple they are given, safecall's host
//! functions with the kernel's values, so other values are refused rather than replaced in
//! silence (the rule and messages of Python's `safecall._triton_metadata`).

use std::sync::OnceLock;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// The kernel's packed metadata and the first object a launch passed equal to it.
pub(crate) struct PackedMetadata {
    /// `None`: not known (a stand-in kernel's metadata), not checked.
    expected: Option<Py<PyTuple>>,
    /// Held, so that its identity stands for its value (an exact tuple: immutable).
    seen: OnceLock<Py<PyAny>>,
    /// The kernel's name, for the messages.
    name: String,
}

impl PackedMetadata {
    pub(crate) fn new(expected: Option<Py<PyTuple>>, name: String) -> Self {
        PackedMetadata {
            expected,
            seen: OnceLock::new(),
            name,
        }
    }

    /// Whether `given` may be launched with: the object seen before (one comparison), or an
    /// exact tuple equal to the kernel's.
    #[inline]
    pub(crate) fn check(&self, given: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Some(seen) = self.seen.get()
            && given.is(seen)
        {
            return Ok(());
        }
        self.check_slow(given)
    }

    #[cold]
    fn check_slow(&self, given: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        let expected = expected.bind(given.py());
        // A list as a tuple (Triton's `(iii)` parsing takes any sequence of the length).
        let tuple = match given.cast::<PyList>() {
            Ok(list) => Some(list.to_tuple()),
            Err(_) => given.cast::<PyTuple>().ok().cloned(),
        };
        let Some(tuple) = tuple.filter(|t| t.len() == expected.len()) else {
            return Err(PyTypeError::new_err(format!(
                "kernel `{}`: the packed metadata must be a tuple (or list) of {} items, as \
                 CompiledKernel.packed_metadata; got {}",
                self.name,
                expected.len(),
                given.get_type().name()?
            )));
        };
        if !tuple.eq(expected)? {
            return Err(PyValueError::new_err(format!(
                "kernel `{}`: safecall's launcher launches with the kernel's own packed metadata \
                 {} (num_warps, num_ctas, shared memory, ...); got {}",
                self.name,
                expected.repr()?,
                tuple.repr()?
            )));
        }
        if given.is_exact_instance_of::<PyTuple>() {
            let _ = self.seen.set(given.clone().unbind());
        }
        Ok(())
    }
}
