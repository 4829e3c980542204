//! `cargo xtask gpu-kit`: what a GPU machine with no Rust, no `tvm_ffi` and no internet needs
//! to run `python -m safecall.selftest`, in `target/gpu-kit/` (at most [`MAX_KIT_BYTES`]):
//!
//! - the release wheel of the Python package (abi3, [`crate::wheel`]);
//! - the pinned `apache-tvm-ffi` wheel for CPython 3.12 on manylinux x86-64 and
//!   `typing-extensions` (its one dependency), downloaded with `pip download`;
//! - `run.sh`, which installs them with `pip --no-index` into a temporary directory (the
//!   machine's own Python keeps its torch, triton and cuda-bindings) and runs
//!   `python3 -m safecall.selftest --bench --json`, the JSON into `$OUT` when set (the device
//!   machine's folder of files that come back), else into the kit.

use std::path::Path;
use std::process::Command;

use crate::{TVM_FFI_REQUIREMENT, run, venv, workspace_root};

/// The kit's size limit: what a device machine's carried tree can spare.
const MAX_KIT_BYTES: u64 = 32 * 1024 * 1024;
/// The Python of the GPU machines, for which the `apache-tvm-ffi` wheel is fetched.
const KIT_PYTHON: &str = "3.12";
/// Platform tags `pip download` may pick the `apache-tvm-ffi` wheel from (pip matches each
/// `manylinux_2_N` exactly).
const KIT_PLATFORMS: &[&str] = &[
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
];
/// `apache-tvm-ffi`'s own requirement.
const TYPING_EXTENSIONS: &str = "typing-extensions>=4.13";

/// The script the kit runs on the GPU machine.
const RUN_SH: &str = r#"#!/usr/bin/env bash
# safecall's GPU self-test from this kit: installs the wheels beside this script into a
# temporary directory (no index, no internet, no compiler) and runs
# `python3 -m safecall.selftest --bench --json PATH`. PATH is $1, else $OUT/selftest.json when
# $OUT is set, else selftest.json beside this script. Exit status: the self-test's.
set -euo pipefail
kit="$(cd "$(dirname "$0")" && pwd)"
json="${1:-${OUT:+$OUT/selftest.json}}"
json="${json:-$kit/selftest.json}"
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
start=$(date +%s)
python3 -m pip install --quiet --no-index --no-deps --no-compile --target "$site" "$kit"/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
echo "gpu-kit: installed in $(( $(date +%s) - start )) s; nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none)"
status=0
# A kernel that hangs the GPU cannot hang the kit: the JSON holds every check before it.
timeout --signal=KILL "${SAFECALL_SELFTEST_TIMEOUT:-290}" python3 -m safecall.selftest --bench --json "$json" || status=$?
echo "gpu-kit: self-test exit status $status after $(( $(date +%s) - start )) s"
exit $status
"#;

/// Builds the kit; returns nothing but prints what it holds.
pub fn gpu_kit() -> Result<(), String> {
    let wheel = crate::wheel::wheel(&[])?;
    let python = venv()?;
    let dir = workspace_root().join("target").join("gpu-kit");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = wheel.file_name().ok_or("the wheel has no file name")?;
    std::fs::copy(&wheel, dir.join(name))
        .map_err(|e| format!("cannot copy {}: {e}", wheel.display()))?;
    let mut download = Command::new(&python);
    download
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args([
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            KIT_PYTHON,
        ]);
    for platform in KIT_PLATFORMS {
        download.args(["--platform", platform]);
    }
    run(download
        .arg("-d")
        .arg(&dir)
        .args([TVM_FFI_REQUIREMENT, TYPING_EXTENSIONS]))?;
    let script = dir.join("run.sh");
    std::fs::write(&script, RUN_SH)
        .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    make_executable(&script)?;
    let size = kit_size(&dir)?;
    if size > MAX_KIT_BYTES {
        return Err(format!(
            "{} holds {size} bytes, over the {MAX_KIT_BYTES} a kit may",
            dir.display()
        ));
    }
    eprintln!(
        "xtask: {} ({:.1} MiB):",
        dir.display(),
        size as f64 / (1024.0 * 1024.0)
    );
    for entry in std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
    {
        eprintln!("  {}", entry.file_name().to_string_lossy());
    }
    eprintln!("xtask: on the GPU machine: bash target/gpu-kit/run.sh");
    Ok(())
}

fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}

/// The bytes of the files directly in `dir`.
fn kit_size(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
    {
        total += entry.metadata().map_err(|e| e.to_string())?.len();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_installs_without_an_index_and_runs_the_bench_with_json() {
        assert!(RUN_SH.starts_with("#!/usr/bin/env bash\n"));
        assert!(RUN_SH.contains("pip install --quiet --no-index --no-deps"));
        assert!(RUN_SH.contains("python3 -m safecall.selftest --bench --json \"$json\""));
        assert!(RUN_SH.contains("timeout --signal=KILL"));
        assert!(RUN_SH.contains("exit $status"));
    }
}
