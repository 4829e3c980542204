//! Running the `safecall` binary in a per-test directory, and what the tests need around it:
//! IR files, C libraries, the real TVM-FFI headers, snapshots of diagnostics.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a run of `safecall` produced.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A fresh directory for one test; `safecall` runs in it, so messages show relative paths.
pub struct Dir(pub PathBuf);

impl Dir {
    /// A new, empty directory named after `test`.
    pub fn new(test: &str) -> Dir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("cli")
            .join(test);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the test directory");
        Dir(dir)
    }

    /// `dir/name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `dir/name`.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write a test file");
        path
    }

    /// Copies a file of this repository (`examples/ir/add_one.scir`) into the directory.
    pub fn copy(&self, repo_path: &str) -> String {
        let from = repo().join(repo_path);
        let name = from
            .file_name()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        std::fs::copy(&from, self.path(&name)).expect("copy a repository file");
        name
    }

    /// Runs `safecall ARGS` here.
    pub fn safecall(&self, args: &[&str]) -> Run {
        self.safecall_with_env(args, &[])
    }

    /// Runs `safecall ARGS` here with the environment variables `env` set (`PATH`, say).
    pub fn safecall_with_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_safecall"))
            .args(args)
            .current_dir(&self.0)
            .env_remove("COLUMNS")
            .env_remove("CC")
            .envs(env.iter().copied())
            .output()
            .expect("run safecall");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Snapshots `text` as `snapshots/cli/<name>.snap`.
#[macro_export]
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => "../../snapshots/cli",
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

pub use crate::common::command::run;

/// Compiles C sources into a shared library `dir/<name>`.
pub fn cc_shared(dir: &Dir, name: &str, sources: &[PathBuf], extra: &[&str]) -> PathBuf {
    let out = dir.path(name);
    run(
        Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()))
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
            .arg(&out)
            .args(sources)
            .args(extra),
    );
    out
}

pub use crate::common::skip::skip;

/// The real TVM-FFI headers (`SAFECALL_TVM_FFI_INCLUDE`, set by `cargo xtask test`), or
/// `None` after printing why the test is skipped (a failure under `CI=true`).
pub fn tvm_ffi_include(test: &str) -> Option<PathBuf> {
    match std::env::var_os("SAFECALL_TVM_FFI_INCLUDE") {
        Some(dir) => Some(dir.into()),
        None => {
            skip(&format!(
                "{test}: SAFECALL_TVM_FFI_INCLUDE is not set (run `cargo xtask test`, which sets it)"
            ));
            None
        }
    }
}

/// The directory of this build's profile (`target/debug`), where `safecall` lives.
pub fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_safecall"))
        .parent()
        .expect("target/<profile>/safecall")
        .to_path_buf()
}

/// Builds safecall-runtime's `cdylib` (cheap when up to date) into this build's profile
/// directory and returns that directory.
pub fn runtime_libdir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = profile_dir();
            let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.args(["build", "--quiet", "-p", "safecall-runtime", "--lib"]);
            match dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => {}
                Some("release") => {
                    cmd.arg("--release");
                }
                Some(profile) => {
                    cmd.args(["--profile", profile]);
                }
            }
            cmd.env("CARGO_TARGET_DIR", dir.parent().expect("target dir"));
            run(&mut cmd);
            assert!(dir.join("libsafecall_runtime.so").exists());
            dir
        })
        .clone()
}
