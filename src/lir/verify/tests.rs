use super::*;
use crate::lir::builder::FuncBuilder;
use crate::lir::{Block, Import, IntCC, Linkage, VarDecl};

fn module_of(func: Function) -> Module {
    Module {
        name: "m".to_owned(),
        functions: vec![func],
        ..Module::default()
    }
}

fn check(func: Function) -> Result<(), LirError> {
    verify(&module_of(func))
}

fn error_of(func: Function) -> String {
    check(func)
        .expect_err("the verifier rejects it")
        .to_string()
}

/// `fn f(x: i32) -> i32`, with the entry block current.
fn builder() -> FuncBuilder {
    FuncBuilder::new(
        "f",
        Linkage::Local,
        Signature::new(vec![Ty::I32], Some(Ty::I32)),
    )
}

/// `fn f(x: i32) -> i32 { return x; }`.
fn returning_x() -> Function {
    let mut b = builder();
    b.ret(Some(b.param(0)));
    b.finish()
}

/// Declares one more single-assignment `i32` variable in `f`.
fn declare_i32(f: &mut Function) {
    f.vars.push(VarDecl {
        ty: Ty::I32,
        mutable: false,
    });
}

#[test]
fn a_well_formed_function_with_a_mutable_variable_across_a_diamond_passes() {
    let mut b = builder();
    let (then_b, else_b, join) = (b.new_block(), b.new_block(), b.new_block());
    let acc = b.mutable_var(Ty::I32);
    let zero = b.iconst(Ty::I32, 0);
    let c = b.icmp(IntCC::Slt, b.param(0), zero);
    b.branch(c, then_b, else_b);
    b.switch_to(then_b);
    let neg = b.unary(UnOp::Ineg, b.param(0));
    b.assign(acc, neg);
    b.jump(join);
    b.switch_to(else_b);
    b.assign(acc, b.param(0));
    b.jump(join);
    b.switch_to(join);
    b.ret(Some(acc));
    check(b.finish()).expect("valid");
}

#[test]
fn a_variable_assigned_on_one_path_only_is_used_before_assignment() {
    let mut b = builder();
    let (then_b, join) = (b.new_block(), b.new_block());
    let acc = b.mutable_var(Ty::I32);
    let zero = b.iconst(Ty::I32, 0);
    let c = b.icmp(IntCC::Slt, b.param(0), zero);
    b.branch(c, then_b, join);
    b.switch_to(then_b);
    b.assign(acc, b.param(0));
    b.jump(join);
    b.switch_to(join);
    b.ret(Some(acc));
    assert_eq!(
        error_of(b.finish()),
        "lowered function `f`, block2, terminator: v1 is used before it is assigned on some path from the entry"
    );
}

#[test]
fn a_use_before_the_definition_in_the_same_block_is_an_error() {
    let mut f = returning_x();
    declare_i32(&mut f);
    declare_i32(&mut f);
    f.blocks[0].insts = vec![
        Inst::Binary {
            dst: Var(2),
            op: BinOp::Iadd,
            a: Var(0),
            b: Var(1),
        },
        Inst::Iconst {
            dst: Var(1),
            value: 1,
        },
    ];
    f.blocks[0].term = Terminator::Return(Some(Var(2)));
    assert_eq!(
        error_of(f),
        "lowered function `f`, block0, instruction 0: v1 is used before it is assigned on some path from the entry"
    );
}

#[test]
fn a_single_assignment_variable_assigned_twice_is_an_error() {
    let mut b = builder();
    let one = b.iconst(Ty::I32, 1);
    b.assign(one, b.param(0));
    b.ret(Some(one));
    assert_eq!(
        error_of(b.finish()),
        "lowered function `f`: v1 is not mutable but is assigned 2 times"
    );
}

#[test]
fn operand_types_of_a_binary_operation_must_agree() {
    let mut b = builder();
    let wide = b.iconst(Ty::I64, 1);
    let mut f = {
        b.ret(Some(b.param(0)));
        b.finish()
    };
    declare_i32(&mut f);
    f.blocks[0].insts.push(Inst::Binary {
        dst: Var(2),
        op: BinOp::Iadd,
        a: Var(0),
        b: wide,
    });
    assert_eq!(
        error_of(f),
        "lowered function `f`, block0, instruction 1: v2, v0, v1 must have one type, but v2 is i32 and v1 is i64"
    );
}

#[test]
fn float_operations_on_integers_are_errors() {
    let mut f = returning_x();
    declare_i32(&mut f);
    f.blocks[0].insts.push(Inst::Binary {
        dst: Var(1),
        op: BinOp::Fadd,
        a: Var(0),
        b: Var(0),
    });
    assert!(error_of(f).ends_with("instruction 0: Fadd of i32 operands"));
}

#[test]
fn sext_only_widens_and_trunc_only_narrows() {
    for (op, from, to, ok) in [
        (ConvOp::Sext, Ty::I32, Ty::I64, true),
        (ConvOp::Sext, Ty::I64, Ty::I32, false),
        (ConvOp::Uext, Ty::I32, Ty::I32, false),
        (ConvOp::Trunc, Ty::I64, Ty::I8, true),
        (ConvOp::Trunc, Ty::I8, Ty::I64, false),
        (ConvOp::Bitcast, Ty::I64, Ty::F64, true),
        (ConvOp::Bitcast, Ty::I64, Ty::Ptr, false),
        (ConvOp::PtrToInt, Ty::Ptr, Ty::I64, true),
        (ConvOp::IntToPtr, Ty::I32, Ty::Ptr, false),
    ] {
        let mut b = FuncBuilder::new("f", Linkage::Local, Signature::new(vec![from], None));
        b.convert(op, b.param(0), to);
        b.ret(None);
        let result = check(b.finish());
        assert_eq!(result.is_ok(), ok, "{op:?} {from} -> {to}: {result:?}");
        if let Err(e) = result {
            assert_eq!(e.message, format!("{op:?} from {from} to {to}"));
        }
    }
}

#[test]
fn calls_are_checked_against_the_callee_signature() {
    let import = Import {
        name: "g".to_owned(),
        sig: Signature::new(vec![Ty::Ptr, Ty::I32], Some(Ty::I32)),
    };
    let with_args = |args: Vec<Var>, ret: Option<Ty>| {
        let mut b = builder();
        b.call(Callee::Import(crate::lir::ImportId(0)), ret, args);
        b.ret(Some(b.param(0)));
        let mut m = module_of(b.finish());
        m.imports.push(import.clone());
        verify(&m)
    };
    assert_eq!(
        with_args(vec![Var(0)], Some(Ty::I32)).unwrap_err().message,
        "1 arguments for a callee of 2 parameters"
    );
    assert_eq!(
        with_args(vec![Var(0), Var(0)], Some(Ty::I32))
            .unwrap_err()
            .message,
        "argument 0 (v0) is i32, the callee takes ptr"
    );
    let mut b = builder();
    b.call(
        Callee::Import(crate::lir::ImportId(3)),
        None,
        vec![b.param(0)],
    );
    b.ret(Some(b.param(0)));
    assert_eq!(
        error_of(b.finish()),
        "lowered function `f`, block0, instruction 0: import 3 does not exist"
    );
}

#[test]
fn terminators_are_checked() {
    let mut b = builder();
    b.branch(b.param(0), BlockId(0), BlockId(0));
    assert!(error_of(b.finish()).ends_with("terminator: v0 is i32, expected an i8 condition"));

    let mut b = builder();
    b.ret(None);
    assert!(error_of(b.finish()).ends_with("returns nothing from a function returning i32"));

    let mut b = builder();
    b.jump(BlockId(7));
    assert!(error_of(b.finish()).ends_with("terminator: block7 does not exist"));
}

#[test]
fn the_header_is_checked() {
    let mut f = returning_x();
    f.blocks.clear();
    assert_eq!(error_of(f), "lowered function `f`: no blocks");

    let mut f = returning_x();
    f.blocks = vec![Block {
        insts: Vec::new(),
        term: Terminator::Return(Some(Var(0))),
        cold: false,
    }];
    f.vars[0].ty = Ty::I64;
    assert_eq!(
        error_of(f),
        "lowered function `f`: parameter v0 is declared i64 but the signature says i32"
    );
}

#[test]
fn unreachable_blocks_are_type_checked_but_need_no_definitions() {
    let mut b = builder();
    let dead = b.new_block();
    let later = b.mutable_var(Ty::I32);
    b.ret(Some(b.param(0)));
    b.switch_to(dead);
    b.ret(Some(later));
    check(b.finish()).expect("a dead block's uses are not data-flow checked");
}

#[test]
fn every_example_lowers_to_verified_lir() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples/ir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "scir") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let (module, _) = crate::ir::parse::parse_in_dir(&text, path.parent())
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let verified = crate::ir::VerifiedModule::new(module)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let lowered = crate::lower::lower(&verified, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        verify(&lowered).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} examples found");
}
