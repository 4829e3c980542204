//! Statements and blocks.

use super::super::model::*;
use super::super::source_map::*;
use super::lexer::Tok;
use super::{PResult, ParseError, Parser};

impl Parser<'_> {
    /// `{ stmt* }`; returns the statements and the span of the closing brace.
    pub(super) fn block(
        &mut self,
        parent: &StmtPath,
        block: Block,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<(Vec<Stmt>, Span)> {
        // A block level (block, statement, `if`) takes far more stack than an expression level.
        self.nested_cost(4, |p| p.block_inner(parent, block, map))
    }

    pub(super) fn block_inner(
        &mut self,
        parent: &StmtPath,
        block: Block,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<(Vec<Stmt>, Span)> {
        let open = self.expect_punct("{")?;
        let mut stmts = Vec::new();
        loop {
            if self.is_punct("}") {
                let close = self.bump();
                return Ok((stmts, close));
            }
            if matches!(self.peek(), Tok::Eof) || self.is_kw("fn") {
                return Err(self.unclosed(open));
            }
            let path = if block == Block::Body {
                StmtPath::root(stmts.len())
            } else {
                parent.child(block, stmts.len())
            };
            let stmt = self.stmt(&path, map)?;
            stmts.push(stmt);
        }
    }

    /// One statement at `path`; records its spans in `map`.
    pub(super) fn stmt(
        &mut self,
        path: &StmtPath,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<Stmt> {
        let start = self.span();
        let mut spans = StmtSpans::default();
        let stmt = if self.eat_kw("let") {
            self.let_stmt(&mut spans)?
        } else if self.eat_kw("store") {
            self.expect_punct("<")?;
            let ty = self.scalar_type()?;
            self.expect_punct(">")?;
            self.expect_punct("(")?;
            let (ptr, s1) = self.expr()?;
            self.expect_punct(",")?;
            let (value, s2) = self.expr()?;
            self.expect_punct(")")?;
            self.end_stmt()?;
            spans.exprs = vec![s1, s2];
            Stmt::Store { ty, ptr, value }
        } else if self.is_kw("if") {
            self.if_stmt(path, &mut spans, map)?
        } else if self.eat_kw("for") {
            self.for_stmt(path, &mut spans, map)?
        } else if self.eat_kw("assert") {
            self.assert_stmt(&mut spans)?
        } else if self.is_kw("call") {
            let s = self.call_extern(None, &mut spans)?;
            self.end_stmt()?;
            s
        } else if self.is_kw("call_packed") {
            let s = self.call_packed(None, &mut spans)?;
            self.end_stmt()?;
            s
        } else if self.is_kw("launch") && !self.is_punct_at(1, "=") {
            // `launch` is not reserved: `launch = e;` assigns a binding of that name.
            let s = self.launch(&mut spans)?;
            self.end_stmt()?;
            s
        } else if self.eat_kw("return") {
            if let Some(values) = self.return_tuple(&mut spans)? {
                self.end_stmt()?;
                map.insert(path.clone(), {
                    spans.span = start.to(Span::new(self.prev_end(), self.prev_end()));
                    spans
                });
                return Ok(Stmt::ReturnTuple(values));
            }
            let value = if self.is_punct(";") {
                None
            } else {
                let (e, s) = self.expr()?;
                spans.exprs.push(s);
                Some(e)
            };
            self.end_stmt()?;
            Stmt::Return(value)
        } else if matches!(self.peek(), Tok::Ident { .. }) && self.is_punct_at(1, "=") {
            let (name, name_span) = self.name("a name")?;
            spans.name = Some(name_span);
            self.bump();
            let (value, s) = self.expr()?;
            spans.exprs.push(s);
            self.end_stmt()?;
            Stmt::Assign { name, value }
        } else {
            return Err(self.unexpected(vec!["a statement".to_owned()]).with_note(
                "statements are `let`, `NAME = ...`, `store`, `if`, `for`, `assert`, `call`, `call_packed`, `launch`, `return` or `}`"
                    .to_owned(),
            ));
        };
        spans.span = start.to(Span::new(self.prev_end(), self.prev_end()));
        map.insert(path.clone(), spans);
        Ok(stmt)
    }

    /// After `return`: `(a, b, ...)` (a comma after the first value makes a tuple, so `(a,)`
    /// is one value and `(a)` a parenthesized expression); `None`, with nothing consumed, when
    /// this is not a tuple.
    fn return_tuple(&mut self, spans: &mut StmtSpans) -> PResult<Option<Vec<Expr>>> {
        if !self.is_punct("(") {
            return Ok(None);
        }
        let mark = self.pos;
        self.bump();
        let Ok(first) = self.expr() else {
            self.pos = mark;
            return Ok(None);
        };
        if !self.is_punct(",") {
            self.pos = mark;
            return Ok(None);
        }
        self.bump();
        let rest = self.list(")", |p| p.expr())?;
        let (values, exprs): (Vec<Expr>, Vec<ExprSpans>) =
            std::iter::once(first).chain(rest).unzip();
        spans.exprs = exprs;
        Ok(Some(values))
    }

    /// After `let`: `let [mut] NAME = EXPR;`, or a call or `get_stream` that binds its result.
    fn let_stmt(&mut self, spans: &mut StmtSpans) -> PResult<Stmt> {
        let mutable = self.eat_kw("mut");
        let (name, name_span) = self.name("the new name")?;
        spans.name = Some(name_span);
        self.expect_punct("=")?;
        let special = ["call", "call_packed", "get_stream"]
            .iter()
            .find(|k| self.is_kw(k))
            .copied();
        if let (true, Some(kw)) = (mutable, special) {
            return Err(ParseError::new(
                self.span(),
                format!("the result of `{kw}` binds an immutable name; drop `mut`"),
                vec![],
            ));
        }
        if self.at_alloc() {
            if mutable {
                return Err(ParseError::new(
                    self.span(),
                    "an allocation binds an immutable name; drop `mut`".to_owned(),
                    vec![],
                ));
            }
            let s = self.alloc(name, spans)?;
            self.end_stmt()?;
            return Ok(s);
        }
        let s = match special {
            Some("call") => self.call_extern(Some(name), spans)?,
            Some("call_packed") => self.call_packed(Some(name), spans)?,
            Some(_) => {
                self.bump();
                self.expect_punct("(")?;
                let (device_type, s1) = self.expr()?;
                self.expect_punct(",")?;
                let (device_id, s2) = self.expr()?;
                self.expect_punct(")")?;
                spans.exprs = vec![s1, s2];
                Stmt::GetStream {
                    dest: name,
                    device_type,
                    device_id,
                }
            }
            None => {
                let (value, s) = self.expr()?;
                spans.exprs = vec![s];
                Stmt::Let {
                    name,
                    mutable,
                    value,
                }
            }
        };
        self.end_stmt()?;
        Ok(s)
    }

    /// After `for`: `for VAR in START..END [step N] { ... }`.
    fn for_stmt(
        &mut self,
        path: &StmtPath,
        spans: &mut StmtSpans,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<Stmt> {
        let (var, var_span) = self.name("the loop variable")?;
        spans.name = Some(var_span);
        self.expect_kw("in")?;
        let (start_e, s1) = self.expr()?;
        self.expect_punct("..")?;
        let (end_e, s2) = self.expr()?;
        spans.exprs = vec![s1, s2];
        let step = if self.eat_kw("step") {
            self.i64_literal("the step (an integer literal)")?.0
        } else if self.is_punct("{") {
            1
        } else {
            return Err(self.unexpected(vec!["`step`".into(), "`{`".into()]));
        };
        let (body, _) = self.block(path, Block::Loop, map)?;
        Ok(Stmt::For {
            var,
            start: start_e,
            end: end_e,
            step,
            body,
        })
    }

    /// After `assert`: `assert COND else Kind("message", value, ...);`.
    fn assert_stmt(&mut self, spans: &mut StmtSpans) -> PResult<Stmt> {
        let (cond, s) = self.expr()?;
        spans.exprs.push(s);
        self.expect_kw("else").map_err(|e| {
            e.with_note(
                "an assertion is written `assert COND else Kind(\"message\", value, ...);`"
                    .to_owned(),
            )
        })?;
        let (kind, kind_span) = self.name("the error kind")?;
        spans.name = Some(kind_span);
        self.expect_punct("(")?;
        let mut parts = Vec::new();
        while !self.is_punct(")") {
            match self.peek().clone() {
                Tok::Str(text) if self.is_punct_at(1, ",") || self.is_punct_at(1, ")") => {
                    self.bump();
                    parts.push(MessagePart::Text(text.into_owned()));
                }
                _ => {
                    let (e, s) = self.expr()?;
                    spans.exprs.push(s);
                    parts.push(MessagePart::Value(e));
                }
            }
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.unexpected(vec!["`,`".into(), "`)`".into()]));
            }
        }
        self.bump();
        self.end_stmt()?;
        Ok(Stmt::Assert {
            cond,
            kind,
            message: parts,
        })
    }

    pub(super) fn end_stmt(&mut self) -> PResult<()> {
        if self.is_punct(";") {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(vec!["`;`".to_owned()]))
        }
    }

    pub(super) fn if_stmt(
        &mut self,
        path: &StmtPath,
        spans: &mut StmtSpans,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<Stmt> {
        self.expect_kw("if")?;
        let (cond, s) = self.expr()?;
        spans.exprs.push(s);
        let (then_body, _) = self.block(path, Block::Then, map)?;
        let else_body = if self.eat_kw("else") {
            if self.is_kw("if") {
                let nested_path = path.child(Block::Else, 0);
                let nested = self.stmt(&nested_path, map)?;
                vec![nested]
            } else {
                self.block(path, Block::Else, map)?.0
            }
        } else {
            vec![]
        };
        Ok(Stmt::If {
            cond,
            then_body,
            else_body,
        })
    }

    pub(super) fn args(&mut self) -> PResult<(Vec<Expr>, Vec<ExprSpans>)> {
        self.expect_punct("(")?;
        let items = self.list(")", |p| p.expr())?;
        Ok(items.into_iter().unzip())
    }

    pub(super) fn call_extern(
        &mut self,
        dest: Option<String>,
        spans: &mut StmtSpans,
    ) -> PResult<Stmt> {
        self.expect_kw("call")?;
        let (func, fs) = self.name("the extern function's name")?;
        if dest.is_none() {
            spans.name = Some(fs);
        }
        let (args, s) = self.args()?;
        spans.exprs = s;
        Ok(Stmt::CallExtern { dest, func, args })
    }

    pub(super) fn call_packed(
        &mut self,
        dest: Option<String>,
        spans: &mut StmtSpans,
    ) -> PResult<Stmt> {
        self.expect_kw("call_packed")?;
        let start = self.span();
        let kind = ["global", "import", "direct"]
            .iter()
            .find(|k| self.is_kw(k) && matches!(self.peek_at(1), Tok::Str(_)))
            .copied();
        let callee = match kind {
            Some(k) => {
                self.bump();
                let (s, _) = self.string("a function name")?;
                match k {
                    "global" => Callee::Global(s),
                    "import" => Callee::Import(s),
                    _ => Callee::Direct(s),
                }
            }
            None => {
                if !matches!(self.peek(), Tok::Ident { .. }) {
                    return Err(self.unexpected(vec![
                        "`global \"name\"`".into(),
                        "`import \"name\"`".into(),
                        "`direct \"symbol\"`".into(),
                        "a function parameter".into(),
                    ]));
                }
                Callee::Param(self.name("a function parameter")?.0)
            }
        };
        if dest.is_none() {
            spans.name = Some(start.to(Span::new(self.prev_end(), self.prev_end())));
        }
        let (args, s) = self.args()?;
        spans.exprs = s;
        Ok(Stmt::CallPacked { dest, callee, args })
    }
}
