//! The double's HIP constants and `hipDeviceProp_tR0600` offsets (`src/abi.rs`) against the
//! headers Triton bundles: a C file prints each enumerator's value and each field's `offsetof`
//! as the C compiler sees them.
//!
//! Needs a C compiler (`CC`, else `cc`) and the headers: `SAFECALL_HIP_INCLUDE` names their directory (the one holding
//! `hip/`), else `.venv/lib/python3*/site-packages/triton/backends/amd/include` under the
//! workspace root (`cargo xtask venv` installs triton there). Without either the test prints why
//! it skips; under `CI=true` that is a failure.

use std::path::PathBuf;
use std::process::Command;

use safecall_fake_hip::abi;

/// The C compiler (`CC`, else `cc`), if it runs.
fn compiler() -> Result<String, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    match Command::new(&cc).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(cc),
        _ => Err(format!("no C compiler: `{cc} --version` does not run")),
    }
}

fn include_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("SAFECALL_HIP_INCLUDE") {
        return Ok(PathBuf::from(dir));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = root.join(".venv/lib");
    let found = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|python| {
            let dir = python
                .path()
                .join("site-packages/triton/backends/amd/include");
            dir.join("hip/hip_runtime_api.h").exists().then_some(dir)
        });
    found.ok_or_else(|| {
        format!(
            "no Triton HIP headers: set SAFECALL_HIP_INCLUDE or install triton into {}",
            lib.display()
        )
    })
}

fn c_program() -> String {
    let mut c = String::from(
        "#define __HIP_PLATFORM_AMD__\n#include <hip/hip_runtime_api.h>\n#include <stddef.h>\n\
         #include <stdio.h>\nint main(void) {\n",
    );
    for (name, _) in abi::VALUES {
        c += &format!("  printf(\"{name} %ld\\n\", (long){name});\n");
    }
    for (field, _) in abi::PROP_OFFSETS {
        c += &format!("  printf(\"{field} %zu\\n\", offsetof(hipDeviceProp_tR0600, {field}));\n");
    }
    for (expr, _) in abi::LAUNCH_LAYOUT {
        let name: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
        c += &format!("  printf(\"{name} %zu\\n\", {expr});\n");
    }
    c += "  printf(\"sizeof %zu\\n\", sizeof(hipDeviceProp_tR0600));\n";
    c += "  printf(\"name_len %zu\\n\", sizeof(((hipDeviceProp_tR0600*)0)->gcnArchName));\n";
    c + "  return 0;\n}\n"
}

#[test]
fn constants_and_offsets_match_tritons_hip_headers() {
    let found = compiler().and_then(|cc| Ok((cc, include_dir()?)));
    let (cc, include) = match found {
        Ok(found) => found,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
            panic!("CI=true: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake_hip_header");
    std::fs::create_dir_all(&dir).unwrap();
    let (source, exe) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&source, c_program()).unwrap();
    let built = Command::new(&cc)
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output();
    let built = built.unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<(&str, i64)> = printed
        .lines()
        .map(|l| {
            l.split_once(' ')
                .map(|(n, v)| (n, v.parse().unwrap()))
                .unwrap()
        })
        .collect();
    let mut ours: Vec<(&str, i64)> = abi::VALUES
        .iter()
        .map(|&(n, v)| (n, i64::from(v)))
        .collect();
    ours.extend(abi::PROP_OFFSETS.iter().map(|&(n, v)| (n, v as i64)));
    let layout: Vec<(String, i64)> = abi::LAUNCH_LAYOUT
        .iter()
        .map(|&(e, v)| (e.chars().filter(|c| !c.is_whitespace()).collect(), v as i64))
        .collect();
    ours.extend(layout.iter().map(|(n, v)| (n.as_str(), *v)));
    ours.push(("sizeof", abi::PROP_SIZE as i64));
    ours.push(("name_len", abi::PROP_NAME_LEN as i64));
    assert_eq!(printed, ours);
}
