//! Python interop with the real `tvm_ffi`: builds the libraries into a temporary directory and
//! runs `$SAFECALL_PYTHON -m pytest python/tests/modules` with that directory in
//! `SAFECALL_MODULES_LIBDIR`. The Python side imports only `tvm_ffi`; the libraries bind to
//! the C API of the `libtvm_ffi` it loaded.

use crate::modules::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use safecall::aot::{LinkOptions, Linker};
use safecall::lower::LowerOptions;

#[test]
fn python_calls_imports_callbacks_and_system_lib() {
    let Some(peer) = support::peer("python_calls_imports_callbacks_and_system_lib", true) else {
        return;
    };
    let dir = support::out_dir("python");
    support::build_c_so(
        &dir,
        "sc_helpers",
        &[support::sources().join("helpers.c")],
        &[],
    );
    support::build_so(
        &dir,
        "sc_other",
        &support::parse_file("other.scir"),
        Default::default(),
        &LinkOptions::default(),
    );
    let link = LinkOptions {
        linker: Linker::Cc,
        extra: vec![
            format!("-L{}", dir.display()),
            "-lsc_helpers".into(),
            "-lsc_other".into(),
            format!("-Wl,-rpath,{}", dir.display()),
        ],
        ..Default::default()
    };
    support::build_so(
        &dir,
        "calls",
        &support::parse_file("calls.scir"),
        Default::default(),
        &link,
    );
    support::build_so(
        &dir,
        "sc_py_helpers",
        &support::parse_file("py_helpers.scir"),
        Default::default(),
        &LinkOptions::default(),
    );
    for (file, name, prefix) in [
        ("syslib.scir", "sc_syslib", "sc_sys."),
        ("syshelpers.scir", "sc_syshelpers", "sc_helpers."),
    ] {
        support::build_so(
            &dir,
            name,
            &support::parse_file(file),
            LowerOptions {
                system_lib_prefix: Some(prefix.to_owned()),
                ..Default::default()
            },
            &LinkOptions::default(),
        );
    }
    let python = peer.python.expect("checked by peer()");
    let mut child = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "python/tests/modules",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SAFECALL_MODULES_LIBDIR", &dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pytest");
    // A deadlock must fail the test, not hang it.
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("wait for pytest").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("pytest output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "pytest failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(" passed") && !stdout.contains("skipped"),
        "{stdout}"
    );
}
