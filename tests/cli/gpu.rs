//! `safecall run` of GPU launches: where the driver is looked for, and what is said when it
//! is not found (in a process of its own, since the search reads the environment once).

use std::process::Command;

use super::support::{Dir, Run, repo};

/// Runs `safecall run tests/gpu/launch.scir twice 0` with `SAFECALL_LIBCUDA_PATH` set to
/// `libcuda` (or unset).
fn run_twice(test: &str, libcuda: Option<&str>) -> Run {
    let dir = Dir::new(test);
    let ir = repo().join("tests/gpu/launch.scir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_safecall"));
    cmd.args(["run"])
        .arg(&ir)
        .args(["twice", "0"])
        .current_dir(&dir.0);
    match libcuda {
        Some(path) => cmd.env("SAFECALL_LIBCUDA_PATH", path),
        None => cmd.env_remove("SAFECALL_LIBCUDA_PATH"),
    };
    let out = cmd.output().expect("run safecall");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The run's error, after the verifier's warnings about the two images of tests/gpu/launch.scir
/// that no kernel parameter table can be read from (`broken` and `partial`).
fn error_after_warnings(run: &Run) -> &str {
    let stderr = run.stderr.trim_end();
    let at = stderr.find("RuntimeError: ").expect("a RuntimeError");
    let warnings = &stderr[..at];
    assert_eq!(warnings.matches("warning: ").count(), 2, "{warnings}");
    assert!(
        warnings.contains("device binary `broken` (cubin) cannot be read")
            && warnings.contains("device binary `partial` (fatbin) cannot be read"),
        "{warnings}"
    );
    &stderr[at..]
}

#[test]
fn a_launch_runs_through_the_driver_named_by_the_environment() {
    let fake = std::env::current_exe()
        .expect("test binary")
        .with_file_name("libsafecall_fake_cuda.so");
    let run = run_twice("gpu_fake_driver", Some(fake.to_str().unwrap())).expect(0);
    assert_eq!(run.stdout, "7\n");
}

#[test]
fn a_driver_path_that_does_not_load_is_named() {
    let run = run_twice("gpu_bad_driver_path", Some("/nonexistent/libcuda.so")).expect(3);
    assert_eq!(
        error_after_warnings(&run),
        "RuntimeError: cannot launch CUDA kernels: SAFECALL_LIBCUDA_PATH is `/nonexistent/libcuda.so`, \
         which could not be loaded: /nonexistent/libcuda.so: cannot open shared object file: No such file or directory"
    );
}

#[test]
fn a_library_that_is_not_a_driver_is_named() {
    // A library every glibc system has, found by `dlopen`'s own search.
    let libc = "libc.so.6";
    let run = run_twice("gpu_not_a_driver", Some(libc)).expect(3);
    assert_eq!(
        error_after_warnings(&run),
        format!(
            "RuntimeError: cannot launch CUDA kernels: `{libc}` (from SAFECALL_LIBCUDA_PATH) has no \
             `cuGetProcAddress_v2`: it is not a CUDA 12 (or later) driver"
        )
    );
}

#[test]
fn no_driver_anywhere_says_where_it_looked() {
    // Only meaningful on a machine without the CUDA driver (CI and this project's machines).
    if Command::new("sh")
        .args(["-c", "ldconfig -p | grep -q libcuda.so.1"])
        .status()
        .is_ok_and(|s| s.success())
    {
        super::support::skip("this machine has libcuda.so.1 (the test needs a machine without it)");
        return;
    }
    let run = run_twice("gpu_no_driver", None).expect(3);
    assert_eq!(
        error_after_warnings(&run),
        "RuntimeError: cannot launch CUDA kernels: no CUDA driver found: SAFECALL_LIBCUDA_PATH is not set, \
         no library loaded in the process provides `cuGetProcAddress_v2`, and dlopen(\"libcuda.so.1\") failed: \
         libcuda.so.1: cannot open shared object file: No such file or directory"
    );
}
