//! [`Error`]: a reference to an `ffi.Error` object (kind, message, backtrace, cause chain).

use std::borrow::Cow;

use crate::abi::symbols::error_kind::RUNTIME_ERROR;
use crate::abi::{TVMFFIByteArray, backtrace_update_mode};
use crate::rust_api::ObjectRef;
use crate::rust_api::object_ref::typed_object_ref;

/// A TVM-FFI error. Kinds such as `ValueError` or `TypeError` map to Python exceptions.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(ObjectRef);

typed_object_ref!(Error);

impl Error {
    /// A new error of `kind` with `message` and an empty backtrace.
    pub fn new(kind: &str, message: &str) -> Self {
        Self::with_details(kind.as_bytes(), message.as_bytes(), b"", None, None)
    }

    /// A new error with every field given; `cause` and `extra_context` are shared.
    pub fn with_details(
        kind: &[u8],
        message: &[u8],
        backtrace: &[u8],
        cause: Option<&Error>,
        extra_context: Option<&ObjectRef>,
    ) -> Self {
        // SAFETY: the cause and context are live objects we hold references to (or NULL).
        let obj = unsafe {
            crate::error::new_error(
                kind,
                message,
                backtrace,
                cause.map_or(core::ptr::null_mut(), Error::as_ptr),
                extra_context.map_or(core::ptr::null_mut(), ObjectRef::as_ptr),
            )
        };
        // SAFETY: a fresh object comes with one strong reference we take over.
        Error(unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"))
    }

    fn cell(&self) -> &crate::abi::TVMFFIErrorCell {
        // SAFETY: the object is an Error, alive while we hold it.
        unsafe { crate::error::cell(self.0.as_ptr()) }
    }

    fn text(array: &TVMFFIByteArray) -> Cow<'_, str> {
        // SAFETY: the cell's arrays point into the live error object.
        std::string::String::from_utf8_lossy(unsafe { crate::error::bytes_of(array) })
    }

    /// The kind, e.g. `ValueError`.
    pub fn kind(&self) -> Cow<'_, str> {
        Self::text(&self.cell().kind)
    }

    /// The message.
    pub fn message(&self) -> Cow<'_, str> {
        Self::text(&self.cell().message)
    }

    /// The backtrace text (most recent call first; empty unless someone recorded one).
    pub fn backtrace(&self) -> Cow<'_, str> {
        Self::text(&self.cell().backtrace)
    }

    /// Replaces the backtrace.
    pub fn set_backtrace(&self, text: &str) {
        self.update_backtrace(text, backtrace_update_mode::REPLACE);
    }

    /// Appends to the backtrace.
    pub fn append_backtrace(&self, text: &str) {
        self.update_backtrace(text, backtrace_update_mode::APPEND);
    }

    fn update_backtrace(&self, text: &str, mode: i32) {
        let array = TVMFFIByteArray {
            data: text.as_ptr().cast(),
            size: text.len(),
        };
        if let Some(update) = self.cell().update_backtrace {
            // SAFETY: the object's own update function with a valid byte array.
            unsafe { update(self.0.as_ptr().cast(), &array, mode) };
        }
    }

    /// The error that caused this one.
    pub fn cause(&self) -> Option<Error> {
        let cause = self.cell().cause_chain.cast::<crate::abi::TVMFFIObject>();
        // SAFETY: the cell holds a strong reference to its cause.
        (!cause.is_null()).then(|| Error(unsafe { ObjectRef::from_raw_borrowed(cause) }))
    }

    /// Extra context attached to the error.
    pub fn extra_context(&self) -> Option<ObjectRef> {
        let context = self.cell().extra_context.cast::<crate::abi::TVMFFIObject>();
        // SAFETY: the cell holds a strong reference to its context.
        (!context.is_null()).then(|| unsafe { ObjectRef::from_raw_borrowed(context) })
    }

    /// Makes this the calling thread's raised error (`TVMFFIErrorSetRaised`).
    pub fn set_raised(self) {
        crate::error::set_raised_owned(self.0.into_raw());
    }

    /// Takes the calling thread's raised error (`TVMFFIErrorMoveFromRaised`).
    pub fn take_raised() -> Option<Error> {
        // SAFETY: the slot's reference moves to us.
        unsafe { ObjectRef::from_raw_owned(crate::error::move_from_raised()) }.map(Error)
    }

    /// The raised error after a C call returned non-zero; a RuntimeError saying so when the
    /// callee forgot to raise one.
    pub fn take_raised_after_failure(code: i32) -> Error {
        Error::take_raised().unwrap_or_else(|| {
            Error::new(
                RUNTIME_ERROR,
                &format!("a call returned {code} without raising an error"),
            )
        })
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl core::fmt::Debug for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind())
            .field("message", &self.message())
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        None
    }
}
