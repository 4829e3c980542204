//! Project tasks.
//!
//! `cargo xtask test` is the one command that runs the whole test suite on a fresh machine
//! (under `CI=true` the Python suite runs against the release wheel, see `wheel.rs`):
//! it creates `.venv` with the pinned `apache-tvm-ffi`, `numpy` and `pytest` (the real TVM-FFI
//! peer the interop tests load our outputs into) and the pinned `triton` (whose own launcher
//! the differential launch test compares with), builds the Python package (`python/`) into
//! `.venv` (the Rust tests that run pytest on `python/tests` import it; in CI the release
//! wheel), points the tests at it, and runs `cargo test --workspace`, with the `llvm` feature
//! when LLVM 19 is installed (always in CI); then it runs the package's pytest suite,
//! `python/tests` ([`python_package`]; `cargo xtask python` does only that).
//!
//! `cargo xtask asan` runs the runtime's tests and a JIT smoke run under AddressSanitizer with
//! leak detection (see `asan.rs`).
//!
//! `cargo xtask wheel` builds the binary wheel of the Python package (see `wheel.rs`).
//!
//! `cargo xtask gpu-kit` writes `target/gpu-kit/`, what a GPU machine needs to run the
//! self-test (see `gpu_kit.rs`).
//!
//! `cargo xtask modgraph DIR` prints the graph of references between the modules of a
//! directory (`src/lower`) and fails if it has a cycle (see `modgraph.rs`).
//!
//! `cargo xtask lint` checks that the directories of `modgraph::ACYCLIC` (files) and
//! `modgraph::ACYCLIC_MODULES` (modules) have no import cycle,
//! that no source file is over 700 lines (`file_size.rs`), that no `match` over the project's
//! own enums in `src/lower` and `src/ir/verify` has a catch-all arm (`exhaustive.rs`), that
//! the Python sources pass ruff (its rules in `ruff.toml`; ruff from `.venv`), then
//! formatting, clippy (warnings are errors, every target, the criterion benchmarks' feature
//! on) and rustdoc (warnings are errors), with the tests' features so nothing is built twice.

mod asan;
mod exhaustive;
mod file_size;
mod gpu_kit;
mod modgraph;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod python_package;
mod wheel;

/// The pinned peer: our outputs are judged by whether they work with this release.
const TVM_FFI_REQUIREMENT: &str = "apache-tvm-ffi==0.1.15.post2";
/// The Triton release whose compiler and launcher `python/tests/test_triton_differential.py`
/// compares safecall's launches with. A large install (a 286 MB wheel, about 1 GB unpacked,
/// ~15 s with a warm network), but one the test needs: with `CI=true` it must run.
const TRITON_REQUIREMENT: &str = "triton==3.9.0";
const PYTHON_REQUIREMENTS: &[&str] = &[
    TVM_FFI_REQUIREMENT,
    "numpy",
    "pytest",
    TRITON_REQUIREMENT,
    RUFF_REQUIREMENT,
];
/// The linter of the Python sources (`cargo xtask lint`; its rules in ruff.toml), pinned since
/// its rules change between releases.
const RUFF_REQUIREMENT: &str = "ruff==0.17.6";
/// The other TVM-FFI consumers `python/tests/test_consumers.py` runs safecall's outputs in
/// (TVM's runtime and RPC server, which needs cloudpickle and psutil; orcjit), installed under
/// `CI=true`; elsewhere their tests skip with the reason unless they are installed.
const CONSUMER_REQUIREMENTS: &[&str] = &[
    "apache-tvm==0.27.0",
    "apache-tvm-ffi-orcjit==0.1.3",
    "cloudpickle==3.1.3",
    "psutil==7.2.2",
];
/// The LLVM major version the `llvm` feature is built against.
const LLVM_MAJOR: u32 = 19;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("lint") => lint(),
        Some("venv") => venv().map(|_| ()),
        Some("python") => python(&args[1..]),
        Some("asan") => asan::asan(),
        Some("exhaustive") => exhaustive::check(),
        Some("modgraph") => modgraph::modgraph(&args[1..]),
        Some("wheel") => wheel::wheel(&args[1..]).map(|_| ()),
        Some("gpu-kit") => gpu_kit::gpu_kit(),
        Some("triton-versions") => triton_versions(),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 test [ARGS...]  set up .venv and run the whole suite (ARGS go to cargo test)\n  \
                 lint            no module cycles in src/{{aot,backend,ir,jit,lower}}, no file over 700 lines, \
                 no catch-all arm over our enums in src/{{lower,ir/verify}}, ruff (Python), \
                 cargo fmt --check, clippy, rustdoc\n  \
                 exhaustive      only lint's catch-all rule\n  \
                 venv            only create or update .venv\n  \
                 python [ARGS]   build the Python package into .venv and run its pytest suite\n  \
                 python --installed [ARGS]  the same against the release wheel in a fresh venv, \
                 with no compiler on PATH\n  \
                 asan            runtime tests and a JIT smoke run under AddressSanitizer\n  \
                 modgraph DIR    module graph of DIR (e.g. src/lower); fails on a cycle\n  \
                 wheel [ARGS]    the release wheel of the Python package in target/wheel \
                 (ARGS go to maturin build)\n  \
                 gpu-kit         target/gpu-kit: the wheel, apache-tvm-ffi for CPython 3.12 and \
                 run.sh, which runs python -m safecall.selftest on a GPU machine\n  \
                 triton-versions the installed Triton driver's differential and the dispatch's \
                 tests on Triton 3.6, 3.7, 3.8 and 3.9 (a venv each)"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

fn in_ci() -> bool {
    env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Runs `cmd`, failing with its description when it cannot start or exits non-zero.
fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// What the test venvs install: the pinned peer, numpy, pytest and triton, and under `CI=true`
/// the other TVM-FFI consumers.
fn python_requirements() -> Vec<&'static str> {
    let mut requirements = PYTHON_REQUIREMENTS.to_vec();
    if in_ci() {
        requirements.extend_from_slice(CONSUMER_REQUIREMENTS);
    }
    requirements
}

/// The second Triton the installed driver is tested with (python/tests/test_triton_driver.py
/// runs its differential in this venv too): the release PyTorch 2.11 ships.
const TRITON_36_REQUIREMENTS: &[&str] = &["triton==3.6.0", TVM_FFI_REQUIREMENT, "pytest"];

/// Creates `.venv` (once) and installs the pinned requirements; returns its python. Also
/// creates `.venv-triton36` (Triton 3.6 for the driver's differential).
fn venv() -> Result<PathBuf, String> {
    venv_at(".venv-triton36", TRITON_36_REQUIREMENTS)?;
    venv_at(".venv", &python_requirements())
}

/// Creates the venv `name` in the workspace (once) with `requirements`, reinstalling them
/// when the list changed; returns its python.
fn venv_at(name: &str, requirements: &[&str]) -> Result<PathBuf, String> {
    let root = workspace_root();
    let dir = root.join(name);
    let python = dir.join("bin").join("python");
    let stamp = dir.join(".safecall-requirements");
    let wanted = requirements.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!("xtask: creating {}", dir.display());
        let base = env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        run(Command::new(base).args(["-m", "venv"]).arg(&dir))?;
    }
    eprintln!("xtask: installing {} into {name}", requirements.join(" "));
    pip_install(&python, requirements)?;
    std::fs::write(&stamp, wanted).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(python)
}

/// `python -m pip install --quiet ARGS` (requirements, or wheel paths).
fn pip_install<S: AsRef<std::ffi::OsStr>>(python: &Path, args: &[S]) -> Result<(), String> {
    run(Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(args))
}

fn capture(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether LLVM's development files are installed for the `llvm` feature.
fn llvm_available() -> bool {
    Command::new(format!("llvm-config-{LLVM_MAJOR}"))
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A `cargo SUBCOMMAND --workspace` in the workspace root, with the `llvm` feature (and
/// `LLVM_SYS_191_PREFIX`) when LLVM is installed; an error in CI when it is not.
fn cargo_workspace(subcommand: &str) -> Result<Command, String> {
    let mut cargo = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cargo
        .current_dir(workspace_root())
        .args([subcommand, "--workspace"]);
    if llvm_available() {
        cargo.args(["--features", "llvm"]);
        if env::var_os("LLVM_SYS_191_PREFIX").is_none() {
            let prefix =
                capture(Command::new(format!("llvm-config-{LLVM_MAJOR}")).arg("--prefix"))?;
            cargo.env("LLVM_SYS_191_PREFIX", prefix);
        }
    } else if in_ci() {
        return Err(format!(
            "CI=true but llvm-config-{LLVM_MAJOR} is missing: install llvm-{LLVM_MAJOR}-dev"
        ));
    } else {
        eprintln!(
            "xtask: llvm-config-{LLVM_MAJOR} not found: building without the `llvm` feature, \
             so the LLVM backend's tests are skipped (install llvm-{LLVM_MAJOR}-dev to run them)"
        );
    }
    Ok(cargo)
}

fn test(extra: &[String]) -> Result<(), String> {
    let python = venv()?;
    let config = python.with_file_name("tvm-ffi-config");
    let include = capture(Command::new(&config).arg("--includedir"))?;
    let libdir = capture(Command::new(&config).arg("--libdir"))?;

    // The Rust tests that run pytest on python/tests (check_suite, gpu_python, modules_python)
    // need the package in `.venv` (its conftest, `safecall.testing`): built first. In CI it is
    // the release wheel, which the Python suite then runs against in a fresh venv.
    let wheel = if in_ci() {
        let wheel = wheel::wheel(&[])?;
        pip_install(
            &python,
            &[
                "--force-reinstall".as_ref(),
                "--no-deps".as_ref(),
                wheel.as_os_str(),
            ],
        )?;
        Some(wheel)
    } else {
        python_package::install(&python)?;
        None
    };
    let log = skip_log();
    // A fresh log: the summary lists this run's skips only.
    let _ = std::fs::remove_file(&log);
    let mut cargo = cargo_workspace("test")?;
    cargo
        .args(extra)
        .env("SAFECALL_PYTHON", &python)
        .env("SAFECALL_TVM_FFI_INCLUDE", include)
        .env("SAFECALL_TVM_FFI_LIBDIR", libdir);
    let result = run(&mut cargo);
    print_skips(&log);
    result?;
    match wheel {
        // What a Python user gets: the release wheel, installed with pip into a fresh venv,
        // run with no compiler and no Rust toolchain on PATH (built once, never `develop`).
        Some(wheel) => wheel::test_wheel(&wheel, &[]),
        None => python_package::pytest(&python, &[]),
    }
}

/// Where the Rust tests record their skips (`tests/common/skip.rs`: `CARGO_TARGET_TMPDIR`).
fn skip_log() -> PathBuf {
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("tmp").join("skips.log")
}

/// Prints the skips the Rust tests recorded, with their count: libtest reports a skipped test
/// as passed and hides what it printed.
fn print_skips(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    eprint!("{}", skip_summary(&text, log));
}

/// The summary of a skip log (one `binary::test: reason` line per skip).
fn skip_summary(text: &str, log: &Path) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return "xtask: no Rust test skipped\n".to_owned();
    }
    let mut out = format!(
        "xtask: {} Rust test(s) SKIPPED (cargo test reports them as passed; {}):\n",
        lines.len(),
        log.display()
    );
    for line in lines {
        out.push_str(&format!("  SKIPPED {line}\n"));
    }
    out
}

/// The Triton releases besides 3.6 and 3.9 the installed driver serves, tested outside CI by
/// `cargo xtask triton-versions` (a venv each, `.venv-triton37` and `.venv-triton38`).
const MORE_TRITONS: &[(&str, &str)] = &[
    (".venv-triton37", "triton==3.7.1"),
    (".venv-triton38", "triton==3.8.0"),
];

/// `cargo xtask triton-versions`: the installed driver's differential
/// (python/tests/test_triton_driver.py) and the dispatch's tests
/// (python/tests/test_triton_dispatch.py) on every Triton they serve, each in its own venv.
fn triton_versions() -> Result<(), String> {
    for (dir, triton) in MORE_TRITONS {
        venv_at(dir, &[triton, TVM_FFI_REQUIREMENT, "pytest"])?;
    }
    let python = venv()?;
    python_package::install(&python)?;
    let args = ["-k", "triton_driver or triton_dispatch", "-v"].map(str::to_owned);
    python_package::pytest(&python, &args)
}

/// `cargo xtask python [PYTEST ARGS]`: the Python package alone, built and tested.
fn python(extra: &[String]) -> Result<(), String> {
    if extra.first().map(String::as_str) == Some("--installed") {
        return wheel::test_installed(&extra[1..]);
    }
    let python = venv()?;
    python_package::install(&python)?;
    python_package::pytest(&python, extra)
}

fn lint() -> Result<(), String> {
    for dir in modgraph::ACYCLIC {
        modgraph::check_acyclic(dir, true)?;
    }
    for dir in modgraph::ACYCLIC_MODULES {
        modgraph::check_acyclic(dir, false)?;
    }
    file_size::check()?;
    exhaustive::check()?;
    // The Python sources (package, tests, benchmarks), with ruff from the test venv.
    let python = venv_at(".venv", &python_requirements())?;
    run(Command::new(python)
        .current_dir(workspace_root())
        .args(["-m", "ruff", "check", "--quiet", "."]))?;
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    run(Command::new(&cargo)
        .current_dir(workspace_root())
        .args(["fmt", "--all", "--check"]))?;
    // `criterion`: the criterion benchmarks are linted too (the tests do not build them).
    run(cargo_workspace("clippy")?.args([
        "--all-targets",
        "--features",
        "criterion",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo_workspace("doc")?
        .arg("--no-deps")
        .env("RUSTDOCFLAGS", "-D warnings"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skip_summary_counts_and_lists_every_skip() {
        let log = Path::new("target/tmp/skips.log");
        assert_eq!(skip_summary("", log), "xtask: no Rust test skipped\n");
        assert_eq!(
            skip_summary("a::t1: no llvm\nb::t2: no python\n", log),
            "xtask: 2 Rust test(s) SKIPPED (cargo test reports them as passed; \
             target/tmp/skips.log):\n  SKIPPED a::t1: no llvm\n  SKIPPED b::t2: no python\n"
        );
    }
}
