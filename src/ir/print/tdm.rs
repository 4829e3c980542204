//! Printing of the TDM descriptor argument: `tdm(TENSOR, block=(..), warps=W[, pad=(I, A)])`.

use super::super::model::TdmArg;
use super::super::syntax::name;

/// `tdm(..)` as the parser reads it back.
pub(super) fn print_tdm(t: &TdmArg) -> String {
    let ints = |v: &[u64]| {
        let parts: Vec<String> = v.iter().map(u64::to_string).collect();
        format!("({})", parts.join(", "))
    };
    let mut s = format!(
        "tdm({}, block={}, warps={}",
        name(&t.tensor),
        ints(&t.block),
        t.warps
    );
    if let Some((interval, amount)) = t.pad {
        s.push_str(&format!(", pad={}", ints(&[interval, amount])));
    }
    s.push(')');
    s
}
