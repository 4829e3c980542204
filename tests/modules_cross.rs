//! Cross-runtime: libraries written against the real TVM-FFI headers, not by safecall, load
//! and run under safecall-runtime's module loader. A C library with hand-written safe-call
//! functions (and an import tree), and a C++ library using `TVM_FFI_DLL_EXPORT_TYPED_FUNC`.

use crate::modules::support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use safecall_runtime::library_bin::{self, BinModule, LibraryBin};
use safecall_runtime::module::LoadOptions;
use safecall_runtime::{Any, AnyView, Error, Function, Module, Tensor};

fn int(x: i64) -> AnyView<'static> {
    AnyView::from(x)
}

fn register_helpers_loader() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        Module::register_loader(
            "sc_cross_helpers",
            |payload| {
                assert_eq!(payload, b"cross");
                let triple = Function::from_closure(|args| {
                    let x: i64 = args[0].cast()?;
                    if x < 0 {
                        return Err(Error::new("KeyError", &format!("triple: no key {x}")));
                    }
                    Ok(Any::from(3 * x))
                });
                Ok(Module::from_functions(
                    "sc_cross_helpers",
                    [("triple".to_owned(), triple)],
                ))
            },
            false,
        )
        .unwrap();
    });
}

fn call(module: &Module, name: &str, args: &[AnyView<'_>]) -> Result<Any, Error> {
    module
        .get_function(name)
        .unwrap()
        .unwrap_or_else(|| panic!("{name} is exported"))
        .call(args)
}

/// Every undefined, non-weak symbol of `lib` that is not versioned (libc, libstdc++, libgcc
/// symbols are) must be a C API function of the runtime.
fn check_only_c_api(lib: &PathBuf) {
    let ours: BTreeSet<&str> = safecall_runtime::c_api_symbols()
        .iter()
        .map(|s| s.name)
        .collect();
    let out = support::run(Command::new("nm").arg("-uD").arg(lib));
    for line in out.lines() {
        let mut parts = line.split_whitespace();
        let (Some(kind), Some(name)) = (parts.next(), parts.next()) else {
            continue;
        };
        if kind != "U" || name.contains('@') {
            continue;
        }
        assert!(
            ours.contains(name),
            "{} needs {name} at load time, which safecall-runtime does not export",
            lib.display()
        );
    }
}

#[test]
fn c_library_written_against_the_real_headers() {
    let Some(peer) = support::peer("c_library_written_against_the_real_headers", false) else {
        return;
    };
    register_helpers_loader();
    let dir = support::out_dir("cross_c");
    let blob = library_bin::encode(&LibraryBin {
        modules: vec![
            BinModule::Lib,
            BinModule::Serialized {
                kind: "sc_cross_helpers".into(),
                payload: b"cross".to_vec(),
            },
        ],
        imports: vec![vec![1], vec![]],
    });
    let bytes: Vec<String> = blob.iter().map(u8::to_string).collect();
    std::fs::write(
        dir.join("c_blob.inc"),
        format!(
            "TVM_FFI_DLL_EXPORT const unsigned char __tvm_ffi__library_bin[{}] \
             __attribute__((aligned(8))) = {{{}}};\n",
            blob.len(),
            bytes.join(",")
        ),
    )
    .unwrap();
    let lib = support::build_c_so(
        &dir,
        "sc_cross_c",
        &[support::sources().join("c_safe_call.c")],
        &[
            "-std=gnu11",
            "-I",
            peer.include.to_str().unwrap(),
            "-I",
            dir.to_str().unwrap(),
        ],
    );
    check_only_c_api(&lib);
    let m = Module::load(&lib).unwrap();
    assert_eq!(m.imports()[0].kind(), "sc_cross_helpers");

    assert_eq!(
        call(&m, "c_add", &[int(2), int(3)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        5
    );
    let s = Any::from("x");
    let err = call(&m, "c_add", &[int(2), s.view()]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(
        err.message(),
        "argument #1: expected int, got type index 11"
    );

    let (a, b) = (Any::from("ab"), Any::from("cdefghijkl"));
    let joined = call(&m, "c_concat", &[a.view(), b.view()]).unwrap();
    assert_eq!(joined.cast::<String>().unwrap(), "abcdefghijkl");

    Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? - 1)))
        .set_global("sc_cross.dec", true)
        .unwrap();
    let name = Any::from("sc_cross.dec");
    let out = call(&m, "c_call_global", &[name.view(), int(10)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 9);
    let missing = Any::from("sc_cross.missing");
    let err = call(&m, "c_call_global", &[missing.view(), int(1)]).unwrap_err();
    assert_eq!(err.message(), "c_call_global: no such global function");

    assert_eq!(
        call(&m, "c_call_import", &[int(4)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        12
    );
    let err = call(&m, "c_call_import", &[int(-4)]).unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("KeyError", "triple: no key -4")
    );

    let meta = m.function_metadata("c_add", false).unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_str(&meta).unwrap();
    assert!(
        json["type_schema"]
            .as_str()
            .unwrap()
            .contains("ffi.Function")
    );
    assert_eq!(
        m.function_doc("c_add", false).unwrap().as_deref(),
        Some("a + b, hand-written in C.")
    );
}

#[test]
fn cxx_library_using_tvm_ffi_dll_export_typed_func() {
    let Some(peer) = support::peer("cxx_library_using_tvm_ffi_dll_export_typed_func", false) else {
        return;
    };
    let dir = support::out_dir("cross_cxx");
    let lib = dir.join("libsc_cross_cxx.so");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    support::run(
        Command::new(cxx)
            .args(["-std=c++17", "-O1", "-fPIC", "-shared"])
            .arg("-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1")
            .arg("-I")
            .arg(&peer.include)
            .arg(support::sources().join("cxx_typed.cc"))
            .arg("-o")
            .arg(&lib),
    );
    // What the header-only C++ code needs from the runtime at load time: C API functions only
    // (besides libstdc++ and libc), so libtvm_ffi is not needed.
    check_only_c_api(&lib);
    let needed = support::run(Command::new("readelf").arg("-d").arg(&lib));
    assert!(!needed.contains("tvm_ffi"), "{needed}");
    // The library's own code allocates objects (strings, errors) whose deleters live in it:
    // it stays loaded for the rest of the process, as Python's load_module does by default.
    let m = Module::load_with(&lib, LoadOptions { keep_alive: true }).unwrap();

    assert_eq!(
        call(&m, "add_two", &[int(40)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        42
    );
    let err = call(&m, "add_two", &[int(-1)]).unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("ValueError", "add_two: -1 is negative")
    );
    let s = Any::from("str");
    let err = call(&m, "add_two", &[s.view()]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("add_two"), "{}", err.message());

    let who = Any::from("safecall-runtime");
    let greeting = call(&m, "greet", &[who.view()]).unwrap();
    assert_eq!(
        greeting.cast::<String>().unwrap(),
        "hello, safecall-runtime"
    );

    let square = Function::from_closure(|args| {
        let x: i64 = args[0].cast()?;
        Ok(Any::from(x * x))
    });
    let out = call(&m, "apply_plus_one", &[AnyView::from(&square), int(6)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 37);
    let raising =
        Function::from_closure(|_| Err(Error::new("IndexError", "callback: out of range")));
    let err = call(&m, "apply_plus_one", &[AnyView::from(&raising), int(6)]).unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("IndexError", "callback: out of range"),
        "the callback's error crosses the C++ frames intact"
    );

    Function::from_closure(|args| Ok(Any::from(args[0].cast::<i64>()? * 100)))
        .set_global("sc_cross.hundred", true)
        .unwrap();
    let name = Any::from("sc_cross.hundred");
    let out = call(&m, "call_global", &[name.view(), int(3)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 300);

    let t = Tensor::cpu::<f32>(&[4]).unwrap();
    // SAFETY: nothing else uses the fresh tensor.
    unsafe { t.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[1.0, 2.0, 3.5, 4.0]);
    let sum = call(&m, "sum_tensor", &[AnyView::from(&t)]).unwrap();
    assert_eq!(sum.cast::<f64>().unwrap(), 10.5);

    let meta = m.function_metadata("add_two", false).unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(json["type_schema"].as_str().unwrap()).unwrap();
    assert_eq!(schema["type"], "ffi.Function", "{schema}");
    assert_eq!(
        m.function_doc("add_two", false).unwrap().as_deref(),
        Some("x + 2; a ValueError for a negative x.")
    );
}
