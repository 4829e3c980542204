//! The first binder of each name a function's statements bind, collected before the body is
//! verified (so that a use before its `let` can say where the name is bound).

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use super::super::model::*;
use super::super::source_map::*;

/// Records the first binder of each name bound by a statement.
pub(super) fn collect_binders(
    stmts: &[Stmt],
    parent: &StmtPath,
    block: Block,
    out: &mut HashMap<String, StmtPath, FxBuildHasher>,
) {
    for (i, s) in stmts.iter().enumerate() {
        let path = if block == Block::Body {
            StmtPath::root(i)
        } else {
            parent.child(block, i)
        };
        let name = match s {
            Stmt::Let { name, .. } => Some(name),
            Stmt::For { var, .. } => Some(var),
            Stmt::CallExtern { dest, .. } | Stmt::CallPacked { dest, .. } => dest.as_ref(),
            Stmt::GetStream { dest, .. } => Some(dest),
            Stmt::Alloc(alloc) => Some(&alloc.dest),
            Stmt::Assign { .. }
            | Stmt::Store { .. }
            | Stmt::If { .. }
            | Stmt::Assert { .. }
            | Stmt::Launch(_)
            | Stmt::Return(_)
            | Stmt::ReturnTuple(_) => None,
        };
        if let Some(n) = name {
            out.entry(n.clone()).or_insert_with(|| path.clone());
        }
        match s {
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                collect_binders(then_body, &path, Block::Then, out);
                collect_binders(else_body, &path, Block::Else, out);
            }
            Stmt::For { body, .. } => collect_binders(body, &path, Block::Loop, out),
            Stmt::Let { .. }
            | Stmt::Assign { .. }
            | Stmt::Store { .. }
            | Stmt::Assert { .. }
            | Stmt::CallExtern { .. }
            | Stmt::CallPacked { .. }
            | Stmt::GetStream { .. }
            | Stmt::Launch(_)
            | Stmt::Alloc(_)
            | Stmt::Return(_)
            | Stmt::ReturnTuple(_) => {}
        }
    }
}
