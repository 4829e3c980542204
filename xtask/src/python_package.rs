//! The Python package (`python/`): built into `.venv` with maturin and tested with pytest.
//!
//! `maturin develop` builds the extension with the workspace's target directory, profile and
//! `llvm` feature, so it reuses what `cargo test --workspace` compiled (Cranelift, LLVM
//! bindings, ...); `python/tests` then runs against the real `tvm_ffi` of `.venv`.

use std::path::Path;
use std::process::Command;

use crate::{LLVM_MAJOR, capture, in_ci, llvm_available, run, workspace_root};

/// The build backend, pinned like the peer.
const MATURIN_REQUIREMENT: &str = "maturin==1.16.0";

/// pytest's exit code when it collected no tests (a broken suite, never a pass).
const PYTEST_NO_TESTS: i32 = 5;

/// The venv's maturin, installed (pinned) when missing.
pub fn maturin(python: &Path) -> Result<std::path::PathBuf, String> {
    let maturin = python.with_file_name("maturin");
    if !maturin.exists() {
        eprintln!("xtask: installing {MATURIN_REQUIREMENT}");
        crate::pip_install(python, &[MATURIN_REQUIREMENT])?;
    }
    Ok(maturin)
}

/// Builds the package into the venv of `python` (`maturin develop`, editable).
pub fn install(python: &Path) -> Result<(), String> {
    let maturin = maturin(python)?;
    let root = workspace_root();
    let venv = python
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} is not in a venv", python.display()))?;
    let mut cmd = Command::new(&maturin);
    cmd.current_dir(root.join("python"))
        .env("VIRTUAL_ENV", venv)
        .args(["develop", "--quiet"]);
    if llvm_available() {
        cmd.args(["--features", "llvm"]);
        if std::env::var_os("LLVM_SYS_191_PREFIX").is_none() {
            let prefix =
                capture(Command::new(format!("llvm-config-{LLVM_MAJOR}")).arg("--prefix"))?;
            cmd.env("LLVM_SYS_191_PREFIX", prefix);
        }
    }
    let started = std::time::Instant::now();
    run(&mut cmd)?;
    eprintln!(
        "xtask: built the Python package into {} in {:.1} s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs `python/tests` with pytest; `extra` goes to pytest. No collected tests is a failure.
pub fn pytest(python: &Path, extra: &[String]) -> Result<(), String> {
    pytest_with(Command::new(python), extra)
}

/// Runs `python/tests` with pytest through `cmd` (a Python with its environment).
pub fn pytest_with(mut cmd: Command, extra: &[String]) -> Result<(), String> {
    let root = workspace_root();
    cmd.current_dir(&root)
        // `-rs`: each skip with its reason in the summary.
        .args(["-m", "pytest", "-q", "-rs", "python/tests"])
        .args(extra);
    if in_ci() {
        cmd.env("CI", "true");
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(PYTEST_NO_TESTS) => Err(format!("{cmd:?} collected no tests")),
        Some(code) => Err(format!("{cmd:?} failed with exit code {code}")),
        None => Err(format!("{cmd:?} was killed ({status})")),
    }
}
