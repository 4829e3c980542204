//! `safecall check`.

use super::support::Dir;
use crate::snapshot;

#[test]
fn a_valid_file_is_ok() {
    let dir = Dir::new("check_ok");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir.safecall(&["check", &file]).expect(0);
    assert_eq!(
        out.stdout,
        "add_one.scir: ok (module `add_one`, 1 function: add_one)\n"
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn every_verifier_error_is_reported_with_line_column_and_caret() {
    let dir = Dir::new("check_invalid");
    dir.write(
        "bad.scir",
        "module m;\n\nfn f(n: i64) -> i64 {\n    let y = n + z;\n    let w = 1i32 + n;\n    return y;\n}\n",
    );
    let out = dir.safecall(&["check", "bad.scir"]).expect(1);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains(" --> bad.scir:4:17\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(" --> bad.scir:5:13\n"),
        "{}",
        out.stderr
    );
    snapshot!("check_invalid_ir", out.stderr);
}

#[test]
fn a_syntax_error_is_reported_with_what_was_expected() {
    let dir = Dir::new("check_parse");
    dir.write("typo.scir", "module m;\nfn f(x: i33) {\n}\n");
    let out = dir.safecall(&["check", "typo.scir"]).expect(1);
    assert!(
        out.stderr.contains(" --> typo.scir:2:9\n"),
        "{}",
        out.stderr
    );
    snapshot!("check_parse_error", out.stderr);
}

#[test]
fn a_missing_file_is_a_clear_one_line_failure() {
    let out = Dir::new("check_missing")
        .safecall(&["check", "missing.scir"])
        .expect(4);
    assert_eq!(
        out.stderr,
        "error: cannot read `missing.scir`: No such file or directory\n"
    );
}

#[test]
fn a_file_that_is_not_text_is_a_clear_failure() {
    let dir = Dir::new("check_binary");
    std::fs::write(dir.path("blob.scir"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let out = dir.safecall(&["check", "blob.scir"]).expect(4);
    assert_eq!(
        out.stderr,
        "error: cannot read `blob.scir`: stream did not contain valid UTF-8\n"
    );
}

#[test]
fn a_launch_that_cannot_be_checked_is_a_warning() {
    let dir = Dir::new("check_warning");
    dir.write(
        "unchecked.scir",
        "module m;\n\ndevice_binary k {\n    format fatbin;\n    data b\"not a fat binary\";\n    kernels [g];\n}\n\nfn f() {\n    launch k.g[grid=(1), block=(1), device=0]();\n}\n",
    );
    let out = dir.safecall(&["check", "unchecked.scir"]).expect(0);
    assert_eq!(
        out.stdout,
        "unchecked.scir: ok (module `m`, 1 function: f)\n"
    );
    assert_eq!(
        out.stderr,
        "warning: the kernel parameters of device binary `k` (fatbin) cannot be read: no fat \
         binary header at byte 0 (magic 0x20746f6e, expected 0xba55ed50); its launches are not \
         checked against them\n --> unchecked.scir:5:10\n  |\n5 |     data b\"not a fat binary\";\n  \
         |          ^^^^^^^^^^^^^^^^^^^\n  = note: in device_binary `k`\n"
    );
}

/// A module whose text is mostly one long literal (a device binary's image) is a handful of
/// tokens: checking it needs a few times the text's size, not room for a token per four bytes
/// of it (64 bytes each: 16 times the text, 1 GiB for these 64 MiB).
#[test]
fn a_long_literal_is_checked_in_a_few_times_its_size_of_memory() {
    use std::os::unix::process::CommandExt;
    let dir = Dir::new("check_long_literal");
    let image = "a".repeat(64 << 20);
    let file = dir.write(
        "big.scir",
        &format!("module big;\ndevice_binary big {{\n    format cubin;\n    data b\"{image}\";\n    kernels [k];\n}}\n"),
    );
    drop(image);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_safecall"));
    command.arg("check").arg(&file);
    // SAFETY: `setrlimit` between fork and exec touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 800 << 20,
                rlim_max: 800 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().expect("run safecall");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        &stderr[..stderr.len().min(400)]
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok (module `big`"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
