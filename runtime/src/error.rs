//! Error objects and the thread-local raised error.
//!
//! An error object is `TVMFFIObject` + `TVMFFIErrorCell` (72 bytes); kind and message live
//! inline after it, NUL-terminated, so raising an error costs a single allocation and no
//! backtrace capture. The backtrace starts empty and grows through `update_backtrace`.

use core::cell::Cell;
use core::ffi::c_void;
use core::ptr;

use crate::abi::{
    TVMFFIByteArray, TVMFFIErrorCell, TVMFFIObject, backtrace_update_mode, type_index,
};
use crate::object::{self, ObjectLayout};

/// Payload of an error object.
#[repr(C)]
pub struct ErrorObj {
    header: TVMFFIObject,
    cell: TVMFFIErrorCell,
    /// Backtrace bytes followed by a NUL (empty until the backtrace is first set).
    backtrace: Vec<u8>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ErrorObj {}

impl Drop for ErrorObj {
    fn drop(&mut self) {
        // SAFETY: the cell owns one strong reference to each of these (or NULL).
        unsafe {
            object::dec_ref(self.cell.cause_chain.cast());
            object::dec_ref(self.cell.extra_context.cast());
        }
    }
}

/// A NUL byte that empty byte arrays point at, so every array is NUL-terminated.
static EMPTY: [u8; 1] = [0];

/// A byte array over `bytes`, which must be followed by a NUL.
fn byte_array(data: *const u8, size: usize) -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: data.cast(),
        size,
    }
}

/// Creates an error object with one strong reference. `cause_chain` and `extra_context` are
/// borrowed: the error takes its own references.
///
/// # Safety
/// `cause_chain` and `extra_context` must each be NULL or a live object.
pub unsafe fn new_error(
    kind: &[u8],
    message: &[u8],
    backtrace: &[u8],
    cause_chain: *mut TVMFFIObject,
    extra_context: *mut TVMFFIObject,
) -> *mut TVMFFIObject {
    let payload = ErrorObj {
        header: object::blank_header(),
        cell: TVMFFIErrorCell {
            kind: byte_array(EMPTY.as_ptr(), 0),
            message: byte_array(EMPTY.as_ptr(), 0),
            backtrace: byte_array(EMPTY.as_ptr(), 0),
            update_backtrace: Some(update_backtrace),
            cause_chain: ptr::null_mut(),
            extra_context: ptr::null_mut(),
        },
        backtrace: Vec::new(),
    };
    let extra = (kind.len() + 1 + message.len() + 1).next_multiple_of(8);
    let obj = object::alloc(type_index::ERROR, payload, extra);
    // SAFETY: `obj` is a fresh error object with `extra` inline bytes.
    unsafe {
        let text = object::tail::<ErrorObj, u8>(obj);
        ptr::copy_nonoverlapping(kind.as_ptr(), text, kind.len());
        text.add(kind.len()).write(0);
        let message_start = text.add(kind.len() + 1);
        ptr::copy_nonoverlapping(message.as_ptr(), message_start, message.len());
        message_start.add(message.len()).write(0);
        (*obj).cell.kind = byte_array(text, kind.len());
        (*obj).cell.message = byte_array(message_start, message.len());
        if !backtrace.is_empty() {
            set_backtrace(obj, backtrace, backtrace_update_mode::REPLACE);
        }
        if !cause_chain.is_null() {
            object::inc_ref(cause_chain);
            (*obj).cell.cause_chain = cause_chain.cast();
        }
        if !extra_context.is_null() {
            object::inc_ref(extra_context);
            (*obj).cell.extra_context = extra_context.cast();
        }
    }
    obj.cast()
}

/// Replaces or appends to the backtrace of an error object.
///
/// # Safety
/// `obj` must be an error object created by [`new_error`], not accessed concurrently.
unsafe fn set_backtrace(obj: *mut ErrorObj, text: &[u8], mode: i32) {
    // SAFETY: guaranteed by the caller.
    let err = unsafe { &mut *obj };
    err.backtrace.pop(); // the NUL, if any
    if mode == backtrace_update_mode::REPLACE {
        err.backtrace.clear();
    }
    err.backtrace.extend_from_slice(text);
    if err.backtrace.is_empty() {
        err.backtrace = Vec::new();
        err.cell.backtrace = byte_array(EMPTY.as_ptr(), 0);
    } else {
        err.backtrace.push(0);
        err.cell.backtrace = byte_array(err.backtrace.as_ptr(), err.backtrace.len() - 1);
    }
}

/// `update_backtrace` of the error cell.
///
/// # Safety
/// Called from C with an error object of this runtime and a valid byte array.
unsafe extern "C" fn update_backtrace(
    obj: *mut c_void,
    backtrace: *const TVMFFIByteArray,
    mode: i32,
) {
    let guarded = std::panic::catch_unwind(|| {
        // SAFETY: the caller passes a valid byte array.
        let text = unsafe { bytes_of(&*backtrace) };
        // SAFETY: `obj` is an error object of this runtime.
        unsafe { set_backtrace(obj.cast(), text, mode) };
    });
    if guarded.is_err() {
        std::process::abort();
    }
}

/// The bytes of a byte array (empty for a NULL data pointer).
///
/// # Safety
/// `array` must describe readable memory.
pub unsafe fn bytes_of<'a>(array: &TVMFFIByteArray) -> &'a [u8] {
    if array.data.is_null() || array.size == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(array.data.cast(), array.size) }
    }
}

/// The error cell of an error object (of any runtime: the layout is the ABI's).
///
/// # Safety
/// `obj` must point to a live error object.
pub unsafe fn cell<'a>(obj: *mut TVMFFIObject) -> &'a TVMFFIErrorCell {
    // SAFETY: the cell follows the header in every error object.
    unsafe { &*obj.add(1).cast::<TVMFFIErrorCell>() }
}

// ---------------------------------------------------------------------------
// The thread-local raised error
// ---------------------------------------------------------------------------

/// Holds the raised error of one thread and releases it when the thread ends.
struct RaisedSlot(Cell<*mut TVMFFIObject>);

impl Drop for RaisedSlot {
    fn drop(&mut self) {
        // SAFETY: the slot owns one strong reference (or NULL).
        unsafe { object::dec_ref(self.0.replace(ptr::null_mut())) };
    }
}

thread_local! {
    static RAISED: RaisedSlot = const { RaisedSlot(Cell::new(ptr::null_mut())) };
}

/// Stores `err` (an owned reference) as this thread's raised error, releasing the previous one.
pub fn set_raised_owned(err: *mut TVMFFIObject) {
    let previous = RAISED.try_with(|slot| slot.0.replace(err)).unwrap_or(err); // thread teardown: nowhere to store it, release it
    // SAFETY: the slot owned `previous`.
    unsafe { object::dec_ref(previous) };
}

/// Raises a new error of `kind` with `message` on this thread.
pub fn set_raised_from_str(kind: &str, message: &str) {
    set_raised_from_bytes(kind.as_bytes(), message.as_bytes());
}

/// Raises a new error of `kind` with `message` (raw bytes) on this thread.
pub fn set_raised_from_bytes(kind: &[u8], message: &[u8]) {
    // SAFETY: no cause or context.
    let err = unsafe { new_error(kind, message, b"", ptr::null_mut(), ptr::null_mut()) };
    set_raised_owned(err);
}

/// Takes this thread's raised error (an owned reference, NULL when none is raised).
pub fn move_from_raised() -> *mut TVMFFIObject {
    RAISED
        .try_with(|slot| slot.0.replace(ptr::null_mut()))
        .unwrap_or(ptr::null_mut())
}
