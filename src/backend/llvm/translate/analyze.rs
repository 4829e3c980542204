//! What the translator needs to know about each variable before translating a function.

use crate::lir::{self, BinOp, ConvOp, Inst, Ty, Var};

/// How an instruction or terminator uses a variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// As a branch or select condition.
    Cond,
    /// As the operand of `inttoptr`.
    IntToPtr,
    /// As an operand of an `iadd` defining this variable.
    Iadd(Var),
    /// Any other use.
    Other,
}

/// The kind of the `operand`-th use (in [`Inst::for_each_use`] order) of `inst`.
fn use_kind(inst: &Inst, operand: usize) -> Use {
    match inst {
        Inst::Binary {
            dst,
            op: BinOp::Iadd,
            ..
        } => Use::Iadd(*dst),
        Inst::Select { .. } if operand == 0 => Use::Cond,
        Inst::Convert {
            op: ConvOp::IntToPtr,
            ..
        } => Use::IntToPtr,
        _ => Use::Other,
    }
}

/// What the translator needs to know about each variable before translating.
pub(super) struct VarInfo {
    /// Lives in a stack home (mutable).
    pub home: Vec<bool>,
    /// A single-assignment `i64` that is `ptrtoint(p)` or a tracked value plus an offset.
    pub tracked: Vec<bool>,
    /// A tracked value only ever converted back to a pointer (directly or through tracked
    /// adds): it is never materialized as an integer.
    pub virtual_int: Vec<bool>,
    /// A single-assignment comparison only used as a condition: kept as an `i1`.
    pub bool_only: Vec<bool>,
}

/// Analyzes a verified function (every variable declared, single-assignment variables
/// assigned once).
pub(super) fn analyze(func: &lir::Function) -> VarInfo {
    let n = func.vars.len();
    let mut def_inst: Vec<Option<&Inst>> = vec![None; n];
    let mut all_uses: Vec<Vec<Use>> = vec![Vec::new(); n];
    for block in &func.blocks {
        for inst in &block.insts {
            if let Some(d) = inst.dst() {
                def_inst[d.0 as usize] = Some(inst);
            }
            let mut operand = 0;
            inst.for_each_use(|v| {
                all_uses[v.0 as usize].push(use_kind(inst, operand));
                operand += 1;
            });
        }
        match &block.term {
            lir::Terminator::Branch { cond, .. } => all_uses[cond.0 as usize].push(Use::Cond),
            lir::Terminator::Return(Some(v)) => all_uses[v.0 as usize].push(Use::Other),
            _ => {}
        }
    }
    let home: Vec<bool> = func.vars.iter().map(|d| d.mutable).collect();
    // The verifier guarantees that a variable that is not mutable is assigned at most once.
    let single = |v: Var| !home[v.0 as usize];

    // Tracked pointer integers, in dependency order (operands are defined before use).
    let mut tracked = vec![false; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if tracked[i] || !single(Var(i as u32)) || func.vars[i].ty != Ty::I64 {
                continue;
            }
            let t = match def_inst[i] {
                Some(Inst::Convert {
                    op: ConvOp::PtrToInt,
                    ..
                }) => true,
                Some(Inst::Binary {
                    op: BinOp::Iadd,
                    a,
                    b,
                    ..
                }) => tracked[a.0 as usize] != tracked[b.0 as usize],
                _ => false,
            };
            if t {
                tracked[i] = true;
                changed = true;
            }
        }
    }
    let mut virtual_int = tracked.clone();
    changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if virtual_int[i]
                && !all_uses[i].iter().all(|u| match u {
                    Use::IntToPtr => true,
                    Use::Iadd(dst) => virtual_int[dst.0 as usize],
                    _ => false,
                })
            {
                virtual_int[i] = false;
                changed = true;
            }
        }
    }
    let bool_only = (0..n)
        .map(|i| {
            single(Var(i as u32))
                && matches!(def_inst[i], Some(Inst::Icmp { .. } | Inst::Fcmp { .. }))
                && all_uses[i].iter().all(|u| *u == Use::Cond)
        })
        .collect();
    VarInfo {
        home,
        tracked,
        virtual_int,
        bool_only,
    }
}
