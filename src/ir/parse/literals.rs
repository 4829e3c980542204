//! Literals: integers (with range checks), floats (`1.5f16`, `inf_bf16`, `nan_f32`) and the
//! `f16bits`/`f32bits`/`f64bits` forms.

use super::super::model::*;
use super::super::source_map::*;
use super::super::{half, syntax};
use super::lexer::Tok;
use super::{PResult, ParseError, Parser};

impl Parser<'_> {
    /// An integer literal with an optional leading `-`; returns (negative, magnitude, suffix, span).
    pub(super) fn int_literal(
        &mut self,
        what: &str,
    ) -> PResult<(bool, u64, Option<&'static str>, Span)> {
        let start = self.span();
        let negative = self.is_punct("-") && matches!(self.peek_at(1), Tok::Int { .. });
        if negative {
            self.bump();
        }
        match self.peek().clone() {
            Tok::Int { value, suffix } => {
                let end = self.bump();
                Ok((negative, value, suffix, start.to(end)))
            }
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    /// A signed 64-bit integer literal without a suffix (or with `i64`).
    pub(super) fn i64_literal(&mut self, what: &str) -> PResult<(i64, Span)> {
        let (neg, mag, suffix, span) = self.int_literal(what)?;
        if suffix.is_some_and(|s| s != "i64") {
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
            } => Ok((value, self.bump())),
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
            // The decimal read as an f64, then rounded to the nearest half (ties to even).
            FloatType::F16 | FloatType::BF16 => {
                let wide = text.parse::<f64>().map_err(|_| bad())?.to_bits();
                let wide = if negative { wide ^ (1 << 63) } else { wide };
                half::half_to_f64_bits(half::round_f64_bits(wide, ty), ty)
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
            } => special_float(text).is_some(),
            _ => false,
        }
    }

    /// A numeric literal at the current token (after an optional folded `-`).
    pub(super) fn number(&mut self, negative: bool, start: Span) -> PResult<Expr> {
        let tok = self.bump_token();
        let span = start.to(tok.span);
        let sign64 = |bits: u64| if negative { bits ^ (1 << 63) } else { bits };
        Ok(match tok.tok {
            Tok::Int { value, suffix } => {
                let ty = match suffix {
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
                let ty = suffix
                    .and_then(FloatType::from_keyword)
                    .unwrap_or(FloatType::F64);
                Expr::Float {
                    bits: self.float_from_text(text, ty, negative, span)?,
                    ty,
                }
            }
            Tok::Ident { text, .. } => {
                let (ty, nan) = special_float(&text).expect("at_number checked the word");
                let bits = if nan {
                    match ty {
                        // The canonical NaN of the type, widened exactly.
                        FloatType::F16 | FloatType::BF16 => half::half_to_f64_bits(
                            half::round_f64_bits(syntax::CANONICAL_NAN_F64, ty),
                            ty,
                        ),
                        FloatType::F32 | FloatType::F64 => syntax::CANONICAL_NAN_F64,
                    }
                } else {
                    f64::INFINITY.to_bits()
                };
                Expr::Float {
                    bits: sign64(bits),
                    ty,
                }
            }
            _ => unreachable!("at_number checked the token"),
        })
    }

    /// `f64bits(0x...)`, `f32bits(0x...)`, `f16bits(0x...)`, `bf16bits(0x...)` (a value by its
    /// bits in its type) or `f64bits_f32(0x...)`, `f64bits_f16(0x...)`, `f64bits_bf16(0x...)`
    /// (a constant of the type by the f64 bits the model holds); the name is consumed.
    pub(super) fn bits_literal(&mut self, which: &str, name_span: Span) -> PResult<(Expr, Span)> {
        self.expect_punct("(")?;
        let (bits, span) = self.u64_literal("the bits as an integer literal")?;
        let close = self.expect_punct(")")?;
        let (ty, wide) = bits_word(which).expect("the caller checked the word");
        let own = |n: u32| {
            (bits >> n == 0).then_some(bits).ok_or_else(|| {
                ParseError::new(
                    span,
                    format!(
                        "`{which}` takes the {n} bits of {} `{}`",
                        if ty == FloatType::BF16 { "a" } else { "an" },
                        ty.keyword()
                    ),
                    vec![],
                )
            })
        };
        let bits = match ty {
            _ if wide => bits,
            FloatType::F64 => bits,
            FloatType::F32 => syntax::f32_bits_to_f64(own(32)? as u32),
            FloatType::F16 | FloatType::BF16 => half::half_to_f64_bits(own(16)? as u16, ty),
        };
        Ok((Expr::Float { bits, ty }, name_span.to(close)))
    }
}

/// The float type and whether it is NaN (else infinity) of a word like `inf_f16`, `nan`.
fn special_float(word: &str) -> Option<(FloatType, bool)> {
    FloatType::ALL.into_iter().find_map(|t| {
        if word == t.inf_word() {
            Some((t, false))
        } else if word == t.nan_word() {
            Some((t, true))
        } else {
            None
        }
    })
}

/// The float type of a bits builtin (`f16bits`, `f64bits_f16`, ...) and whether it takes the
/// f64 bits of the model (`f64bits_*`).
pub(super) fn bits_word(word: &str) -> Option<(FloatType, bool)> {
    FloatType::ALL.into_iter().find_map(|t| {
        if word == t.bits_word() {
            Some((t, false))
        } else if t.wide_bits_word() == Some(word) {
            Some((t, true))
        } else {
            None
        }
    })
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
