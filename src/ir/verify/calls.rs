//! Calls: `call_extern` against the module's extern declarations and `call_packed` callees.

use super::super::model::*;
use super::super::source_map::*;
use super::super::typing::Scope;
use super::{FnVerifier, StmtFocus};

impl FnVerifier<'_, '_> {
    /// `[DEST =] call_extern FUNC(ARGS);`: a declared extern, arguments of its parameter types
    /// (a string literal for a `ptr`, without NUL); binds its result.
    pub(super) fn call_extern(
        &mut self,
        path: &StmtPath,
        dest: Option<&str>,
        func: &str,
        args: &[Expr],
    ) {
        let decl = self.v.m.externs.iter().find(|e| e.name == func);
        let arg_types: Vec<Option<Type>> = args
            .iter()
            .enumerate()
            .map(|(i, a)| self.expr(path, i, a))
            .collect();
        let mut ret = None;
        match decl {
            None => {
                self.stmt_err(
                    path,
                    StmtFocus::Name,
                    format!("call to undeclared extern function `{func}`"),
                );
            }
            Some(decl) => {
                if decl.params.len() != args.len() {
                    self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        format!(
                            "wrong number of arguments: extern `{func}` takes {}, found {}",
                            decl.params.len(),
                            args.len()
                        ),
                    );
                } else {
                    for (i, (p, t)) in decl.params.iter().zip(&arg_types).enumerate() {
                        let literal = matches!(&args[i], Expr::Str(_));
                        if let Expr::Str(s) = &args[i]
                            && *p == ScalarType::Ptr
                            && s.contains('\0')
                        {
                            self.stmt_err(
                                path,
                                StmtFocus::Expr(vec![i]),
                                "a string passed as a C string cannot contain NUL".into(),
                            );
                        }
                        if let Some(t) = t
                            && *t != Type::Scalar(*p)
                            && !(literal && *p == ScalarType::Ptr)
                        {
                            self.stmt_err(
                                path,
                                StmtFocus::Expr(vec![i]),
                                format!("argument {i} of `{func}` must be {p}, found {t}"),
                            );
                        }
                    }
                }
                match (dest, decl.ret) {
                    (Some(d), None) => self.stmt_err(
                        path,
                        StmtFocus::Name,
                        format!(
                            "extern `{func}` returns void; there is no result to bind to `{d}`"
                        ),
                    ),
                    (_, Some(r)) => ret = Some(Type::Scalar(r)),
                    _ => {}
                }
            }
        }
        if let Some(d) = dest {
            self.declare(path, d, ret, false);
        }
    }

    /// `[DEST =] call_packed CALLEE(ARGS);`: a `func` parameter or a non-empty name (`import`
    /// only when the module imports something); binds an `any`.
    pub(super) fn call_packed(
        &mut self,
        path: &StmtPath,
        dest: Option<&str>,
        callee: &Callee,
        args: &[Expr],
    ) {
        match callee {
            Callee::Param(p) => match self.scope.type_of(p) {
                Some(Type::Func) => {}
                Some(t) => self.stmt_err(
                    path,
                    StmtFocus::Name,
                    format!("the callee `{p}` must be a `func` parameter, found {t}"),
                ),
                None => {
                    if let Some(m) = self.unbound_message(p, path) {
                        self.stmt_err(path, StmtFocus::Name, m);
                    }
                }
            },
            Callee::Global(n) | Callee::Import(n) | Callee::Direct(n) => {
                let what = match callee {
                    Callee::Global(_) => "global function",
                    Callee::Import(_) => "imported function",
                    Callee::Direct(_) | Callee::Param(_) => "direct symbol",
                };
                if n.is_empty() {
                    self.stmt_err(path, StmtFocus::Name, format!("the {what} name is empty"));
                } else if n.contains('\0') {
                    self.stmt_err(
                        path,
                        StmtFocus::Name,
                        format!("the {what} name contains NUL"),
                    );
                }
                if matches!(callee, Callee::Import(_)) && self.v.m.imports.is_empty() {
                    self.stmt_err(
                        path,
                        StmtFocus::Name,
                        "`call_packed import` needs the module to import a module (`import LABEL;`)".into(),
                    );
                }
            }
        }
        for (i, a) in args.iter().enumerate() {
            self.expr(path, i, a);
        }
        if let Some(d) = dest {
            self.declare(path, d, Some(Type::Any), false);
        }
    }
}
