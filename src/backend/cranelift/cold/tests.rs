//! Functions off the success path compiled by the baseline compiler into an object: they run
//! from a linked library, and unwinders walk through their frames (the `.eh_frame` entries of
//! [`EhFrameBuilder::add_frame_pointer_function`](super::super::unwind::EhFrameBuilder)).

use std::cell::RefCell;

use super::*;
use crate::backend::cranelift::CraneliftOptions;
use crate::lir::builder::FuncBuilder;
use crate::lir::{Callee, Linkage, Module, Signature, Ty};

thread_local! {
    /// The backtrace [`probe`] took last.
    static BACKTRACE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Called by the cold function through a pointer: records a backtrace, which reaches the frames
/// below the library only through the `.eh_frame` entries of its two functions.
extern "C" fn probe(x: i64) -> i64 {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    BACKTRACE.with(|b| *b.borrow_mut() = trace);
    x + 1
}

/// `f(x, p)` (exported, on the success path) returns `g(x, p)`; `g` (cold) returns `p(x)`.
fn module() -> Module {
    let probe_sig = Signature::new(vec![Ty::I64], Some(Ty::I64));
    let sig = Signature::new(vec![Ty::I64, Ty::Ptr], Some(Ty::I64));
    let mut f = FuncBuilder::new("f", Linkage::Export, sig.clone());
    let r = f.call(
        Callee::Func(FuncId(1)),
        Some(Ty::I64),
        vec![f.param(0), f.param(1)],
    );
    f.ret(r);
    let mut g = FuncBuilder::new("g", Linkage::Local, sig);
    g.set_cold();
    let r = g.call(
        Callee::Indirect(g.param(1), probe_sig),
        Some(Ty::I64),
        vec![g.param(0)],
    );
    g.ret(r);
    Module {
        name: "cold_unwind".to_owned(),
        functions: vec![f.finish(), g.finish()],
        ..Default::default()
    }
}

/// The frame below the library: the unwinder must reach it.
#[inline(never)]
fn call_through_library(f: extern "C" fn(i64, extern "C" fn(i64) -> i64) -> i64) -> i64 {
    std::hint::black_box(f(41, probe))
}

#[test]
fn cold_functions_compiled_by_the_baseline_run_and_unwind_from_a_linked_library() {
    let module = module();
    crate::lir::verify::verify(&module).expect("valid LIR");
    let selected = baseline_selection(&module, ColdFunctions::Baseline, None);
    if !cfg!(target_arch = "x86_64") {
        assert_eq!(
            selected,
            [false, false],
            "the baseline compiler is x86-64 only"
        );
        return;
    }
    assert_eq!(selected, [false, true], "only the cold function");
    assert_eq!(
        baseline_selection(&module, ColdFunctions::Cranelift, None),
        [false, false]
    );
    let dir = std::env::temp_dir().join(format!("safecall-cold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for cold in [ColdFunctions::Baseline, ColdFunctions::Cranelift] {
        let options = CraneliftOptions {
            cold,
            ..CraneliftOptions::default()
        };
        let object = crate::backend::cranelift::object::object(&module, &options).unwrap();
        let path = dir.join(format!("{}.so", cold.name()));
        crate::aot::link_object_bytes(&object, &path, &Default::default()).unwrap();
        // SAFETY: the library has no initializers, and `f` has the signature its LIR declares.
        let result = unsafe {
            let library = libloading::Library::new(&path).unwrap();
            let f = *library
                .get::<extern "C" fn(i64, extern "C" fn(i64) -> i64) -> i64>(b"f")
                .unwrap();
            let result = call_through_library(f);
            drop(library);
            result
        };
        assert_eq!(result, 42, "{}", cold.name());
        let trace = BACKTRACE.with(|b| b.borrow().clone());
        assert!(
            trace.contains("call_through_library"),
            "{}: the backtrace stops in the generated code:\n{trace}",
            cold.name()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_launchers_error_paths_go_to_the_baseline_and_its_exports_to_cranelift() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir/launcher.scir"),
    )
    .unwrap();
    let module = crate::ir::parse(&text).unwrap();
    let verified = crate::ir::verify(&module).unwrap();
    let lowered = crate::lower::lower(&verified, &Default::default()).unwrap();
    let selected = baseline_selection(&lowered, ColdFunctions::Baseline, None);
    let by_baseline: Vec<&str> = lowered
        .functions
        .iter()
        .zip(&selected)
        .filter(|(_, s)| **s)
        .map(|(f, _)| f.name.as_str())
        .collect();
    if !cfg!(target_arch = "x86_64") {
        assert!(by_baseline.is_empty());
        return;
    }
    assert!(
        by_baseline
            .iter()
            .any(|n| n.starts_with("__safecall_explain_matmul")),
        "{by_baseline:?}"
    );
    assert!(
        by_baseline
            .iter()
            .any(|n| n.starts_with("__safecall_raise")),
        "{by_baseline:?}"
    );
    assert!(
        !by_baseline.iter().any(|n| n.starts_with("__tvm_ffi_")),
        "exports stay with Cranelift: {by_baseline:?}"
    );
}
