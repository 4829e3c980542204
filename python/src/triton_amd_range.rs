//! AMD's pointer-range specialization in the dispatcher's key. Triton's AMD backend
//! (`HIPBackend.get_tensor_specialization`) adds `"S"` to a tensor argument's specialization
//! when `knobs.amd.use_buffer_ops` is on and `HIPBackend.is_within_2gb(arg)` holds (the
//! object's `ptr_range()`, or a `torch.Tensor`'s storage size, at most 2^31 - 1 bytes): the
//! kernel then addresses that tensor with 32-bit buffer offsets, so a larger tensor must get
//! another specialization. Triton asks only for the parameters it specializes (not those in
//! `do_not_specialize`). The CUDA backend has no such part; the dispatcher adds it only for
//! calls whose active driver targets AMD.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::triton_knobs::{KnobGroups, KnobRead};

/// The part (see the module docs).
pub(crate) struct AmdRange {
    /// `knobs.amd` (its index in the dispatcher's groups) and its `use_buffer_ops`, read on
    /// each call as Triton reads it.
    group: usize,
    use_buffer_ops: KnobRead,
    /// `HIPBackend.is_within_2gb`, called for each specialized tensor argument (Triton's own
    /// function: its `ptr_range()` and torch rules, and torch's lazy import, exactly); `None`
    /// where this Triton's AMD backend specializes otherwise than the releases served.
    within_2gb: Option<Py<PyAny>>,
    /// Per parameter, whether Triton specializes it (not in `do_not_specialize`).
    specialized: Vec<bool>,
    /// `targets_amd(driver)`: whether a driver's target is AMD's.
    targets_amd: Py<PyAny>,
    /// The last driver asked (kept alive, so its address is not reused) and its answer.
    last: Mutex<Option<(Py<PyAny>, bool)>>,
}

/// What a call's tensors get (see [`AmdRange::mode`]).
pub(crate) enum AmdMode {
    /// No part: a target that is not AMD's (whose specializer is Triton's native one).
    NotAmd,
    /// No part: an AMD target with `use_buffer_ops` off (its specializer is still Python's).
    Unranged,
    /// `is_within_2gb` of each specialized tensor.
    Ranged,
    /// An AMD target whose specialization the dispatcher does not model: Triton's path.
    Unmodelled,
}

impl AmdRange {
    /// From what Python hands over (see [`AmdRangeSpec`]); `groups` the dispatcher's knob
    /// groups, to which `knobs.amd` is added.
    pub(crate) fn new(
        py: Python<'_>,
        groups: &mut KnobGroups,
        (group, name, variable, within_2gb, specialized, targets_amd): AmdRangeSpec,
    ) -> PyResult<Self> {
        let group = groups.add(py, &group)?;
        Ok(AmdRange {
            use_buffer_ops: KnobRead::new(py, groups.held(py, group), name, variable)?,
            group,
            within_2gb,
            specialized,
            targets_amd,
            last: Mutex::new(None),
        })
    }

    /// The index of `knobs.amd` in the dispatcher's groups.
    pub(crate) fn group(&self) -> usize {
        self.group
    }

    /// What this call's tensors get, for the active `driver`; `amd` is `knobs.amd` now.
    pub(crate) fn mode(
        &self,
        driver: &Bound<'_, PyAny>,
        amd: &Bound<'_, PyAny>,
    ) -> PyResult<AmdMode> {
        if !self.targets_amd(driver)? {
            return Ok(AmdMode::NotAmd);
        }
        if self.within_2gb.is_none() {
            return Ok(AmdMode::Unmodelled);
        }
        Ok(if self.use_buffer_ops.read(amd)?.is_truthy()? {
            AmdMode::Ranged
        } else {
            AmdMode::Unranged
        })
    }

    /// Whether `driver` targets AMD, asked once per driver object.
    fn targets_amd(&self, driver: &Bound<'_, PyAny>) -> PyResult<bool> {
        let known = {
            let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            last.as_ref()
                .and_then(|(d, amd)| d.is(driver).then_some(*amd))
        };
        if let Some(amd) = known {
            return Ok(amd);
        }
        // No lock while Python runs.
        let amd = self
            .targets_amd
            .bind(driver.py())
            .call1((driver,))?
            .is_truthy()?;
        let replaced = self
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace((driver.clone().unbind(), amd));
        drop(replaced);
        Ok(amd)
    }

    /// Whether the tensor argument `value`, parameter `position`, gets `"S"` (in
    /// [`AmdMode::Ranged`]): `is_within_2gb(value)` where Triton specializes the parameter.
    pub(crate) fn within_2gb(&self, position: usize, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        match &self.within_2gb {
            Some(f) if self.specialized.get(position).copied().unwrap_or(false) => {
                f.bind(value.py()).call1((value,))?.is_truthy()
            }
            _ => Ok(false),
        }
    }
}

/// What Python hands [`AmdRange::new`]: `("amd", "use_buffer_ops", its variable or None,
/// HIPBackend.is_within_2gb or None, per parameter whether it is specialized, targets_amd)`.
pub(crate) type AmdRangeSpec = (
    String,
    Py<PyString>,
    Option<String>,
    Option<Py<PyAny>>,
    Vec<bool>,
    Py<PyAny>,
);
