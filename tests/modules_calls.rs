//! Generated code calling other functions, run through safecall-runtime's module loader (the
//! test executable exports the runtime's C API, so libraries it loads bind to it): packed
//! calls to a global function, to a function of an imported module rebuilt by a loader
//! registered in Rust, and to a callback; extern C calls that raise; a direct call into another
//! library; the stream query; reference counts on every path.

use crate::modules::support;

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use safecall::aot::{LinkOptions, Linker};
use safecall_runtime::{Any, AnyView, Error, Function, Module, Shape, Tensor};

/// The libraries of these tests, built once per test process.
struct Libs {
    calls: PathBuf,
    /// Payloads the `sc_test_helpers` loader was called with.
    payloads: Arc<Mutex<Vec<Vec<u8>>>>,
}

fn libs() -> &'static Libs {
    static LIBS: OnceLock<Libs> = OnceLock::new();
    LIBS.get_or_init(|| {
        let dir = support::out_dir("calls");
        support::build_c_so(
            &dir,
            "sc_helpers",
            &[support::sources().join("helpers.c")],
            &[],
        );
        support::build_so(
            &dir,
            "sc_other",
            &support::parse_file("other.scir"),
            Default::default(),
            &LinkOptions::default(),
        );
        let link = LinkOptions {
            linker: Linker::Cc,
            extra: vec![
                format!("-L{}", dir.display()),
                "-lsc_helpers".into(),
                "-lsc_other".into(),
                format!("-Wl,-rpath,{}", dir.display()),
            ],
            ..Default::default()
        };
        let calls = support::build_so(
            &dir,
            "calls",
            &support::parse_file("calls.scir"),
            Default::default(),
            &link,
        );
        let payloads = Arc::new(Mutex::new(Vec::new()));
        let seen = payloads.clone();
        Module::register_loader(
            "sc_test_helpers",
            move |payload| {
                seen.lock().unwrap().push(payload.to_vec());
                let triple = Function::from_closure(|args| {
                    let x: i64 = args[0].cast()?;
                    if x < 0 {
                        return Err(Error::new("KeyError", &format!("triple: no key {x}")));
                    }
                    Ok(Any::from(3 * x))
                });
                Ok(Module::from_functions(
                    "sc_test_helpers",
                    [("triple".to_owned(), triple)],
                ))
            },
            false,
        )
        .expect("register the loader");
        Libs { calls, payloads }
    })
}

/// The calls library, loaded through the module loader.
fn calls() -> Module {
    Module::load(&libs().calls).expect("load libcalls.so")
}

fn func(module: &Module, name: &str) -> Function {
    module
        .get_function(name)
        .expect("lookup")
        .unwrap_or_else(|| panic!("{name} is exported"))
}

fn int(x: i64) -> AnyView<'static> {
    AnyView::from(x)
}

#[test]
fn global_call_is_looked_up_once_and_a_missing_one_is_named() {
    let m = calls();
    let scale = Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? * 10)));
    scale.set_global("sc_test.scale", true).unwrap();
    let call_global = func(&m, "call_global");
    assert_eq!(
        call_global.call(&[int(4)]).unwrap().cast::<i64>().unwrap(),
        40
    );
    // The call site cached the function: it keeps working after the name goes away.
    assert!(Function::remove_global("sc_test.scale"));
    assert_eq!(
        call_global.call(&[int(5)]).unwrap().cast::<i64>().unwrap(),
        50
    );

    let late = func(&m, "call_late_global");
    let err = late.call(&[int(1)]).unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    assert_eq!(
        err.message(),
        "call_late_global: in `let r = call_packed global \"sc_test.late\"(x);`: global function \
         `sc_test.late` is not registered\n  when calling call_late_global(x: i64)"
    );
    // A failed lookup is not cached: registering the function makes the next call work.
    Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? + 1000)))
        .set_global("sc_test.late", true)
        .unwrap();
    assert_eq!(late.call(&[int(1)]).unwrap().cast::<i64>().unwrap(), 1001);
}

#[test]
fn import_call_goes_to_the_module_the_loader_rebuilt() {
    let m = calls();
    assert!(
        libs()
            .payloads
            .lock()
            .unwrap()
            .iter()
            .any(|p| p == b"helpers v1"),
        "the loader received the payload"
    );
    let imports = m.imports();
    assert_eq!(imports.len(), 1);
    assert_eq!(imports[0].kind(), "sc_test_helpers");
    assert_eq!(m.kind(), "library");
    // The import's function is reachable through the module with query_imports only.
    assert!(m.get_function("triple").unwrap().is_none());
    assert!(
        m.get_function_with_imports("triple", true)
            .unwrap()
            .is_some()
    );

    let call_import = func(&m, "call_import");
    assert_eq!(
        call_import.call(&[int(5)]).unwrap().cast::<i64>().unwrap(),
        15
    );
    let err = call_import.call(&[int(-2)]).unwrap_err();
    assert_eq!(err.kind(), "KeyError");
    assert_eq!(err.message(), "triple: no key -2");

    let err = func(&m, "call_missing_import").call(&[int(1)]).unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    assert_eq!(
        err.message(),
        "Cannot find function sc_test_no_such_import in the imported modules or global registry."
    );
}

#[test]
fn import_lookup_falls_back_to_global_functions() {
    let m = calls();
    let helper = m.imports()[0].clone();
    let err = m
        .lookup_from_imports("sc_test.import_fallback")
        .unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    Function::from_closure(|_| Ok(Any::from(7i64)))
        .set_global("sc_test.import_fallback", true)
        .unwrap();
    let found = m.lookup_from_imports("sc_test.import_fallback").unwrap();
    assert!(!found.is_null());
    // The result is cached in the module: the same borrowed pointer every time.
    assert_eq!(
        m.lookup_from_imports("sc_test.import_fallback").unwrap(),
        found
    );
    // Imports win over globals.
    let triple = m.lookup_from_imports("triple").unwrap();
    assert_eq!(triple, m.lookup_from_imports("triple").unwrap(), "cached");
    assert!(helper.get_function("triple").unwrap().is_some());
}

#[test]
fn callback_parameter_is_called_and_its_error_comes_back_intact() {
    let m = calls();
    let call_param = func(&m, "call_param");
    let add_one = Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? + 1)));
    let out = call_param.call(&[AnyView::from(&add_one), int(7)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 8);
    let raising = Function::from_closure(|_| Err(Error::new("TypeError", "the callback refuses")));
    let err = call_param
        .call(&[AnyView::from(&raising), int(7)])
        .unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(err.message(), "the callback refuses");
}

#[test]
fn owned_results_are_released_on_every_path() {
    let m = calls();
    let tracked = Shape::new(&[1, 2, 3]);
    let held = tracked.clone();
    let f = Function::from_closure(move |_| Ok(Any::from(held.clone())));
    let baseline = tracked.as_object().strong_count();
    let count = || tracked.as_object().strong_count();

    // Result dropped at the call site.
    let x = func(&m, "call_discard")
        .call(&[AnyView::from(&f), int(3)])
        .unwrap();
    assert_eq!(x.cast::<i64>().unwrap(), 3);
    assert_eq!(count(), baseline, "call_discard released the result");

    // Result returned: one reference moves to the caller.
    let out = func(&m, "call_param")
        .call(&[AnyView::from(&f), int(0)])
        .unwrap();
    assert_eq!(count(), baseline + 1);
    assert_eq!(out.cast::<Shape>().unwrap(), tracked);
    drop(out);
    assert_eq!(count(), baseline);

    // The host function fails after the call: the held result is released.
    let err = func(&m, "call_then_fail")
        .call(&[AnyView::from(&f), int(1)])
        .unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.message(), "call_then_fail: x = 1 after the call");
    assert_eq!(count(), baseline, "released on the error exit");

    // A second callee fails: the host function returns -1 with the callee's error object
    // itself raised, after releasing the first result.
    let raised = Error::new("IndexError", "g: index 9 out of range");
    let to_raise = raised.clone();
    let g = Function::from_closure(move |_| Err(to_raise.clone()));
    type SafeCall = unsafe extern "C" fn(
        *mut c_void,
        *const safecall_runtime::abi::TVMFFIAny,
        i32,
        *mut safecall_runtime::abi::TVMFFIAny,
    ) -> i32;
    // SAFETY: the library is loaded (`m` holds it); the symbol is a safe call.
    let lib = unsafe { libloading::Library::new(&libs().calls) }.unwrap();
    // SAFETY: as above.
    let call_two = unsafe { lib.get::<SafeCall>(b"__tvm_ffi_call_two") }.unwrap();
    let args = [AnyView::from(&f), AnyView::from(&g), int(1)];
    let mut result = safecall_runtime::abi::TVMFFIAny::NONE;
    // SAFETY: three valid arguments and a None result slot.
    let rc = unsafe { call_two(std::ptr::null_mut(), args.as_ptr().cast(), 3, &mut result) };
    assert_eq!(rc, -1);
    assert_eq!(result.type_index, 0, "the result is not written on failure");
    let err = Error::take_raised().expect("an error is raised");
    assert_eq!(err, raised, "the callee's error object, intact");
    assert_eq!(err.message(), "g: index 9 out of range");
    assert_eq!(count(), baseline, "released when the second call failed");
    drop(lib);

    // A call site in a loop releases the previous result each time round, and the last one
    // at the exit.
    let out = func(&m, "call_in_loop")
        .call(&[AnyView::from(&f), int(5)])
        .unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 5);
    assert_eq!(count(), baseline);
}

#[test]
fn extern_c_call_honours_nonzero_is_raised() {
    let call_extern = func(&calls(), "call_extern");
    assert_eq!(
        call_extern.call(&[int(1)]).unwrap().cast::<i64>().unwrap(),
        0
    );
    let err = call_extern.call(&[int(-1)]).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.message(), "sc_checked: negative argument");
}

#[test]
fn direct_call_into_another_library() {
    let m = calls();
    let call_direct = func(&m, "call_direct");
    assert_eq!(
        call_direct.call(&[int(1)]).unwrap().cast::<i64>().unwrap(),
        101
    );
    let err = call_direct.call(&[int(-2)]).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.message(), "other_add: x = -2 is negative");
    // No lookup: the symbol is bound by the dynamic linker.
    let undefined = support::undefined_symbols(&libs().calls);
    assert!(undefined.iter().any(|s| s == "__tvm_ffi_other_add"));
}

#[test]
fn stream_query_reads_the_environment_stream() {
    let stream_of = func(&calls(), "stream_of");
    let t = Tensor::cpu::<f32>(&[3]).unwrap();
    // Streams are per thread: set and read on a fresh thread of our own.
    std::thread::scope(|s| {
        s.spawn(|| {
            let stream = 0x5eed_usize as *mut c_void;
            let before = stream_of.call(&[AnyView::from(&t)]).unwrap();
            assert!(before.cast::<*mut c_void>().unwrap().is_null());
            safecall_runtime::rust_api::registry::set_stream(1, 0, stream);
            let after = stream_of.call(&[AnyView::from(&t)]).unwrap();
            assert_eq!(after.cast::<*mut c_void>().unwrap(), stream);
        });
    });
}

#[test]
fn metadata_and_doc_through_the_loader() {
    let m = calls();
    let meta = m.function_metadata("call_global", false).unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(json["type_schema"].as_str().unwrap()).unwrap();
    assert_eq!(schema["type"], "ffi.Function");
    assert_eq!(
        m.function_doc("call_global", false).unwrap().as_deref(),
        Some("Calls the global function `sc_test.scale` with `x`.")
    );
    assert_eq!(m.function_metadata("no_such", true).unwrap(), None);
    // The same through the global functions the Python package calls.
    let get_doc = Function::get_global("ffi.ModuleGetFunctionDoc").unwrap();
    let name = Any::from("call_import");
    let doc = get_doc
        .call(&[AnyView::from(&m), name.view(), AnyView::from(false)])
        .unwrap();
    assert_eq!(
        doc.cast::<String>().unwrap(),
        "Calls `triple` of the imported modules."
    );
}

#[test]
fn global_module_functions_load_and_look_up() {
    let load = Function::get_global("ffi.ModuleLoadFromFile").unwrap();
    let path = Any::from(libs().calls.to_str().unwrap());
    let m: Module = load.call(&[path.view()]).unwrap().cast().unwrap();
    assert_eq!(m, calls(), "one module per loaded library");
    let get = Function::get_global("ffi.ModuleGetFunction").unwrap();
    let name = Any::from("triple");
    let none = get
        .call(&[AnyView::from(&m), name.view(), AnyView::from(false)])
        .unwrap();
    assert!(none.is_none());
    let triple: Function = get
        .call(&[AnyView::from(&m), name.view(), AnyView::from(true)])
        .unwrap()
        .cast()
        .unwrap();
    assert_eq!(triple.call(&[int(2)]).unwrap().cast::<i64>().unwrap(), 6);
    let kind = Function::get_global("ffi.ModuleGetKind").unwrap();
    let k = kind.call(&[AnyView::from(&m)]).unwrap();
    assert_eq!(k.cast::<String>().unwrap(), "library");
    let num = Function::get_global("safecall.ModuleNumImports").unwrap();
    assert_eq!(
        num.call(&[AnyView::from(&m)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        1
    );
    let bad = Any::from("x");
    let err = get
        .call(&[bad.view(), name.view(), AnyView::from(true)])
        .unwrap_err();
    assert_eq!(err.kind(), "TypeError");
}

#[test]
fn jit_compiled_calls_bind_to_the_runtime() {
    let ir = support::parse(
        "jit_calls",
        r#"
module jit_calls;
imported_module helpers { kind "sc_test_helpers"; payload b"helpers v1"; }
import helpers;
fn via_global(x: i64) -> any {
    let r = call_packed global "sc_test.jit_scale"(x);
    return r;
}
fn via_param(f: func, x: i64) -> any {
    let r = call_packed f(x);
    return r;
}
fn via_import(x: i64) -> any {
    let r = call_packed import "triple"(x);
    return r;
}
"#,
    );
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { safecall::jit::compile(&ir, &Default::default()) }.unwrap();
    Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? * 2)))
        .set_global("sc_test.jit_scale", true)
        .unwrap();
    let via_global = jit.function("via_global").unwrap();
    assert_eq!(
        via_global.call(&[int(21)]).unwrap().cast::<i64>().unwrap(),
        42
    );
    let neg = Function::from_closure(|args| Ok(Any::from(-args[0].cast::<i64>()?)));
    let via_param = jit.function("via_param").unwrap();
    let out = via_param.call(&[AnyView::from(&neg), int(3)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), -3);
    // JIT-compiled code is not a loaded library: nothing stored a module in its context.
    let err = jit
        .function("via_import")
        .unwrap()
        .call(&[int(1)])
        .unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    assert!(
        err.message().starts_with(
            "via_import: in `let r = call_packed import \"triple\"(x);`: cannot call `triple` \
             from an imported module: "
        ),
        "{}",
        err.message()
    );
}
