//! Parsing of launch arguments: an expression, or `tensormap(TENSOR, box=(..), ...)`.

use super::super::model::{
    Expr, Interleave, L2Promotion, LaunchArg, OobFill, Swizzle, TensorMapArg, TensorMapDtype,
};
use super::super::source_map::ExprSpans;
use super::{PResult, ParseError, Parser, ticks};

/// The keyword that starts a descriptor argument.
pub(crate) const TENSORMAP: &str = "tensormap";

/// The option keys of `tensormap(..)`, in the order the printer writes them.
const KEYS: &[&str] = &[
    "box",
    "element_strides",
    "interleave",
    "swizzle",
    "l2_promotion",
    "oob_fill",
    "dtype",
];

impl Parser<'_> {
    /// One launch argument and the spans of its expressions ([`LaunchArg::exprs`] order).
    pub(super) fn launch_arg(&mut self) -> PResult<(LaunchArg, Vec<ExprSpans>)> {
        if !(self.is_kw(TENSORMAP) && self.is_punct_at(1, "(")) {
            let (e, s) = self.expr()?;
            return Ok((LaunchArg::Value(e), vec![s]));
        }
        let start = self.span();
        self.bump();
        self.expect_punct("(")?;
        let (tensor, _) = self.name("the tensor parameter the descriptor addresses")?;
        let mut t = TensorMapArg::new(&tensor, Vec::new());
        let mut box_spans = None;
        let mut stride_spans = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        while self.eat_punct(",") {
            if self.is_punct(")") {
                break;
            }
            let (key, key_span) = self.word(KEYS)?;
            if seen.contains(&key) {
                return Err(ParseError::new(
                    key_span,
                    format!("duplicate tensormap option `{key}`"),
                    vec![],
                ));
            }
            self.expect_punct("=")?;
            let value_span = self.span();
            let bad = |message: String| ParseError::new(value_span, message, vec![]);
            macro_rules! keyword {
                ($ty:ty) => {{
                    let (w, _) = self.word(<$ty>::KEYWORDS)?;
                    <$ty>::from_keyword(&w).ok_or_else(|| {
                        bad(format!(
                            "unknown {key} `{w}`; expected one of {}",
                            <$ty>::KEYWORDS.join(", ")
                        ))
                    })?
                }};
            }
            match key.as_str() {
                "box" | "element_strides" => {
                    self.expect_punct("(")?;
                    let (items, s): (Vec<Expr>, Vec<ExprSpans>) =
                        self.list(")", |p| p.expr())?.into_iter().unzip();
                    if key == "box" {
                        t.box_dims = items;
                        box_spans = Some(s);
                    } else {
                        t.element_strides = items;
                        stride_spans = s;
                    }
                }
                "interleave" => t.interleave = keyword!(Interleave),
                "swizzle" => t.swizzle = keyword!(Swizzle),
                "l2_promotion" => t.l2_promotion = keyword!(L2Promotion),
                "oob_fill" => t.oob_fill = keyword!(OobFill),
                "dtype" => t.dtype = Some(keyword!(TensorMapDtype)),
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!(
                            "unknown tensormap option `{key}`; the options are {}",
                            ticks(KEYS).join(", ")
                        ),
                        ticks(KEYS),
                    ));
                }
            }
            seen.push(key);
        }
        let close = self.expect_punct(")")?;
        let Some(box_spans) = box_spans else {
            return Err(ParseError::new(
                start.to(close),
                format!("`{TENSORMAP}({tensor}, ...)` needs `box=(...)`, one extent per dimension"),
                vec![],
            ));
        };
        Ok((
            LaunchArg::TensorMap(Box::new(t)),
            box_spans.into_iter().chain(stride_spans).collect(),
        ))
    }
}
