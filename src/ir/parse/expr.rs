//! Expressions: precedence climbing over binary operators, unary operators, primaries,
//! builtins and tensor fields.

use super::super::model::*;
use super::super::print::binop_prec;
use super::super::source_map::*;
use super::lexer::Tok;
use super::{BUILTINS, FIELDS, MAX_DEPTH, PResult, ParseError, Parser, ticks};

impl Parser<'_> {
    pub(super) fn expr(&mut self) -> PResult<(Expr, ExprSpans)> {
        self.nested(|p| p.binary(1))
    }

    /// Runs `f` one nesting level deeper, failing past [`MAX_DEPTH`].
    pub(super) fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.nested_cost(1, f)
    }

    /// Like [`Self::nested`] for constructs whose parsing uses `cost` times more stack.
    pub(super) fn nested_cost<T>(
        &mut self,
        cost: usize,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        if self.depth + cost > MAX_DEPTH {
            return Err(ParseError::new(
                self.span(),
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
                vec![],
            ));
        }
        self.depth += cost;
        let result = f(self);
        self.depth -= cost;
        result
    }

    pub(super) fn peek_binop(&self) -> Option<BinOp> {
        let Tok::Punct(p) = self.peek() else {
            return None;
        };
        Some(match *p {
            "||" => BinOp::Or,
            "&&" => BinOp::And,
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "|" => BinOp::BitOr,
            "^" => BinOp::BitXor,
            "&" => BinOp::BitAnd,
            "<<" => BinOp::Shl,
            ">>" => BinOp::Shr,
            "+" => BinOp::Add,
            "-" => BinOp::Sub,
            "*" => BinOp::Mul,
            "/" => BinOp::Div,
            "%" => BinOp::Rem,
            _ => return None,
        })
    }

    pub(super) fn binary(&mut self, min_prec: u8) -> PResult<(Expr, ExprSpans)> {
        let (mut lhs, mut lspans) = self.unary()?;
        let mut compared = false;
        while let Some(op) = self.peek_binop() {
            let p = binop_prec(op);
            if p < min_prec {
                break;
            }
            if p == 3 && compared {
                return Err(ParseError::new(
                    self.span(),
                    "comparison operators cannot be chained".to_owned(),
                    vec![],
                )
                .with_note("use parentheses or `&&`".to_owned()));
            }
            compared = p == 3;
            self.bump();
            let (rhs, rspans) = self.binary(p + 1)?;
            let span = lspans.span.to(rspans.span);
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
            lspans = ExprSpans {
                span,
                children: vec![lspans, rspans],
            };
        }
        Ok((lhs, lspans))
    }

    pub(super) fn unary(&mut self) -> PResult<(Expr, ExprSpans)> {
        let start = self.span();
        let op = match self.peek() {
            Tok::Punct("-") => UnOp::Neg,
            Tok::Punct("!") => UnOp::Not,
            Tok::Punct("~") => UnOp::BitNot,
            _ => return self.primary(),
        };
        if op == UnOp::Neg && self.at_number(1) {
            self.bump();
            let e = self.number(true, start)?;
            let span = start.to(Span::new(self.prev_end(), self.prev_end()));
            return Ok((
                e,
                ExprSpans {
                    span,
                    children: vec![],
                },
            ));
        }
        self.bump();
        let (arg, s) = self.nested(Self::unary)?;
        let span = start.to(s.span);
        Ok((
            Expr::Unary {
                op,
                arg: Box::new(arg),
            },
            ExprSpans {
                span,
                children: vec![s],
            },
        ))
    }

    pub(super) fn primary(&mut self) -> PResult<(Expr, ExprSpans)> {
        let start = self.span();
        let leaf = |e: Expr, end: usize| {
            (
                e,
                ExprSpans {
                    span: Span::new(start.start, end),
                    children: vec![],
                },
            )
        };
        if self.at_number(0) {
            let e = self.number(false, start)?;
            return Ok(leaf(e, self.prev_end()));
        }
        match self.peek().clone() {
            Tok::Str(s) => {
                self.bump();
                Ok(leaf(Expr::Str(s.into_owned()), self.prev_end()))
            }
            Tok::Punct("(") => {
                self.bump();
                let (e, mut s) = self.expr()?;
                let close = self.expect_punct(")")?;
                s.span = start.to(close);
                Ok((e, s))
            }
            Tok::Ident { text, quoted } => {
                if !quoted && (text == "true" || text == "false") {
                    self.bump();
                    return Ok(leaf(Expr::Bool(text == "true"), self.prev_end()));
                }
                if !quoted && (text == "cast" || text == "load") && self.is_punct_at(1, "<") {
                    self.bump();
                    self.bump();
                    let ty = self.scalar_type()?;
                    self.expect_punct(">")?;
                    self.expect_punct("(")?;
                    let (arg, s) = self.expr()?;
                    let close = self.expect_punct(")")?;
                    let e = if text == "cast" {
                        Expr::Cast {
                            ty,
                            arg: Box::new(arg),
                        }
                    } else {
                        Expr::Load {
                            ty,
                            ptr: Box::new(arg),
                        }
                    };
                    return Ok((
                        e,
                        ExprSpans {
                            span: start.to(close),
                            children: vec![s],
                        },
                    ));
                }
                if !quoted && self.is_punct_at(1, "(") {
                    return self.builtin(&text, start);
                }
                if self.is_punct_at(1, ".") {
                    return self.field();
                }
                let (n, span) = self.name("an expression")?;
                Ok((
                    Expr::Var(n),
                    ExprSpans {
                        span,
                        children: vec![],
                    },
                ))
            }
            _ => Err(self.unexpected(vec!["an expression".to_owned()])),
        }
    }

    pub(super) fn builtin(&mut self, name: &str, start: Span) -> PResult<(Expr, ExprSpans)> {
        if super::literals::bits_word(name).is_some() {
            self.bump();
            let (e, span) = self.bits_literal(name, start)?;
            return Ok((
                e,
                ExprSpans {
                    span,
                    children: vec![],
                },
            ));
        }
        if name == "is_none" {
            self.bump();
            self.bump();
            let (n, _) = self.name("a parameter name")?;
            let close = self.expect_punct(")")?;
            return Ok((
                Expr::IsNone(n),
                ExprSpans {
                    span: start.to(close),
                    children: vec![],
                },
            ));
        }
        let binop = match name {
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            "ceil_div" => Some(BinOp::CeilDiv),
            "floordiv" => Some(BinOp::FloorDiv),
            "floormod" => Some(BinOp::FloorMod),
            _ => None,
        };
        let arity = match name {
            "select" => 3,
            "offset" => 2,
            _ if binop.is_some() => 2,
            _ => {
                return Err(ParseError::new(start, format!("unknown function `{name}`"), ticks(BUILTINS)).with_note(
                    "only these built-in functions exist in expressions; extern functions are called with `call`"
                        .to_owned(),
                ));
            }
        };
        self.bump();
        let args_start = self.span();
        let (mut args, spans) = self.args()?;
        let close = Span::new(self.prev_end(), self.prev_end());
        if args.len() != arity {
            return Err(ParseError::new(
                args_start.to(close),
                format!("`{name}` takes {arity} arguments, found {}", args.len()),
                vec![],
            ));
        }
        let span = start.to(close);
        let mut next = || Box::new(args.remove(0));
        let e = match (name, binop) {
            (_, Some(op)) => Expr::Binary {
                op,
                lhs: next(),
                rhs: next(),
            },
            ("select", _) => Expr::Select {
                cond: next(),
                then_value: next(),
                else_value: next(),
            },
            _ => Expr::PtrOffset {
                ptr: next(),
                offset: next(),
            },
        };
        Ok((
            e,
            ExprSpans {
                span,
                children: spans,
            },
        ))
    }

    pub(super) fn field(&mut self) -> PResult<(Expr, ExprSpans)> {
        let (tensor, start) = self.name("a tensor parameter")?;
        self.expect_punct(".")?;
        let fspan = self.span();
        let (f, _) = self.word(FIELDS)?;
        let index = |p: &mut Self| -> PResult<usize> {
            p.expect_punct("[")?;
            let (v, s) = p.u64_literal("a dimension index")?;
            p.expect_punct("]")?;
            usize::try_from(v).map_err(|_| ParseError::new(s, "index too large".to_owned(), vec![]))
        };
        let field = match f.as_str() {
            "data" => TensorField::Data,
            "shape" => TensorField::Shape(index(self)?),
            "strides" => TensorField::Stride(index(self)?),
            "ndim" => TensorField::NDim,
            "dtype" => TensorField::DType,
            "device" => TensorField::Device,
            "device_type" => TensorField::DeviceType,
            "device_id" => TensorField::DeviceId,
            "byte_offset" => TensorField::ByteOffset,
            _ => {
                return Err(ParseError::new(
                    fspan,
                    format!("unknown tensor field `{f}`"),
                    ticks(FIELDS),
                ));
            }
        };
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        Ok((
            Expr::Field { tensor, field },
            ExprSpans {
                span,
                children: vec![],
            },
        ))
    }
}
