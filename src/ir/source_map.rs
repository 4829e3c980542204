//! Positions in `.scir` text and paths into the model.
//!
//! The model carries no positions. The parser returns a [`SourceMap`] next to the
//! [`Module`](super::model::Module): spans of functions, parameters, constraints, statements
//! (keyed by [`StmtPath`]) and their expressions (keyed by [`ExprPath`]), so diagnostics about
//! parsed IR can point at the text. [`StmtPath`] and [`ExprPath`] also name places in built IR,
//! where there is no text.
//!
//! Numbering of the expressions of a statement ([`stmt_exprs`]): `let`/assign value `[0]`;
//! store `[ptr, value]`; if `[cond]`; for `[start, end]`; assert `[cond, value parts...]`;
//! calls `[args...]`; get_stream `[device_type, device_id]`; launch in
//! [`Launch::exprs`](super::model::Launch::exprs) order; return `[value]`. Children of an
//! expression ([`expr_children`]): unary `[arg]`; binary `[lhs, rhs]`; select
//! `[cond, then, else]`; cast `[arg]`; offset `[ptr, offset]`; load `[ptr]`.

use std::collections::HashMap;
use std::fmt;

use super::model::{Expr, MessagePart, Stmt};

/// A byte range `start..end` in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// 1-based line and column (in characters) of `start` in `text`.
    pub fn line_col(self, text: &str) -> (usize, usize) {
        let start = self.start.min(text.len());
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, text[line_start..start].chars().count() + 1)
    }
}

/// Which block of a statement a [`PathStep`] enters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Block {
    /// The function body.
    Body,
    /// The `then` block of an `if`.
    Then,
    /// The `else` block of an `if`.
    Else,
    /// The body of a `for`.
    Loop,
}

impl Block {
    fn name(self) -> &'static str {
        match self {
            Block::Body => "body",
            Block::Then => "then",
            Block::Else => "else",
            Block::Loop => "loop",
        }
    }
}

/// One step of a [`StmtPath`]: statement `index` of `block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathStep {
    /// The block.
    pub block: Block,
    /// Index of the statement in it.
    pub index: usize,
}

/// Where a statement is in a function body, e.g. `body[2].then[0]`: statement 0 of the
/// `then` block of the `if` that is statement 2 of the body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtPath(pub Vec<PathStep>);

impl StmtPath {
    /// Statement `index` of the function body.
    pub fn root(index: usize) -> Self {
        StmtPath(vec![PathStep {
            block: Block::Body,
            index,
        }])
    }

    /// Statement `index` of the `block` of the statement at this path.
    pub fn child(&self, block: Block, index: usize) -> Self {
        let mut steps = self.0.clone();
        steps.push(PathStep { block, index });
        StmtPath(steps)
    }

    /// The statement this path names in `body`, if there is one.
    pub fn resolve<'a>(&self, body: &'a [Stmt]) -> Option<&'a Stmt> {
        let mut block = body;
        let mut found = None;
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                let parent: &Stmt = found?;
                block = match (parent, step.block) {
                    (Stmt::If { then_body, .. }, Block::Then) => then_body,
                    (Stmt::If { else_body, .. }, Block::Else) => else_body,
                    (Stmt::For { body, .. }, Block::Loop) => body,
                    _ => return None,
                };
            } else if step.block != Block::Body {
                return None;
            }
            found = Some(block.get(step.index)?);
        }
        found
    }
}

impl fmt::Display for StmtPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{}[{}]", step.block.name(), step.index)?;
        }
        Ok(())
    }
}

/// Where an expression is in a statement: the index among the statement's expressions
/// ([`stmt_exprs`]) followed by child indices ([`expr_children`]).
pub type ExprPath = Vec<usize>;

/// The expressions of a statement, in [`ExprPath`] order (nested blocks excluded).
pub fn stmt_exprs(stmt: &Stmt) -> Vec<&Expr> {
    match stmt {
        Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![value],
        Stmt::Store { ptr, value, .. } => vec![ptr, value],
        Stmt::If { cond, .. } => vec![cond],
        Stmt::For { start, end, .. } => vec![start, end],
        Stmt::Assert { cond, message, .. } => std::iter::once(cond)
            .chain(message.iter().filter_map(|p| match p {
                MessagePart::Value(e) => Some(e),
                MessagePart::Text(_) => None,
            }))
            .collect(),
        Stmt::CallExtern { args, .. } | Stmt::CallPacked { args, .. } => args.iter().collect(),
        Stmt::GetStream {
            device_type,
            device_id,
            ..
        } => vec![device_type, device_id],
        Stmt::Launch(launch) => launch.exprs().collect(),
        Stmt::Alloc(alloc) => alloc.exprs().collect(),
        Stmt::Return(value) => value.iter().collect(),
        Stmt::ReturnTuple(values) => values.iter().collect(),
    }
}

/// Operand `i` of `expr`, in [`ExprPath`] order (unary `[arg]`, binary `[lhs, rhs]`, select
/// `[cond, then, else]`, offset `[ptr, offset]`, load `[ptr]`); `None` past the last.
pub(crate) fn expr_child(expr: &Expr, i: usize) -> Option<&Expr> {
    let child = match (expr, i) {
        (Expr::Unary { arg, .. } | Expr::Cast { arg, .. }, 0) => arg,
        (Expr::Binary { lhs, .. }, 0) => lhs,
        (Expr::Binary { rhs, .. }, 1) => rhs,
        (Expr::Select { cond, .. }, 0) => cond,
        (Expr::Select { then_value, .. }, 1) => then_value,
        (Expr::Select { else_value, .. }, 2) => else_value,
        (Expr::PtrOffset { ptr, .. }, 0) => ptr,
        (Expr::PtrOffset { offset, .. }, 1) => offset,
        (Expr::Load { ptr, .. }, 0) => ptr,
        _ => return None,
    };
    Some(child)
}

/// The operands of an expression, in [`ExprPath`] order.
pub fn expr_children(expr: &Expr) -> Vec<&Expr> {
    (0..).map_while(|i| expr_child(expr, i)).collect()
}

/// The expression at `path` in `stmt`.
pub fn resolve_expr<'a>(stmt: &'a Stmt, path: &[usize]) -> Option<&'a Expr> {
    let (&first, rest) = path.split_first()?;
    let mut expr = *stmt_exprs(stmt).get(first)?;
    for &i in rest {
        expr = expr_child(expr, i)?;
    }
    Some(expr)
}

/// Spans of a parsed module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceMap {
    /// The module name after `module`.
    pub module_name: Span,
    /// The `system_lib_prefix` item.
    pub system_lib_prefix: Option<Span>,
    /// Each `extern fn` item.
    pub externs: Vec<Span>,
    /// Each `imported_module` item.
    pub imported_modules: Vec<ImportedModuleSpans>,
    /// Each `import` item.
    pub imports: Vec<Span>,
    /// Each `device_binary` item.
    pub device_binaries: Vec<DeviceBinarySpans>,
    /// Each function.
    pub functions: Vec<FunctionSpans>,
}

/// Spans of an `imported_module` item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportedModuleSpans {
    /// The whole item.
    pub span: Span,
    /// The label.
    pub label: Span,
    /// The `kind` string.
    pub kind: Span,
    /// The payload.
    pub payload: Span,
    /// Each imported label.
    pub imports: Vec<Span>,
}

/// Spans of a `device_binary` item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceBinarySpans {
    /// The whole item.
    pub span: Span,
    /// The name.
    pub name: Span,
    /// The format keyword.
    pub format: Span,
    /// The `data` byte string or the `file` path.
    pub data: Span,
    /// Each kernel name.
    pub kernels: Vec<Span>,
}

/// Spans of a function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FunctionSpans {
    /// From `fn` to the closing brace.
    pub span: Span,
    /// The name.
    pub name: Span,
    /// Each parameter.
    pub params: Vec<ParamSpans>,
    /// Each constraint after `where`.
    pub constraints: Vec<Span>,
    /// The return type, when written.
    pub ret: Option<Span>,
    /// The closing brace of the body.
    pub end: Span,
    /// Each statement by path.
    pub stmts: HashMap<StmtPath, StmtSpans>,
}

/// Spans of a parameter (or tuple element).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamSpans {
    /// `name: type`.
    pub span: Span,
    /// The name.
    pub name: Span,
    /// The type.
    pub ty: Span,
    /// Elements of a tuple type.
    pub elements: Vec<ParamSpans>,
    /// Parts of a tensor type (also under `optional[...]`).
    pub tensor: Option<TensorSpans>,
}

/// Spans of the parts of a tensor type.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorSpans {
    /// The shape `( ... )`.
    pub shape: Span,
    /// Each dimension.
    pub dims: Vec<Span>,
    /// The dtype.
    pub dtype: Span,
    /// Each `key=value` attribute.
    pub attrs: Vec<(TensorAttr, Span)>,
    /// Each entry of an explicit stride list.
    pub strides: Vec<Span>,
}

/// Attributes of a tensor type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorAttr {
    /// `device=`
    Device,
    /// `strides=`
    Strides,
    /// `device_id=`
    DeviceId,
    /// `byte_offset=`
    ByteOffset,
    /// `align=`
    Align,
    /// `index=`
    Index,
}

impl TensorAttr {
    /// The key as written.
    pub fn key(self) -> &'static str {
        match self {
            TensorAttr::Device => "device",
            TensorAttr::Strides => "strides",
            TensorAttr::DeviceId => "device_id",
            TensorAttr::ByteOffset => "byte_offset",
            TensorAttr::Align => "align",
            TensorAttr::Index => "index",
        }
    }
}

/// Spans of a statement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StmtSpans {
    /// The statement (for `if`/`for`, up to the end of its blocks).
    pub span: Span,
    /// The statement's name part: the bound or assigned name, the called function, or the
    /// error kind of an assert.
    pub name: Option<Span>,
    /// Its expressions, in [`stmt_exprs`] order.
    pub exprs: Vec<ExprSpans>,
}

/// Spans of an expression and its operands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExprSpans {
    /// The expression.
    pub span: Span,
    /// Its operands, in [`expr_children`] order.
    pub children: Vec<ExprSpans>,
}

impl StmtSpans {
    /// The span of the expression at `path` (the statement's when it has none there).
    pub fn expr(&self, path: &[usize]) -> Span {
        let Some((&first, rest)) = path.split_first() else {
            return self.span;
        };
        let Some(mut e) = self.exprs.get(first) else {
            return self.span;
        };
        for &i in rest {
            match e.children.get(i) {
                Some(c) => e = c,
                None => break,
            }
        }
        e.span
    }
}

impl ParamSpans {
    /// The parameter at a tuple path below this one (`[]` is this one).
    pub fn descend(&self, path: &[usize]) -> Option<&ParamSpans> {
        match path.split_first() {
            None => Some(self),
            Some((&i, rest)) => self.elements.get(i)?.descend(rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expr_child_gives_the_children_in_order() {
        use super::super::model::{BinOp, IntType, ScalarType, UnOp};
        // select(b, -a, cast<i64>(load<i32>(offset(p, a + 1)))): every kind with children.
        let var = |n: &str| Box::new(Expr::Var(n.to_owned()));
        let sum = Expr::Binary {
            op: BinOp::Add,
            lhs: var("a"),
            rhs: var("one"),
        };
        let address = Expr::PtrOffset {
            ptr: var("p"),
            offset: Box::new(sum),
        };
        let load = Expr::Load {
            ty: ScalarType::Int(IntType::I32),
            ptr: Box::new(address),
        };
        let value = Expr::Select {
            cond: var("b"),
            then_value: Box::new(Expr::Unary {
                op: UnOp::Neg,
                arg: var("a"),
            }),
            else_value: Box::new(Expr::Cast {
                ty: ScalarType::Int(IntType::I64),
                arg: Box::new(load),
            }),
        };
        // Every node of the tree: its children are its operand fields, in source order.
        let fields = |e: &Expr| -> Vec<*const Expr> {
            match e {
                Expr::Unary { arg, .. } | Expr::Cast { arg, .. } => vec![&**arg],
                Expr::Binary { lhs, rhs, .. } => vec![&**lhs, &**rhs],
                Expr::Select {
                    cond,
                    then_value,
                    else_value,
                } => vec![&**cond, &**then_value, &**else_value],
                Expr::PtrOffset { ptr, offset } => vec![&**ptr, &**offset],
                Expr::Load { ptr, .. } => vec![&**ptr],
                _ => vec![],
            }
        };
        let mut stack = vec![&value];
        let mut nodes = 0;
        while let Some(e) = stack.pop() {
            let want = fields(e);
            let children = expr_children(e);
            assert_eq!(children.len(), want.len(), "{e:?}");
            for (i, c) in children.iter().enumerate() {
                assert!(std::ptr::eq(*c, want[i]), "{e:?} child {i}");
                assert!(
                    std::ptr::eq(expr_child(e, i).unwrap(), want[i]),
                    "{e:?} child {i}"
                );
            }
            assert!(expr_child(e, want.len()).is_none(), "{e:?}");
            stack.extend(children);
            nodes += 1;
        }
        assert_eq!(nodes, 11);
    }

    #[test]
    fn line_col_counts_characters() {
        let text = "ab\ncé d";
        assert_eq!(Span::new(0, 1).line_col(text), (1, 1));
        assert_eq!(Span::new(3, 4).line_col(text), (2, 1));
        assert_eq!(Span::new(7, 8).line_col(text), (2, 4));
    }

    #[test]
    fn paths_display_and_resolve() {
        let p = StmtPath::root(2).child(Block::Then, 0);
        assert_eq!(p.to_string(), "body[2].then[0]");
        let body = vec![
            Stmt::Return(None),
            Stmt::Return(None),
            Stmt::If {
                cond: Expr::Bool(true),
                then_body: vec![Stmt::Return(None)],
                else_body: vec![],
            },
        ];
        assert_eq!(p.resolve(&body), Some(&Stmt::Return(None)));
        assert_eq!(StmtPath::root(2).child(Block::Else, 0).resolve(&body), None);
        assert_eq!(StmtPath::root(2).child(Block::Loop, 0).resolve(&body), None);
    }
}
