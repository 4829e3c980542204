//! `ffi.Array` objects built in Rust (safecall-runtime has no Array API): the header, a
//! `TVMFFISeqCell` over a vector of owned values, and a deleter that drops them.

use safecall_runtime::Any;
use safecall_runtime::abi::{TVMFFIAny, TVMFFIObject, TVMFFISeqCell, TVMFFIValue, type_index};
use safecall_runtime::object::{ObjectLayout, alloc, blank_header};

#[repr(C)]
struct ArrayObj {
    header: TVMFFIObject,
    cell: TVMFFISeqCell,
    /// Owns the elements `cell.data` points at (moving the vector does not move them).
    items: Vec<Any>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ArrayObj {}

/// A new `ffi.Array` (or, with `type_index::LIST`, `ffi.List`) holding `items`.
pub fn new_sequence(type_index: i32, mut items: Vec<Any>) -> Any {
    let cell = TVMFFISeqCell {
        data: items.as_mut_ptr().cast(),
        size: items.len() as i64,
        capacity: items.len() as i64,
        data_deleter: None,
    };
    let obj = alloc(
        type_index,
        ArrayObj {
            header: blank_header(),
            cell,
            items,
        },
        0,
    );
    let raw = TVMFFIAny {
        type_index,
        small_str_len: 0,
        value: TVMFFIValue { v_obj: obj.cast() },
    };
    // SAFETY: a fresh object with one strong reference, which the Any takes over.
    unsafe { Any::from_raw_owned_unchecked(raw) }
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
