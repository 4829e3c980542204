//! [`String`] and [`Bytes`]: TVM-FFI strings and byte strings (inline up to 7 bytes).

use crate::abi::type_index as ti;
use crate::rust_api::Any;

/// A TVM-FFI string: a SmallStr (up to 7 bytes, inline) or a shared `ffi.String` object.
/// The content is bytes; it is usually, not necessarily, UTF-8.
#[derive(Clone, Debug)]
pub struct String(Any);

/// A TVM-FFI byte string: a SmallBytes (up to 7 bytes, inline) or a shared `ffi.Bytes` object.
#[derive(Clone, Debug)]
pub struct Bytes(Any);

impl String {
    /// A string holding a copy of `bytes`.
    pub fn new(bytes: impl AsRef<[u8]>) -> Self {
        String(Any::from_raw_owned(crate::string::string_to_any(
            bytes.as_ref(),
        )))
    }

    pub(crate) fn from_any_unchecked(any: Any) -> Self {
        String(any)
    }

    /// The content.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.view_bytes()
    }

    /// The content as UTF-8, if it is.
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(self.as_bytes()).ok()
    }

    /// Whether the content is inline (SmallStr) rather than an object.
    pub fn is_small(&self) -> bool {
        self.0.type_index() == ti::SMALL_STR
    }

    /// The value as an Any.
    pub fn as_any(&self) -> &Any {
        &self.0
    }

    /// Converts into an Any.
    pub fn into_any(self) -> Any {
        self.0
    }
}

impl Bytes {
    /// A byte string holding a copy of `bytes`.
    pub fn new(bytes: impl AsRef<[u8]>) -> Self {
        Bytes(Any::from_raw_owned(crate::string::bytes_to_any(
            bytes.as_ref(),
        )))
    }

    pub(crate) fn from_any_unchecked(any: Any) -> Self {
        Bytes(any)
    }

    /// The content.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.view_bytes()
    }

    /// Whether the content is inline (SmallBytes) rather than an object.
    pub fn is_small(&self) -> bool {
        self.0.type_index() == ti::SMALL_BYTES
    }

    /// The value as an Any.
    pub fn as_any(&self) -> &Any {
        &self.0
    }

    /// Converts into an Any.
    pub fn into_any(self) -> Any {
        self.0
    }
}

impl Any {
    /// The bytes of a string-like or bytes-like value held by this Any (empty otherwise).
    fn view_bytes(&self) -> &[u8] {
        let raw = self.as_raw();
        // SAFETY: each arm reads the member its type index selects; the bytes live in `self`.
        unsafe {
            match raw.type_index {
                ti::SMALL_STR | ti::SMALL_BYTES => {
                    &raw.value.v_bytes[..(raw.small_str_len as usize).min(7)]
                }
                ti::STR | ti::BYTES => crate::string::object_bytes(raw.value.v_obj),
                _ => &[],
            }
        }
    }
}

impl PartialEq for String {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<str> for String {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for String {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl From<&str> for String {
    fn from(value: &str) -> Self {
        String::new(value)
    }
}

impl core::fmt::Display for String {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&std::string::String::from_utf8_lossy(self.as_bytes()))
    }
}
