//! [`Array`]: an `ffi.Array` of owned values, as TVM-FFI's containers (`TVMFFISeqCell`).

use crate::abi::{TVMFFIAny, TVMFFIObject, TVMFFISeqCell, TVMFFIValue, type_index};
use crate::object::{ObjectLayout, alloc, blank_header};
use crate::rust_api::object_ref::typed_object_ref;
use crate::rust_api::{Any, AnyView, ObjectRef};

/// A reference to an `ffi.Array` object made by [`Array::new`] (or an `ffi.List`, the mutable
/// sequence of the same layout, made by [`Array::new_list`]).
#[derive(Clone, Debug)]
pub struct Array(ObjectRef);

typed_object_ref!(Array);

/// The object: the header, the sequence cell over the values, and the values it owns.
#[repr(C)]
struct ArrayObj {
    header: TVMFFIObject,
    cell: TVMFFISeqCell,
    /// Owns the elements `cell.data` points at (moving the vector does not move them).
    items: Vec<Any>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ArrayObj {}

impl Array {
    /// An array holding `items` (it takes their references over).
    pub fn new(items: Vec<Any>) -> Self {
        Self::sequence(type_index::ARRAY, items)
    }

    /// An `ffi.List` holding `items` (it takes their references over).
    pub fn new_list(items: Vec<Any>) -> Self {
        Self::sequence(type_index::LIST, items)
    }

    fn sequence(type_index: i32, mut items: Vec<Any>) -> Self {
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
        // SAFETY: a fresh object with one strong reference, which we take over.
        Array(unsafe { ObjectRef::from_raw_owned(obj.cast()) }.expect("allocated"))
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.cell().size.max(0) as usize
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `index`.
    pub fn get(&self, index: usize) -> Option<AnyView<'_>> {
        if index >= self.len() {
            return None;
        }
        // SAFETY: `data` holds `size` values, alive while the array is.
        Some(unsafe { AnyView::from_raw_ref(&*self.cell().data.cast::<TVMFFIAny>().add(index)) })
    }

    /// The sequence cell, which follows the header in every `ffi.Array` (TVM-FFI's layout).
    fn cell(&self) -> &TVMFFISeqCell {
        // SAFETY: the object is an `ffi.Array`, alive while `self` holds a reference; its cell
        // follows the header.
        unsafe { &*self.0.as_ptr().add(1).cast::<TVMFFISeqCell>() }
    }
}

impl From<Array> for Any {
    fn from(array: Array) -> Self {
        let raw = TVMFFIAny {
            // SAFETY: the object's header says what it is (an Array or a List).
            type_index: unsafe { (*array.0.as_ptr()).type_index },
            small_str_len: 0,
            value: TVMFFIValue {
                v_obj: array.0.into_raw(),
            },
        };
        // SAFETY: the reference the array held passes to the Any.
        unsafe { Any::from_raw_owned_unchecked(raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_holds_its_values_and_becomes_an_any_of_type_array() {
        let array = Array::new(vec![Any::from(1i64), Any::from("two")]);
        assert_eq!(array.len(), 2);
        assert!(!array.is_empty());
        assert_eq!(array.get(0).unwrap().cast::<i64>().unwrap(), 1);
        assert!(array.get(2).is_none());
        let list = Any::from(Array::new_list(vec![Any::from(2.5f64)]));
        assert_eq!(list.view().type_index(), type_index::LIST);
        let any = Any::from(array.clone());
        assert_eq!(any.view().type_index(), type_index::ARRAY);
        drop(any);
        // The clone keeps the object alive after the Any released its reference.
        assert_eq!(array.len(), 2);
    }
}
