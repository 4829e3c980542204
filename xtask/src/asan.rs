//! `cargo xtask asan`: the safecall-runtime tests and the JIT compile/call/drop smoke run
//! (`tests/asan_smoke`) under AddressSanitizer with leak detection.
//!
//! Built with `RUSTC_BOOTSTRAP=1` and `-Zsanitizer=address` on the stable toolchain, without
//! `-Zbuild-std` (rust-src is not installable everywhere): the standard library is not
//! instrumented, but every allocation is intercepted, so leaks, double frees and accesses to
//! freed or out-of-bounds heap memory by our code are found. An explicit `--target` keeps
//! build scripts and proc macros uninstrumented; the build goes to `target/asan` so the normal
//! build is not invalidated. Any sanitizer error, or a leak not in `.ci/lsan.supp` (each entry
//! with its reason), fails the task. Allocation stacks are unwound with DWARF
//! (`fast_unwind_on_malloc=0`): the uninstrumented standard library has no frame pointers, so
//! the fast unwinder would stop short of the frames the suppressions name.

use std::env;
use std::process::Command;
use std::time::Instant;

use super::{capture, run, workspace_root};

/// Compile/drop cycles of the smoke run (each makes a dozen calls; then 4 threads make as
/// many rounds of calls on one module).
const SMOKE_CYCLES: &str = "1000";

/// The runtime's integration tests that run under the sanitizer: all but `conformance` and
/// `layout`, which compile C programs against the real headers and link them with the
/// runtime's shared library (an ASan build of it cannot be linked into an uninstrumented C
/// program); they run in `cargo xtask test`.
const RUNTIME_TESTS: &[&str] = &[
    "dtypes",
    "env",
    "errors",
    "functions",
    "objects",
    "strings",
    "tensors",
];

/// The host target triple (`rustc -vV`).
fn host_triple() -> Result<String, String> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let info = capture(Command::new(rustc).arg("-vV"))?;
    info.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| format!("no host triple in `rustc -vV`:\n{info}"))
}

/// A cargo command building for `target` with AddressSanitizer into `target/asan`.
fn cargo_asan(target: &str, args: &[&str]) -> Command {
    let root = workspace_root();
    let suppressions = root.join(".ci").join("lsan.supp");
    let mut rustflags = env::var("RUSTFLAGS").unwrap_or_default();
    rustflags.push_str(" -Zsanitizer=address");
    let mut cargo = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cargo
        .current_dir(&root)
        .args(args)
        .args(["--target", target, "--target-dir"])
        .arg(root.join("target").join("asan"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", rustflags.trim())
        .env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0",
        )
        .env(
            "LSAN_OPTIONS",
            format!(
                "suppressions={}:print_suppressions=1",
                suppressions.display()
            ),
        );
    cargo
}

/// Runs the sanitizer job.
pub fn asan() -> Result<(), String> {
    let target = host_triple()?;
    let start = Instant::now();
    let mut tests = vec!["test", "-p", "safecall-runtime", "--lib", "--no-fail-fast"];
    for name in RUNTIME_TESTS {
        tests.extend(["--test", name]);
    }
    run(&mut cargo_asan(&target, &tests))?;
    let runtime = start.elapsed();
    run(cargo_asan(&target, &["run", "-p", "safecall-asan-smoke"]).args(["--", SMOKE_CYCLES]))?;
    eprintln!(
        "xtask asan: runtime tests {:.0} s, JIT smoke run {:.0} s (builds included)",
        runtime.as_secs_f64(),
        (start.elapsed() - runtime).as_secs_f64()
    );
    Ok(())
}
