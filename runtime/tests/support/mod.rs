//! Shared by the integration tests that need the real TVM-FFI peer: locating its headers and
//! library, this crate's `libsafecall_runtime.so`, and compiling and running C programs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the real `apache-tvm-ffi` lives (from `cargo xtask test`'s environment).
pub struct Peer {
    /// `tvm-ffi-config --includedir`.
    pub include: PathBuf,
    /// `tvm-ffi-config --libdir` (holds `libtvm_ffi.so`).
    pub libdir: PathBuf,
}

/// The peer, or `None` (after printing why) when the environment does not name it. Under
/// `CI=true` a missing peer is a failure.
pub fn peer(test: &str) -> Option<Peer> {
    let include = std::env::var_os("SAFECALL_TVM_FFI_INCLUDE");
    let libdir = std::env::var_os("SAFECALL_TVM_FFI_LIBDIR");
    match (include, libdir) {
        (Some(include), Some(libdir)) => Some(Peer {
            include: include.into(),
            libdir: libdir.into(),
        }),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !ci,
                "{test}: SAFECALL_TVM_FFI_INCLUDE / SAFECALL_TVM_FFI_LIBDIR are not set under CI=true; run `cargo xtask test`"
            );
            eprintln!(
                "SKIPPED {test}: SAFECALL_TVM_FFI_INCLUDE and SAFECALL_TVM_FFI_LIBDIR are not set \
                 (run `cargo xtask test`, which sets them up)"
            );
            None
        }
    }
}

/// The directory of the C sources.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("c")
}

/// The cargo target directory of this build (`target/<profile>`), which holds the cdylib.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Builds this crate's cdylib (cheap when up to date: the test build already compiled the
/// crate) and returns the directory holding `libsafecall_runtime.so`.
pub fn our_libdir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_cdylib).clone()
}

fn build_cdylib() -> PathBuf {
    let dir = profile_dir();
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_owned();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "safecall-runtime", "--lib"]);
    if profile == "release" {
        cmd.arg("--release");
    } else if profile != "debug" {
        cmd.args(["--profile", &profile]);
    }
    // The target directory is the parent of the profile directory.
    cmd.env("CARGO_TARGET_DIR", dir.parent().expect("target dir"));
    let status = cmd.status().expect("run cargo build for the cdylib");
    assert!(status.success(), "building libsafecall_runtime.so failed");
    let lib = dir.join("libsafecall_runtime.so");
    assert!(lib.exists(), "{} is missing", lib.display());
    dir
}

/// Which runtime a C program is linked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// The real `libtvm_ffi.so`.
    Real,
    /// `libsafecall_runtime.so`.
    Ours,
}

/// Compiles `tests/c/<name>.c` against the real headers, linked with `runtime`; returns the
/// executable.
pub fn compile(peer: &Peer, name: &str, runtime: Runtime, our_libdir: &Path) -> PathBuf {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-conformance");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let exe = out_dir.join(format!("{name}-{runtime:?}").to_lowercase());
    let (libdir, lib) = match runtime {
        Runtime::Real => (peer.libdir.as_path(), "tvm_ffi"),
        Runtime::Ours => (our_libdir, "safecall_runtime"),
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(cc)
        .args(["-std=gnu11", "-Wall", "-Werror", "-O1", "-g", "-pthread"])
        .arg("-I")
        .arg(&peer.include)
        .arg(c_dir().join(format!("{name}.c")))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(libdir)
        .arg(format!("-l{lib}"))
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling {name}.c for {runtime:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Runs an executable; returns (exit code, stdout).
pub fn run(exe: &Path) -> (Option<i32>, String) {
    let output = Command::new(exe).output().expect("run the C program");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}
