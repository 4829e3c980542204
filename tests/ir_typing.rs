//! The typing helpers: expression types (spelled or found in a scope), operator and cast rules,
//! the names a function's parameters introduce, statement bindings.

use safecall::ir::parse::{parse, parse_expr};
use safecall::ir::typing::*;
use safecall::ir::*;

const I32: Type = Type::Scalar(ScalarType::Int(IntType::I32));
const I64: Type = Type::Scalar(ScalarType::Int(IntType::I64));
const U64: Type = Type::Scalar(ScalarType::Int(IntType::U64));
const F32: Type = Type::Scalar(ScalarType::Float(FloatType::F32));
const BOOL: Type = Type::Scalar(ScalarType::Bool);
const PTR: Type = Type::Scalar(ScalarType::Ptr);

fn scope(name: &str) -> Option<Type> {
    match name {
        "n" => Some(I64),
        "k" => Some(I32),
        "x" => Some(F32),
        "p" => Some(PTR),
        "b" => Some(BOOL),
        "t" => Some(Type::Tensor),
        "r" => Some(Type::Any),
        "s" => Some(Type::Str),
        _ => None,
    }
}

fn ty(text: &str) -> Result<Type, TypeError> {
    expr_type(&parse_expr(text).unwrap(), &scope)
}

#[test]
fn expression_types() {
    let cases: &[(&str, Type)] = &[
        ("n + 1", I64),
        ("k * 2i32", I32),
        ("x / 2.0f32", F32),
        ("-x", F32),
        ("~k", I32),
        ("!b", BOOL),
        ("n < 3 && b", BOOL),
        ("p == p", BOOL),
        ("ceil_div(n, 128)", I64),
        ("min(x, 1.0f32)", F32),
        ("select(b, n, 0)", I64),
        ("cast<i32>(n)", I32),
        ("cast<f32>(n)", F32),
        ("cast<u64>(p)", U64),
        ("cast<ptr>(n)", PTR),
        ("cast<i64>(b)", I64),
        ("cast<bool>(k)", BOOL),
        ("cast<f32>(r)", F32),
        ("offset(p, n)", PTR),
        ("load<u64>(offset(p, 8))", U64),
        ("t.data", PTR),
        ("t.shape[3]", I64),
        ("t.strides[0]", I64),
        ("t.ndim", I32),
        ("t.dtype", Type::DType),
        ("t.device", Type::Device),
        ("t.device_type", I32),
        ("t.device_id", I32),
        ("t.byte_offset", U64),
        ("is_none(r)", BOOL),
        ("\"text\"", Type::Str),
        ("t", Type::Tensor),
    ];
    for (text, want) in cases {
        assert_eq!(ty(text).as_ref(), Ok(want), "{text}");
    }
}

#[test]
fn type_errors_point_at_the_subexpression() {
    let cases: &[(&str, &[usize], &str)] = &[
        (
            "n + k",
            &[],
            "operands of `+` have different types: i64 and i32",
        ),
        (
            "(n + 1) * (k + 1i32)",
            &[],
            "operands of `*` have different types",
        ),
        (
            "n + (x % 2.0f32)",
            &[1],
            "`%` needs integer operands, found f32",
        ),
        (
            "b + b",
            &[],
            "`+` needs integer or float operands, found bool",
        ),
        ("n && b", &[], "operands of `&&` have different types"),
        (
            "x < x && n",
            &[],
            "operands of `&&` have different types: bool and i64",
        ),
        (
            "-b",
            &[],
            "`-` needs an integer or float operand, found bool",
        ),
        ("!n", &[], "`!` needs a bool operand, found i64"),
        ("~x", &[], "`~` needs an integer operand, found f32"),
        (
            "select(n, 1, 2)",
            &[0],
            "the condition of `select` must be bool, found i64",
        ),
        (
            "select(b, 1, 2i32)",
            &[],
            "the arms of `select` have different types: i64 and i32",
        ),
        (
            "select(b, t, t)",
            &[],
            "`select` chooses between scalar values, found tensor",
        ),
        ("cast<ptr>(k)", &[], "cannot cast i32 to ptr"),
        ("cast<bool>(x)", &[], "cannot cast f32 to bool"),
        ("cast<i32>(s)", &[], "cannot cast str to i32"),
        ("offset(n, n)", &[0], "`offset` needs a ptr, found i64"),
        (
            "offset(p, k)",
            &[1],
            "the byte offset of `offset` must be i64, found i32",
        ),
        ("load<f32>(n)", &[0], "`load` needs a ptr, found i64"),
        (
            "n.shape[0]",
            &[],
            "`n` is not a tensor parameter (it is i64)",
        ),
        ("is_none(n)", &[], "`n` is never None"),
        ("1 + (2 * zz)", &[1, 1], "`zz` is not in scope"),
    ];
    for &(text, path, msg) in cases {
        let err = ty(text).unwrap_err();
        assert_eq!(err.path, path, "{text}: {err}");
        assert!(err.to_string().contains(msg), "{text}: {err}");
    }
    assert_eq!(
        ty("q").unwrap_err().kind,
        TypeErrorKind::Unbound("q".into())
    );
}

#[test]
fn operator_rules() {
    assert_eq!(binary_type(BinOp::FloorMod, &I64, &I64), Ok(I64));
    assert!(binary_type(BinOp::FloorMod, &F32, &F32).is_err());
    assert_eq!(binary_type(BinOp::Ge, &F32, &F32), Ok(BOOL));
    assert!(binary_type(BinOp::Lt, &PTR, &PTR).is_err());
    assert_eq!(binary_type(BinOp::Ne, &PTR, &PTR), Ok(BOOL));
    assert!(binary_type(BinOp::Eq, &Type::DType, &Type::DType).is_err());
    assert_eq!(unary_type(UnOp::Neg, &I32), Ok(I32));
    assert!(cast_allowed(&I64, ScalarType::Ptr));
    assert!(!cast_allowed(&I32, ScalarType::Ptr));
    assert!(cast_allowed(&PTR, ScalarType::Int(IntType::U64)));
    assert!(!cast_allowed(&PTR, ScalarType::Float(FloatType::F64)));
    assert!(!cast_allowed(&BOOL, ScalarType::Float(FloatType::F32)));
    assert!(cast_allowed(&F32, ScalarType::Float(FloatType::F64)));
    assert!(cast_allowed(&Type::Any, ScalarType::Bool));
    assert!(!cast_allowed(&Type::Device, ScalarType::Int(IntType::I32)));
    assert!(
        bindable(&Type::Device) && bindable(&I32) && !bindable(&Type::Str) && !bindable(&Type::Any)
    );
}

#[test]
fn halves_convert_and_compare_only() {
    let half_scope = |name: &str| match name {
        "h" => Some(Type::Scalar(ScalarType::Float(FloatType::F16))),
        "g" => Some(Type::Scalar(ScalarType::Float(FloatType::BF16))),
        other => scope(other),
    };
    let ty = |text: &str| expr_type(&parse_expr(text).unwrap(), &half_scope);
    let f16 = Type::Scalar(ScalarType::Float(FloatType::F16));
    let bf16 = Type::Scalar(ScalarType::Float(FloatType::BF16));
    for (text, want) in [
        ("cast<f16>(x)", f16.clone()),
        ("cast<bf16>(cast<f64>(x))", bf16.clone()),
        ("cast<f32>(h)", F32),
        ("cast<bf16>(h)", bf16.clone()),
        ("h == h", BOOL),
        ("g != 1.5bf16", BOOL),
        ("h < 2.0f16", BOOL),
        ("g >= g", BOOL),
        ("select(b, h, 0.0f16)", f16.clone()),
        ("load<bf16>(p)", bf16.clone()),
        ("cast<f16>(r)", f16),
    ] {
        assert_eq!(ty(text), Ok(want), "{text}");
    }
    for (text, message) in [
        (
            "h + h",
            "`+` needs integer or float operands, found f16 (f16 and bf16 only convert and compare",
        ),
        (
            "-g",
            "`-` needs an integer or float operand, found bf16 (f16 and bf16 only convert",
        ),
        (
            "min(h, h)",
            "`min` needs integer or float operands, found f16",
        ),
        (
            "cast<f16>(n)",
            "cannot cast i64 to f16 (f16 and bf16 convert only to and from floats",
        ),
        (
            "cast<i32>(g)",
            "cannot cast bf16 to i32 (f16 and bf16 convert only",
        ),
        (
            "h == g",
            "operands of `==` have different types: f16 and bf16",
        ),
        (
            "h == 1.0f32",
            "operands of `==` have different types: f16 and f32",
        ),
    ] {
        let err = ty(text).unwrap_err().to_string();
        assert!(err.contains(message), "{text}: {err}");
    }
    // Halves convert to and from every float, never to or from integers, bools or pointers.
    let scalars = [
        ScalarType::Bool,
        ScalarType::Ptr,
        ScalarType::Int(IntType::I32),
    ];
    for half in [FloatType::F16, FloatType::BF16] {
        let h = Type::Scalar(ScalarType::Float(half));
        for other in FloatType::ALL {
            assert!(
                cast_allowed(&h, ScalarType::Float(other)),
                "{half:?} to {other:?}"
            );
            let o = Type::Scalar(ScalarType::Float(other));
            assert!(
                cast_allowed(&o, ScalarType::Float(half)),
                "{other:?} to {half:?}"
            );
        }
        for s in scalars {
            assert!(!cast_allowed(&h, s), "{half:?} to {s:?}");
            assert!(
                !cast_allowed(&Type::Scalar(s), ScalarType::Float(half)),
                "{s:?} to {half:?}"
            );
        }
    }
}

#[test]
fn parameter_bindings_include_tuple_elements_and_symbolic_variables() {
    let m = parse(
        "module m;\nfn f(x: tensor[(n, 4), float32, strides=(sx, 1)], y: optional[tensor[(n, k), float32, device_id=d]],\n      t: tuple(a: i32, b: optional[f64]), c: const(3), z: optional[tensor[(q,), any]]) {\n}\n",
    )
    .unwrap();
    let f = &m.functions[0];
    let bs = param_bindings(f);
    let summary: Vec<(&str, Type, bool)> = bs
        .iter()
        .map(|b| (b.name, b.ty.clone(), b.optional))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("x", Type::Tensor, false),
            ("n", I64, false),
            ("sx", I64, false),
            ("y", Type::Tensor, true),
            ("k", I64, true),
            ("d", I64, true),
            ("t", Type::Any, false),
            ("a", I32, false),
            ("b", Type::Scalar(ScalarType::Float(FloatType::F64)), true),
            ("c", I64, false),
            ("z", Type::Tensor, true),
            ("q", I64, true),
        ]
    );
    assert_eq!(
        bs[1].kind,
        BindingKind::SymVar {
            param: vec![0],
            source: SymSource::Shape(0)
        }
    );
    assert_eq!(
        bs[2].kind,
        BindingKind::SymVar {
            param: vec![0],
            source: SymSource::Stride(0)
        }
    );
    assert_eq!(
        bs[5].kind,
        BindingKind::SymVar {
            param: vec![1],
            source: SymSource::DeviceId
        }
    );
    assert!(matches!(&bs[7].kind, BindingKind::Param { path, .. } if path == &vec![2, 0]));

    let scope = FunctionScope::new(f);
    assert_eq!(scope.type_of("n"), Some(I64));
    assert_eq!(scope.tensor_ndim("x"), Some(2));
    assert_eq!(scope.tensor_ndim("z"), Some(1));
    assert!(
        scope.is_nullable("y")
            && scope.is_nullable("b")
            && !scope.is_nullable("x")
            && !scope.is_nullable("a")
    );
    assert!(expr_type(&parse_expr("x.shape[2]").unwrap(), &scope).is_err());
    assert_eq!(
        expr_type(&parse_expr("x.shape[1] + n").unwrap(), &scope),
        Ok(I64)
    );
}

#[test]
fn statement_bindings() {
    let m = parse(
        "module m;\nextern fn g(i64) -> i32;\nextern fn h();\nfn f(n: i64) {\n    let a = n * 2;\n    for i in 0i32..4i32 {\n    }\n    let r = call g(n);\n    let v = call h();\n    let q = call_packed global \"x\"();\n    let s = get_stream(1i32, 0i32);\n    return;\n}\n",
    )
    .unwrap();
    let f = &m.functions[0];
    let scope = FunctionScope::new(f);
    let got: Vec<Option<(String, Result<Type, String>)>> = f
        .body
        .iter()
        .map(|s| {
            stmt_binding(s, &scope, &m.externs)
                .map(|(n, t)| (n.to_owned(), t.map_err(|e| e.to_string())))
        })
        .collect();
    assert_eq!(
        got,
        vec![
            Some(("a".into(), Ok(I64))),
            Some(("i".into(), Ok(I32))),
            Some(("r".into(), Ok(I32))),
            Some((
                "v".into(),
                Err("extern `h` returns void; its result cannot be bound".into())
            )),
            Some(("q".into(), Ok(Type::Any))),
            Some(("s".into(), Ok(PTR))),
            None,
        ]
    );
    let mut scope = scope;
    scope.bind("a", I64);
    assert_eq!(scope.type_of("a"), Some(I64));
    scope.unbind("a");
    assert_eq!(scope.type_of("a"), None);
}

#[test]
fn spelled_types_need_no_scope_and_agree_with_expr_type() {
    let spelled = [
        ("1", I64),
        ("1.5f32", F32),
        ("true", BOOL),
        ("cast<u64>(n)", U64),
        ("load<i32>(p)", I32),
        ("offset(p, n)", PTR),
        ("\"text\"", Type::Str),
    ];
    for (text, want) in spelled {
        let e = parse_expr(text).unwrap_or_else(|err| panic!("{text}: {err:?}"));
        assert_eq!(spelled_type(&e), Some(want.clone()), "{text}");
        assert_eq!(expr_type(&e, &scope).unwrap(), want, "{text}");
    }
    // Names, operators and `select` take their types from the scope and their operands.
    for text in ["n", "-n", "n + n", "n < n", "select(true, n, n)"] {
        let e = parse_expr(text).unwrap();
        assert_eq!(spelled_type(&e), None, "{text}");
        assert!(expr_type(&e, &scope).is_ok(), "{text}");
    }
}
