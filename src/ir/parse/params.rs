//! Functions and their signatures: parameters, parameter types, constants, return types.

use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax;
use super::lexer::Tok;
use super::{PARAM_TYPES, PResult, ParseError, Parser, RET_TYPES, SCALAR_TYPES, TypeSpans, ticks};

impl Parser<'_> {
    pub(super) fn function(&mut self, doc: String) -> PResult<(Function, FunctionSpans)> {
        let start = self.expect_kw("fn")?;
        let (name, name_span) = self.name("the function's name")?;
        let mut spans = FunctionSpans {
            name: name_span,
            ..Default::default()
        };
        self.expect_punct("(")?;
        let params = self.list(")", |p| p.param())?;
        let (params, param_spans): (Vec<_>, Vec<_>) = params.into_iter().unzip();
        spans.params = param_spans;
        let ret = if self.eat_punct("->") {
            let (r, s) = self.ret_type()?;
            spans.ret = Some(s);
            r
        } else {
            RetType::None
        };
        let mut constraints = Vec::new();
        if self.eat_kw("where") {
            loop {
                let (c, s) = self.constraint()?;
                constraints.push(c);
                spans.constraints.push(s);
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        if !self.is_punct("{") {
            let mut expected = vec!["`{`".to_owned()];
            if constraints.is_empty() {
                expected.insert(0, "`where`".to_owned());
                if ret == RetType::None && spans.ret.is_none() {
                    expected.insert(0, "`->`".to_owned());
                }
            } else {
                expected.insert(0, "`,`".to_owned());
            }
            return Err(self.unexpected(expected));
        }
        let mut stmts = std::collections::HashMap::new();
        let (body, end) = self.block(&StmtPath::default(), Block::Body, &mut stmts)?;
        spans.stmts = stmts;
        spans.end = end;
        spans.span = start.to(end);
        Ok((
            Function {
                name,
                doc,
                params,
                constraints,
                ret,
                body,
            },
            spans,
        ))
    }

    pub(super) fn param(&mut self) -> PResult<(Param, ParamSpans)> {
        let (name, name_span) = self.name("a parameter name")?;
        self.expect_punct(":").map_err(|e| {
            e.with_note("parameters and tuple elements are written `name: type`".to_owned())
        })?;
        let ty_start = self.span();
        let (ty, parts) = self.param_type()?;
        let ty_span = ty_start.to(Span::new(self.prev_end(), self.prev_end()));
        let spans = ParamSpans {
            span: name_span.to(ty_span),
            name: name_span,
            ty: ty_span,
            elements: parts.elements,
            tensor: parts.tensor,
        };
        Ok((Param { name, ty }, spans))
    }

    pub(super) fn param_type(&mut self) -> PResult<(ParamType, TypeSpans)> {
        self.nested(Self::param_type_inner)
    }

    pub(super) fn param_type_inner(&mut self) -> PResult<(ParamType, TypeSpans)> {
        let (word, span) = match self.peek() {
            Tok::Ident { quoted: false, .. } => self.word(&[])?,
            _ => return Err(self.unexpected(vec!["a parameter type".to_owned()])),
        };
        let simple = match ParamWord::from_keyword(&word) {
            Some(w) => Some(w.param_type()),
            None => syntax::parse_scalar_type(&word).map(ParamType::scalar),
        };
        if let Some(t) = simple {
            return Ok((t, TypeSpans::default()));
        }
        match ParamForm::from_keyword(&word) {
            Some(ParamForm::Optional) => {
                self.expect_punct("[")?;
                let (inner, parts) = self.param_type()?;
                self.expect_punct("]")?;
                Ok((ParamType::Optional(Box::new(inner)), parts))
            }
            Some(ParamForm::Const) => {
                self.expect_punct("(")?;
                let v = self.const_value()?;
                self.expect_punct(")")?;
                Ok((ParamType::Const(v), TypeSpans::default()))
            }
            Some(ParamForm::Tuple) => {
                self.expect_punct("(")?;
                let elems = self.list(")", |p| p.param())?;
                let (elems, spans): (Vec<_>, Vec<_>) = elems.into_iter().unzip();
                Ok((
                    ParamType::Tuple(elems),
                    TypeSpans {
                        elements: spans,
                        tensor: None,
                    },
                ))
            }
            Some(ParamForm::Tensor) => {
                let (spec, spans) = self.tensor_spec()?;
                Ok((
                    ParamType::Tensor(spec),
                    TypeSpans {
                        elements: vec![],
                        tensor: Some(spans),
                    },
                ))
            }
            None => Err(ParseError::new(
                span,
                format!("unknown parameter type `{word}`"),
                ticks(&PARAM_TYPES),
            )),
        }
    }

    pub(super) fn const_value(&mut self) -> PResult<ConstValue> {
        let start = self.span();
        if self.eat_kw("none") {
            return Ok(ConstValue::None);
        }
        if self.eat_kw("true") {
            return Ok(ConstValue::Bool(true));
        }
        if self.eat_kw("false") {
            return Ok(ConstValue::Bool(false));
        }
        if self.is_kw("f64bits") && self.is_punct_at(1, "(") {
            let s = self.bump();
            let (e, _) = self.bits_literal("f64bits", s)?;
            let Expr::Float { bits, .. } = e else {
                unreachable!()
            };
            return Ok(ConstValue::Float(bits));
        }
        let negative = self.is_punct("-") && self.at_number(1);
        if negative {
            self.bump();
        }
        let expected = || vec!["an integer, float, `true`, `false` or `none`".to_owned()];
        if !self.at_number(0) {
            return Err(self.unexpected(expected()));
        }
        let e = self.number(negative, start)?;
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        match e {
            Expr::Int { value, ty: IntType::I64 } => Ok(ConstValue::Int(value)),
            Expr::Float { bits, ty: FloatType::F64 } => Ok(ConstValue::Float(bits)),
            _ => Err(ParseError::new(
                span,
                "a constant parameter's value is an `i64` or an `f64` literal without another type suffix".to_owned(),
                expected(),
            )),
        }
    }

    pub(super) fn scalar_type(&mut self) -> PResult<ScalarType> {
        let span = self.span();
        let (w, _) = self.word(&SCALAR_TYPES)?;
        syntax::parse_scalar_type(&w).ok_or_else(|| {
            ParseError::new(
                span,
                format!("unknown scalar type `{w}`"),
                ticks(&SCALAR_TYPES),
            )
        })
    }

    pub(super) fn ret_type(&mut self) -> PResult<(RetType, Span)> {
        let span = self.span();
        if self.eat_punct("(") {
            let items = self.list(")", |p| Ok(p.ret_type()?.0))?;
            return Ok((
                RetType::Tuple(items),
                span.to(Span::new(self.prev_end(), self.prev_end())),
            ));
        }
        let (w, _) = self.word(&RET_TYPES)?;
        let t = match RetWord::from_keyword(&w) {
            Some(word) => word.ret_type(),
            None => RetType::Scalar(syntax::parse_scalar_type(&w).ok_or_else(|| {
                ParseError::new(
                    span,
                    format!("unknown return type `{w}`"),
                    ticks(&RET_TYPES),
                )
            })?),
        };
        Ok((t, span))
    }
}
