//! Shape objects: `TVMFFIShapeCell` followed by the dimensions in the same allocation.

use core::ptr;

use crate::abi::{TVMFFIObject, TVMFFIShapeCell, type_index};
use crate::object::{self, ObjectLayout};

/// Payload of a Shape object.
#[repr(C)]
pub struct ShapeObj {
    header: TVMFFIObject,
    cell: TVMFFIShapeCell,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ShapeObj {}

/// Creates a Shape object holding a copy of `dims`.
pub fn new_shape(dims: &[i64]) -> *mut TVMFFIObject {
    let payload = ShapeObj {
        header: object::blank_header(),
        cell: TVMFFIShapeCell {
            data: ptr::null(),
            size: dims.len(),
        },
    };
    let obj = object::alloc(type_index::SHAPE, payload, size_of_val(dims));
    // SAFETY: the object has room for the dims after the cell.
    unsafe {
        let data = object::tail::<ShapeObj, i64>(obj);
        ptr::copy_nonoverlapping(dims.as_ptr(), data, dims.len());
        (*obj).cell.data = data;
    }
    obj.cast()
}

/// The dimensions of a Shape object (of any runtime).
///
/// # Safety
/// `obj` must point to a live Shape object that outlives `'a`.
pub unsafe fn dims<'a>(obj: *mut TVMFFIObject) -> &'a [i64] {
    // SAFETY: the shape cell follows the header.
    let cell = unsafe { &*obj.add(1).cast::<TVMFFIShapeCell>() };
    if cell.size == 0 {
        &[]
    } else {
        // SAFETY: the cell describes `size` dimensions.
        unsafe { core::slice::from_raw_parts(cell.data, cell.size) }
    }
}
