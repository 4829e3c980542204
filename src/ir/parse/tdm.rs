//! Parsing of the TDM descriptor argument: `tdm(TENSOR, block=(..), warps=W[, pad=(I, A)])`,
//! every value an integer literal (what the kernel was compiled with).

use super::super::model::{LaunchArg, TdmArg};
use super::super::source_map::ExprSpans;
use super::{PResult, ParseError, Parser, ticks};

/// The option keys of `tdm(..)`, in the order the printer writes them.
const KEYS: &[&str] = &["block", "warps", "pad"];

impl Parser<'_> {
    /// Whether the next tokens start a `tdm(..)` argument.
    pub(super) fn at_tdm(&self) -> bool {
        self.is_kw("tdm") && self.is_punct_at(1, "(")
    }

    /// `tdm(..)`, after [`Parser::at_tdm`]; it has no expressions, so no spans.
    pub(super) fn tdm_arg(&mut self) -> PResult<(LaunchArg, Vec<ExprSpans>)> {
        let start = self.span();
        self.bump();
        self.expect_punct("(")?;
        let (tensor, _) = self.name("the tensor parameter the descriptor addresses")?;
        let mut t = TdmArg {
            tensor,
            block: Vec::new(),
            warps: 0,
            pad: None,
        };
        let mut seen: Vec<String> = Vec::new();
        while self.eat_punct(",") {
            if self.is_punct(")") {
                break;
            }
            let (key, key_span) = self.word(KEYS)?;
            if !KEYS.contains(&key.as_str()) {
                return Err(ParseError::new(
                    key_span,
                    format!(
                        "unknown tdm option `{key}`; the options are {}",
                        ticks(KEYS).join(", ")
                    ),
                    ticks(KEYS),
                ));
            }
            if seen.contains(&key) {
                return Err(ParseError::new(
                    key_span,
                    format!("duplicate tdm option `{key}`"),
                    vec![],
                ));
            }
            self.expect_punct("=")?;
            match key.as_str() {
                "block" => t.block = self.int_tuple("a block extent")?,
                "warps" => t.warps = self.u64_literal("the warp count (an integer)")?.0,
                _ => {
                    let open = self.span();
                    let pair = self.int_tuple("a padding interval or amount")?;
                    let [interval, amount] = pair[..] else {
                        return Err(ParseError::new(
                            open.to(self.span()),
                            format!("pad takes (interval, amount), found {} values", pair.len()),
                            vec![],
                        ));
                    };
                    t.pad = Some((interval, amount));
                }
            }
            seen.push(key);
        }
        let close = self.expect_punct(")")?;
        if let Some(missing) = ["block", "warps"]
            .iter()
            .find(|k| !seen.iter().any(|s| s == *k))
        {
            return Err(ParseError::new(
                start.to(close),
                format!("`tdm({}, ...)` needs `{missing}=`", t.tensor),
                vec![],
            ));
        }
        Ok((LaunchArg::Tdm(Box::new(t)), Vec::new()))
    }

    /// `(n, ...)`: integer literals.
    fn int_tuple(&mut self, what: &str) -> PResult<Vec<u64>> {
        self.expect_punct("(")?;
        self.list(")", |p| Ok(p.u64_literal(what)?.0))
    }
}
