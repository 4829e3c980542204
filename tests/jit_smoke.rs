use safecall_runtime::AnyView;

#[test]
fn jit_scalar_function_runs_and_raises() {
    let text = r#"
module demo;
fn twice(n: i64) -> i64 { return n * 2; }
fn div(a: i64, b: i64) -> i64 { return a / b; }
"#;
    let module = safecall::ir::parse::parse(text)
        .map_err(|e| e.render("x", text))
        .unwrap();
    let jit = safecall::jit::compile(&module, &Default::default()).unwrap();
    let twice = jit.function("twice").unwrap();
    eprintln!("call 1");
    let out = twice.call(&[AnyView::from(21i64)]).unwrap();
    eprintln!("call 1 ok");
    assert_eq!(out.cast::<i64>().unwrap(), 42);
    let s = safecall_runtime::Any::from("x");
    let err = twice.call(&[AnyView::from(&s)]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(
        err.message(),
        "twice(n: i64): argument 'n' (#0): expected int, got ffi.String"
    );
    let div = jit.function("div").unwrap();
    let err = div
        .call(&[AnyView::from(1i64), AnyView::from(0i64)])
        .unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    eprintln!("{}", err.message());
}
