//! AMD's pointer-range specialization in the dispatcher's key. Triton's AMD backend
//! (`HIPBackend.get_tensor_specialization`) adds `"S"` to a tensor argument's specialization
//! when `knobs.amd.use_buffer_ops` is on and `HIPBackend.is_within_2gb(arg)` holds (the
//! object's `ptr_range()`, or a `torch.Tensor`'s storage size, at most 2^31 - 1 bytes): the
//! kernel then addresses that tensor with 32-bit buffer offsets, so a larger tensor must get
//! another specialization. The CUDA backend has no such part; the dispatcher adds it only for
//! calls whose active driver targets AMD.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::triton_knobs::KnobRead;

/// The part (see the module docs).
pub(crate) struct AmdRange {
    /// `knobs.amd.use_buffer_ops`, read on each call as Triton reads it.
    use_buffer_ops: KnobRead,
    /// `HIPBackend.is_within_2gb`, called for each tensor argument (Triton's own function: its
    /// `ptr_range()` and torch rules, and torch's lazy import, exactly).
    within_2gb: Py<PyAny>,
    /// `targets_amd(driver)`: whether a driver's target is AMD's.
    targets_amd: Py<PyAny>,
    /// The last driver asked (kept alive, so its address is not reused) and its answer.
    last: Mutex<Option<(Py<PyAny>, bool)>>,
}

impl AmdRange {
    /// `(group, name, variable, within_2gb, targets_amd)`: the knob as [`KnobRead::new`] takes
    /// it, Triton's `is_within_2gb` and a function telling whether a driver targets AMD.
    pub(crate) fn new(
        py: Python<'_>,
        (group, name, variable, within_2gb, targets_amd): AmdRangeSpec,
    ) -> PyResult<Self> {
        Ok(AmdRange {
            use_buffer_ops: KnobRead::new(py, group, name, variable)?,
            within_2gb,
            targets_amd,
            last: Mutex::new(None),
        })
    }

    /// Whether this call's tensors get the part: `driver` targets AMD and the knob is on.
    pub(crate) fn applies(&self, driver: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = driver.py();
        let known = {
            let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            last.as_ref()
                .and_then(|(d, amd)| d.is(driver).then_some(*amd))
        };
        let amd = match known {
            Some(amd) => amd,
            None => {
                // No lock while Python runs.
                let amd = self.targets_amd.bind(py).call1((driver,))?.is_truthy()?;
                let replaced = self
                    .last
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .replace((driver.clone().unbind(), amd));
                drop(replaced);
                amd
            }
        };
        Ok(amd && self.use_buffer_ops.read(py)?.is_truthy()?)
    }

    /// `is_within_2gb(value)`: whether the tensor argument `value` gets `"S"`.
    pub(crate) fn within_2gb(&self, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.within_2gb
            .bind(value.py())
            .call1((value,))?
            .is_truthy()
    }
}

/// What Python hands [`AmdRange::new`]: `(knobs.amd, "use_buffer_ops", its variable or None,
/// HIPBackend.is_within_2gb, targets_amd)`.
pub(crate) type AmdRangeSpec = (
    Py<PyAny>,
    Py<PyString>,
    Option<String>,
    Py<PyAny>,
    Py<PyAny>,
);
