//! Raised messages as templates (src/lower/raise): static texts by offset into the module's
//! message texts, run-time values by stored index. Edge cases of the template's layout, on
//! every delivery path: messages that differ only in their values' kinds, texts with
//! non-ASCII characters, a NUL, many values, values alone, a TMA-free check through the
//! explain path, and messages over the part limit.

use safecall::ir;
use safecall_runtime::{AnyView, Function};

use crate::common::built::{Built, deliver};
use crate::common::delivery::{Delivery, deliveries};

fn build(module: &ir::Module, how: Delivery) -> Built {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let dir = crate::common::libs::run_dir().join("raise_templates");
    std::fs::create_dir_all(&dir).expect("make the directory");
    // SAFETY: the IR is this test's own: it dereferences nothing.
    unsafe {
        deliver(
            module,
            how,
            &dir.join(format!("m_{n}.so")),
            Default::default(),
        )
    }
}

/// `kind: message` of a call that must fail.
fn error(f: &Function, args: &[AnyView<'_>]) -> String {
    match f.call(args) {
        Ok(_) => panic!("the call succeeded"),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    }
}

fn parse(text: &str) -> ir::Module {
    ir::parse::parse(text).unwrap_or_else(|e| panic!("{}", e.render("test", text)))
}

const KINDS: &str = r#"module kinds;
fn signed(a: i64) { assert a == 0 else ValueError("v=", a, "."); }
fn unsigned(a: i64) { assert a == 0 else ValueError("v=", cast<u64>(a), "."); }
fn real(a: f64) { assert a == 0.0 else ValueError("v=", a, "."); }
fn single(a: f32) { assert a == 0.0f32 else ValueError("v=", a, "."); }
fn flag(a: bool) { assert !a else ValueError("v=", a, "."); }
fn typed(a: i64) { assert a == 0 else TypeError("v=", a, "."); }
fn small(a: i8) { assert a == 0i8 else ValueError("v=", a, "."); }
fn usmall(a: u8) { assert a == 0u8 else ValueError("v=", a, "."); }
fn twice(a: i64, b: i64) { assert a == 0 else ValueError("v=", a, "; w=", cast<u64>(b), "; v=", a, "."); }
fn alone(a: i64, b: u64) { assert a == 0 else ValueError(a, b); }
fn wide(a: i64) { assert a == 0 else ValueError("é日本😀 ", a, " ünïcödé\ttab"); }
fn empty(a: i64) { assert a == 0 else ValueError("", a, "", "", a, ""); }
"#;

#[test]
fn messages_that_differ_only_in_their_values_kinds_render_each_kind() {
    let m = parse(KINDS);
    for how in deliveries() {
        let built = build(&m, how);
        let call = |name: &str, arg: AnyView<'_>| error(&built.function(name), &[arg]);
        assert_eq!(
            call("signed", AnyView::from(-1i64)),
            "ValueError: v=-1.",
            "{how:?}"
        );
        assert_eq!(
            call("unsigned", AnyView::from(-1i64)),
            "ValueError: v=18446744073709551615.",
            "{how:?}"
        );
        assert_eq!(
            call("real", AnyView::from(-1.5f64)),
            "ValueError: v=-1.5.",
            "{how:?}"
        );
        assert_eq!(
            call("single", AnyView::from(0.25f64)),
            "ValueError: v=0.25.",
            "{how:?}"
        );
        assert_eq!(
            call("flag", AnyView::from(true)),
            "ValueError: v=true.",
            "{how:?}"
        );
        assert_eq!(
            call("typed", AnyView::from(7i64)),
            "TypeError: v=7.",
            "{how:?}"
        );
        assert_eq!(
            call("small", AnyView::from(-128i64)),
            "ValueError: v=-128.",
            "{how:?}"
        );
        assert_eq!(
            call("usmall", AnyView::from(255i64)),
            "ValueError: v=255.",
            "{how:?}"
        );
        assert_eq!(
            call("wide", AnyView::from(3i64)),
            "ValueError: é日本😀 3 ünïcödé\ttab",
            "{how:?}"
        );
        assert_eq!(
            call("empty", AnyView::from(3i64)),
            "ValueError: 33",
            "{how:?}"
        );
        let f = built.function("twice");
        assert_eq!(
            error(&f, &[AnyView::from(-2i64), AnyView::from(-1i64)]),
            "ValueError: v=-2; w=18446744073709551615; v=-2.",
            "{how:?}"
        );
        let f = built.function("alone");
        assert_eq!(
            error(&f, &[AnyView::from(-2i64), AnyView::from(5i64)]),
            "ValueError: -25",
            "{how:?}"
        );
    }
}
