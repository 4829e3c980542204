//! The dispatcher's table: specialization key -> the compiled kernel Triton chose for it, with
//! the last key hit remembered, so that a kernel called again and again with arguments of the
//! same specialization finds its entry with one comparison of the key's words instead of
//! hashing them (a 16-argument kernel's key is about 70 words).

use std::sync::Arc;

use pyo3::prelude::*;

use crate::triton_key::{Key, KeyMap};

/// What the table holds for a key: the compiled kernel Triton chose and what its launch needs.
pub(crate) struct Entry {
    pub(crate) kernel: Py<PyAny>,
    pub(crate) launcher: Py<PyAny>,
    /// safecall's own launcher behind `launcher`, called directly.
    pub(crate) native: Option<Py<crate::triton_launch::TritonLaunch>>,
    pub(crate) function: Py<PyAny>,
    pub(crate) packed_metadata: Py<PyAny>,
}

/// The table (see the module docs).
#[derive(Default)]
pub(crate) struct Table {
    entries: KeyMap<Arc<Entry>>,
    /// The last key found and its entry (the key's storage reused from one hit to the next).
    last: Key,
    last_entry: Option<Arc<Entry>>,
}

impl Table {
    /// The entry of `key`.
    pub(crate) fn get(&mut self, key: &[u64]) -> Option<Arc<Entry>> {
        if let Some(entry) = &self.last_entry
            && self.last == key
        {
            return Some(entry.clone());
        }
        let entry = self.entries.get(key)?.clone();
        self.last.clear();
        self.last.extend_from_slice(key);
        self.last_entry = Some(entry.clone());
        Some(entry)
    }

    /// Records `entry` for `key` (replacing the one remembered last, if it was this key's).
    /// Returns what it replaced, for the caller to release once the table's lock is released
    /// (a `CompiledKernel`'s release runs Python code: Triton 3.8+ unload its module there).
    #[must_use = "released after the table's lock"]
    pub(crate) fn insert(
        &mut self,
        key: Key,
        entry: Entry,
    ) -> (Option<Arc<Entry>>, Option<Arc<Entry>>) {
        let last = if self.last == key {
            self.last_entry.take()
        } else {
            None
        };
        (self.entries.insert(key, Arc::new(entry)), last)
    }

    /// Forgets every entry; returns them, as [`Table::insert`] does.
    #[must_use = "released after the table's lock"]
    pub(crate) fn clear(&mut self) -> (KeyMap<Arc<Entry>>, Option<Arc<Entry>>) {
        (std::mem::take(&mut self.entries), self.last_entry.take())
    }

    /// How many keys it holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
