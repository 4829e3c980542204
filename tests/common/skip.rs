//! Skips that stay visible: a test that cannot run here says why on stderr and records it in
//! `target/tmp/skips.log`, which `cargo xtask test` prints as a summary at the end (libtest
//! reports such a test as passed, and hides its stderr unless it fails). Under `CI=true` a
//! skip is a failure instead.

#![allow(dead_code)]

use std::io::Write;

/// The file skips are appended to: one line `test-binary::test: reason` per skip.
pub const SKIP_LOG: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/skips.log");

/// Whether the tests run in CI, where every skip is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips the calling test (the caller returns): fails under `CI=true`; otherwise prints
/// `SKIPPED test: reason` to stderr and appends it to [`SKIP_LOG`].
pub fn skip(reason: &str) {
    // libtest names each test's thread after the test.
    let thread = std::thread::current();
    let test = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("?")
    );
    assert!(!in_ci(), "CI=true, so {test} cannot be skipped: {reason}");
    let line = format!("{test}: {reason}");
    eprintln!("SKIPPED {line}");
    let logged = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(SKIP_LOG)
        .and_then(|mut f| writeln!(f, "{}", line.replace('\n', " ")));
    if let Err(e) = logged {
        eprintln!("(cannot record the skip in {SKIP_LOG}: {e})");
    }
}
