//! The kind of an argument the key does not take by value (a tensor, a host tensor
//! descriptor, a tuple, anything else), remembered per type, and a host tensor descriptor's
//! part of the key.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};

use super::{DESCRIPTOR, GLUON_DESCRIPTOR, KIND_CAPACITY, OTHER, TENSOR, TUPLE, TritonDispatch};
use crate::triton_key::{Key, Space, Unhashable, append};

impl TritonDispatch {
    /// A host tensor descriptor's part of the key, as Triton specializes it
    /// (`tensordesc<DTYPE[BLOCK]>`; Gluon's also `,LAYOUT>`, and its im2col descriptors
    /// `input_rank=RANK`): its kind and type, its base tensor's dtype and its block shape
    /// (rank, then each extent); for Gluon's, the rank of its shape and its layout (a
    /// constant: by `==`, where Triton's key holds its `repr`). The shape, strides, padding
    /// and base address are not part of the specialization: the launcher encodes them on
    /// every launch. `false` where something is not as Triton's classes make it (a block shape
    /// of other than `int`s, a field deleted): Triton's own path then decides.
    pub(super) fn descriptor_key(
        &self,
        value: &Bound<'_, PyAny>,
        kind: u8,
        type_code: u64,
        tuple_key: &Bound<'_, PyAny>,
        key: &mut Key,
    ) -> PyResult<Result<bool, Unhashable>> {
        let py = value.py();
        // Anything unexpected (a field deleted or replaced after construction) is Triton's to
        // decide, and to report.
        let Ok(dtype) = value
            .getattr(intern!(py, "base"))
            .and_then(|base| base.getattr(intern!(py, "dtype")))
        else {
            return Ok(Ok(false));
        };
        let dtype_code = match self.interner.dtype(&dtype)? {
            Ok(code) => code,
            Err(unhashable) => return Ok(Err(unhashable)),
        };
        let Ok(block) = value
            .getattr(intern!(py, "block_shape"))
            .and_then(|b| b.try_iter())
        else {
            return Ok(Ok(false));
        };
        let start = key.len();
        append(key, &[kind.into(), type_code, dtype_code, 0]);
        let mut rank = 0;
        for extent in block {
            let extent = match extent {
                Ok(e) if e.is_exact_instance_of::<PyInt>() => e,
                Ok(_) | Err(_) => return Ok(Ok(false)),
            };
            let Ok(extent) = extent.extract::<i64>() else {
                return Ok(Ok(false));
            };
            key.push(extent as u64);
            rank += 1;
        }
        key[start + 3] = rank;
        if kind == GLUON_DESCRIPTOR {
            let (Ok(shape), Ok(layout)) = (
                value.getattr(intern!(py, "shape")).and_then(|s| s.len()),
                value.getattr(intern!(py, "layout")),
            ) else {
                return Ok(Ok(false));
            };
            key.push(shape as u64);
            if let Err(unhashable) = self.interner.constant(&layout, tuple_key, key)? {
                return Ok(Err(unhashable));
            }
        }
        Ok(Ok(true))
    }

    /// The kind of an argument that is not `None`, a `bool`, an `int` or a `float` (Python's
    /// `_kind_of`), and its type's code; remembered per type.
    pub(super) fn kind(&self, value: &Bound<'_, PyAny>) -> PyResult<Result<(u8, u64), Unhashable>> {
        let ty = value.get_type();
        let address = ty.as_ptr() as usize;
        let kinds = || self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, kind, code)) = kinds().get(&address) {
            return Ok(Ok((*kind, *code)));
        }
        let py = value.py();
        let kind = if ty.is(self.descriptor_type.bind(py)) {
            DESCRIPTOR
        } else if self.gluon_types.iter().any(|t| ty.is(t)) {
            GLUON_DESCRIPTOR
        } else if value.is_instance_of::<PyTuple>() {
            TUPLE
        } else if ty.hasattr(intern!(py, "data_ptr"))? {
            TENSOR
        } else {
            OTHER
        };
        let ty = ty.into_any();
        let code = match self
            .interner
            .code(Space::Type, &ty, true, || Ok(vec![ty.clone()]))?
        {
            Ok(code) => code,
            Err(unhashable) => return Ok(Err(unhashable)),
        };
        // What the cache lets go of is released after its lock (a release may run Python code).
        let released = {
            let mut kinds = kinds();
            let full = (kinds.len() >= KIND_CAPACITY).then(|| std::mem::take(&mut *kinds));
            (full, kinds.insert(address, (ty.unbind(), kind, code)))
        };
        drop(released);
        Ok(Ok((kind, code)))
    }
}
