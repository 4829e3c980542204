//! Parsing of launch arguments: an expression, `tensormap(TENSOR, box=(..), ...)`,
//! `tensormap_im2col(TENSOR, lower=(..), upper=(..), channels=C, pixels=P, ...)` or `tdm(..)`
//! ([`super::tdm`]).

use super::super::model::{
    Expr, Interleave, L2Promotion, LaunchArg, OobFill, Swizzle, TensorMapArg, TensorMapDtype,
    TensorMapLayout,
};
use super::super::source_map::ExprSpans;
use super::{PResult, ParseError, Parser, ticks};

/// The option keys of `tensormap(..)` and `tensormap_im2col(..)`, in the order the printer
/// writes them (the layout's first).
const KEYS: &[&str] = &[
    "box",
    "lower",
    "upper",
    "channels",
    "pixels",
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
        if self.at_tdm() {
            return self.tdm_arg();
        }
        let tiled = TensorMapLayout::Tiled {
            box_dims: Vec::new(),
        };
        let zero = || Expr::Int {
            value: 0,
            ty: crate::ir::model::IntType::I64,
        };
        let im2col = TensorMapLayout::Im2col {
            lower: Vec::new(),
            upper: Vec::new(),
            channels: zero(),
            pixels: zero(),
        };
        let Some(layout) = [tiled, im2col]
            .into_iter()
            .find(|l| self.is_kw(l.keyword()) && self.is_punct_at(1, "("))
        else {
            let (e, s) = self.expr()?;
            return Ok((LaunchArg::Value(e), vec![s]));
        };
        let keyword = layout.keyword();
        let start = self.span();
        self.bump();
        self.expect_punct("(")?;
        let (tensor, _) = self.name("the tensor parameter the descriptor addresses")?;
        let mut t = TensorMapArg::with_layout(&tensor, layout);
        // Spans by key, for the layout's expressions in source-map order.
        let mut spans: Vec<(&str, Vec<ExprSpans>)> = Vec::new();
        let layout_keys: &[&str] = match t.layout {
            TensorMapLayout::Tiled { .. } => &["box"],
            TensorMapLayout::Im2col { .. } => &["lower", "upper", "channels", "pixels"],
        };
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
            let misplaced = ["box", "lower", "upper", "channels", "pixels"].contains(&key.as_str())
                && !layout_keys.contains(&key.as_str());
            if misplaced {
                return Err(ParseError::new(
                    key_span,
                    format!(
                        "`{keyword}` takes {}, not `{key}`",
                        ticks(layout_keys).join(", ")
                    ),
                    ticks(layout_keys),
                ));
            }
            match (key.as_str(), &mut t.layout) {
                ("box", TensorMapLayout::Tiled { box_dims }) => {
                    let (items, s) = self.expr_dims()?;
                    *box_dims = items;
                    spans.push(("box", s));
                }
                ("lower" | "upper", TensorMapLayout::Im2col { lower, upper, .. }) => {
                    let (items, s) = self.expr_dims()?;
                    *(if key == "lower" { lower } else { upper }) = items;
                    spans.push((if key == "lower" { "lower" } else { "upper" }, s));
                }
                (
                    "channels" | "pixels",
                    TensorMapLayout::Im2col {
                        channels, pixels, ..
                    },
                ) => {
                    let (e, s) = self.expr()?;
                    *(if key == "channels" { channels } else { pixels }) = e;
                    spans.push((
                        if key == "channels" {
                            "channels"
                        } else {
                            "pixels"
                        },
                        vec![s],
                    ));
                }
                ("element_strides", _) => {
                    let (items, s) = self.expr_dims()?;
                    t.element_strides = items;
                    spans.push(("element_strides", s));
                }
                ("interleave", _) => t.interleave = keyword!(Interleave),
                ("swizzle", _) => t.swizzle = keyword!(Swizzle),
                ("l2_promotion", _) => t.l2_promotion = keyword!(L2Promotion),
                ("oob_fill", _) => t.oob_fill = keyword!(OobFill),
                ("dtype", _) => t.dtype = Some(keyword!(TensorMapDtype)),
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
        if let Some(missing) = layout_keys.iter().find(|k| !seen.iter().any(|s| s == *k)) {
            return Err(ParseError::new(
                start.to(close),
                format!("`{keyword}({tensor}, ...)` needs `{missing}=`"),
                vec![],
            ));
        }
        let mut ordered = Vec::new();
        for key in layout_keys.iter().chain(&["element_strides"]) {
            if let Some((_, s)) = spans.iter_mut().find(|(k, _)| k == key) {
                ordered.append(s);
            }
        }
        Ok((LaunchArg::TensorMap(Box::new(t)), ordered))
    }

    /// `(e, ...)`: integer dimensions and their spans.
    fn expr_dims(&mut self) -> PResult<(Vec<Expr>, Vec<ExprSpans>)> {
        self.expect_punct("(")?;
        Ok(self.list(")", |p| p.expr())?.into_iter().unzip())
    }
}
