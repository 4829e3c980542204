//! Literals: integers (with range checks), floats and the `f32bits`/`f64bits` forms.

use super::super::lexer::Tok;
use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax;
use super::{PResult, ParseError, Parser};

impl Parser<'_> {
    /// An integer literal with an optional leading `-`; returns (negative, magnitude, suffix, span).
    pub(super) fn int_literal(&mut self, what: &str) -> PResult<(bool, u64, Option<String>, Span)> {
        let start = self.span();
        let negative = self.is_punct("-") && matches!(self.peek_at(1), Tok::Int { .. });
        if negative {
            self.bump();
        }
        match self.peek().clone() {
            Tok::Int { value, suffix } => {
                let end = self.bump().span;
                Ok((negative, value, suffix, start.to(end)))
            }
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    /// A signed 64-bit integer literal without a suffix (or with `i64`).
    pub(super) fn i64_literal(&mut self, what: &str) -> PResult<(i64, Span)> {
        let (neg, mag, suffix, span) = self.int_literal(what)?;
        if suffix.as_deref().is_some_and(|s| s != "i64") {
            return Err(ParseError::new(
                span,
                format!(
                    "expected {what} (an `i64`), found a literal with suffix `{}`",
                    suffix.unwrap_or_default()
                ),
                vec![what.to_owned()],
            ));
        }
        Ok((
            signed_value(neg, mag).ok_or_else(|| out_of_i64(span))?,
            span,
        ))
    }

    /// A non-negative literal without suffix that fits `u64`.
    pub(super) fn u64_literal(&mut self, what: &str) -> PResult<(u64, Span)> {
        match self.peek().clone() {
            Tok::Int {
                value,
                suffix: None,
            } => Ok((value, self.bump().span)),
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    pub(super) fn float_from_text(
        &self,
        text: &str,
        ty: FloatType,
        negative: bool,
        span: Span,
    ) -> PResult<u64> {
        let bad = || ParseError::new(span, format!("invalid float literal `{text}`"), vec![]);
        Ok(match ty {
            FloatType::F64 => {
                let bits = text.parse::<f64>().map_err(|_| bad())?.to_bits();
                if negative { bits ^ (1 << 63) } else { bits }
            }
            FloatType::F32 => {
                let bits = text.parse::<f32>().map_err(|_| bad())?.to_bits();
                syntax::f32_bits_to_f64(if negative { bits ^ (1 << 31) } else { bits })
            }
        })
    }

    /// Whether the next tokens start a numeric literal (for folding a leading `-`).
    pub(super) fn at_number(&self, n: usize) -> bool {
        match self.peek_at(n) {
            Tok::Int { .. } | Tok::Float { .. } => true,
            Tok::Ident {
                text,
                quoted: false,
            } => matches!(text.as_str(), "inf" | "nan" | "inf_f32" | "nan_f32"),
            _ => false,
        }
    }

    /// A numeric literal at the current token (after an optional folded `-`).
    pub(super) fn number(&mut self, negative: bool, start: Span) -> PResult<Expr> {
        let tok = self.bump();
        let span = start.to(tok.span);
        let sign64 = |bits: u64| if negative { bits ^ (1 << 63) } else { bits };
        Ok(match tok.tok {
            Tok::Int { value, suffix } => {
                let ty = match suffix.as_deref() {
                    None => IntType::I64,
                    Some(s) => {
                        syntax::parse_int_type(s).expect("the lexer only accepts known suffixes")
                    }
                };
                let v = if ty.is_signed() {
                    signed_value(negative, value).ok_or_else(|| out_of_i64(span))?
                } else if negative && value != 0 {
                    return Err(ParseError::new(
                        span,
                        format!("a `{}` literal cannot be negative", syntax::int_type(ty)),
                        vec![],
                    ));
                } else {
                    value as i64
                };
                Expr::Int { value: v, ty }
            }
            Tok::Float { text, suffix } => {
                let ty = if suffix.as_deref() == Some("f32") {
                    FloatType::F32
                } else {
                    FloatType::F64
                };
                Expr::Float {
                    bits: self.float_from_text(&text, ty, negative, span)?,
                    ty,
                }
            }
            Tok::Ident { text, .. } => match text.as_str() {
                "inf" => Expr::Float {
                    bits: sign64(f64::INFINITY.to_bits()),
                    ty: FloatType::F64,
                },
                "nan" => Expr::Float {
                    bits: sign64(syntax::CANONICAL_NAN_F64),
                    ty: FloatType::F64,
                },
                "inf_f32" => Expr::Float {
                    bits: sign64(f64::INFINITY.to_bits()),
                    ty: FloatType::F32,
                },
                _ => Expr::Float {
                    bits: sign64(syntax::CANONICAL_NAN_F64),
                    ty: FloatType::F32,
                },
            },
            _ => unreachable!("at_number checked the token"),
        })
    }

    /// `f64bits(0x...)`, `f32bits(0x...)`, `f64bits_f32(0x...)`; the name is consumed.
    pub(super) fn bits_literal(&mut self, which: &str, name_span: Span) -> PResult<(Expr, Span)> {
        self.expect_punct("(")?;
        let (bits, span) = self.u64_literal("the bits as an integer literal")?;
        let close = self.expect_punct(")")?;
        let e = match which {
            "f64bits" => Expr::Float {
                bits,
                ty: FloatType::F64,
            },
            "f64bits_f32" => Expr::Float {
                bits,
                ty: FloatType::F32,
            },
            _ => {
                let b32 = u32::try_from(bits).map_err(|_| {
                    ParseError::new(
                        span,
                        "`f32bits` takes the 32 bits of an `f32`".to_owned(),
                        vec![],
                    )
                })?;
                Expr::Float {
                    bits: syntax::f32_bits_to_f64(b32),
                    ty: FloatType::F32,
                }
            }
        };
        Ok((e, name_span.to(close)))
    }
}

pub(super) fn signed_value(negative: bool, magnitude: u64) -> Option<i64> {
    if negative {
        if magnitude <= 1 << 63 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

pub(super) fn out_of_i64(span: Span) -> ParseError {
    ParseError::new(
        span,
        "integer literal out of range for a signed 64-bit value".to_owned(),
        vec![],
    )
}
