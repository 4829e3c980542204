//! `safecall check`.

use crate::snapshot;
use crate::support::Dir;

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
