//! Strings and bytes as the real runtime stores them: up to 7 bytes inline in the Any
//! (`SmallStr` / `SmallBytes`, zero-padded), longer ones as `ffi.String` / `ffi.Bytes` objects
//! whose NUL-terminated data follows the `TVMFFIByteArray` cell in the same allocation.

use core::ptr;

use crate::abi::{TVMFFIAny, TVMFFIByteArray, TVMFFIObject, TVMFFIValue, type_index};
use crate::object::{self, ObjectLayout};

/// The longest string or byte string stored inline in an Any.
pub const MAX_SMALL_LEN: usize = 7;

/// Payload of a String or Bytes object.
#[repr(C)]
pub struct BytesObj {
    header: TVMFFIObject,
    cell: TVMFFIByteArray,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for BytesObj {}

/// Creates a String (`type_index::STR`) or Bytes (`type_index::BYTES`) object holding a copy
/// of `bytes` followed by a NUL.
pub fn new_object(type_index: i32, bytes: &[u8]) -> *mut TVMFFIObject {
    let payload = BytesObj {
        header: object::blank_header(),
        cell: TVMFFIByteArray {
            data: ptr::null(),
            size: bytes.len(),
        },
    };
    let obj = object::alloc(type_index, payload, (bytes.len() + 1).next_multiple_of(8));
    // SAFETY: the object has room for the bytes and the NUL after the cell.
    unsafe {
        let data = object::tail::<BytesObj, u8>(obj);
        ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
        data.add(bytes.len()).write(0);
        (*obj).cell.data = data.cast();
    }
    obj.cast()
}

/// An Any holding `bytes` inline (`small_index`) or as an object (`object_index`).
fn to_any(bytes: &[u8], small_index: i32, object_index: i32) -> TVMFFIAny {
    if bytes.len() <= MAX_SMALL_LEN {
        let mut inline = [0u8; 8];
        inline[..bytes.len()].copy_from_slice(bytes);
        TVMFFIAny {
            type_index: small_index,
            small_str_len: bytes.len() as u32,
            value: TVMFFIValue { v_bytes: inline },
        }
    } else {
        TVMFFIAny {
            type_index: object_index,
            small_str_len: 0,
            value: TVMFFIValue {
                v_obj: new_object(object_index, bytes),
            },
        }
    }
}

/// An owned Any holding the string `bytes` (SmallStr up to 7 bytes, a String object beyond).
pub fn string_to_any(bytes: &[u8]) -> TVMFFIAny {
    to_any(bytes, type_index::SMALL_STR, type_index::STR)
}

/// An owned Any holding the byte string `bytes` (SmallBytes up to 7 bytes, a Bytes object beyond).
pub fn bytes_to_any(bytes: &[u8]) -> TVMFFIAny {
    to_any(bytes, type_index::SMALL_BYTES, type_index::BYTES)
}

/// An owned Any holding a String object, whatever the length (what C++ makes from a
/// `std::string`, e.g. `TVMFFIDataTypeToString`).
pub fn string_object_any(bytes: &[u8]) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::STR,
        small_str_len: 0,
        value: TVMFFIValue {
            v_obj: new_object(type_index::STR, bytes),
        },
    }
}

/// The bytes of a String/Bytes object (of any runtime: the cell layout is the ABI's).
///
/// # Safety
/// `obj` must point to a live String or Bytes object that outlives `'a`.
pub unsafe fn object_bytes<'a>(obj: *mut TVMFFIObject) -> &'a [u8] {
    // SAFETY: the byte array cell follows the header.
    unsafe { crate::error::bytes_of(&*obj.add(1).cast::<TVMFFIByteArray>()) }
}
