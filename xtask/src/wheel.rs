//! `cargo xtask wheel`: the binary wheel of the Python package, the one artifact a Python
//! user installs with pip alone (no Rust toolchain, no C compiler).
//!
//! `maturin build --release` of `python/`: an abi3 wheel (CPython 3.9 and later), its
//! platform tag chosen by maturin's own audit of the glibc symbol versions the extension
//! needs (the oldest `manylinux_2_X` it honestly supports), with the default features only:
//! the LLVM backend is off (`cargo xtask wheel --features llvm` builds one with it, which then
//! needs `libLLVM-19.so` on the user's machine). The wheel lands in `target/wheel/`, a
//! directory of its own that holds the newest safecall wheel only (older ones are removed),
//! so that `pip install target/wheel/safecall-*.whl` finds exactly one: `pip install ./python`
//! leaves its own wheels in maturin's `target/wheels/`, with another platform tag.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::{python_requirements, run, venv, workspace_root};

/// Builds the wheel; `extra` goes to `maturin build` (e.g. `--features llvm`). Returns its path.
pub fn wheel(extra: &[String]) -> Result<PathBuf, String> {
    let python = venv()?;
    let maturin = crate::python_package::maturin(&python)?;
    let root = workspace_root();
    let out = root.join("target").join("wheel");
    let before = wheels_in(&out);
    eprintln!("xtask: building the release wheel (compiles the Rust extension in release mode)");
    let started = Instant::now();
    run(Command::new(&maturin)
        .current_dir(root.join("python"))
        .args(["build", "--release", "--out"])
        .arg(&out)
        .args(extra))?;
    let built = newest_wheel(&out, &before)?;
    keep_only(&out, &built)?;
    let size = std::fs::metadata(&built)
        .map_err(|e| format!("cannot read {}: {e}", built.display()))?
        .len();
    eprintln!(
        "xtask: built {} ({:.1} MB) in {:.0} s",
        built.display(),
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(built)
}

/// `cargo xtask python --installed`: the Python suite against the wheel, installed with pip
/// into a fresh venv (`target/wheel-venv`) and run with no compiler and no Rust toolchain on
/// `PATH`. The one test that needs a compiler, the differential against Triton's own launcher
/// (Triton compiles its C launcher), gets the machine's compiler through
/// `SAFECALL_TEST_TRITON_CC`.
pub fn test_installed(extra: &[String]) -> Result<(), String> {
    test_wheel(&wheel(&[])?, extra)
}

/// [`test_installed`] with a wheel already built.
pub fn test_wheel(wheel: &Path, extra: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let dir = root.join("target").join("wheel-venv");
    let _ = std::fs::remove_dir_all(&dir);
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    run(Command::new(base).args(["-m", "venv"]).arg(&dir))?;
    let python = dir.join("bin").join("python");
    let started = Instant::now();
    let mut args = vec![wheel.as_os_str().to_owned()];
    args.extend(python_requirements().into_iter().map(Into::into));
    crate::pip_install(&python, &args)?;
    eprintln!(
        "xtask: installed {} and the test requirements into {} in {:.1} s",
        wheel.display(),
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let compiler = std::env::split_paths(&path)
        .map(|d| d.join("cc"))
        .find(|p| p.exists());
    let bin = root.join("target").join("toolchain-free-bin");
    toolchain_free_bin(&path, &bin)?;
    let clean_path = std::env::join_paths([dir.join("bin"), bin])
        .map_err(|e| format!("cannot make PATH: {e}"))?;
    eprintln!(
        "xtask: PATH for the Python suite: {}",
        clean_path.to_string_lossy()
    );
    let mut cmd = Command::new(&python);
    cmd.env("PATH", &clean_path)
        .env_remove("CC")
        .env_remove("VIRTUAL_ENV");
    if let Some(cc) = compiler {
        cmd.env("SAFECALL_TEST_TRITON_CC", cc);
    }
    crate::python_package::pytest_with(cmd, extra)
}

/// Removes every safecall wheel of `dir` but `keep`.
fn keep_only(dir: &Path, keep: &Path) -> Result<(), String> {
    for (stale, _) in wheels_in(dir).into_iter().filter(|(p, _)| p != keep) {
        std::fs::remove_file(&stale)
            .map_err(|e| format!("cannot remove {}: {e}", stale.display()))?;
    }
    Ok(())
}

/// The safecall wheels in `dir`, with their modification times.
fn wheels_in(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| is_safecall_wheel(p))
        .filter_map(|p| Some((p.clone(), std::fs::metadata(&p).ok()?.modified().ok()?)))
        .collect()
}

fn is_safecall_wheel(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("safecall-") && n.ends_with(".whl"))
}

/// The wheel maturin just wrote: the newest one, which was not there (or was older) before.
fn newest_wheel(
    dir: &Path,
    before: &[(PathBuf, std::time::SystemTime)],
) -> Result<PathBuf, String> {
    wheels_in(dir)
        .into_iter()
        .filter(|(p, t)| !before.iter().any(|(q, u)| q == p && u == t))
        .max_by_key(|(_, t)| *t)
        .map(|(p, _)| p)
        .ok_or_else(|| format!("maturin wrote no safecall wheel into {}", dir.display()))
}

/// C and C++ compiler drivers: a name with one of these as a `-`-separated part is a
/// compiler (`gcc-12`, `x86_64-linux-gnu-gcc-12`, `clang++-19`).
const COMPILERS: &[&str] = &[
    "cc", "c++", "c89", "c99", "gcc", "g++", "clang", "clang++", "tcc",
];
/// The Rust toolchain and the preprocessor, by exact name.
const TOOLS: &[&str] = &["cargo", "rustc", "rustup", "maturin", "cpp"];

/// Whether `name` (an executable's file name) is a compiler or a Rust tool. Binutils (`as`,
/// `ld`, `nm`) are neither: they stay, and the tests read symbols with `nm`.
pub fn is_toolchain(name: &str) -> bool {
    TOOLS.contains(&name) || name.split('-').any(|part| COMPILERS.contains(&part))
}

/// A directory of links to every executable on `path` except the toolchain's: a `PATH` for
/// running the Python suite as a user without compilers would.
pub fn toolchain_free_bin(path: &str, into: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(into);
    std::fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    for dir in std::env::split_paths(path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let Some(text) = name.to_str() else { continue };
            let link = into.join(&name);
            if is_toolchain(text) || link.exists() {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), &link)
                .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compilers_and_rust_tools_are_the_toolchain() {
        for name in [
            "cc",
            "gcc-12",
            "x86_64-linux-gnu-gcc-12",
            "clang++-19",
            "cargo",
            "cpp",
        ] {
            assert!(is_toolchain(name), "{name}");
        }
        for name in [
            "as",
            "ld",
            "nm",
            "python3",
            "git",
            "x86_64-linux-gnu-ld",
            "ccache-swig",
        ] {
            assert!(!is_toolchain(name), "{name}");
        }
    }

    #[test]
    fn the_wheel_directory_keeps_the_newest_wheel_only() {
        let dir = std::env::temp_dir().join(format!("xtask-wheel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let old = dir.join("safecall-0.1.0-cp39-abi3-linux_x86_64.whl");
        let new = dir.join("safecall-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl");
        let other = dir.join("numpy-2.0-cp311-cp311-linux_x86_64.whl");
        for p in [&old, &new, &other] {
            std::fs::write(p, b"").unwrap();
        }
        keep_only(&dir, &new).unwrap();
        assert!(!old.exists() && new.exists() && other.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_safecall_wheels_count() {
        assert!(is_safecall_wheel(Path::new(
            "target/wheels/safecall-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl"
        )));
        assert!(!is_safecall_wheel(Path::new("target/wheels/numpy-2.0.whl")));
        assert!(!is_safecall_wheel(Path::new(
            "target/wheels/safecall-0.1.0.tar.gz"
        )));
    }
}
