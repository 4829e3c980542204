//! Functions: Rust closures, raw safe calls, errors and panics at the C boundary, the
//! global registry and init-once handles.

use core::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use safecall_runtime::abi::{TVMFFIAny, type_index};
use safecall_runtime::capi::{TVMFFIFunctionCall, TVMFFIHandleDeinitOnce, TVMFFIHandleInitOnce};
use safecall_runtime::{Any, AnyView, Error, Function};

fn c_call(f: &Function, args: &[AnyView<'_>]) -> (c_int, TVMFFIAny) {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a live function, valid arguments, a None result slot.
    let code = unsafe {
        TVMFFIFunctionCall(
            f.as_ptr().cast(),
            args.as_ptr().cast_mut().cast(),
            args.len() as i32,
            &mut result,
        )
    };
    (code, result)
}

#[test]
fn closures_take_and_return_values() {
    let add = Function::from_closure(|args| {
        let a: i64 = args[0].cast()?;
        let b: f64 = args[1].cast()?;
        Ok(Any::from(a as f64 + b))
    });
    let result = add
        .call(&[AnyView::from(2i64), AnyView::from(0.5)])
        .unwrap();
    assert_eq!(result.cast::<f64>().unwrap(), 2.5);
    let (code, raw) = c_call(&add, &[AnyView::from(1i32), AnyView::from(true)]);
    assert_eq!(code, 0);
    assert_eq!(raw.type_index, type_index::FLOAT);
    let err = add
        .call(&[AnyView::from(c"x"), AnyView::from(1.0)])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "TypeError: Cannot convert from type `const char*` to `int`"
    );
}

#[test]
fn closure_errors_are_raised_at_the_c_boundary() {
    let f = Function::from_closure(|_| Err(Error::new("ValueError", "bad input")));
    let (code, raw) = c_call(&f, &[]);
    assert_eq!(code, -1);
    assert_eq!(
        raw.type_index,
        type_index::NONE,
        "the result is not written on failure"
    );
    let err = Error::take_raised().expect("raised");
    assert_eq!(err.to_string(), "ValueError: bad input");
}

#[test]
fn panics_in_closures_become_errors() {
    let f = Function::from_closure(|args| {
        if args.is_empty() {
            panic!("no arguments given");
        }
        Ok(Any::none())
    });
    let (code, _) = c_call(&f, &[]);
    assert_eq!(code, -1);
    let err = Error::take_raised().expect("the panic became an error");
    assert_eq!(err.kind(), "RuntimeError");
    assert!(
        err.message().contains("no arguments given"),
        "{}",
        err.message()
    );
    // The function still works afterwards.
    assert!(f.call(&[AnyView::none()]).unwrap().is_none());
}

static CONTEXT_DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn double_it(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the context is a u64 multiplier set by the test; args follow the contract.
    unsafe {
        let factor = *handle.cast::<i64>();
        let args = AnyView::slice_from_raw(args, num_args);
        match args.first().map(|a| a.cast::<i64>()) {
            Some(Ok(v)) => {
                result.write(Any::from(v * factor).into_raw());
                0
            }
            _ => {
                safecall_runtime::error::set_raised_from_str("TypeError", "double_it takes an int");
                -1
            }
        }
    }
}

unsafe extern "C" fn free_context(handle: *mut c_void) {
    // SAFETY: the test boxed the context.
    drop(unsafe { Box::from_raw(handle.cast::<i64>()) });
    CONTEXT_DELETED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn raw_safe_calls_with_context_and_deleter() {
    let context = Box::into_raw(Box::new(2i64));
    // SAFETY: `double_it` follows the contract; the deleter frees the context once.
    let f = unsafe { Function::from_safe_call(double_it, context.cast(), Some(free_context)) };
    assert_eq!(
        f.call(&[AnyView::from(21i64)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        42
    );
    let err = f.call(&[]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    let copy = f.clone();
    drop(f);
    assert_eq!(CONTEXT_DELETED.load(Ordering::SeqCst), 0);
    drop(copy);
    assert_eq!(CONTEXT_DELETED.load(Ordering::SeqCst), 1);
}

#[test]
fn global_registry_honours_the_override_flag() {
    let one = Function::from_closure(|_| Ok(Any::from(1i64)));
    let two = Function::from_closure(|_| Ok(Any::from(2i64)));
    assert!(Function::get_global("safecall.rust_test.f").is_none());
    one.set_global("safecall.rust_test.f", false).unwrap();
    let err = two.set_global("safecall.rust_test.f", false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "RuntimeError: Global Function `safecall.rust_test.f` is already registered"
    );
    let got = Function::get_global("safecall.rust_test.f").unwrap();
    assert_eq!(got, one);
    two.set_global("safecall.rust_test.f", true).unwrap();
    assert_eq!(
        Function::get_global("safecall.rust_test.f")
            .unwrap()
            .call(&[])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        2
    );
    assert!(Function::remove_global("safecall.rust_test.f"));
    assert!(Function::get_global("safecall.rust_test.f").is_none());
}

static INIT_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn slow_init(result: *mut *mut c_void) -> c_int {
    INIT_CALLS.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // SAFETY: the runtime passes a writable slot.
    unsafe { result.write(0x1234 as *mut c_void) };
    0
}

unsafe extern "C" fn failing_init(_result: *mut *mut c_void) -> c_int {
    safecall_runtime::error::set_raised_from_str("RuntimeError", "init failed");
    -1
}

unsafe extern "C" fn noop_deinit(_handle: *mut c_void) -> c_int {
    0
}

/// A handle slot shared between threads.
struct Slot(core::cell::UnsafeCell<*mut c_void>);
// SAFETY: the slot is only accessed through the runtime's atomic init-once functions.
unsafe impl Sync for Slot {}

#[test]
fn init_once_under_eight_racing_threads() {
    static SLOT: Slot = Slot(core::cell::UnsafeCell::new(core::ptr::null_mut()));
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                // SAFETY: a static, pointer-aligned slot.
                let code = unsafe { TVMFFIHandleInitOnce(SLOT.0.get(), slow_init) };
                assert_eq!(code, 0);
                // SAFETY: after a successful init the slot holds the handle.
                assert_eq!(unsafe { *SLOT.0.get() }, 0x1234 as *mut c_void);
            });
        }
    });
    assert_eq!(INIT_CALLS.load(Ordering::SeqCst), 1);
    // SAFETY: the slot as above.
    assert_eq!(
        unsafe { TVMFFIHandleDeinitOnce(SLOT.0.get(), noop_deinit) },
        0
    );
    // SAFETY: the slot as above.
    assert!(unsafe { *SLOT.0.get() }.is_null());
}

#[test]
fn failing_init_leaves_the_handle_empty_with_the_error_raised() {
    let mut slot: *mut c_void = core::ptr::null_mut();
    // SAFETY: a local slot.
    assert_eq!(unsafe { TVMFFIHandleInitOnce(&mut slot, failing_init) }, -1);
    assert!(slot.is_null());
    assert_eq!(Error::take_raised().unwrap().message(), "init failed");
}
