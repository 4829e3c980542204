//! `ffi.Array` and `ffi.List` values for the tests (built with the runtime's `Array`), and
//! their elements read back as raw values.

use safecall_runtime::abi::{TVMFFIAny, TVMFFISeqCell, type_index};
use safecall_runtime::{Any, Array};

/// A new `ffi.Array` (or, with `type_index::LIST`, `ffi.List`) holding `items`.
pub fn new_sequence(type_index: i32, items: Vec<Any>) -> Any {
    match type_index {
        type_index::LIST => Array::new_list(items).into(),
        _ => Array::new(items).into(),
    }
}

/// The elements of an Array (or List) value, as views of the array's own slots.
pub fn array_items(any: &Any) -> Option<Vec<TVMFFIAny>> {
    if any.type_index() != type_index::ARRAY && any.type_index() != type_index::LIST {
        return None;
    }
    let obj = any.object_ptr();
    // SAFETY: Array and List objects carry a TVMFFISeqCell after the header.
    unsafe {
        let cell = &*obj.add(1).cast::<TVMFFISeqCell>();
        let data = cell.data.cast::<TVMFFIAny>();
        Some((0..cell.size as usize).map(|i| *data.add(i)).collect())
    }
}
