//! Expressions: the one place the verifier types an expression (`expr`), literal checks and
//! expected types.

use super::super::model::*;
use super::super::source_map::*;
use super::super::typing::{self, TypeErrorKind};
use super::super::{half, syntax};
use super::{FnVerifier, StmtFocus};

impl<'m> FnVerifier<'_, 'm> {
    /// Types expression `index` of the statement at `path`, reporting problems and recording
    /// the type of it and its subexpressions. The verifier's one use of the typing rules
    /// ([`typing::expr_type_recorded`]): every statement types its expressions through here.
    pub(super) fn expr(&mut self, path: &StmtPath, index: usize, e: &Expr) -> Option<Type> {
        let mut ok = true;
        let mut at = std::mem::take(&mut self.expr_path);
        at.clear();
        at.push(index);
        self.literals(path, &mut at, e, &mut ok);
        self.expr_path = at;
        match typing::expr_type_recorded(e, &self.scope, &mut self.v.types) {
            // Names bound only by optional parameters are rare: look for uses only when some are.
            Ok(t) if self.optional_only.is_empty() => ok.then_some(t),
            Ok(t) => {
                let mut names = Vec::new();
                used_names(e, &mut vec![index], &mut names);
                for (n, at) in names {
                    if let Some(what) = self.optional_only.get(n).cloned() {
                        self.stmt_err(
                            path,
                            StmtFocus::Expr(at),
                            format!("{what} is bound only by optional parameters, so it may have no value here"),
                        );
                        ok = false;
                    }
                }
                ok.then_some(t)
            }
            Err(err) => {
                let mut p = vec![index];
                p.extend(&err.path);
                let message = match &err.kind {
                    TypeErrorKind::Unbound(n) => self.unbound_message(n, path),
                    TypeErrorKind::Invalid(m) => Some(m.clone()),
                };
                if let Some(m) = message {
                    self.stmt_err(path, StmtFocus::Expr(p), m);
                }
                None
            }
        }
    }

    /// Checks that integer constants fit and `f32` constants are exact.
    pub(super) fn literals(
        &mut self,
        path: &StmtPath,
        at: &mut Vec<usize>,
        e: &Expr,
        ok: &mut bool,
    ) {
        match e {
            Expr::Int { value, ty } if !syntax::int_fits(*value, *ty) => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(at.clone()),
                    format!(
                        "constant {} does not fit {}",
                        if ty.is_signed() {
                            value.to_string()
                        } else {
                            (*value as u64).to_string()
                        },
                        syntax::int_type(*ty)
                    ),
                );
                *ok = false;
            }
            Expr::Float {
                bits,
                ty: FloatType::F32,
            } if syntax::f64_bits_to_f32_exact(*bits).is_none() => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(at.clone()),
                    format!(
                        "f32 constant {} is not exactly representable as f32",
                        syntax::f64_literal(*bits)
                    ),
                );
                *ok = false;
            }
            Expr::Float {
                bits,
                ty: ty @ (FloatType::F16 | FloatType::BF16),
            } if half::f64_bits_to_half_exact(*bits, *ty).is_none() => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(at.clone()),
                    format!(
                        "{0} constant {1} is not exactly representable as {0} (the nearest is {2})",
                        ty.keyword(),
                        syntax::f64_literal(*bits),
                        syntax::half_literal(
                            half::half_to_f64_bits(half::round_f64_bits(*bits, *ty), *ty),
                            *ty
                        ),
                    ),
                );
                *ok = false;
            }
            Expr::Int { .. }
            | Expr::Float { .. }
            | Expr::Bool(_)
            | Expr::Str(_)
            | Expr::Var(_)
            | Expr::Field { .. }
            | Expr::Unary { .. }
            | Expr::Binary { .. }
            | Expr::Select { .. }
            | Expr::Cast { .. }
            | Expr::PtrOffset { .. }
            | Expr::Load { .. }
            | Expr::IsNone(_) => {
                let mut i = 0;
                while let Some(c) = expr_child(e, i) {
                    at.push(i);
                    self.literals(path, at, c, ok);
                    at.pop();
                    i += 1;
                }
            }
        }
    }

    pub(super) fn expect_type(
        &mut self,
        path: &StmtPath,
        index: usize,
        e: &Expr,
        want: &Type,
        what: &str,
    ) {
        if let Some(t) = self.expr(path, index, e)
            && &t != want
        {
            self.stmt_err(
                path,
                StmtFocus::Expr(vec![index]),
                format!("{what} must be {want}, found {t}"),
            );
        }
    }
}

/// Names an expression reads (variables, tensors of fields, `is_none` operands), each with
/// the path of the expression that reads it (`at` is the path of `e`).
fn used_names<'e>(e: &'e Expr, at: &mut Vec<usize>, out: &mut Vec<(&'e str, Vec<usize>)>) {
    match e {
        Expr::Var(n) | Expr::IsNone(n) => out.push((n, at.clone())),
        Expr::Field { tensor, .. } => out.push((tensor, at.clone())),
        Expr::Int { .. }
        | Expr::Float { .. }
        | Expr::Bool(_)
        | Expr::Str(_)
        | Expr::Unary { .. }
        | Expr::Binary { .. }
        | Expr::Select { .. }
        | Expr::Cast { .. }
        | Expr::PtrOffset { .. }
        | Expr::Load { .. } => {
            let mut i = 0;
            while let Some(c) = expr_child(e, i) {
                at.push(i);
                used_names(c, at, out);
                at.pop();
                i += 1;
            }
        }
    }
}
