//! Statements: [`BlockBuilder`] and the parts of assertion messages.

use super::super::model::*;
use super::expr::var;

impl From<&str> for MessagePart {
    /// Literal text.
    fn from(s: &str) -> MessagePart {
        MessagePart::Text(s.to_owned())
    }
}

impl From<String> for MessagePart {
    /// Literal text.
    fn from(s: String) -> MessagePart {
        MessagePart::Text(s)
    }
}

impl From<Expr> for MessagePart {
    /// A value formatted at run time.
    fn from(e: Expr) -> MessagePart {
        MessagePart::Value(e)
    }
}

/// A sequence of statements: a function body or a nested block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockBuilder {
    stmts: Vec<Stmt>,
}

impl BlockBuilder {
    /// An empty block.
    pub fn new() -> Self {
        Self::default()
    }

    /// The statements so far.
    pub fn stmts(&self) -> &[Stmt] {
        &self.stmts
    }

    /// The statements.
    pub fn into_stmts(self) -> Vec<Stmt> {
        self.stmts
    }

    /// Appends a statement.
    pub fn push(&mut self, stmt: Stmt) -> &mut Self {
        self.stmts.push(stmt);
        self
    }

    fn nested(f: impl FnOnce(&mut BlockBuilder)) -> Vec<Stmt> {
        let mut b = BlockBuilder::new();
        f(&mut b);
        b.stmts
    }

    /// `let name = value;`; returns the new name as an expression.
    pub fn let_(&mut self, name: &str, value: impl Into<Expr>) -> Expr {
        self.stmts.push(Stmt::Let {
            name: name.to_owned(),
            mutable: false,
            value: value.into(),
        });
        var(name)
    }

    /// `let mut name = value;`; returns the new name as an expression.
    pub fn let_mut(&mut self, name: &str, value: impl Into<Expr>) -> Expr {
        self.stmts.push(Stmt::Let {
            name: name.to_owned(),
            mutable: true,
            value: value.into(),
        });
        var(name)
    }

    /// `name = value;` (a `let mut` binding).
    pub fn assign(&mut self, name: &str, value: impl Into<Expr>) -> &mut Self {
        self.push(Stmt::Assign {
            name: name.to_owned(),
            value: value.into(),
        })
    }

    /// `store<ty>(ptr, value);`.
    pub fn store(
        &mut self,
        ty: ScalarType,
        ptr: impl Into<Expr>,
        value: impl Into<Expr>,
    ) -> &mut Self {
        self.push(Stmt::Store {
            ty,
            ptr: ptr.into(),
            value: value.into(),
        })
    }

    /// `if cond { then }`.
    pub fn if_then(
        &mut self,
        cond: impl Into<Expr>,
        then: impl FnOnce(&mut BlockBuilder),
    ) -> &mut Self {
        let then_body = Self::nested(then);
        self.push(Stmt::If {
            cond: cond.into(),
            then_body,
            else_body: vec![],
        })
    }

    /// `if cond { then } else { otherwise }`.
    pub fn if_else(
        &mut self,
        cond: impl Into<Expr>,
        then: impl FnOnce(&mut BlockBuilder),
        otherwise: impl FnOnce(&mut BlockBuilder),
    ) -> &mut Self {
        let then_body = Self::nested(then);
        let else_body = Self::nested(otherwise);
        self.push(Stmt::If {
            cond: cond.into(),
            then_body,
            else_body,
        })
    }

    /// `for var in start..end { body }`; the closure gets the loop variable.
    pub fn for_range(
        &mut self,
        var_name: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        body: impl FnOnce(&mut BlockBuilder, Expr),
    ) -> &mut Self {
        self.for_range_step(var_name, start, end, 1, body)
    }

    /// `for var in start..end step step { body }`.
    pub fn for_range_step(
        &mut self,
        var_name: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        step: i64,
        body: impl FnOnce(&mut BlockBuilder, Expr),
    ) -> &mut Self {
        let mut b = BlockBuilder::new();
        body(&mut b, var(var_name));
        self.push(Stmt::For {
            var: var_name.to_owned(),
            start: start.into(),
            end: end.into(),
            step,
            body: b.stmts,
        })
    }

    /// `assert cond else kind(message...);`: raise `kind` (e.g. `ValueError`) with the message
    /// unless `cond` holds. Message parts are text (`&str`) or values ([`Expr`]).
    pub fn assert(
        &mut self,
        cond: impl Into<Expr>,
        kind: &str,
        message: impl IntoIterator<Item = MessagePart>,
    ) -> &mut Self {
        self.push(Stmt::Assert {
            cond: cond.into(),
            kind: kind.to_owned(),
            message: message.into_iter().collect(),
        })
    }

    /// `call func(args);` of a declared extern C function, ignoring its result.
    pub fn call_extern(&mut self, func: &str, args: impl IntoIterator<Item = Expr>) -> &mut Self {
        self.push(Stmt::CallExtern {
            dest: None,
            func: func.to_owned(),
            args: args.into_iter().collect(),
        })
    }

    /// `let dest = call func(args);`; returns `dest` as an expression.
    pub fn call_extern_into(
        &mut self,
        dest: &str,
        func: &str,
        args: impl IntoIterator<Item = Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::CallExtern {
            dest: Some(dest.to_owned()),
            func: func.to_owned(),
            args: args.into_iter().collect(),
        });
        var(dest)
    }

    /// `call_packed callee(args);`, ignoring the result.
    pub fn call_packed(
        &mut self,
        callee: Callee,
        args: impl IntoIterator<Item = Expr>,
    ) -> &mut Self {
        self.push(Stmt::CallPacked {
            dest: None,
            callee,
            args: args.into_iter().collect(),
        })
    }

    /// `let dest = call_packed callee(args);` (an `any`); returns `dest` as an expression.
    pub fn call_packed_into(
        &mut self,
        dest: &str,
        callee: Callee,
        args: impl IntoIterator<Item = Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::CallPacked {
            dest: Some(dest.to_owned()),
            callee,
            args: args.into_iter().collect(),
        });
        var(dest)
    }

    /// `let dest = get_stream(device_type, device_id);` (a `ptr`); returns `dest`.
    pub fn get_stream(
        &mut self,
        dest: &str,
        device_type: impl Into<Expr>,
        device_id: impl Into<Expr>,
    ) -> Expr {
        self.stmts.push(Stmt::GetStream {
            dest: dest.to_owned(),
            device_type: device_type.into(),
            device_id: device_id.into(),
        });
        var(dest)
    }

    /// `launch BINARY.KERNEL[...](args);` (see [`LaunchBuilder`](super::LaunchBuilder)).
    pub fn launch(&mut self, launch: impl Into<Launch>) -> &mut Self {
        self.push(Stmt::Launch(Box::new(launch.into())))
    }

    /// `return value;`.
    pub fn ret(&mut self, value: impl Into<Expr>) -> &mut Self {
        self.push(Stmt::Return(Some(value.into())))
    }

    /// `return (a, b, ...);` (for functions returning a tuple).
    pub fn ret_tuple(&mut self, values: impl IntoIterator<Item = Expr>) -> &mut Self {
        self.push(Stmt::ReturnTuple(values.into_iter().collect()))
    }

    /// `return;` (for functions returning none).
    pub fn ret_none(&mut self) -> &mut Self {
        self.push(Stmt::Return(None))
    }
}
