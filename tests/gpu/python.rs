//! GPU launches from Python's real `tvm_ffi`: builds `tests/gpu/launch.scir` with each backend
//! and runs `$SAFECALL_PYTHON -m pytest python/tests/gpu_launch` against the CUDA driver test
//! double.

use std::process::Command;

use safecall::Options;
use safecall::aot::LinkOptions;

use crate::common::delivery::{backend_name, backends};

#[test]
fn python_launches_through_the_driver_double() {
    let Some(python) = std::env::var_os("SAFECALL_PYTHON") else {
        crate::common::skip::skip(
            "SAFECALL_PYTHON is not set (run `cargo xtask test`, which sets it)",
        );
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("gpu-python-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let module = crate::support::module();
    for backend in backends() {
        let options = Options {
            backend,
            ..Default::default()
        };
        let out = dir.join(format!("launch_{}.so", backend_name(backend)));
        safecall::build_shared_library(&module, &out, &options, &LinkOptions::default())
            .expect("build the library");
    }
    let out = Command::new(python)
        .args([
            "-m",
            "pytest",
            "python/tests/gpu_launch",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SAFECALL_GPU_LIBDIR", &dir)
        .env("SAFECALL_LIBCUDA_PATH", crate::support::fake_path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "pytest failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Three tests per backend and one for both.
    let expected = format!("{} passed", 3 * backends().len() + 1);
    assert!(
        stdout.contains(&expected),
        "expected {expected:?}:\n{stdout}"
    );
}
