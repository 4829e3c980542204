//! Which functions of a module can run on a call that succeeds: the code whose speed matters.
//!
//! A function is on the success path when it is not [cold](Function::cold) and it is exported,
//! aliased, referenced from a data object (an `.init_array` constructor, a function table), or
//! called or addressed from a block that is not cold of a function on the success path. The
//! others (the explain functions that a failing check calls from its cold block, the error
//! helpers) run only when a call fails, where a backend may trade code quality for compile
//! time.

use super::{Block, Callee, FuncId, Function, Inst, Linkage, Module, Symbol};

/// For each function of `module` (by index), whether it is on the success path.
pub fn success_path_functions(module: &Module) -> Vec<bool> {
    let mut on_path = vec![false; module.functions.len()];
    let mut work = Vec::new();
    let reach = |id: FuncId, on_path: &mut Vec<bool>, work: &mut Vec<FuncId>| {
        let i = id.0 as usize;
        if !on_path[i] && !module.functions[i].cold {
            on_path[i] = true;
            work.push(id);
        }
    };
    for (i, f) in module.functions.iter().enumerate() {
        match f.linkage {
            Linkage::Export => reach(FuncId(i as u32), &mut on_path, &mut work),
            Linkage::Local => {}
        }
    }
    for &(_, target) in &module.aliases {
        reach(target, &mut on_path, &mut work);
    }
    for reloc in module.data.iter().flat_map(|d| &d.relocs) {
        match reloc.symbol {
            Symbol::Func(f) => reach(f, &mut on_path, &mut work),
            Symbol::Data(_) => {}
        }
    }
    while let Some(id) = work.pop() {
        for inst in hot_insts(module.func(id)) {
            match inst {
                Inst::Call {
                    callee: Callee::Func(f),
                    ..
                }
                | Inst::SymbolAddr {
                    symbol: Symbol::Func(f),
                    ..
                } => reach(*f, &mut on_path, &mut work),
                _ => {}
            }
        }
    }
    on_path
}

/// The instructions of the blocks of `f` that are not cold.
fn hot_insts(f: &Function) -> impl Iterator<Item = &Inst> {
    f.blocks
        .iter()
        .filter(|b: &&Block| !b.cold)
        .flat_map(|b| &b.insts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::builder::FuncBuilder;
    use crate::lir::{Signature, Ty};

    fn function(name: &str, linkage: Linkage, body: impl FnOnce(&mut FuncBuilder)) -> Function {
        let mut b = FuncBuilder::new(name, linkage, Signature::new(vec![], Some(Ty::I32)));
        body(&mut b);
        b.finish()
    }

    #[test]
    fn exports_and_what_their_hot_blocks_call_are_on_the_path_cold_blocks_are_not() {
        // 0: exported; calls 1 on its hot path and 2 from a cold block.
        let main = function("main", Linkage::Export, |b| {
            let r = b
                .call(Callee::Func(FuncId(1)), Some(Ty::I32), vec![])
                .unwrap();
            let cold = b.new_cold_block();
            let done = b.new_block();
            b.branch(r, cold, done);
            b.switch_to(cold);
            let e = b
                .call(Callee::Func(FuncId(2)), Some(Ty::I32), vec![])
                .unwrap();
            b.ret(Some(e));
            b.switch_to(done);
            b.ret(Some(r));
        });
        // 1: a local helper on the success path, which addresses 3.
        let helper = function("helper", Linkage::Local, |b| {
            b.symbol_addr(Symbol::Func(FuncId(3)));
            let z = b.iconst(Ty::I32, 0);
            b.ret(Some(z));
        });
        // 2: the explain function, reached only from the cold block; it calls 4.
        let explain = function("explain", Linkage::Local, |b| {
            let r = b
                .call(Callee::Func(FuncId(4)), Some(Ty::I32), vec![])
                .unwrap();
            b.ret(Some(r));
        });
        let addressed = function("addressed", Linkage::Local, |b| {
            let z = b.iconst(Ty::I32, 0);
            b.ret(Some(z));
        });
        let raise = function("raise", Linkage::Local, |b| {
            b.set_cold();
            let z = b.iconst(Ty::I32, -1);
            b.ret(Some(z));
        });
        // 5: exported but cold.
        let cold_export = function("cold_export", Linkage::Export, |b| {
            b.set_cold();
            let z = b.iconst(Ty::I32, 0);
            b.ret(Some(z));
        });
        let module = Module {
            name: "m".to_owned(),
            functions: vec![main, helper, explain, addressed, raise, cold_export],
            ..Default::default()
        };
        assert_eq!(
            success_path_functions(&module),
            [true, true, false, true, false, false]
        );
    }
}
