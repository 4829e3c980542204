//! The JIT side of the comparison: a launcher, global-function calls, narrow extern
//! arguments and results, system-library modules and unresolved externs behave identically on
//! both backends.

use super::*;
use crate::llvm_support::parse;
use safecall::jit::JitModule;
use std::sync::Mutex;

/// `(m, n, k, grid_x, grid_y)` of a kernel launch.
type Launch = (i64, i64, i64, i32, i32);

/// Arguments the launcher's kernel stub last received.
static LAUNCHES: Mutex<Vec<Launch>> = Mutex::new(Vec::new());

#[allow(clippy::too_many_arguments)]
extern "C" fn matmul_kernel_launch(
    _a: *mut c_void,
    _b: *mut c_void,
    _bias: *mut c_void,
    _c: *mut c_void,
    m: i64,
    n: i64,
    k: i64,
    grid_x: i32,
    grid_y: i32,
    _stream: *mut c_void,
) -> i32 {
    LAUNCHES.lock().unwrap().push((m, n, k, grid_x, grid_y));
    if m == 7 {
        // Raise like a real kernel launcher would.
        let msg = c"launch failed for m = 7";
        // SAFETY: NUL-terminated strings.
        unsafe {
            safecall_runtime::capi::TVMFFIErrorSetRaisedFromCStr(
                c"RuntimeError".as_ptr(),
                msg.as_ptr(),
            )
        };
        return 1;
    }
    0
}

fn launcher_outcomes(jit: &JitModule) -> Vec<String> {
    let f = jit.function("matmul").unwrap();
    let mut out = Vec::new();
    let cases: &[(i64, i64, i64, u8)] = &[
        (256, 300, 64, 16),
        (7, 128, 8, 16),
        (0, 128, 8, 16),
        (256, 300, 60, 16),
        (256, 300, 64, 32),
    ];
    for &(m, n, k, a_bits) in cases {
        let a = FakeCudaTensor::new(&[m, k], 2, a_bits);
        let b = FakeCudaTensor::new(&[k, n], 2, 16);
        let bias = FakeCudaTensor::new(&[n], 2, 32);
        let c = FakeCudaTensor::new(&[m, n], 2, 32);
        LAUNCHES.lock().unwrap().clear();
        let r = f.call(&[a.view(), b.view(), bias.view(), c.view()]);
        let launched = LAUNCHES.lock().unwrap().clone();
        out.push(match r {
            Ok(v) => format!("ok {:?} {launched:?}", v.type_index()),
            Err(e) => format!("{}: {} {launched:?}", e.kind(), e.message()),
        });
    }
    out
}

#[test]
fn launcher_jit_behaves_identically() {
    let module = example("launcher");
    let mut results = Vec::new();
    for backend in backends() {
        let mut opts = jit_options(backend, 2);
        opts.symbols.insert("matmul_kernel_launch".to_owned(), {
            // SAFETY: a function of this program with the C signature the IR declares for it.
            unsafe { SymbolAddress::new(matmul_kernel_launch as *const u8) }
        });
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &opts) }.unwrap();
        results.push((backend, launcher_outcomes(&jit)));
    }
    let (_, first) = &results[0];
    assert!(
        first[0].starts_with("ok 0 [(256, 300, 64, 3, 2)]"),
        "{first:?}"
    );
    assert!(
        first[1].starts_with("RuntimeError: launch failed for m = 7"),
        "{first:?}"
    );
    assert!(
        first[2].contains("matmul: empty output of shape (0, 128)"),
        "{first:?}"
    );
    assert!(first[3].contains("60"), "{first:?}");
    assert!(first[4].starts_with("TypeError"), "{first:?}");
    for (backend, outcome) in &results[1..] {
        assert_eq!(outcome, first, "{backend:?} differs from Cranelift");
    }
}

#[test]
fn call_global_jit_behaves_identically() {
    let echo = Function::from_closure(|args| Any::from_view(args[0]));
    echo.set_global("testing.echo", true).unwrap();
    let module = example("call_global");
    let mut results = Vec::new();
    for backend in backends() {
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &jit_options(backend, 2)) }.unwrap();
        let f = jit.function("echo_positive").unwrap();
        let ok = f
            .call(&[AnyView::from(5i64)])
            .unwrap()
            .cast::<i64>()
            .unwrap();
        let err = f.call(&[AnyView::from(-3i64)]).unwrap_err();
        let apply = jit.function("apply").unwrap();
        let t = f32_tensor(&[1.0]);
        let r = apply
            .call(&[
                AnyView::from(&echo),
                AnyView::from(&t),
                AnyView::from(1.5f64),
            ])
            .unwrap();
        results.push((
            backend,
            format!("{ok} {}: {} {}", err.kind(), err.message(), r.type_index()),
        ));
    }
    assert!(
        results[0]
            .1
            .starts_with("5 ValueError: echo_positive: x must be positive, got -3")
    );
    for (backend, r) in &results[1..] {
        assert_eq!(r, &results[0].1, "{backend:?}");
    }
}

#[test]
fn narrow_extern_arguments_and_results_are_extended() {
    extern "C" fn narrow(a: i8, b: u8, c: i16, d: u16, e: bool) -> i64 {
        i64::from(a) * 1_000_000
            + i64::from(b) * 10_000
            + i64::from(c) * 100
            + i64::from(d)
            + i64::from(e)
    }
    extern "C" fn small_neg() -> i8 {
        -5
    }
    extern "C" fn big_u16() -> u16 {
        65_000
    }
    let module = parse(
        r#"
module narrow;
extern fn narrow(i8, u8, i16, u16, bool) -> i64;
extern fn small_neg() -> i8;
extern fn big_u16() -> u16;
fn f(a: i8, b: u8, c: i16, d: u16) -> i64 {
    let r = call narrow(a, b, c, d, true);
    let s = call small_neg();
    let u = call big_u16();
    return r + cast<i64>(s) * 7 + cast<i64>(u);
}
"#,
    );
    let expected = narrow(-3, 200, -300, 60_000, true) - 35 + 65_000;
    for backend in backends() {
        let mut opts = jit_options(backend, 2);
        for (name, addr) in [
            ("narrow", narrow as *const u8),
            ("small_neg", small_neg as *const u8),
            ("big_u16", big_u16 as *const u8),
        ] {
            // SAFETY: a function of this program with the C signature the IR declares for it.
            opts.symbols
                .insert(name.to_owned(), unsafe { SymbolAddress::new(addr) });
        }
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &opts) }.unwrap();
        let r = jit
            .function("f")
            .unwrap()
            .call(&[
                AnyView::from(-3i64),
                AnyView::from(200i64),
                AnyView::from(-300i64),
                AnyView::from(60_000i64),
            ])
            .unwrap();
        assert_eq!(r.cast::<i64>().unwrap(), expected, "{backend:?}");
    }
}

#[test]
fn system_library_modules_run_in_the_jit_identically() {
    // In the JIT the `.init_array` registration of a system library does not run (nothing
    // loads the code as a library); its functions are still there, on either backend.
    let module = parse(
        "module m;\nsystem_lib_prefix \"jit_syslib_\";\n\
         fn sq(n: i64) -> i64 { return n * n; }\n",
    );
    for backend in backends() {
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &jit_options(backend, 2)) }.unwrap();
        let r = jit
            .function("sq")
            .unwrap()
            .call(&[AnyView::from(9i64)])
            .unwrap();
        assert_eq!(r.cast::<i64>().unwrap(), 81, "{backend:?}");
        assert!(
            safecall_runtime::rust_api::registry::system_lib_symbol("__tvm_ffi_jit_syslib_sq")
                .is_none(),
            "{backend:?}: registered from the JIT"
        );
    }
}

#[test]
fn unresolved_externs_are_reported_identically() {
    let module = parse(
        "module m;\nextern fn safecall_test_no_such_function(i64) -> i64;\n\
         fn f(n: i64) -> i64 { let r = call safecall_test_no_such_function(n); return r; }\n",
    );
    for backend in backends() {
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let err = unsafe { safecall::jit::compile(&module, &jit_options(backend, 2)) }.unwrap_err();
        match err {
            safecall::Error::Backend(safecall::backend::BackendError::UnresolvedSymbols(names)) => {
                assert_eq!(
                    names,
                    vec!["safecall_test_no_such_function".to_owned()],
                    "{backend:?}"
                )
            }
            other => panic!("{backend:?}: {other}"),
        }
    }
}
