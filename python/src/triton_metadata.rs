//! The packed metadata of a launcher call (`CompiledKernel.packed_metadata`: `num_warps`,
//! `num_ctas`, shared memory, as the kernel's backend packs them), checked against the
//! kernel's own: Triton's launchers launch with the tuple they are given, safecall's host
//! functions with the kernel's values, so other values are refused rather than replaced in
//! silence. The rule is Python's (`safecall._triton_metadata.PackedMetadataCheck`, which the
//! general launcher uses too); here the object it last accepted is remembered, so that a
//! launch passing it again (Triton passes the kernel's own tuple) costs one comparison.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The check and the first exact tuple it accepted.
pub(crate) struct PackedMetadata {
    /// `check(given)`, raising for what may not be launched with; `None`: not checked.
    check: Option<Py<PyAny>>,
    /// Held, so that its identity stands for its value (an exact tuple: immutable).
    seen: OnceLock<Py<PyAny>>,
}

impl PackedMetadata {
    pub(crate) fn new(check: Option<Py<PyAny>>) -> Self {
        PackedMetadata {
            check,
            seen: OnceLock::new(),
        }
    }

    /// Whether `given` may be launched with: the object accepted before (one comparison), or
    /// what the check accepts.
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
        let Some(check) = &self.check else {
            return Ok(());
        };
        check.bind(given.py()).call1((given,))?;
        if given.is_exact_instance_of::<PyTuple>() {
            let _ = self.seen.set(given.clone().unbind());
        }
        Ok(())
    }
}
