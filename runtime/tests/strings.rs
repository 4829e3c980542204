//! Strings and bytes: inline up to 7 bytes, objects from 8, NUL-terminated, shared.

use safecall_runtime::abi::{TVMFFIAny, TVMFFIByteArray, type_index};
use safecall_runtime::capi::{TVMFFIAnyViewToOwnedAny, TVMFFIStringFromByteArray};
use safecall_runtime::{Any, AnyView, Bytes, String};

#[test]
fn small_and_heap_string_boundaries() {
    for (len, small) in [(0, true), (7, true), (8, false), (100, false)] {
        let text = "x".repeat(len);
        let s = String::new(&text);
        assert_eq!(s.is_small(), small, "length {len}");
        assert_eq!(s.as_bytes(), text.as_bytes());
        let any = Any::from(text.as_str());
        let expected = if small {
            type_index::SMALL_STR
        } else {
            type_index::STR
        };
        assert_eq!(any.type_index(), expected, "length {len}");
        let b = Bytes::new(text.as_bytes());
        assert_eq!(b.is_small(), small);
        assert_eq!(b.as_bytes(), text.as_bytes());
        if !small {
            // The heap copy is NUL-terminated right after the content.
            let obj = any.object_ptr();
            // SAFETY: a live String object; data has size + 1 bytes.
            let nul = unsafe {
                *safecall_runtime::string::object_bytes(obj)
                    .as_ptr()
                    .add(len)
            };
            assert_eq!(nul, 0);
        }
    }
}

#[test]
fn c_string_from_byte_array_boundaries() {
    for len in [0usize, 7, 8] {
        let text = "abcdefgh";
        let input = TVMFFIByteArray {
            data: text.as_ptr().cast(),
            size: len,
        };
        let mut out = TVMFFIAny::NONE;
        // SAFETY: valid input and output.
        assert_eq!(unsafe { TVMFFIStringFromByteArray(&input, &mut out) }, 0);
        // SAFETY: the C API returned an owned value.
        let owned = unsafe { Any::from_raw_owned_unchecked(out) };
        let expected = if len <= 7 {
            type_index::SMALL_STR
        } else {
            type_index::STR
        };
        assert_eq!(owned.type_index(), expected);
        assert_eq!(owned.cast::<std::string::String>().unwrap(), &text[..len]);
        if len <= 7 {
            // Inline bytes beyond the content are zero.
            // SAFETY: small strings are stored in v_bytes.
            let bytes = unsafe { out.value.v_bytes };
            assert!(bytes[len..].iter().all(|&b| b == 0));
        }
    }
}

#[test]
fn raw_strings_become_owned_strings() {
    let view = AnyView::from(c"a raw C string");
    let mut out = TVMFFIAny::NONE;
    // SAFETY: valid input and output.
    assert_eq!(
        unsafe { TVMFFIAnyViewToOwnedAny(view.as_raw(), &mut out) },
        0
    );
    // SAFETY: owned result.
    let owned = unsafe { Any::from_raw_owned_unchecked(out) };
    assert_eq!(owned.type_index(), type_index::STR);
    let s: String = owned.cast().unwrap();
    assert_eq!(s, "a raw C string");
    assert_eq!(
        Any::from_view(AnyView::from(c"tiny")).unwrap().type_index(),
        type_index::SMALL_STR
    );
}

#[test]
fn strings_share_their_object() {
    let s = String::new("shared string content");
    let any = Any::from(s.clone());
    let again: String = any.cast().unwrap();
    assert_eq!(again.as_bytes().as_ptr(), s.as_bytes().as_ptr());
}
