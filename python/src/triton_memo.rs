//! The dispatcher's memory of the last argument type and `dtype` seen at each parameter
//! position, with their codes: a call whose tensors are of the types and dtypes of the last
//! call at each position (the usual case: a kernel called again and again with the same kinds
//! of tensors) reads their codes with a pointer comparison each, instead of hashing them into
//! the dispatcher's caches. The objects are held, so an address compared is never a reused one.

use std::sync::{Mutex, MutexGuard};

use pyo3::ffi;
use pyo3::prelude::*;

/// One position's memory.
#[derive(Default)]
struct Slot {
    /// The argument's type, its kind and its code.
    ty: Option<(Py<PyAny>, u8, u64)>,
    /// A tensor argument's `dtype` and its code.
    dtype: Option<(Py<PyAny>, u64)>,
}

/// The memory of every position (see the module docs).
pub(crate) struct PositionMemo {
    slots: Mutex<Vec<Slot>>,
}

impl PositionMemo {
    /// Memory for `positions` parameters.
    pub(crate) fn new(positions: usize) -> Self {
        PositionMemo {
            slots: Mutex::new((0..positions).map(|_| Slot::default()).collect()),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        // Only remembered codes: usable whatever panicked while the lock was held.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kind and code remembered for the type `ty` (the address of a live type object) at
    /// `position`, if it is the type last seen there.
    pub(crate) fn kind(&self, position: usize, ty: *mut ffi::PyTypeObject) -> Option<(u8, u64)> {
        match &self.slots().get(position)?.ty {
            Some((seen, kind, code)) if seen.as_ptr() == ty.cast() => Some((*kind, *code)),
            _ => None,
        }
    }

    /// Remembers `ty`'s kind and code at `position`.
    pub(crate) fn remember_kind(
        &self,
        position: usize,
        ty: &Bound<'_, PyAny>,
        kind: u8,
        code: u64,
    ) {
        let entry = Some((ty.clone().unbind(), kind, code));
        // The object replaced is released after the lock (its release may run Python code).
        let _replaced = match self.slots().get_mut(position) {
            Some(slot) => std::mem::replace(&mut slot.ty, entry),
            None => entry,
        };
    }

    /// The code remembered for `dtype` at `position`, if it is the dtype last seen there.
    pub(crate) fn dtype(&self, position: usize, dtype: &Bound<'_, PyAny>) -> Option<u64> {
        match &self.slots().get(position)?.dtype {
            Some((seen, code)) if seen.as_ptr() == dtype.as_ptr() => Some(*code),
            _ => None,
        }
    }

    /// Remembers `dtype`'s code at `position`.
    pub(crate) fn remember_dtype(&self, position: usize, dtype: &Bound<'_, PyAny>, code: u64) {
        let entry = Some((dtype.clone().unbind(), code));
        let _replaced = match self.slots().get_mut(position) {
            Some(slot) => std::mem::replace(&mut slot.dtype, entry),
            None => entry,
        };
    }
}
