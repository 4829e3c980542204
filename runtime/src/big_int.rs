//! Arbitrary-precision integers: values that fit in 64 bits are plain `Int`s; larger ones are
//! `ffi.BigInt` objects (`TVMFFIObject`, a word count, then the words: native-endian, signed
//! two's complement, least significant first, minimal length).

use core::ptr;

use crate::abi::{TVMFFIAny, TVMFFIObject, TVMFFIValue, type_index};
use crate::object::{self, ObjectLayout};

/// Payload of a BigInt object; the words follow it.
#[repr(C)]
pub struct BigIntObj {
    header: TVMFFIObject,
    size: usize,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for BigIntObj {}

// The offsets code generators read a BigInt with are this layout's.
const _: () = assert!(
    core::mem::offset_of!(BigIntObj, size) == crate::abi::BIG_INT_OBJECT_SIZE_OFFSET
        && size_of::<BigIntObj>() == crate::abi::BIG_INT_OBJECT_WORDS_OFFSET
);

/// An owned Any holding `words` after dropping redundant sign-extension words: an `Int`
/// when one word remains, else a BigInt object.
pub fn from_words(words: &[i64]) -> TVMFFIAny {
    let mut size = words.len();
    while size > 1 && words[size - 1] == if words[size - 2] < 0 { -1 } else { 0 } {
        size -= 1;
    }
    if size <= 1 {
        let value = words.first().copied().unwrap_or(0);
        return TVMFFIAny {
            type_index: type_index::INT,
            small_str_len: 0,
            value: TVMFFIValue { v_int64: value },
        };
    }
    let obj = object::alloc(
        type_index::BIG_INT,
        BigIntObj {
            header: object::blank_header(),
            size,
        },
        size * 8,
    );
    // SAFETY: the object has room for `size` words after the payload.
    unsafe { ptr::copy_nonoverlapping(words.as_ptr(), object::tail::<BigIntObj, i64>(obj), size) };
    TVMFFIAny {
        type_index: type_index::BIG_INT,
        small_str_len: 0,
        value: TVMFFIValue { v_obj: obj.cast() },
    }
}

/// [`from_words`]'s value as an owned [`Any`](crate::Any).
pub fn any_from_words(words: &[i64]) -> crate::Any {
    // SAFETY: `from_words` returns an owned value, which the `Any` takes over.
    unsafe { crate::Any::from_raw_owned_unchecked(from_words(words)) }
}

/// The words of an `Int` or BigInt value, borrowed from it; empty for other values.
///
/// # Safety
/// `value` must be a valid value (for an `Int`, the words borrow the Any itself).
pub unsafe fn words(value: &TVMFFIAny) -> &[i64] {
    match value.type_index {
        // SAFETY: ints live in v_int64 of the Any.
        type_index::INT => core::slice::from_ref(unsafe { &value.value.v_int64 }),
        type_index::BIG_INT => {
            // SAFETY: a BigInt object's word count and words follow the header.
            unsafe {
                let obj = value.value.v_obj.cast::<BigIntObj>();
                core::slice::from_raw_parts(object::tail::<BigIntObj, i64>(obj), (*obj).size)
            }
        }
        _ => &[],
    }
}
