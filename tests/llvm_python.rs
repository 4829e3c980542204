//! Shared libraries built by either backend load into the real TVM-FFI runtime (the PyPI
//! `apache-tvm-ffi` in the `.venv` that `cargo xtask test` creates and names in
//! `SAFECALL_PYTHON`) and behave identically there: results, error types and messages, and
//! function metadata.

use crate::llvm_support;
use std::path::PathBuf;
use std::process::Command;

const SCRIPT: &str = r#"
import sys
import numpy as np
import tvm_ffi

m = tvm_ffi.load_module(sys.argv[1])
f = m["add_one"]
x = np.array([1.0, -2.5, 3.0e38, 0.25], dtype="float32")
y = np.zeros(4, dtype="float32")
f(tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y))
print("result", y.tolist())
for args in [
    (tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(np.zeros(3, dtype="float32"))),
    (tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(np.zeros(4, dtype="int32"))),
    (tvm_ffi.from_dlpack(x), 1),
    (tvm_ffi.from_dlpack(x),),
]:
    try:
        f(*args)
        print("no error")
    except Exception as e:
        print(type(e).__name__, e)
print("metadata", m.get_function_metadata("add_one"))
"#;

/// The venv's python, or `None` (with a printed reason) outside `cargo xtask test`.
fn python() -> Option<PathBuf> {
    match std::env::var_os("SAFECALL_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            crate::common::skip::skip("SAFECALL_PYTHON is not set (`cargo xtask test` sets it)");
            None
        }
    }
}

#[test]
fn libraries_of_both_backends_behave_identically_in_tvm_ffi() {
    let Some(python) = python() else {
        return;
    };
    let module = llvm_support::example("add_one");
    // Under target/tmp (never /tmp), emptied first and removed when the checks passed.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("llvm-python");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut outputs = Vec::new();
    for backend in llvm_support::backends() {
        let lib = dir.join(format!("add_one_{backend:?}.so"));
        safecall::build_shared_library(
            &module,
            &lib,
            &llvm_support::options(backend),
            &Default::default(),
        )
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        let out = Command::new(&python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(&lib)
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{backend:?}: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((backend, stdout));
    }
    let (_, first) = &outputs[0];
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(
        lines[0], "result [2.0, -1.5, 3.0000000054977558e+38, 1.25]",
        "{first}"
    );
    let context = "  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, \
                   cpu])";
    assert_eq!(
        lines[1..9],
        [
            "ValueError add_one: argument 'y' (#1): shape[0] is 3, expected 4 (= n, bound by \
             x.shape[0])",
            context,
            "TypeError add_one: argument 'y' (#1): dtype is int32, expected float32",
            context,
            "TypeError add_one: argument 'y' (#1): expected Tensor, got int",
            context,
            "TypeError add_one: expected 2 arguments, got 1",
            context,
        ],
        "{first}"
    );
    assert!(lines[9].starts_with("metadata {"), "{first}");
    for (backend, out) in &outputs[1..] {
        assert_eq!(out, first, "{backend:?} differs from Cranelift in tvm_ffi");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
