//! The translation's own rules: early sealing and the extension peephole.
use cranelift_codegen::ir::{Function, InstBuilder, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

use super::{same_extension, sealable_on_entry};
use crate::lir::builder::FuncBuilder;
use crate::lir::{IntCC, Linkage, Signature, Ty};

#[test]
fn only_loop_headers_wait_to_be_sealed() {
    // entry -> header <-> body, header -> exit
    let mut b = FuncBuilder::new("f", Linkage::Local, Signature::new(vec![Ty::I64], None));
    let n = b.param(0);
    let (header, body, exit) = (b.new_block(), b.new_block(), b.new_block());
    b.jump(header);
    b.switch_to(header);
    let more = b.icmp_imm(IntCC::Sgt, n, 0);
    b.branch(more, body, exit);
    b.switch_to(body);
    b.jump(header);
    b.switch_to(exit);
    b.ret(None);
    let f = b.finish();
    let order: Vec<usize> = crate::lir::cfg::reverse_postorder(&f)
        .into_iter()
        .map(|b| b.0 as usize)
        .collect();
    let sealable = sealable_on_entry(&f, &order);
    assert!(
        !sealable[header.0 as usize],
        "the back edge from the body enters it"
    );
    for block in [0, body.0 as usize, exit.0 as usize] {
        assert!(
            sealable[block],
            "block {block} has every predecessor before it"
        );
    }
}

#[test]
fn equalities_see_through_matching_extensions_only() {
    let mut func = Function::new();
    let mut ctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut ctx);
    let entry = b.create_block();
    b.switch_to_block(entry);
    let (x32, y32, z16) = (
        b.ins().iconst(types::I32, -1),
        b.ins().iconst(types::I32, 7),
        b.ins().iconst(types::I16, 7),
    );
    let (sx, sy) = (
        b.ins().sextend(types::I64, x32),
        b.ins().sextend(types::I64, y32),
    );
    let uy = b.ins().uextend(types::I64, y32);
    let sz = b.ins().sextend(types::I64, z16);
    let f = b.func;
    assert_eq!(same_extension(f, sx, sy), Some((x32, y32)));
    assert_eq!(
        same_extension(f, sx, uy),
        None,
        "-1 sign- and zero-extended differ"
    );
    assert_eq!(
        same_extension(f, sy, sz),
        None,
        "operands of different widths"
    );
    assert_eq!(
        same_extension(f, x32, sy),
        None,
        "one side not an extension"
    );
}
