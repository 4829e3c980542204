//! Which calls the LLVM translation makes `musttail` (`translate::function::tail_call`): only a call whose
//! result its block returns, to a callee of the caller's signature, with the caller's own
//! parameters or constants as arguments, in a function that takes no stack address, and whose
//! result is not a mutable variable. Each case is checked in the LLVM IR as built (which the
//! translation verifies).

use super::LlvmOptions;
use crate::backend::generator::CodeGenerator;
use crate::lir::builder::FuncBuilder;
use crate::lir::{Callee, FuncId, Function, Import, Linkage, Module, Signature, Ty};

/// `int f(void*, void*, int, void*)`, the safe-call shape.
fn safe_call() -> Signature {
    Signature::new(vec![Ty::Ptr, Ty::Ptr, Ty::I32, Ty::Ptr], Some(Ty::I32))
}

/// The callee: returns -1.
fn callee() -> Function {
    let mut b = FuncBuilder::new("callee", Linkage::Local, safe_call());
    let r = b.iconst(Ty::I32, -1);
    b.ret(Some(r));
    b.finish()
}

/// `caller` built by `body` (which ends the function), then the callee, and the LLVM IR.
fn llvm_ir(body: impl FnOnce(&mut FuncBuilder)) -> String {
    let mut b = FuncBuilder::new("caller", Linkage::Export, safe_call());
    body(&mut b);
    let module = Module {
        name: "m".to_owned(),
        functions: vec![b.finish(), callee()],
        imports: vec![Import {
            name: "other".to_owned(),
            sig: Signature::new(vec![Ty::Ptr], Some(Ty::I32)),
        }],
        ..Module::default()
    };
    LlvmOptions::default().backend_ir(&module).unwrap()
}

/// The four safe-call parameters of the function being built.
fn params(b: &FuncBuilder) -> Vec<crate::lir::Var> {
    (0..4).map(|i| b.param(i)).collect()
}

const CALLEE: Callee = Callee::Func(FuncId(1));

/// A named way of building the caller.
type Case = (&'static str, Box<dyn Fn(&mut FuncBuilder)>);

#[test]
fn a_returned_call_with_the_callers_parameters_is_musttail() {
    let ir = llvm_ir(|b| {
        let mut args = params(b);
        args[0] = b.iconst(Ty::Ptr, 0);
        let r = b.call(CALLEE, Some(Ty::I32), args);
        b.ret(r);
    });
    assert!(ir.contains("musttail call i32 @callee"), "{ir}");
    // A source marker between the call and the return (annotated builds) changes nothing.
    let ir = llvm_ir(|b| {
        let args = params(b);
        let r = b.call(CALLEE, Some(Ty::I32), args);
        b.source("after the call");
        b.ret(r);
    });
    assert!(ir.contains("musttail call i32 @callee"), "{ir}");
}

#[test]
fn calls_that_may_not_be_tail_calls_stay_calls() {
    // Each case builds a valid function that must keep a plain call.
    let cases: Vec<Case> = vec![
        (
            "the result is not returned",
            Box::new(|b| {
                let args = params(b);
                b.call(CALLEE, Some(Ty::I32), args);
                let zero = b.iconst(Ty::I32, 0);
                b.ret(Some(zero));
            }),
        ),
        (
            "a stack address is taken in another block",
            Box::new(|b| {
                let slot = b.slot(8, 8);
                let p = b.stack_addr(slot, 0);
                b.store_imm(Ty::I64, p, 0, 1);
                let next = b.new_block();
                b.jump(next);
                b.switch_to(next);
                let args = params(b);
                let r = b.call(CALLEE, Some(Ty::I32), args);
                b.ret(r);
            }),
        ),
        (
            "an argument is computed",
            Box::new(|b| {
                let mut args = params(b);
                args[2] = b.binary_imm(crate::lir::BinOp::Iadd, args[2], 1);
                let r = b.call(CALLEE, Some(Ty::I32), args);
                b.ret(r);
            }),
        ),
        (
            "the callee's signature differs",
            Box::new(|b| {
                let p = b.param(1);
                let r = b.call(
                    Callee::Import(crate::lir::ImportId(0)),
                    Some(Ty::I32),
                    vec![p],
                );
                b.ret(r);
            }),
        ),
        (
            "the result is a mutable variable",
            Box::new(|b| {
                let result = b.mutable_var(Ty::I32);
                let zero = b.iconst(Ty::I32, 0);
                b.assign(result, zero);
                let args = params(b);
                let r = b.call(CALLEE, Some(Ty::I32), args).unwrap();
                b.assign(result, r);
                b.ret(Some(result));
            }),
        ),
    ];
    for (what, body) in cases {
        let ir = llvm_ir(|b| body(b));
        assert!(!ir.contains("musttail"), "{what}: {ir}");
        assert!(ir.contains("call i32 @"), "{what}: no call left: {ir}");
    }
}
