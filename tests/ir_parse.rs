//! The parser: accepted syntax variants, canonical printing of non-canonical text, literals
//! (bit-exact floats, unsigned integers, escapes) and the source map.

use safecall::ir::parse::{parse, parse_expr, parse_with_source_map};
use safecall::ir::print::print;
use safecall::ir::source_map::{Block, Span, StmtPath};
use safecall::ir::*;

fn span_text(text: &str, s: Span) -> &str {
    &text[s.start..s.end]
}

#[test]
fn non_canonical_text_prints_canonically_and_stably() {
    let text = r#"
// A comment before the header.
module   m ;
fn f(x: tensor[(n), float32, strides=compact, device_id=same, byte_offset=zero, device=any,],) -> none {
    if x.shape[0] > 0 { return; } else { }
}
import k;
imported_module k { payload b"\x01"; kind "cuda"; }
extern fn g(i32,) -> i32;
system_lib_prefix "p_";
"#;
    let m = parse(text).unwrap();
    let printed = print(&m);
    assert_eq!(
        printed,
        "module m;\n\nsystem_lib_prefix \"p_\";\n\nextern fn g(i32) -> i32;\n\nimported_module k {\n    kind \"cuda\";\n    payload b\"\\x01\";\n}\n\nimport k;\n\nfn f(x: tensor[(n,), float32]) {\n    if x.shape[0] > 0 {\n        return;\n    }\n}\n"
    );
    assert_eq!(print(&parse(&printed).unwrap()), printed);
    assert_eq!(parse(&printed).unwrap(), m);
}

#[test]
fn doc_comments_keep_their_text() {
    let text = "module m;\n/// First line.\n///\n///   indented\n////slash\nfn f() {\n}\n";
    let m = parse(text).unwrap();
    assert_eq!(m.functions[0].doc, "First line.\n\n  indented\n/slash");
    let printed = print(&m);
    assert!(
        printed.contains("/// First line.\n///\n///   indented\n/// /slash\nfn f() {"),
        "{printed}"
    );
    assert_eq!(parse(&printed).unwrap(), m);
}

#[test]
fn float_literals_are_bit_exact() {
    let cases: &[(&str, u64, FloatType)] = &[
        ("1.5", 1.5f64.to_bits(), FloatType::F64),
        ("-0.0", (-0.0f64).to_bits(), FloatType::F64),
        ("1e300", 1e300f64.to_bits(), FloatType::F64),
        ("5e-324", 5e-324f64.to_bits(), FloatType::F64),
        ("inf", f64::INFINITY.to_bits(), FloatType::F64),
        ("-inf", f64::NEG_INFINITY.to_bits(), FloatType::F64),
        ("nan", 0x7ff8_0000_0000_0000, FloatType::F64),
        (
            "f64bits(0x7ff8000000000001)",
            0x7ff8_0000_0000_0001,
            FloatType::F64,
        ),
        (
            "f64bits(0xfff8000000000000)",
            0xfff8_0000_0000_0000,
            FloatType::F64,
        ),
        ("0.1f32", f64::from(0.1f32).to_bits(), FloatType::F32),
        ("-0.0f32", (-0.0f64).to_bits(), FloatType::F32),
        ("1f32", 1.0f64.to_bits(), FloatType::F32),
        ("inf_f32", f64::INFINITY.to_bits(), FloatType::F32),
        ("nan_f32", 0x7ff8_0000_0000_0000, FloatType::F32),
        ("f32bits(0x7fc00001)", 0x7ff8_0000_2000_0000, FloatType::F32),
        (
            "f64bits_f32(0x3fb999999999999a)",
            0.1f64.to_bits(),
            FloatType::F32,
        ),
    ];
    for &(text, bits, ty) in cases {
        let e = parse_expr(text).unwrap();
        assert_eq!(e, Expr::Float { bits, ty }, "{text}");
        // `1f32` is also accepted; it prints as `1.0f32`.
        let canonical = if text == "1f32" { "1.0f32" } else { text };
        assert_eq!(safecall::ir::print::print_expr(&e), canonical, "{text}");
    }
}

#[test]
fn half_literals_round_once_and_print_exactly() {
    use FloatType::{BF16, F16};
    let wide = |x: f64| x.to_bits();
    // (text, the value's f64 bits, type, how it prints)
    let cases: &[(&str, u64, FloatType, &str)] = &[
        ("1.5f16", wide(1.5), F16, "1.5f16"),
        ("-0.0bf16", wide(-0.0), BF16, "-0.0bf16"),
        ("2f16", wide(2.0), F16, "2.0f16"),
        // Read as the f64 0.1, then rounded to nearest even: f16 0x2e66, bf16 0x3dcd.
        ("0.1f16", wide(0.0999755859375), F16, "0.0999755859375f16"),
        ("0.1bf16", wide(0.10009765625), BF16, "0.10009765625bf16"),
        // Ties to even; overflow to infinity; below half the smallest subnormal to zero.
        ("1.00048828125f16", wide(1.0), F16, "1.0f16"),
        ("65520f16", wide(f64::INFINITY), F16, "inf_f16"),
        ("-1e39bf16", wide(f64::NEG_INFINITY), BF16, "-inf_bf16"),
        ("2.9802322387695312e-8f16", wide(0.0), F16, "0.0f16"),
        (
            "5.960464477539063e-8f16",
            wide(2f64.powi(-24)),
            F16,
            "5.960464477539063e-8f16",
        ),
        ("inf_f16", wide(f64::INFINITY), F16, "inf_f16"),
        ("-inf_bf16", wide(f64::NEG_INFINITY), BF16, "-inf_bf16"),
        ("nan_f16", 0x7ff8_0000_0000_0000, F16, "nan_f16"),
        ("nan_bf16", 0x7ff8_0000_0000_0000, BF16, "nan_bf16"),
        ("f16bits(0x3c00)", wide(1.0), F16, "1.0f16"),
        (
            "f16bits(0x7c01)",
            0x7ff0_0400_0000_0000,
            F16,
            "f16bits(0x7c01)",
        ),
        (
            "bf16bits(0xffc1)",
            0xfff8_2000_0000_0000,
            BF16,
            "bf16bits(0xffc1)",
        ),
        (
            "bf16bits(0x0001)",
            wide(2f64.powi(-133)),
            BF16,
            "9.183549615799121e-41bf16",
        ),
        (
            "f64bits_f16(0x3fb999999999999a)",
            wide(0.1),
            F16,
            "f64bits_f16(0x3fb999999999999a)",
        ),
    ];
    for &(text, bits, ty, printed) in cases {
        let e = parse_expr(text).unwrap();
        assert_eq!(e, Expr::Float { bits, ty }, "{text}");
        assert_eq!(safecall::ir::print::print_expr(&e), printed, "{text}");
        assert_eq!(parse_expr(printed).unwrap(), e, "{printed} reads back");
    }
    for (text, message) in [
        (
            "f16bits(0x10000)",
            "`f16bits` takes the 16 bits of an `f16`",
        ),
        ("1.5f8", "unknown literal suffix `f8`"),
    ] {
        let err = parse_expr(text).unwrap_err();
        assert!(err.message.contains(message), "{text}: {}", err.message);
    }
}

#[test]
fn integer_literals() {
    let cases: &[(&str, i64, IntType, &str)] = &[
        ("42", 42, IntType::I64, "42"),
        (
            "-9223372036854775808",
            i64::MIN,
            IntType::I64,
            "-9223372036854775808",
        ),
        (
            "18446744073709551615u64",
            -1,
            IntType::U64,
            "18446744073709551615u64",
        ),
        ("0xffu8", 255, IntType::U8, "255u8"),
        ("-128i8", -128, IntType::I8, "-128i8"),
        ("7u32", 7, IntType::U32, "7u32"),
    ];
    for &(text, value, ty, printed) in cases {
        let e = parse_expr(text).unwrap();
        assert_eq!(e, Expr::Int { value, ty }, "{text}");
        assert_eq!(safecall::ir::print::print_expr(&e), printed);
    }
    assert!(parse_expr("9223372036854775808").is_err());
    assert!(parse_expr("18446744073709551616u64").is_err());
    assert!(parse_expr("1.5i32").is_err());
    assert!(parse_expr("3x").is_err());
}

#[test]
fn negative_literal_versus_negation() {
    assert_eq!(
        parse_expr("-5").unwrap(),
        Expr::Int {
            value: -5,
            ty: IntType::I64
        }
    );
    assert_eq!(
        parse_expr("-(5)").unwrap(),
        Expr::Unary {
            op: UnOp::Neg,
            arg: Box::new(Expr::Int {
                value: 5,
                ty: IntType::I64
            })
        }
    );
    assert_eq!(
        parse_expr("a - -5").unwrap(),
        Expr::Binary {
            op: BinOp::Sub,
            lhs: Box::new(Expr::Var("a".into())),
            rhs: Box::new(Expr::Int {
                value: -5,
                ty: IntType::I64
            })
        }
    );
}

#[test]
fn precedence_and_associativity() {
    let e = parse_expr("a || b && c == d + e * f").unwrap();
    assert_eq!(
        safecall::ir::print::print_expr(&e),
        "a || b && c == d + e * f"
    );
    let Expr::Binary {
        op: BinOp::Or, rhs, ..
    } = e
    else {
        panic!()
    };
    let Expr::Binary {
        op: BinOp::And,
        rhs,
        ..
    } = *rhs
    else {
        panic!()
    };
    let Expr::Binary {
        op: BinOp::Eq, rhs, ..
    } = *rhs
    else {
        panic!()
    };
    assert!(matches!(*rhs, Expr::Binary { op: BinOp::Add, .. }));
    let e = parse_expr("a - b - c").unwrap();
    let Expr::Binary { lhs, .. } = &e else {
        panic!()
    };
    assert!(
        matches!(**lhs, Expr::Binary { op: BinOp::Sub, .. }),
        "left associative"
    );
    assert_eq!(
        safecall::ir::print::print_expr(&parse_expr("a - (b - c)").unwrap()),
        "a - (b - c)"
    );
    assert_eq!(
        safecall::ir::print::print_expr(&parse_expr("(a < b) == c").unwrap()),
        "(a < b) == c"
    );
    assert_eq!(
        safecall::ir::print::print_expr(&parse_expr("(a | b) & c ^ d").unwrap()),
        "(a | b) & c ^ d"
    );
}

#[test]
fn strings_bytes_and_quoted_names() {
    let text = "module `my module`;\nimported_module `odd label` {\n    kind \"k\\u{1}\";\n    payload b\"\\x00\\\\\\\"a\";\n}\nfn `f`(`in`: str) -> str {\n    return \"tab\\tquote\\\" é\";\n}\n";
    let m = parse(text).unwrap();
    assert_eq!(m.name, "my module");
    assert_eq!(m.imported_modules[0].label, "odd label");
    assert_eq!(m.imported_modules[0].kind, "k\u{1}");
    assert_eq!(m.imported_modules[0].payload, b"\0\\\"a");
    assert_eq!(m.functions[0].name, "f");
    assert_eq!(m.functions[0].params[0].name, "in");
    assert_eq!(
        m.functions[0].body,
        vec![Stmt::Return(Some(Expr::Str("tab\tquote\" é".into())))]
    );
    let printed = print(&m);
    assert!(printed.contains("fn f(`in`: str) -> str {"), "{printed}");
    assert_eq!(parse(&printed).unwrap(), m);
}

#[test]
fn any_unicode_whitespace_separates_tokens() {
    // ASCII whitespace is skipped by bytes, the rest as `str::trim_start` does: every
    // separator reads as a space would, comments after any of them too.
    let plain = parse("module m;\nfn f(x: i64) -> i64 {\n    return x + 1;\n}\n").unwrap();
    for sep in [
        "\t",
        "\r\n",
        "\u{b}",
        "\u{c}",
        "\u{a0}",
        "\u{2003}",
        "\u{3000} \n",
        " // note\n\u{85}",
    ] {
        let text = format!(
            "module{sep}m;{sep}fn{sep}f(x:{sep}i64){sep}->{sep}i64{sep}{{{sep}return{sep}x{sep}+{sep}1;{sep}}}{sep}"
        );
        assert_eq!(
            parse(&text).unwrap_or_else(|e| panic!("{sep:?}: {e:?}")),
            plain,
            "{sep:?}"
        );
    }
    let e = parse("module m;\u{200b}").unwrap_err();
    assert!(
        format!("{e:?}").contains("unexpected character"),
        "zero-width space is not whitespace: {e:?}"
    );
}

#[test]
fn strings_with_and_without_escapes_read_exactly() {
    // The lexer borrows a literal without escapes from the text and builds the others: both
    // read the same, wherever the escapes are.
    for (written, read) in [
        ("", ""),
        ("plain text", "plain text"),
        ("\\nfirst", "\nfirst"),
        ("last\\t", "last\t"),
        ("a\\\"b\\\\c", "a\"b\\c"),
        ("\\u{e9}t\\u{e9}", "été"),
        ("é non-ASCII, no escape", "é non-ASCII, no escape"),
    ] {
        let text = format!("module m;\nfn f() -> str {{\n    return \"{written}\";\n}}\n");
        let m = parse(&text).unwrap_or_else(|e| panic!("{written}: {e:?}"));
        assert_eq!(
            m.functions[0].body,
            vec![Stmt::Return(Some(Expr::Str(read.into())))],
            "{written}"
        );
    }
    for (written, read) in [("`plain`", "plain"), ("`a\\tb`", "a\tb"), ("`fn`", "fn")] {
        let text = format!("module m;\nfn {written}() {{\n}}\n");
        let m = parse(&text).unwrap_or_else(|e| panic!("{written}: {e:?}"));
        assert_eq!(m.functions[0].name, read, "{written}");
    }
    let e = parse("module m;\nfn f() -> str {\n    return \"open\n").unwrap_err();
    assert!(
        format!("{e:?}").contains("unterminated string literal"),
        "{e:?}"
    );
}

#[test]
fn issue_9_parameter_kinds() {
    let text = "module m;\nfn f(block: const(128), fast: const(false), eps: const(-1.5e-3), nothing: const(none), nan_const: const(nan),\n      pair: tuple(a: i64, b: optional[tuple(c: f32)]), p: data_ptr, s: stream,\n      x: tensor[(m, n), float16, strides=(sm, 1), device_id=dev, index=i32]) where sm % 8 == 0 {\n}\n";
    let m = parse(text).unwrap();
    let ps = &m.functions[0].params;
    assert_eq!(ps[0].ty, ParamType::Const(ConstValue::Int(128)));
    assert_eq!(ps[1].ty, ParamType::Const(ConstValue::Bool(false)));
    assert_eq!(
        ps[2].ty,
        ParamType::Const(ConstValue::Float((-1.5e-3f64).to_bits()))
    );
    assert_eq!(ps[3].ty, ParamType::Const(ConstValue::None));
    assert_eq!(
        ps[4].ty,
        ParamType::Const(ConstValue::Float(0x7ff8_0000_0000_0000))
    );
    let ParamType::Tuple(elems) = &ps[5].ty else {
        panic!()
    };
    assert_eq!(
        elems[1].ty,
        ParamType::Optional(Box::new(ParamType::Tuple(vec![Param {
            name: "c".into(),
            ty: ParamType::Float(FloatType::F32)
        }])))
    );
    assert_eq!(ps[6].ty, ParamType::DataPtr);
    assert_eq!(ps[7].ty, ParamType::Stream);
    let ParamType::Tensor(spec) = &ps[8].ty else {
        panic!()
    };
    assert_eq!(
        spec.strides,
        Strides::Exact(vec![Dim::Var("sm".into()), Dim::Const(1)])
    );
    assert_eq!(spec.device_id, DeviceIdPolicy::Var("dev".into()));
    assert_eq!(spec.index_type, Some(IntType::I32));
    assert_eq!(
        m.functions[0].constraints,
        vec![Constraint::Divisible {
            var: "sm".into(),
            divisor: 8
        }]
    );
    safecall::ir::verify(&m).unwrap();
    assert_eq!(parse(&print(&m)).unwrap(), m);
}

#[test]
fn source_map_spans() {
    let text = "module m;\n\nextern fn g(i64) -> i32;\n\nfn f(x: tensor[(n,), float32, align=16], t: tuple(a: i64, b: f32)) -> i64 where n % 4 == 0 {\n    let a2 = n * 2;\n    if a2 > 4 {\n        for i in 0..n step 2 {\n            let r = call g(i + 1);\n        }\n    } else if n == 0 {\n        return 0;\n    }\n    return a2;\n}\n";
    let (m, map) = parse_with_source_map(text).unwrap();
    assert_eq!(m.functions.len(), 1);
    assert_eq!(span_text(text, map.module_name), "m");
    assert_eq!(span_text(text, map.externs[0]), "extern fn g(i64) -> i32;");
    let f = &map.functions[0];
    assert_eq!(span_text(text, f.name), "f");
    assert!(span_text(text, f.span).starts_with("fn f(") && span_text(text, f.span).ends_with('}'));
    assert_eq!(span_text(text, f.end), "}");
    assert_eq!(f.end.line_col(text), (15, 1));
    assert_eq!(
        span_text(text, f.params[0].span),
        "x: tensor[(n,), float32, align=16]"
    );
    assert_eq!(
        span_text(text, f.params[0].ty),
        "tensor[(n,), float32, align=16]"
    );
    let tensor = f.params[0].tensor.as_ref().unwrap();
    assert_eq!(span_text(text, tensor.dims[0]), "n");
    assert_eq!(span_text(text, tensor.dtype), "float32");
    assert_eq!(span_text(text, tensor.attrs[0].1), "align=16");
    assert_eq!(span_text(text, f.params[1].elements[1].span), "b: f32");
    assert_eq!(span_text(text, f.ret.unwrap()), "i64");
    assert_eq!(span_text(text, f.constraints[0]), "n % 4 == 0");

    let stmt = |p: &StmtPath| &f.stmts[p];
    let s0 = stmt(&StmtPath::root(0));
    assert_eq!(span_text(text, s0.span), "let a2 = n * 2;");
    assert_eq!(span_text(text, s0.name.unwrap()), "a2");
    assert_eq!(span_text(text, s0.expr(&[0])), "n * 2");
    assert_eq!(span_text(text, s0.expr(&[0, 1])), "2");
    let if_path = StmtPath::root(1);
    assert!(span_text(text, stmt(&if_path).span).starts_with("if a2 > 4 {"));
    let for_path = if_path.child(Block::Then, 0);
    assert_eq!(span_text(text, stmt(&for_path).expr(&[1])), "n");
    let call_path = for_path.child(Block::Loop, 0);
    assert_eq!(call_path.to_string(), "body[1].then[0].loop[0]");
    assert_eq!(
        span_text(text, stmt(&call_path).span),
        "let r = call g(i + 1);"
    );
    assert_eq!(span_text(text, stmt(&call_path).expr(&[0, 0])), "i");
    let elif = if_path.child(Block::Else, 0);
    assert_eq!(span_text(text, stmt(&elif).expr(&[0])), "n == 0");
    let ret0 = elif.child(Block::Then, 0);
    assert_eq!(span_text(text, stmt(&ret0).span), "return 0;");
    assert_eq!(stmt(&ret0).span.line_col(text), (12, 9));
    assert_eq!(f.stmts.len(), 7);
    // Every statement path in the model has a span, and only those.
    for p in f.stmts.keys() {
        assert!(p.resolve(&m.functions[0].body).is_some(), "{p}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let err = parse_expr(&deep).unwrap_err();
    assert!(
        err.message.starts_with("nesting too deep"),
        "{}",
        err.message
    );
    let negs = format!("{}x", "-".repeat(100_000));
    assert!(
        parse_expr(&negs)
            .unwrap_err()
            .message
            .starts_with("nesting too deep")
    );
    let types = format!(
        "module m;\nfn f(x: {}i64{}) {{\n}}\n",
        "optional[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(
        parse(&types)
            .unwrap_err()
            .message
            .starts_with("nesting too deep")
    );
    let blocks = format!(
        "module m;\nfn f() {{\n{}{}}}\n",
        "if true {\n".repeat(10_000),
        "}\n".repeat(10_000)
    );
    assert!(
        parse(&blocks)
            .unwrap_err()
            .message
            .starts_with("nesting too deep")
    );
    // Moderate nesting is fine.
    let ok = format!("{}1{}", "(".repeat(50), ")".repeat(50));
    assert_eq!(
        parse_expr(&ok).unwrap(),
        Expr::Int {
            value: 1,
            ty: IntType::I64
        }
    );
}

#[test]
fn nesting_limits_allow_realistic_depths() {
    let blocks = format!(
        "module m;\nfn f() {{\n{}{}}}\n",
        "if true {\n".repeat(31),
        "}\n".repeat(31)
    );
    assert!(parse(&blocks).is_ok());
    let blocks = format!(
        "module m;\nfn f() {{\n{}{}}}\n",
        "if true {\n".repeat(32),
        "}\n".repeat(32)
    );
    assert!(
        parse(&blocks)
            .unwrap_err()
            .message
            .starts_with("nesting too deep")
    );
    let parens = format!("{}1{}", "(".repeat(127), ")".repeat(127));
    assert!(parse_expr(&parens).is_ok());
}

#[test]
fn every_type_word_parses_prints_and_is_listed() {
    let unknown = parse("module m;\nfn f(x: nosuchtype) {\n}\n").unwrap_err();
    let listed = format!("{unknown:?}");
    for word in ParamWord::ALL {
        let text = format!("module m;\n\nfn f(x: {}) {{\n}}\n", word.keyword());
        let m = parse(&text).unwrap();
        assert_eq!(m.functions[0].params[0].ty, word.param_type(), "{text}");
        assert_eq!(print(&m), text);
        assert!(
            listed.contains(&format!("`{}`", word.keyword())),
            "{listed}"
        );
    }
    for form in ParamForm::ALL {
        assert!(listed.contains(&format!("`{}`", form.shown())), "{listed}");
    }
    let unknown = parse("module m;\nfn f() -> nosuchtype {\n}\n").unwrap_err();
    let listed = format!("{unknown:?}");
    for word in RetWord::ALL {
        let text = format!("module m;\n\nfn f() -> {} {{\n}}\n", word.keyword());
        let m = parse(&text).unwrap();
        assert_eq!(m.functions[0].ret, word.ret_type(), "{text}");
        if word != RetWord::None {
            assert_eq!(print(&m), text);
        }
        assert!(
            listed.contains(&format!("`{}`", word.keyword())),
            "{listed}"
        );
    }
}
