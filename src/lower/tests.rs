//! Which lowering failures are limits (a caller can act on them) and which are internal errors
//! (IR that should never have passed the verifier).

use super::{LowerError, LowerErrorKind, LowerOptions, lower};
use crate::ir;

fn parse(text: &str) -> ir::Module {
    ir::parse(text).unwrap_or_else(|e| panic!("test IR does not parse: {e:?}"))
}

fn lower_err(module: &ir::Module, options: &LowerOptions) -> LowerError {
    // The lowering of unverified IR: what a bug in the verifier would let through.
    match lower(&ir::VerifiedModule::trust(module), options) {
        Ok(_) => panic!("lowering succeeded"),
        Err(e) => e,
    }
}

#[test]
fn ir_the_verifier_rejects_is_an_internal_error() {
    // A call of an extern function the module does not declare: the verifier rejects it, so
    // reaching the lowering is a bug of the caller or of safecall.
    let module = parse("module m;\nfn f() {\n    call missing();\n}\n");
    assert!(
        ir::verify(&module).is_err(),
        "the verifier should reject this"
    );
    let e = lower_err(&module, &LowerOptions::default());
    assert_eq!(e.kind, LowerErrorKind::Internal);
    assert!(e.is_internal());
    assert_eq!(e.function.as_deref(), Some("f"));
    let shown = e.to_string();
    assert!(
        shown.starts_with("internal error (a bug in safecall): in function `f`: ")
            && shown.contains("`missing`"),
        "{shown}"
    );
}

#[test]
fn a_name_out_of_scope_is_an_internal_error() {
    let module = parse("module m;\nfn f() -> i64 {\n    return y;\n}\n");
    assert!(
        ir::verify(&module).is_err(),
        "the verifier should reject this"
    );
    let e = lower_err(&module, &LowerOptions::default());
    assert!(e.is_internal(), "{e}");
    // The verifier could not type `y`, so the lowering has no type to read for it.
    assert!(
        e.message
            .contains("the verifier recorded no type for `y` (it should have rejected this)"),
        "{e}"
    );
}

#[test]
fn the_verifier_records_the_type_of_every_subexpression() {
    let module = parse("module m;\nfn f(x: i32) -> bool {\n    return cast<i64>(x) + 1 < 8;\n}\n");
    let verified = ir::verify(&module).expect("valid");
    let ir::Stmt::Return(Some(less)) = &module.functions[0].body[0] else {
        panic!("a return");
    };
    let ir::Expr::Binary { lhs: sum, .. } = less else {
        panic!("a comparison");
    };
    let ir::Expr::Binary { lhs: cast, .. } = &**sum else {
        panic!("a sum");
    };
    let ir::Expr::Cast { arg: x, .. } = &**cast else {
        panic!("a cast");
    };
    let scalar = |s| Some(ir::Type::Scalar(s));
    let i64t = ir::ScalarType::Int(ir::IntType::I64);
    assert_eq!(verified.expr_type(less), scalar(ir::ScalarType::Bool));
    assert_eq!(verified.expr_type(sum), scalar(i64t));
    assert_eq!(verified.expr_type(cast), scalar(i64t));
    assert_eq!(
        verified.expr_type(x),
        scalar(ir::ScalarType::Int(ir::IntType::I32))
    );
    // A copy of the module has expressions of its own, which this verification did not type
    // (a cast spells its type, so it has one wherever it comes from).
    let copy = module.clone();
    let ir::Stmt::Return(Some(copied)) = &copy.functions[0].body[0] else {
        panic!("a return");
    };
    assert_eq!(verified.expr_type(copied), None);
    let ir::Expr::Binary {
        lhs: copied_sum, ..
    } = copied
    else {
        panic!("a comparison");
    };
    let ir::Expr::Binary {
        lhs: copied_cast, ..
    } = &**copied_sum
    else {
        panic!("a sum");
    };
    assert_eq!(verified.expr_type(copied_sum), None);
    assert_eq!(verified.expr_type(copied_cast), scalar(i64t));
    // An owned verified module keeps its types when cloned (the clone records its own).
    let owned = ir::VerifiedModule::new(module.clone()).expect("valid");
    let cloned = owned.clone();
    let ir::Stmt::Return(Some(cloned_less)) = &cloned.functions[0].body[0] else {
        panic!("a return");
    };
    assert_eq!(cloned.expr_type(cloned_less), scalar(ir::ScalarType::Bool));
    assert_eq!(
        lower(&cloned, &LowerOptions::default())
            .unwrap()
            .to_string(),
        lower(&verified, &LowerOptions::default())
            .unwrap()
            .to_string()
    );
}

#[test]
fn verified_ir_beyond_a_limit_is_not_internal() {
    // A string literal with a NUL byte passed to a packed call: valid IR, but the lowering
    // passes literals as C strings.
    let module = parse("module m;\nfn f() {\n    call_packed global \"g\"(\"a\\0b\");\n}\n");
    assert!(ir::verify(&module).is_ok(), "the verifier accepts this");
    let e = lower_err(&module, &LowerOptions::default());
    assert_eq!(e.kind, LowerErrorKind::Limit);
    assert_eq!(e.function.as_deref(), Some("f"));
    assert_eq!(
        e.to_string(),
        "in function `f`: a string literal passed to a packed call cannot contain NUL bytes"
    );
}

#[test]
fn options_that_do_not_fit_the_module_are_not_internal() {
    let module = parse("module m;\nfn f() {\n}\n");
    assert!(ir::verify(&module).is_ok());
    let options = LowerOptions {
        main_alias: Some("g".to_owned()),
        ..LowerOptions::default()
    };
    let e = lower_err(&module, &options);
    assert_eq!(e.kind, LowerErrorKind::Limit);
    assert!(
        e.message.contains("`g` is not a function of this module"),
        "{e}"
    );
}

#[test]
fn lowering_is_deterministic() {
    // Symbolic variables bound only under an optional tensor are bound after the checks with
    // a flag telling whether they have a value; with eight of them, an order taken from a
    // hash map would differ between lowerings.
    let module = parse(
        "module m;\nfn f(x: optional[tensor[(a, b, c, d, e, g, h, k), float32]]) -> i64 {\n    return 0;\n}\n",
    );
    let module = ir::verify(&module).expect("valid");
    let first = lower(&module, &LowerOptions::default())
        .unwrap()
        .to_string();
    for _ in 0..8 {
        let again = lower(&module, &LowerOptions::default())
            .unwrap()
            .to_string();
        assert_eq!(first, again, "two lowerings of one module differ");
    }
}

/// `LowerSettings::branch_per_check`: each argument check of the fast path branches to the
/// explain block on its own; the default folds the checks between branches into one
/// condition with `and`s.
#[test]
fn branch_per_check_gives_each_check_its_own_branch() {
    use crate::lir::{BinOp, Inst, Terminator};

    let module = parse(
        "module m;\nfn f(x: tensor[(n,), float32, device=cpu], y: tensor[(n,), float32, device=cpu]) {\n}\n",
    );
    let verified = ir::verify(&module).expect("valid");
    // (branches, `and`s) in the exported function.
    let shape = |branch_per_check: bool| {
        let settings = super::LowerSettings {
            branch_per_check,
            ..super::LowerSettings::default()
        };
        let lowered = super::lower_with(&verified, &settings).expect("lowers");
        let f = lowered
            .functions
            .iter()
            .find(|f| f.name == "__tvm_ffi_f")
            .expect("the exported function");
        let branches = f
            .blocks
            .iter()
            .filter(|b| matches!(b.term, Terminator::Branch { .. }))
            .count();
        let ands = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| matches!(i, Inst::Binary { op: BinOp::And, .. }))
            .count();
        (branches, ands)
    };
    let (folded_branches, folded_ands) = shape(false);
    let (branches, ands) = shape(true);
    // The `and`s left are inside single conditions (a tensor's type index and non-NULL
    // handle): every fold between checks became a branch of its own.
    assert!(ands < folded_ands, "{ands} `and`s against {folded_ands}");
    assert_eq!(
        branches - folded_branches,
        folded_ands - ands,
        "each fold becomes one branch ({branches} branches against {folded_branches})"
    );
}
