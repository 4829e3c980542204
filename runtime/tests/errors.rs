//! Errors: the raised error is per thread, error objects carry kind, message, backtrace,
//! cause and context, and raising captures no backtrace.

use std::ffi::CString;

use safecall_runtime::capi::{
    TVMFFIErrorMoveFromRaised, TVMFFIErrorSetRaisedFromCStr, TVMFFIErrorSetRaisedFromCStrParts,
};
use safecall_runtime::{Error, ObjectRef};

fn raise(kind: &str, message: &str) {
    let (kind, message) = (CString::new(kind).unwrap(), CString::new(message).unwrap());
    // SAFETY: NUL-terminated strings.
    unsafe { TVMFFIErrorSetRaisedFromCStr(kind.as_ptr(), message.as_ptr()) };
}

#[test]
fn errors_stay_on_their_thread() {
    raise("ValueError", "main thread");
    let other = std::thread::spawn(|| {
        assert!(
            Error::take_raised().is_none(),
            "another thread's error leaked here"
        );
        raise("KeyError", "other thread");
        let err = Error::take_raised().expect("raised here");
        assert_eq!(err.kind(), "KeyError");
        raise("IndexError", "left behind when the thread ends");
    });
    other.join().unwrap();
    let err = Error::take_raised().expect("still raised on the main thread");
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.message(), "main thread");
    assert!(Error::take_raised().is_none());
}

#[test]
fn raised_errors_move_out_through_the_c_api() {
    let parts = [
        c"argument ".as_ptr(),
        core::ptr::null(),
        c"'x'".as_ptr(),
        c" is wrong".as_ptr(),
    ];
    // SAFETY: valid strings (NULL parts are skipped).
    unsafe { TVMFFIErrorSetRaisedFromCStrParts(c"TypeError".as_ptr(), parts.as_ptr(), 4) };
    let mut handle = core::ptr::null_mut();
    // SAFETY: a writable slot.
    unsafe { TVMFFIErrorMoveFromRaised(&mut handle) };
    // SAFETY: the raised error's reference moved to us.
    let err = unsafe { ObjectRef::from_raw_owned(handle.cast()) }.expect("an error was raised");
    let err: Error = safecall_runtime::AnyView::from(&err).cast().unwrap();
    assert_eq!(err.to_string(), "TypeError: argument 'x' is wrong");
}

#[test]
fn error_fields_cause_and_backtrace() {
    let cause = Error::new("KeyError", "missing");
    let context = safecall_runtime::Shape::new(&[1, 2]);
    let err = Error::with_details(
        b"ValueError",
        b"outer",
        b"  frame 1\n",
        Some(&cause),
        Some(context.as_object()),
    );
    assert_eq!(err.backtrace(), "  frame 1\n");
    err.append_backtrace("  frame 2\n");
    assert_eq!(err.backtrace(), "  frame 1\n  frame 2\n");
    err.set_backtrace("replaced");
    assert_eq!(err.backtrace(), "replaced");
    let got_cause = err.cause().unwrap();
    assert_eq!(got_cause, cause);
    assert_eq!(cause.as_object().strong_count(), 3); // ours, the cell's, the one cause() returned
    drop(got_cause);
    assert_eq!(err.extra_context().unwrap(), *context.as_object());
    drop(err);
    assert_eq!(cause.as_object().strong_count(), 1);
}

#[test]
fn raising_captures_no_backtrace() {
    // What keeps raising cheap (a generated function may raise millions of errors): the raise
    // path captures no backtrace; Python adds its own frames when it converts the error.
    raise("ValueError", "argument 'x' (#0): expected int, got float");
    let err = Error::take_raised().expect("raised");
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.backtrace(), "");
    let parts = [c"shape[0] is ".as_ptr(), c"3".as_ptr()];
    // SAFETY: NUL-terminated parts.
    unsafe { TVMFFIErrorSetRaisedFromCStrParts(c"ValueError".as_ptr(), parts.as_ptr(), 2) };
    let err = Error::take_raised().expect("raised");
    assert_eq!(err.message(), "shape[0] is 3");
    assert_eq!(err.backtrace(), "");
}

#[inline(never)]
fn capture_backtrace_here() -> std::string::String {
    // SAFETY: NULL frame information is allowed; the result is read before the next call.
    let bt = unsafe {
        &*safecall_runtime::capi::TVMFFIBacktrace(core::ptr::null(), 0, core::ptr::null(), 0)
    };
    // SAFETY: the runtime's thread-local text.
    std::string::String::from_utf8_lossy(unsafe {
        core::slice::from_raw_parts(bt.data.cast::<u8>(), bt.size)
    })
    .into_owned()
}

#[test]
fn backtrace_names_the_given_frame_then_the_callers() {
    // SAFETY: NUL-terminated strings.
    let bt = unsafe {
        &*safecall_runtime::capi::TVMFFIBacktrace(c"kernel.py".as_ptr(), 12, c"launch".as_ptr(), 0)
    };
    // SAFETY: the runtime's thread-local text.
    let text = unsafe { core::slice::from_raw_parts(bt.data.cast::<u8>(), bt.size) };
    assert!(text.starts_with(b"  File \"kernel.py\", line 12, in launch\n"));
    let captured = capture_backtrace_here();
    assert!(captured.contains("capture_backtrace_here"), "{captured}");
    assert!(
        !captured.contains("safecall_runtime::capi"),
        "runtime frames leak: {captured}"
    );
    assert!(
        captured.lines().all(|l| l.starts_with("  File \"")),
        "{captured}"
    );
}
