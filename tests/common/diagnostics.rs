//! Rendered parse and verify diagnostics of IR text, for the tests that assert an error's
//! message and position (tests/ir_gpu.rs and tests/ir_alloc.rs).

use safecall::ir::parse::parse_with_source_map;
use safecall::ir::verify::{Source, render_errors, verify};

/// Parses and verifies `text`; returns the rendered diagnostics (parse or verify errors).
pub fn diagnose(text: &str) -> String {
    match parse_with_source_map(text) {
        Err(e) => e.render("input.scir", text),
        Ok((module, map)) => match verify(&module) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(errors) => render_errors(
                &errors,
                Some(Source {
                    file: "input.scir",
                    text,
                    map: &map,
                }),
            ),
        },
    }
}

/// Asserts the diagnostics of `text` hold `message` and point at `line:column`.
pub fn assert_error(text: &str, message: &str, at: &str) {
    assert_rendered(&diagnose(text), message, at);
}

/// Asserts rendered diagnostics hold `message` and point at `line:column`.
pub fn assert_rendered(rendered: &str, message: &str, at: &str) {
    assert!(
        rendered.contains(message),
        "expected {message:?} in:\n{rendered}"
    );
    assert!(
        rendered.contains(&format!("--> input.scir:{at}\n")),
        "expected position {at} in:\n{rendered}"
    );
}
