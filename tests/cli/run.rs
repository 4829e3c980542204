//! `safecall run`: the argument syntax for every kind of value, the printed results, errors
//! exactly as raised, and the failures before the call.

use super::support::{Dir, cc_shared};
use crate::snapshot;

/// Functions that return what they are given, one per kind of value.
const ECHO: &str = r#"module echo;

fn int(x: i64) -> i64 { return x; }
fn unsigned(x: u64) -> u64 { return x; }
fn small(x: i8) -> i8 { return x; }
fn float(x: f64) -> f64 { return x; }
fn flag(x: bool) -> bool { return x; }
fn text(x: str) -> str { return x; }
fn dev(x: device) -> device { return x; }
fn dt(x: dtype) -> dtype { return x; }
fn anything(x: any) -> any { return x; }
fn maybe(x: optional[i64]) -> i64 {
    if is_none(x) { return -1; }
    return x;
}
fn address(p: ptr) -> ptr { return p; }
fn pair(t: tuple(lo: i64, hi: tensor[(n,), float32])) -> i64 { return lo + hi.shape[0]; }
fn apply(f: func, x: any) -> any {
    let r = call_packed f(x);
    return r;
}
fn identity(t: tensor[(n, m), any]) -> tensor { return t; }
fn double(x: tensor[(n,), float32, device=cpu]) {
    for i in 0..n {
        let p = offset(x.data, i * 4);
        store<f32>(p, load<f32>(p) * 2.0f32);
    }
}
fn where_is(x: tensor[(n,), float16, device=cuda]) -> device { return x.device; }
fn positive(n: i64) -> i64 {
    assert n > 0 else ValueError("positive: n = ", n, " is not positive");
    return n;
}
"#;

fn echo_dir(test: &str) -> Dir {
    let dir = Dir::new(test);
    dir.write("echo.scir", ECHO);
    dir.safecall(&["check", "echo.scir"]).expect(0);
    dir
}

/// Runs `echo.scir FUNC ARGS` and returns stdout.
fn echo(dir: &Dir, func: &str, args: &[&str]) -> String {
    let mut all = vec!["run", "echo.scir", func];
    all.extend_from_slice(args);
    let out = dir.safecall(&all).expect(0);
    assert_eq!(out.stderr, "", "{func} {args:?}");
    out.stdout
}

#[test]
fn scalars_round_trip_through_the_argument_syntax() {
    let dir = echo_dir("run_scalars");
    let cases: &[(&str, &str, &str)] = &[
        ("int", "42", "42"),
        ("int", "-7", "-7"),
        ("int", "0x10", "16"),
        ("int", "-9223372036854775808", "-9223372036854775808"),
        ("small", "-128", "-128"),
        // A u64's upper half goes in and comes back as a BigInt.
        ("unsigned", "18446744073709551615", "18446744073709551615"),
        ("unsigned", "0x8000000000000000", "9223372036854775808"),
        ("unsigned", "5", "5"),
        ("float", "1.5", "1.5"),
        ("float", "-2e-3", "-0.002"),
        ("float", "-inf", "-inf"),
        ("float", "nan", "nan"),
        ("float", "3", "3.0"),
        ("flag", "true", "true"),
        ("flag", "0", "false"),
        ("text", "str:hello world", "\"hello world\""),
        ("text", "str:", "\"\""),
        ("text", r#""tab\tquote\"""#, r#""tab\tquote\"""#),
        ("anything", r"bytes:a\x00\xff\\", r"bytes:a\x00\xff\\"),
        ("dev", "cuda:1", "cuda:1"),
        ("dt", "dtype:bfloat16", "dtype:bfloat16"),
        ("anything", "shape:[2,3]", "shape:[2,3]"),
        ("anything", "none", "none"),
        ("anything", "(1, str:x, (none,))", "(1, \"x\", (none,))"),
        ("maybe", "none", "-1"),
        ("maybe", "5", "5"),
        ("address", "ptr:0x1000", "ptr:0x1000"),
        ("address", "none", "ptr:0x0"),
    ];
    for (func, arg, printed) in cases {
        assert_eq!(
            echo(&dir, func, &[arg]),
            format!("{printed}\n"),
            "{func} {arg}"
        );
    }
}

#[test]
fn tensors_are_made_from_dtype_shape_and_pattern() {
    let dir = echo_dir("run_tensors");
    let cases: &[(&str, &str)] = &[
        (
            "float32[2,3]:arange",
            "float32[2,3]@cpu:0 [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]",
        ),
        ("int8[1,4]:fill=-3", "int8[1,4]@cpu:0 [[-3, -3, -3, -3]]"),
        (
            "int8[1,1200]:arange",
            "int8[1,1200]@cpu:0 [[0, 1, 2, ..., -83, -82, -81]]",
        ),
        ("uint8[2,2]:ones", "uint8[2,2]@cpu:0 [[1, 1], [1, 1]]"),
        (
            "float64[1,3]:[1, 2.5, -inf]",
            "float64[1,3]@cpu:0 [[1.0, 2.5, -inf]]",
        ),
        (
            "float16[1,2]:[0.5, 65504]",
            "float16[1,2]@cpu:0 [[0.5, 65504.0]]",
        ),
        ("bfloat16[1,1]:fill=1.5", "bfloat16[1,1]@cpu:0 [[1.5]]"),
        (
            "bool[1,3]:[1, 0, true]",
            "bool[1,3]@cpu:0 [[true, false, true]]",
        ),
        ("float32[0,4]", "float32[0,4]@cpu:0 []"),
        ("int32[2,2]", "int32[2,2]@cpu:0 [[0, 0], [0, 0]]"),
        (
            "float8_e4m3fn[1,2]:zeros",
            "float8_e4m3fn[1,2]@cpu:0 <elements of this dtype are not shown>",
        ),
    ];
    for (arg, printed) in cases {
        assert_eq!(
            echo(&dir, "identity", &[arg]),
            format!("{printed}\n"),
            "{arg}"
        );
    }
}

#[test]
fn print_tensors_shows_the_arguments_after_the_call() {
    let dir = Dir::new("run_add_one");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "run",
            "--print-tensors",
            &file,
            "add_one",
            "float32[4]:arange",
            "float32[4]",
        ])
        .expect(0);
    assert_eq!(
        out.stdout,
        "none\nx = float32[4]@cpu:0 [0.0, 1.0, 2.0, 3.0]\ny = float32[4]@cpu:0 [1.0, 2.0, 3.0, 4.0]\n"
    );
    let dir = echo_dir("run_double");
    let out = dir
        .safecall(&[
            "run",
            "--print-tensors",
            "echo.scir",
            "double",
            "float32[3]:[1,2,3]",
        ])
        .expect(0);
    assert_eq!(out.stdout, "none\nx = float32[3]@cpu:0 [2.0, 4.0, 6.0]\n");
    let out = dir
        .safecall(&[
            "run",
            "--print-tensors",
            "echo.scir",
            "pair",
            "(5, float32[3]:ones)",
        ])
        .expect(0);
    assert_eq!(
        out.stdout, "8\nhi = float32[3]@cpu:0 [1.0, 1.0, 1.0]\n",
        "tuple elements by name"
    );
}

#[test]
fn a_device_label_makes_a_tensor_of_that_device_over_host_memory() {
    let dir = echo_dir("run_device");
    assert_eq!(echo(&dir, "where_is", &["float16[8]@cuda:3"]), "cuda:3\n");
    let out = dir
        .safecall(&["run", "echo.scir", "where_is", "float16[8]"])
        .expect(3);
    assert_eq!(
        out.stderr,
        "ValueError: where_is: argument 'x' (#0): device is cpu:0, expected a cuda tensor\n  \
         when calling where_is(x: Tensor[(n,), float16, cuda])\n"
    );
}

#[test]
fn a_function_argument_is_a_registered_global() {
    let dir = echo_dir("run_global");
    assert_eq!(
        echo(&dir, "apply", &["global:ffi.SystemLib", "str:"]),
        "<ffi.Module>\n"
    );
    let out = dir
        .safecall(&["run", "echo.scir", "apply", "global:no.such.function", "1"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: argument 1 (`global:no.such.function`): no global function `no.such.function` \
         is registered\n"
    );
}

#[test]
fn a_raised_error_is_printed_exactly_as_raised() {
    let dir = echo_dir("run_raised");
    let out = dir
        .safecall(&["run", "echo.scir", "positive", "-3"])
        .expect(3);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, "ValueError: positive: n = -3 is not positive\n");
    let out = dir
        .safecall(&["run", "echo.scir", "small", "300"])
        .expect(3);
    assert_eq!(
        out.stderr,
        "ValueError: small: argument 'x' (#0): 300 is out of range for i8 [-128, 127]\n  \
         when calling small(x: i8)\n"
    );
    let out = dir.safecall(&["run", "echo.scir", "int"]).expect(3);
    assert_eq!(
        out.stderr,
        "TypeError: int: expected 1 argument, got 0\n  when calling int(x: i64)\n"
    );
    let out = dir.safecall(&["run", "echo.scir", "text", "5"]).expect(3);
    assert_eq!(
        out.stderr,
        "TypeError: text: argument 'x' (#0): expected str, got int\n  when calling text(x: str)\n"
    );
}

#[test]
fn wrong_argument_syntax_is_a_usage_error_naming_the_argument() {
    let dir = echo_dir("run_syntax");
    let cases = [
        ("bad_pattern", "float32[4]:arnge"),
        ("bad_dtype", "tensor32[4]"),
        ("bare_word", "hello"),
        ("too_big", "18446744073709551616"),
        ("unclosed_tuple", "(1, 2"),
        ("value_count", "float32[3]:[1, 2]"),
        ("value_range", "int8[2]:fill=300"),
    ];
    let mut all = String::new();
    for (name, arg) in cases {
        let out = dir
            .safecall(&["run", "echo.scir", "anything", arg])
            .expect(2);
        assert!(
            out.stderr.starts_with("error: argument 1 (`"),
            "{name}: {}",
            out.stderr
        );
        all.push_str(&format!(
            "$ safecall run echo.scir anything '{arg}'\n{}\n",
            out.stderr
        ));
    }
    snapshot!("run_argument_syntax", all);
}

#[test]
fn options_after_the_arguments_are_a_usage_error() {
    let dir = echo_dir("run_late_option");
    let out = dir
        .safecall(&["run", "echo.scir", "int", "1", "--print-tensors"])
        .expect(2);
    snapshot!("run_option_after_arguments", out.stderr);
}

#[test]
fn an_unknown_function_is_a_usage_error_listing_the_functions() {
    let dir = Dir::new("run_unknown");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir.safecall(&["run", &file, "add_two"]).expect(2);
    assert_eq!(
        out.stderr,
        "error: `add_one.scir` has no function `add_two`\nhelp: its functions: add_one\n"
    );
}

#[test]
fn invalid_ir_is_not_run() {
    let dir = Dir::new("run_invalid");
    dir.write("bad.scir", "module m;\nfn f() { let x = y; }\n");
    let out = dir.safecall(&["run", "bad.scir", "f"]).expect(1);
    assert!(
        out.stderr.contains(" --> bad.scir:2:18\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn externs_resolve_from_a_preloaded_library_or_fail_clearly() {
    let dir = Dir::new("run_extern");
    let file = dir.copy("examples/ir/launcher.scir");
    let args = [
        "matmul",
        "float16[256,64]@cuda:0",
        "float16[64,384]@cuda:0",
        "float32[384]@cuda:0",
        "float32[256,384]@cuda:0",
    ];
    let mut without: Vec<&str> = vec!["run", &file];
    without.extend_from_slice(&args);
    let out = dir.safecall(&without).expect(4);
    snapshot!("run_unresolved_extern", out.stderr);

    dir.write(
        "standin.c",
        r#"#include <stdint.h>
#include <stdio.h>
int matmul_kernel_launch(void* a, void* b, void* bias, void* c, int64_t m, int64_t n,
                         int64_t k, int32_t grid_x, int32_t grid_y, void* stream) {
  printf("launch m=%lld n=%lld k=%lld grid=(%d, %d) stream=%p\n", (long long)m, (long long)n,
         (long long)k, grid_x, grid_y, stream);
  fflush(stdout);
  return 0;
}
"#,
    );
    cc_shared(&dir, "libstandin.so", &[dir.path("standin.c")], &[]);
    let mut with: Vec<&str> = vec!["run", "--preload", "libstandin.so", &file];
    with.extend_from_slice(&args);
    let out = dir.safecall(&with).expect(0);
    assert_eq!(
        out.stdout,
        "launch m=256 n=384 k=64 grid=(3, 2) stream=(nil)\nnone\n"
    );
    let out = dir
        .safecall(&["run", "--preload", "libmissing.so", &file, "matmul"])
        .expect(4);
    assert!(
        out.stderr
            .starts_with("error: cannot load `./libmissing.so`\n  "),
        "{}",
        out.stderr
    );
}

#[cfg(feature = "llvm")]
#[test]
fn the_llvm_backend_runs_the_same_calls() {
    let dir = echo_dir("run_llvm");
    let out = dir
        .safecall(&[
            "run",
            "--backend",
            "llvm",
            "--opt",
            "1",
            "echo.scir",
            "positive",
            "0",
        ])
        .expect(3);
    assert_eq!(out.stderr, "ValueError: positive: n = 0 is not positive\n");
    let out = dir
        .safecall(&[
            "run",
            "--backend",
            "llvm",
            "--print-tensors",
            "echo.scir",
            "double",
            "float32[2]:[1.5,-1]",
        ])
        .expect(0);
    assert_eq!(out.stdout, "none\nx = float32[2]@cpu:0 [3.0, -2.0]\n");
}
