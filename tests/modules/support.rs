//! Shared by the `modules_*` integration tests: building libraries from IR and C sources into
//! a per-test directory, the real TVM-FFI peer (headers, library, Python), and the runtime's
//! own static and shared libraries.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use safecall::aot::LinkOptions;
use safecall::lower::LowerOptions;

/// The directory of the IR, C and C++ sources of these tests.
pub fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("modules")
}

/// A fresh, empty output directory for `test`.
pub fn out_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("modules")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test directory");
    dir
}

/// Parses IR text, panicking with the rendered diagnostic.
pub fn parse(name: &str, text: &str) -> safecall::ir::Module {
    safecall::ir::parse::parse(text)
        .map_err(|e| e.render(name, text))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Parses `tests/modules/<file>`.
pub fn parse_file(file: &str) -> safecall::ir::Module {
    let path = sources().join(file);
    let text = std::fs::read_to_string(&path).expect("read the IR source");
    parse(file, &text)
}

/// Builds `module` into `dir/lib<name>.so` with `link` options (and lowering options).
pub fn build_so(
    dir: &Path,
    name: &str,
    module: &safecall::ir::Module,
    lower: LowerOptions,
    link: &LinkOptions,
) -> PathBuf {
    let out = dir.join(format!("lib{name}.so"));
    let options = safecall::Options {
        lower,
        ..Default::default()
    };
    safecall::build_shared_library(module, &out, &options, link)
        .unwrap_or_else(|e| panic!("building {}: {e}", out.display()));
    out
}

/// Compiles `module` to `dir/<name>.o`.
pub fn build_object(
    dir: &Path,
    name: &str,
    module: &safecall::ir::Module,
    lower: LowerOptions,
) -> PathBuf {
    let out = dir.join(format!("{name}.o"));
    let options = safecall::Options {
        lower,
        ..Default::default()
    };
    let bytes = safecall::compile_object(module, &options)
        .unwrap_or_else(|e| panic!("compiling {name}: {e}"));
    std::fs::write(&out, bytes).expect("write the object");
    out
}

pub use crate::common::command::run;

/// The C compiler (`$CC`, else `cc`).
pub fn cc() -> Command {
    Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()))
}

/// Compiles C sources into the shared library `dir/lib<name>.so` (TVM-FFI symbols left for
/// load time), with extra arguments.
pub fn build_c_so(dir: &Path, name: &str, sources: &[PathBuf], extra: &[&str]) -> PathBuf {
    let out = dir.join(format!("lib{name}.so"));
    run(cc()
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .args(sources)
        .args(extra));
    out
}

pub use crate::common::skip::skip;

/// The real `apache-tvm-ffi` (from `cargo xtask test`'s environment).
pub struct Peer {
    /// `tvm-ffi-config --includedir`.
    pub include: PathBuf,
    /// `tvm-ffi-config --libdir`.
    pub libdir: PathBuf,
    /// The Python with `tvm_ffi` installed.
    pub python: Option<PathBuf>,
}

/// The peer, or `None` after printing why the test is skipped (a failure under `CI=true`).
pub fn peer(test: &str, need_python: bool) -> Option<Peer> {
    let include = std::env::var_os("SAFECALL_TVM_FFI_INCLUDE");
    let libdir = std::env::var_os("SAFECALL_TVM_FFI_LIBDIR");
    let python = std::env::var_os("SAFECALL_PYTHON");
    let complete = include.is_some() && libdir.is_some() && (python.is_some() || !need_python);
    if !complete {
        let wanted = if need_python {
            "SAFECALL_PYTHON, SAFECALL_TVM_FFI_INCLUDE and SAFECALL_TVM_FFI_LIBDIR"
        } else {
            "SAFECALL_TVM_FFI_INCLUDE and SAFECALL_TVM_FFI_LIBDIR"
        };
        skip(&format!(
            "{test}: {wanted} are not set (run `cargo xtask test`, which sets them)"
        ));
        return None;
    }
    Some(Peer {
        include: include.expect("checked").into(),
        libdir: libdir.expect("checked").into(),
        python: python.map(PathBuf::from),
    })
}

/// `target/<profile>` of this build.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Builds safecall-runtime's `staticlib` and `cdylib` (cheap when up to date) and returns the
/// directory holding `libsafecall_runtime.a` and `libsafecall_runtime.so`.
pub fn runtime_libdir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = profile_dir();
            let profile = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("debug")
                .to_owned();
            let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.args(["build", "--quiet", "-p", "safecall-runtime", "--lib"]);
            if profile == "release" {
                cmd.arg("--release");
            } else if profile != "debug" {
                cmd.args(["--profile", &profile]);
            }
            cmd.env("CARGO_TARGET_DIR", dir.parent().expect("target dir"));
            run(&mut cmd);
            for lib in ["libsafecall_runtime.a", "libsafecall_runtime.so"] {
                assert!(dir.join(lib).exists(), "{lib} is missing");
            }
            dir
        })
        .clone()
}

/// Undefined dynamic symbols of a shared library (`nm -uD`), without versions.
pub fn undefined_symbols(lib: &Path) -> Vec<String> {
    let out = run(Command::new("nm").arg("-uD").arg(lib));
    out.lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s).to_owned())
        .collect()
}
