//! Statements and blocks.

use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax::{self, is_identifier};
use super::super::typing::{self, Scope};
use super::{FnVerifier, StmtFocus};

impl<'m> FnVerifier<'_, 'm> {
    pub(super) fn block(&mut self, stmts: &'m [Stmt], parent: &StmtPath, block: Block) -> bool {
        let mark = self.locals.len();
        let mut returns = false;
        for (i, s) in stmts.iter().enumerate() {
            let path = if block == Block::Body {
                StmtPath::root(i)
            } else {
                parent.child(block, i)
            };
            if returns {
                self.stmt_err(
                    &path,
                    StmtFocus::Whole,
                    "unreachable statement: every path before it returns".into(),
                );
                break;
            }
            returns = self.stmt(s, &path);
        }
        self.pop_locals(mark);
        returns
    }

    /// Checks a statement; returns whether every path through it returns.
    pub(super) fn stmt(&mut self, s: &'m Stmt, path: &StmtPath) -> bool {
        match s {
            Stmt::Let {
                name,
                mutable,
                value,
            } => self.let_stmt(path, name, *mutable, value),
            Stmt::Assign { name, value } => self.assign(path, name, value),
            Stmt::Store { ty, ptr, value } => self.store(path, *ty, ptr, value),
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => return self.if_stmt(path, cond, then_body, else_body),
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => self.for_loop(path, var, (start, end), *step, body),
            Stmt::Assert {
                cond,
                kind,
                message,
            } => self.assert(path, cond, kind, message),
            Stmt::CallExtern { dest, func, args } => {
                self.call_extern(path, dest.as_deref(), func, args)
            }
            Stmt::CallPacked { dest, callee, args } => {
                self.call_packed(path, dest.as_deref(), callee, args)
            }
            Stmt::Launch(launch) => self.launch(path, launch),
            Stmt::Alloc(alloc) => self.alloc(path, alloc),
            Stmt::GetStream {
                dest,
                device_type,
                device_id,
            } => self.get_stream(path, dest, device_type, device_id),
            Stmt::Return(value) => {
                self.return_stmt(path, value.as_ref());
                return true;
            }
            Stmt::ReturnTuple(values) => {
                self.return_tuple(path, values);
                return true;
            }
        }
        false
    }

    /// `let [mut] NAME = VALUE;`: the value is bindable (a scalar, device or dtype).
    fn let_stmt(&mut self, path: &StmtPath, name: &str, mutable: bool, value: &Expr) {
        let mut t = self.expr(path, 0, value);
        if let Some(ty) = &t
            && !typing::bindable(ty)
        {
            self.stmt_err(
                path,
                StmtFocus::Expr(vec![0]),
                format!("`let` binds scalars, devices and dtypes; this value is {ty}"),
            );
            t = None;
        }
        self.declare(path, name, t, mutable);
    }

    /// `NAME = VALUE;`: to a `let mut` binding, of its type.
    fn assign(&mut self, path: &StmtPath, name: &str, value: &Expr) {
        let t = self.expr(path, 0, value);
        match (self.scope.type_of(name), self.declared.get(name).cloned()) {
            (Some(bt), Some(d)) => {
                if !d.mutable {
                    self.stmt_err(
                        path,
                        StmtFocus::Name,
                        format!(
                            "cannot assign to `{name}`: it is {}, not a `let mut` binding",
                            self.describe(&d)
                        ),
                    );
                } else if let Some(t) = t
                    && t != bt
                {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![0]),
                        format!("type mismatch: `{name}` is {bt}, the assigned value is {t}"),
                    );
                }
            }
            _ => {
                if let Some(m) = self.unbound_message(name, path) {
                    self.stmt_err(path, StmtFocus::Name, m);
                }
            }
        }
    }

    /// `store TY PTR, VALUE;`: through a `ptr`, a value of the stored type.
    fn store(&mut self, path: &StmtPath, ty: ScalarType, ptr: &Expr, value: &Expr) {
        self.expect_type(
            path,
            0,
            ptr,
            &Type::Scalar(ScalarType::Ptr),
            "the address of `store`",
        );
        self.expect_type(path, 1, value, &Type::Scalar(ty), "the stored value");
    }

    /// `if COND { .. } else { .. }`: a bool condition; returns whether both branches return.
    fn if_stmt(
        &mut self,
        path: &StmtPath,
        cond: &Expr,
        then_body: &'m [Stmt],
        else_body: &'m [Stmt],
    ) -> bool {
        let bool_t = Type::Scalar(ScalarType::Bool);
        self.expect_type(path, 0, cond, &bool_t, "the condition of `if`");
        let a = self.block(then_body, path, Block::Then);
        let b = self.block(else_body, path, Block::Else);
        a && b
    }

    /// `for VAR in START..END step STEP { .. }`: integer bounds of one type, a non-zero step
    /// that fits it; the loop variable is in scope in the body only.
    fn for_loop(
        &mut self,
        path: &StmtPath,
        var: &str,
        (start, end): (&Expr, &Expr),
        step: i64,
        body: &'m [Stmt],
    ) {
        let st = self.expr(path, 0, start);
        let et = self.expr(path, 1, end);
        let mut var_t = None;
        if let Some(st) = &st {
            if let Type::Scalar(ScalarType::Int(it)) = st {
                var_t = Some(st.clone());
                let fits = if it.is_signed() {
                    syntax::int_fits(step, *it)
                } else {
                    it.bits() == 64 || step.unsigned_abs() < (1u64 << it.bits())
                };
                if !fits {
                    self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        format!("step {step} does not fit the loop type {st}"),
                    );
                }
                if let Some(et) = &et
                    && et != st
                {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![1]),
                        format!("loop bounds have different types: start is {st}, end is {et}"),
                    );
                }
            } else {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(vec![0]),
                    format!("loop bounds must be integers, found {st}"),
                );
            }
        }
        if step == 0 {
            self.stmt_err(
                path,
                StmtFocus::Whole,
                "the loop step must be a non-zero constant".into(),
            );
        }
        let mark = self.locals.len();
        self.declare(path, var, var_t, false);
        self.block(body, path, Block::Loop);
        self.pop_locals(mark);
    }

    /// `assert COND, KIND, "message";`: a bool condition, an identifier kind, formattable
    /// interpolated values.
    fn assert(&mut self, path: &StmtPath, cond: &Expr, kind: &str, message: &[MessagePart]) {
        let bool_t = Type::Scalar(ScalarType::Bool);
        self.expect_type(path, 0, cond, &bool_t, "the condition of `assert`");
        if !is_identifier(kind) {
            self.stmt_err(
                path,
                StmtFocus::Name,
                format!("error kind `{kind}` is not an identifier"),
            );
        }
        // The message is a C string when it is raised: a NUL would end it there.
        if message
            .iter()
            .any(|p| matches!(p, MessagePart::Text(t) if t.contains('\0')))
        {
            self.stmt_err(
                path,
                StmtFocus::Name,
                "an assert's message cannot contain NUL (it is raised as a C string, which would end there)"
                    .into(),
            );
        }
        let values = message.iter().filter_map(|p| match p {
            MessagePart::Value(e) => Some(e),
            MessagePart::Text(_) => None,
        });
        for (i, e) in values.enumerate() {
            if let Some(t) = self.expr(path, i + 1, e)
                && !typing::formattable(&t)
            {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(vec![i + 1]),
                    format!("messages interpolate scalars, devices and dtypes, found {t}"),
                );
            }
        }
    }

    /// `DEST = get_stream(DEVICE_TYPE, DEVICE_ID);`: `i32` operands; binds a `ptr`.
    fn get_stream(&mut self, path: &StmtPath, dest: &str, device_type: &Expr, device_id: &Expr) {
        let i32_t = Type::Scalar(ScalarType::Int(IntType::I32));
        self.expect_type(path, 0, device_type, &i32_t, "the device type");
        self.expect_type(path, 1, device_id, &i32_t, "the device id");
        self.declare(path, dest, Some(Type::Scalar(ScalarType::Ptr)), false);
    }
}
