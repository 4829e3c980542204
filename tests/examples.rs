//! Every example runs and prints what it promises: the Rust examples as the binaries cargo
//! builds for them (`cargo run --example NAME` runs the same), the Python one with the real
//! `tvm_ffi` on a library the `safecall` CLI builds.

use crate::common::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `target/<profile>` of this build.
fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_safecall"))
        .parent()
        .expect("target/<profile>/safecall")
        .to_path_buf()
}

/// Builds the example `name` with this build's features (cheap when up to date: `cargo test`
/// has built it already) and runs it; returns its stdout.
fn run_example(name: &str) -> String {
    let dir = profile_dir();
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--example", name])
        .env("CARGO_TARGET_DIR", dir.parent().expect("target dir"));
    if cfg!(feature = "llvm") {
        build.args(["--features", "llvm"]);
    }
    if dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    run(&mut build);
    run(&mut Command::new(dir.join("examples").join(name)))
}

#[test]
fn add_one_compiles_loads_and_calls_the_library() {
    let out = run_example("add_one");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("compiled ") && lines[0].ends_with("/add_one.so"),
        "{out}"
    );
    assert_eq!(
        &lines[1..],
        [
            "x = [0.0, 1.0, 2.0, 3.0, 4.0]",
            "y = [1.0, 2.0, 3.0, 4.0, 5.0]",
            "add_one(x, short) -> ValueError: add_one: argument 'y' (#1): shape[0] is 3, \
             expected 5 (= n, bound by x.shape[0])",
            "  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])",
        ]
    );
}

#[test]
fn launcher_computes_the_grid_gets_the_stream_and_calls_the_launch_function() {
    let out = run_example("launcher");
    let signature = "matmul(a: Tensor[(m, k), float16, cuda, align=16], b: Tensor[(k, n), \
                     float16, cuda, align=16], bias: Tensor[(n,), float32, cuda], c: \
                     Tensor[(m, n), float32, cuda, align=16, index=i32])";
    let context = format!("  when calling {signature}");
    let expected = [
        "launched: m = 256, n = 384, k = 64, grid = (3, 2), stream = 0x5eed".to_owned(),
        "the launcher got the tensors' data pointers: true".to_owned(),
        "k = 60 (not a multiple of 8): ValueError: matmul: k = 60 (bound by a.shape[1]) is not \
         a multiple of 8"
            .to_owned(),
        context.clone(),
        "c on the CPU: ValueError: matmul: argument 'c' (#3): device is cpu:0, expected a cuda \
         tensor"
            .to_owned(),
        context.clone(),
        "c on another GPU: ValueError: matmul: argument 'c' (#3): device id is 1, expected 0 \
         (the device id of a)"
            .to_owned(),
        context,
        "m = 2048: RuntimeError: matmul_kernel_launch: grid (3, 16) exceeds 8 blocks in y"
            .to_owned(),
        "launches recorded after the rejected calls: 0".to_owned(),
    ];
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines, expected, "{out}");
}

#[test]
fn calls_reaches_a_global_function_and_an_imported_module() {
    let out = run_example("calls");
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert!(
        lines[0].starts_with(
            "loading before the loader is registered -> RuntimeError: loading the imported \
             module of kind `example_kernels` of "
        ) && lines[0].ends_with(
            "Library binary was created using {example_kernels} but a loader of that name is \
             not registered. Make sure to have runtime that registers \
             ffi.Module.load_from_bytes.example_kernels"
        ),
        "{out}"
    );
    assert_eq!(
        &lines[1..],
        [
            "  loader: example_kernels module with factor 3",
            "calls.so imports a module of kind example_kernels",
            "  example.log: scaling 4 elements",
            "scale(x) returned 4; x = [3.0, 6.0, 9.0, 12.0]",
            "scale(float64 tensor) -> TypeError: scale: argument 'x' (#0): dtype is float64, \
             expected float32",
            "  when calling scale(x: Tensor[(n,), float32, cpu])",
        ]
    );
}

#[test]
fn jit_compiles_and_calls_in_process() {
    let out = run_example("jit");
    for line in [
        "  kernel launched: n = 3, grid = 1",
        "scale(x) returned 3; x = [2.0, 4.0, 6.0]",
        "scale(int32 tensor) -> TypeError: scale: argument 'x' (#0): dtype is int32, expected \
         float32",
        "  when calling scale(x: Tensor[(n,), float32, cpu])",
        "through the global registry, after dropping the module: x = [4.0, 8.0, 12.0]",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }
    assert!(out.contains("fn scale(x: tensor[(n,), float32, device=cpu]) -> i64 {"));
}

#[test]
fn python_loads_the_library_the_cli_builds() {
    let Some(python) = std::env::var_os("SAFECALL_PYTHON") else {
        skip::skip("SAFECALL_PYTHON is not set (run `cargo xtask test`, which sets it)");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("examples_python");
    std::fs::create_dir_all(&dir).unwrap();
    let library = dir.join("add_one.so");
    run(Command::new(env!("CARGO_BIN_EXE_safecall"))
        .arg("build")
        .arg(root.join("examples/ir/add_one.scir"))
        .arg("-o")
        .arg(&library));
    let out = run(Command::new(python)
        .arg(root.join("examples/python/add_one.py"))
        .arg(&library));
    let context = "  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, \
                   cpu])";
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "y = [1.0, 2.0, 3.0, 4.0, 5.0]".to_owned(),
            "signature: Callable[[Tensor, Tensor], None]".to_owned(),
            "arguments: ['x', 'y']".to_owned(),
            "doc: y = x + 1, elementwise, over float32 tensors on the CPU.".to_owned(),
            "ValueError: add_one: argument 'y' (#1): shape[0] is 3, expected 5 (= n, bound by \
             x.shape[0])"
                .to_owned(),
            context.to_owned(),
            "TypeError: add_one: argument 'x' (#0): dtype is float64, expected float32".to_owned(),
            context.to_owned(),
            "TypeError: add_one: expected 2 arguments, got 1".to_owned(),
            context.to_owned(),
        ]
    );
}
