//! Tensor parameter specs: `[(dims), dtype, ...]`, dtypes and shape constraints.

use safecall_runtime::abi::DLDataType;
use safecall_runtime::dtype;

use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax;
use super::lexer::Tok;
use super::{PResult, ParseError, Parser, ticks};

impl Parser<'_> {
    /// `(d0, d1, ...)`; returns the dims and the span of each.
    pub(super) fn dims(&mut self) -> PResult<(Vec<Dim>, Vec<Span>, Span)> {
        let open = self.expect_punct("(")?;
        let items = self.list(")", |p| {
            if matches!(p.peek(), Tok::Int { .. })
                || (p.is_punct("-") && matches!(p.peek_at(1), Tok::Int { .. }))
            {
                let (v, s) = p.i64_literal("a dimension")?;
                Ok((Dim::Const(v), s))
            } else if matches!(p.peek(), Tok::Ident { .. }) {
                let (n, s) = p.name("a dimension (an integer or a symbolic variable)")?;
                Ok((Dim::Var(n), s))
            } else {
                Err(p.unexpected(vec![
                    "a dimension (an integer or a symbolic variable)".to_owned(),
                ]))
            }
        })?;
        let close = Span::new(self.prev_end(), self.prev_end());
        let (dims, spans) = items.into_iter().unzip();
        Ok((dims, spans, open.to(close)))
    }

    pub(super) fn tensor_spec(&mut self) -> PResult<(TensorSpec, TensorSpans)> {
        self.expect_punct("[")?;
        let (shape, mut spans) = self.tensor_shape()?;
        self.expect_punct(",")?;
        let dtype_start = self.span();
        let dtype = self.dtype()?;
        spans.dtype = dtype_start.to(Span::new(self.prev_end(), self.prev_end()));
        let mut spec = TensorSpec::new(dtype, vec![]);
        spec.shape = shape;
        const KEYS: &[&str] = &[
            "device",
            "strides",
            "device_id",
            "byte_offset",
            "align",
            "index",
        ];
        while self.eat_punct(",") {
            if self.is_punct("]") {
                break;
            }
            let key_span = self.span();
            let (key, _) = self.word(KEYS)?;
            let attr = match key.as_str() {
                "device" => TensorAttr::Device,
                "strides" => TensorAttr::Strides,
                "device_id" => TensorAttr::DeviceId,
                "byte_offset" => TensorAttr::ByteOffset,
                "align" => TensorAttr::Align,
                "index" => TensorAttr::Index,
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!("unknown tensor attribute `{key}`"),
                        ticks(KEYS),
                    ));
                }
            };
            if spans.attrs.iter().any(|(a, _)| *a == attr) {
                return Err(ParseError::new(
                    key_span,
                    format!("duplicate tensor attribute `{key}`"),
                    vec![],
                ));
            }
            self.expect_punct("=")?;
            self.tensor_attr(attr, &mut spec, &mut spans)?;
            let end = Span::new(self.prev_end(), self.prev_end());
            spans.attrs.push((attr, key_span.to(end)));
        }
        if !self.is_punct("]") {
            return Err(self.unexpected(vec!["`,`".to_owned(), "`]`".to_owned()]));
        }
        self.bump();
        Ok((spec, spans))
    }

    /// A tensor type's shape: `(dims...)` or `any`; the spans start with its own.
    fn tensor_shape(&mut self) -> PResult<(TensorShape, TensorSpans)> {
        let start = self.span();
        if self.eat_kw("any") {
            let shape = start.to(Span::new(self.prev_end(), self.prev_end()));
            return Ok((
                TensorShape::AnyRank,
                TensorSpans {
                    shape,
                    ..Default::default()
                },
            ));
        }
        if !self.is_punct("(") {
            return Err(self
                .unexpected(vec!["the shape `(...)`".to_owned(), "`any`".to_owned()])
                .with_note(
                    "a tensor type is written `tensor[(dims...), dtype, key=value...]` \
                     (`tensor[any, dtype, ...]` for any rank)"
                        .to_owned(),
                ));
        }
        let (dims, dim_spans, shape) = self.dims()?;
        let spans = TensorSpans {
            shape,
            dims: dim_spans,
            ..Default::default()
        };
        Ok((TensorShape::Dims(dims), spans))
    }

    /// The value of tensor attribute `attr` (after its `=`), stored into `spec`.
    fn tensor_attr(
        &mut self,
        attr: TensorAttr,
        spec: &mut TensorSpec,
        spans: &mut TensorSpans,
    ) -> PResult<()> {
        match attr {
            TensorAttr::Device => {
                spec.device_type = self.device_type_value()?;
            }
            TensorAttr::Strides => {
                spec.strides = if self.eat_kw("any") {
                    Strides::Any
                } else if self.eat_kw("compact") {
                    Strides::Compact
                } else if self.is_punct("(") {
                    let (dims, ds, _) = self.dims()?;
                    spans.strides = ds;
                    Strides::Exact(dims)
                } else {
                    return Err(self.unexpected(vec![
                        "`any`".into(),
                        "`compact`".into(),
                        "`(...)`".into(),
                    ]));
                };
            }
            TensorAttr::DeviceId => {
                spec.device_id = if self.eat_kw("same") {
                    DeviceIdPolicy::Same
                } else if self.eat_kw("free") {
                    DeviceIdPolicy::Free
                } else if matches!(self.peek(), Tok::Ident { .. }) {
                    DeviceIdPolicy::Var(self.name("a symbolic variable")?.0)
                } else {
                    return Err(self.unexpected(vec![
                        "`same`".into(),
                        "`free`".into(),
                        "a symbolic variable".into(),
                    ]));
                };
            }
            TensorAttr::ByteOffset => {
                spec.byte_offset = if self.eat_kw("zero") {
                    ByteOffsetPolicy::Zero
                } else if self.eat_kw("any") {
                    ByteOffsetPolicy::Any
                } else {
                    return Err(self.unexpected(vec!["`zero`".into(), "`any`".into()]));
                };
            }
            TensorAttr::Align => {
                let (v, s) = self.u64_literal("the alignment in bytes")?;
                spec.alignment = Some(u32::try_from(v).map_err(|_| {
                    ParseError::new(s, "alignment does not fit `u32`".to_owned(), vec![])
                })?);
            }
            TensorAttr::Index => {
                let (w, s) = self.word(&["i32", "i64", "u32", "..."])?;
                spec.index_type = Some(syntax::parse_int_type(&w).ok_or_else(|| {
                    ParseError::new(
                        s,
                        format!("unknown index type `{w}`"),
                        ticks(&["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]),
                    )
                })?);
            }
        }
        Ok(())
    }

    /// A device: a type code, `any`, `same` or a device name.
    fn device_type_value(&mut self) -> PResult<DeviceTypePolicy> {
        if self.eat_kw("same") {
            return Ok(DeviceTypePolicy::Same);
        }
        Ok(match self.peek().clone() {
            Tok::Int { .. } | Tok::Punct("-") => {
                let (v, s) = self.i64_literal("a device type code")?;
                DeviceTypePolicy::Code(i32::try_from(v).map_err(|_| {
                    ParseError::new(s, "device type code does not fit `i32`".to_owned(), vec![])
                })?)
            }
            Tok::Ident {
                text,
                quoted: false,
            } if text == "any" => {
                self.bump();
                DeviceTypePolicy::Any
            }
            Tok::Ident {
                text,
                quoted: false,
            } if syntax::parse_device_name(&text).is_some() => {
                self.bump();
                syntax::parse_device_name(&text)
                    .map_or(DeviceTypePolicy::Any, DeviceTypePolicy::Code)
            }
            _ => {
                let mut names: Vec<&str> = vec!["any", "same"];
                names.extend(syntax::DEVICE_NAMES.iter().map(|(n, _)| *n));
                let mut expected = ticks(&names);
                expected.push("a device type code".to_owned());
                return Err(ParseError::new(
                    self.span(),
                    format!("unknown device {}", self.peek().describe()),
                    expected,
                ));
            }
        })
    }

    pub(super) fn dtype(&mut self) -> PResult<Option<DLDataType>> {
        let span = self.span();
        let word = match self.peek().clone() {
            Tok::Ident {
                text,
                quoted: false,
            } => text,
            _ => {
                return Err(self.unexpected(vec![
                    "a dtype (`float32`, `int8x4`, ...)".into(),
                    "`any`".into(),
                ]));
            }
        };
        self.bump();
        if word == "any" {
            return Ok(None);
        }
        if word == "dtype" && self.is_punct("(") {
            self.bump();
            let mut parts = [0u64; 3];
            let limits = [u64::from(u8::MAX), u64::from(u8::MAX), u64::from(u16::MAX)];
            for (i, what) in ["the type code", "the bits", "the lanes"]
                .iter()
                .enumerate()
            {
                let (v, s) = self.u64_literal(what)?;
                if v > limits[i] {
                    return Err(ParseError::new(s, format!("{what} out of range"), vec![]));
                }
                parts[i] = v;
                if i < 2 {
                    self.expect_punct(",")?;
                }
            }
            self.expect_punct(")")?;
            return Ok(Some(DLDataType {
                code: parts[0] as u8,
                bits: parts[1] as u8,
                lanes: parts[2] as u16,
            }));
        }
        // A dtype name may continue with digits after a lexer split (`float8_e4m3fn` is one
        // identifier, but nothing else needs joining).
        dtype::parse(&word).map(Some).map_err(|e| {
            ParseError::new(span, format!("bad dtype `{word}`: {e}"), vec![])
                .with_note("dtypes are spelled as in TVM-FFI: `float32`, `int8x4`, `bfloat16`, `float8_e4m3fn`, `bool`, or `any`".to_owned())
        })
    }

    pub(super) fn constraint(&mut self) -> PResult<(Constraint, Span)> {
        let (var, start) = self.name("a constrained variable")?;
        let shape_note = || "constraints have the form `name % divisor == 0`".to_owned();
        if !self.is_punct("%") {
            return Err(self
                .unexpected(vec!["`%`".to_owned()])
                .with_note(shape_note()));
        }
        self.bump();
        let (divisor, _) = self.u64_literal("the divisor (a non-negative integer literal)")?;
        self.expect_punct("==")
            .map_err(|e| e.with_note(shape_note()))?;
        let zero_span = self.span();
        match self.peek() {
            Tok::Int {
                value: 0,
                suffix: None,
            } => {
                self.bump();
            }
            _ => {
                return Err(ParseError::new(
                    zero_span,
                    format!("expected `0`, found {}", self.peek().describe()),
                    vec!["`0`".to_owned()],
                )
                .with_note(shape_note()));
            }
        }
        Ok((Constraint::Divisible { var, divisor }, start.to(zero_span)))
    }
}
