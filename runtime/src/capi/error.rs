//! Errors: the thread-local raised error, error objects and backtraces.

use core::cell::RefCell;
use core::ffi::{CStr, c_char, c_int, c_void};

use super::no_unwind;
use crate::abi::{TVMFFIByteArray, TVMFFIObject};
use crate::error::{self, bytes_of};

use crate::object;

/// The bytes of a C string (empty for NULL).
///
/// # Safety
/// `s` must be NULL or NUL-terminated.
pub(crate) unsafe fn cstr_bytes<'a>(s: *const c_char) -> &'a [u8] {
    if s.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { CStr::from_ptr(s) }.to_bytes()
    }
}

/// The bytes of a byte array passed by pointer (empty for NULL).
///
/// # Safety
/// `array` must be NULL or point to a byte array describing readable memory.
pub(crate) unsafe fn array_bytes<'a>(array: *const TVMFFIByteArray) -> &'a [u8] {
    if array.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { bytes_of(&*array) }
    }
}

/// `TVMFFIErrorMoveFromRaised`: NULL when no error is raised.
///
/// # Safety
/// `result` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorMoveFromRaised(result: *mut *mut c_void) {
    // SAFETY: guaranteed by the caller.
    no_unwind("TVMFFIErrorMoveFromRaised", || unsafe {
        result.write(error::move_from_raised().cast())
    });
}

/// `TVMFFIErrorSetRaised`: the thread takes its own reference; the caller keeps theirs.
///
/// # Safety
/// `err` must be a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorSetRaised(err: *mut c_void) {
    no_unwind("TVMFFIErrorSetRaised", || {
        let obj = err.cast::<TVMFFIObject>();
        if !obj.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { object::inc_ref(obj) };
        }
        error::set_raised_owned(obj);
    });
}

/// `TVMFFIErrorSetRaisedFromCStr`. No backtrace is captured, so raising stays cheap.
///
/// # Safety
/// `kind` and `message` must be NUL-terminated (or NULL, read as empty).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) {
    no_unwind("TVMFFIErrorSetRaisedFromCStr", || {
        // SAFETY: guaranteed by the caller.
        let (kind, message) = unsafe { (cstr_bytes(kind), cstr_bytes(message)) };
        error::set_raised_from_bytes(kind, message);
    });
}

/// `TVMFFIErrorSetRaisedFromCStrParts`: the message is the concatenation of the non-NULL parts.
///
/// # Safety
/// `kind` must be NUL-terminated; `parts` must hold `num_parts` NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    parts: *const *const c_char,
    num_parts: i32,
) {
    no_unwind("TVMFFIErrorSetRaisedFromCStrParts", || {
        let mut message = Vec::new();
        for i in 0..num_parts.max(0) as usize {
            // SAFETY: guaranteed by the caller.
            message.extend_from_slice(unsafe { cstr_bytes(*parts.add(i)) });
        }
        // SAFETY: guaranteed by the caller.
        error::set_raised_from_bytes(unsafe { cstr_bytes(kind) }, &message);
    });
}

/// `TVMFFIErrorCreate`.
///
/// # Safety
/// The byte arrays must be valid; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorCreate(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: guaranteed by the caller.
    unsafe {
        TVMFFIErrorCreateWithCauseAndExtraContext(
            kind,
            message,
            backtrace,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            out,
        )
    }
}

/// `TVMFFIErrorCreateWithCauseAndExtraContext`: cause and context are borrowed (the error
/// takes its own references).
///
/// # Safety
/// The byte arrays must be valid; cause and context NULL or live objects; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorCreateWithCauseAndExtraContext(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    cause_chain: *mut c_void,
    extra_context: *mut c_void,
    out: *mut *mut c_void,
) -> c_int {
    let created = std::panic::catch_unwind(|| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let obj = error::new_error(
                array_bytes(kind),
                array_bytes(message),
                array_bytes(backtrace),
                cause_chain.cast(),
                extra_context.cast(),
            );
            out.write(obj.cast());
        }
    });
    if created.is_ok() { 0 } else { -1 }
}

thread_local! {
    /// The text `TVMFFIBacktrace` returns a view of, until the thread's next call.
    static BACKTRACE: RefCell<(Vec<u8>, TVMFFIByteArray)> =
        const { RefCell::new((Vec::new(), TVMFFIByteArray { data: core::ptr::null(), size: 0 })) };
}

/// Appends one frame in Python's traceback style.
fn push_frame(out: &mut Vec<u8>, file: &[u8], line: i64, func: &[u8]) {
    out.extend_from_slice(b"  File \"");
    out.extend_from_slice(file);
    out.extend_from_slice(format!("\", line {line}, in ").as_bytes());
    out.extend_from_slice(func);
    out.push(b'\n');
}

/// Frames of this runtime's own machinery (and the C library's start-up), left out.
fn is_internal_frame(symbol: &str) -> bool {
    const PREFIXES: [&str; 10] = [
        "std::backtrace",
        "std::panicking",
        "std::panic::",
        "core::panic",
        "<core::panic",
        "__rust_try",
        "safecall_runtime::capi::",
        "TVMFFIBacktrace",
        "__libc_",
        "ffi_call_",
    ];
    PREFIXES.iter().any(|p| symbol.starts_with(p))
}

/// Appends the frames of a captured Rust backtrace (most recent first), stopping at the FFI
/// boundary (`TVMFFIFunctionCall`) unless `cross_boundary`. With `skip_caller`, the first
/// frame outside the runtime (the caller, already given explicitly) is left out.
fn push_captured_frames(out: &mut Vec<u8>, cross_boundary: bool, mut skip_caller: bool) {
    let limit = std::env::var("TVM_TRACEBACK_LIMIT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(512);
    let text = std::backtrace::Backtrace::force_capture().to_string();
    let mut lines = text.lines().peekable();
    let mut count = 0;
    while let Some(line) = lines.next() {
        // Frames read "  N: symbol" optionally followed by "      at file:line:col".
        let Some((_, symbol)) = line.trim_start().split_once(": ") else {
            continue;
        };
        let location = lines.next_if(|l| l.trim_start().starts_with("at "));
        if is_internal_frame(symbol) {
            continue;
        }
        if skip_caller {
            skip_caller = false;
            continue;
        }
        if !cross_boundary && symbol.starts_with("TVMFFIFunctionCall") {
            break;
        }
        if count >= limit {
            break;
        }
        let (file, line_no) = location
            .and_then(|l| {
                let l = l.trim_start().trim_start_matches("at ");
                let mut parts = l.rsplitn(3, ':');
                let _col = parts.next()?;
                let line_no = parts.next()?.parse::<i64>().ok()?;
                Some((parts.next()?.to_owned(), line_no))
            })
            .unwrap_or_else(|| ("<unknown>".to_owned(), 0));
        push_frame(out, file.as_bytes(), line_no, symbol.as_bytes());
        count += 1;
    }
}

/// `TVMFFIBacktrace`: the given frame (when `filename` and `func` are set) followed by the
/// captured call stack. The result is valid until the thread's next call.
///
/// # Safety
/// `filename` and `func` must be NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIBacktrace(
    filename: *const c_char,
    lineno: c_int,
    func: *const c_char,
    cross_ffi_boundary: c_int,
) -> *const TVMFFIByteArray {
    no_unwind("TVMFFIBacktrace", || {
        let mut text = Vec::new();
        let given = !filename.is_null() && !func.is_null();
        if given {
            // SAFETY: guaranteed by the caller.
            let (file, func) = unsafe { (cstr_bytes(filename), cstr_bytes(func)) };
            push_frame(&mut text, file, i64::from(lineno), func);
        }
        push_captured_frames(&mut text, cross_ffi_boundary != 0, given);
        BACKTRACE.with_borrow_mut(|(storage, array)| {
            *storage = text;
            storage.push(0);
            *array = TVMFFIByteArray {
                data: storage.as_ptr().cast(),
                size: storage.len() - 1,
            };
            array as *const TVMFFIByteArray
        })
    })
}
