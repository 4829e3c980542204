//! Allocation (`let y = empty(...)`) and tuple returns through the parser, the printer, the
//! builder and the verifier (each error with its message and the place it points at).

use safecall::ir::build::*;
use safecall::ir::parse::parse;
use safecall::ir::verify::verify;
use safecall::ir::{AllocDevice, IntType, RetType, Stmt, print};

use crate::common::diagnostics::{assert_error, diagnose};

fn body(ret: &str, stmts: &str) -> String {
    format!(
        "module m;\n\nfn f(x: tensor[(n,), float32, device=cpu], d: device, k: i32) -> {ret} {{\n{stmts}\n}}\n"
    )
}

#[test]
fn the_check_module_prints_parses_back_and_verifies() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/checks/alloc.scir"
    ))
    .unwrap();
    let module = parse(&text).unwrap();
    let printed = print::print(&module);
    assert_eq!(parse(&printed).unwrap(), module);
    assert!(printed.contains("let y = empty((n, 2), float32, device(1i32, 0i32));"));
    assert!(printed.contains("let s = empty((n,), float32, x.device);"));
    assert!(printed.contains("let s = empty((), float64, device(1i32, 0i32));"));
    assert!(printed.contains("fn pair(n: i64) -> (tensor, i64) {"));
    assert!(printed.contains("return (a, n);"));
    verify(&module).unwrap();
}

#[test]
fn one_value_in_parentheses_is_an_expression_and_a_trailing_comma_a_tuple() {
    let text = body("i64", "    return (x.shape[0]) + 1;");
    let module = parse(&text).unwrap();
    assert!(matches!(module.functions[0].body[0], Stmt::Return(Some(_))));
    let text = body("(i64,)", "    return (x.shape[0],);");
    let module = parse(&text).unwrap();
    assert_eq!(
        module.functions[0].ret,
        RetType::Tuple(vec![RetType::Scalar(I64)])
    );
    assert!(matches!(&module.functions[0].body[0], Stmt::ReturnTuple(v) if v.len() == 1));
    assert_eq!(parse(&print::print(&module)).unwrap(), module);
    verify(&module).unwrap();
}

#[test]
fn the_builder_makes_what_the_parser_makes() {
    let mut m = ModuleBuilder::new("m");
    m.build_function("f", |f| {
        let x = f.tensor(
            "x",
            TensorSpecBuilder::new(["n"])
                .dtype_name("float32")
                .device(1),
        );
        f.returns(RetType::Tuple(vec![RetType::Tensor, RetType::Tensor]));
        let y = f.empty("y", [x.shape(0), int(2)], dtype("float16"), x.device());
        let z = f.empty(
            "z",
            [y.shape(1)],
            dtype("int8"),
            AllocDevice::Parts {
                device_type: int_of(IntType::I32, 1),
                device_id: int_of(IntType::I32, 0),
            },
        );
        f.ret_tuple([y.expr(), z.expr()]);
    });
    let built = m.build_verified().expect("valid IR").into_inner();
    let text = "module m;\n\nfn f(x: tensor[(n,), float32, device=cpu]) -> (tensor, tensor) {\n    \
                let y = empty((x.shape[0], 2), float16, x.device);\n    \
                let z = empty((y.shape[1],), int8, device(1i32, 0i32));\n    \
                return (y, z);\n}\n";
    assert_eq!(built, parse(text).unwrap());
}

#[test]
fn parse_errors_say_what_is_wrong() {
    let text = body(
        "tensor",
        "    let y = empty((2,), any, x.device);\n    return y;",
    );
    assert!(diagnose(&text).contains("an allocation needs a concrete dtype, not `any`"));
    let text = body(
        "tensor",
        "    let mut y = empty((2,), float32, x.device);\n    return y;",
    );
    assert!(diagnose(&text).contains("an allocation binds an immutable name; drop `mut`"));
    let text = body(
        "tensor",
        "    let y = empty(2, float32, x.device);\n    return y;",
    );
    assert!(
        diagnose(&text).contains("an allocation is written `empty((d0, d1, ...), dtype, device)`")
    );
}

#[test]
fn verifier_errors_point_at_the_operand() {
    assert_error(
        &body(
            "tensor",
            "    let y = empty((k,), float32, x.device);\n    return y;",
        ),
        "dimension 0 of `empty` must be i64, found i32",
        "4:20",
    );
    assert_error(
        &body(
            "tensor",
            "    let y = empty((2,), float32, k);\n    return y;",
        ),
        "the device of `empty` must be device, found i32",
        "4:34",
    );
    assert_error(
        &body(
            "tensor",
            "    let y = empty((2,), float32, device(1, k));\n    return y;",
        ),
        "the device type must be i32, found i64",
        "4:41",
    );
    assert_error(
        &body(
            "tensor",
            "    let y = empty((2,), dtype(2, 0, 1), d);\n    return y;",
        ),
        "`empty` of dtype dtype(2, 0, 1): its elements have no size",
        "4:5",
    );
    assert_error(
        &body(
            "i64",
            "    let y = empty((2,), float32, d);\n    return y.shape[1];",
        ),
        "dimension index 1 out of range: tensor `y` has 1 dimension",
        "5:12",
    );
    assert_error(
        &body(
            "tensor",
            "    let x2 = empty((2,), float32, d);\n    x2 = x;\n    return x2;",
        ),
        "cannot assign to `x2`",
        "5:5",
    );
    assert_error(
        &body("(tensor, i64)", "    return (x, 1, 2);"),
        "return type mismatch: `f` returns (tensor, i64) (2 values), but this `return` has 3 values",
        "4:5",
    );
    assert_error(
        &body("(tensor, i64)", "    return x;"),
        "return type mismatch: `f` returns (tensor, i64), found tensor (a tuple return is written `return (a, b);`)",
        "4:12",
    );
    assert_error(
        &body("(tensor, none)", "    return (x, x);"),
        "a tuple return type cannot hold none",
        "3:4",
    );
}
