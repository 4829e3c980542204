//! Verification of `tdm(..)` launch arguments: a tensor parameter of fixed rank 1 to 5 and
//! 8-, 16-, 32- or 64-bit elements, one block extent per dimension, and a padding the
//! descriptor can hold (docs/ir.md, "TDM descriptors"); the address, dims and strides are
//! checked at call time.

use super::super::model::{ParamType, TdmArg, tdm_limits as limits};
use super::super::source_map::StmtPath;
use super::super::syntax;
use super::{FnVerifier, StmtFocus};

impl FnVerifier<'_, '_> {
    /// Descriptor argument `k` of a launch: its tensor's rank when it is well formed.
    pub(super) fn tdm_arg(&mut self, path: &StmtPath, k: usize, t: &TdmArg) -> Option<usize> {
        let what = format!("kernel argument {k} (tdm of `{}`)", t.tensor);
        let mut errors = Vec::new();
        let spec = match self.f.param_named(&t.tensor).map(|p| &p.ty) {
            Some(ParamType::Tensor(spec)) => Some(spec.clone()),
            Some(other) => {
                errors.push(format!(
                    "`{}` is a {}, not a tensor parameter",
                    t.tensor,
                    crate::ir::print::print_param_type(other)
                ));
                None
            }
            None => {
                errors.push(format!("no tensor parameter `{}`", t.tensor));
                None
            }
        };
        let rank = spec.as_ref().and_then(|s| s.shape.rank());
        if let Some(spec) = &spec {
            match rank {
                None => errors.push(format!(
                    "`{}` is a tensor of any rank; a descriptor needs one block extent per \
                     dimension, so the tensor's rank must be fixed",
                    t.tensor
                )),
                Some(r) if !(1..=limits::MAX_RANK).contains(&r) => {
                    errors.push(format!("rank is {r}; it must be 1 to {}", limits::MAX_RANK))
                }
                Some(r) if r != t.block.len() => errors.push(format!(
                    "block has {} entries; `{}` (rank {r}) needs {r}",
                    t.block.len(),
                    t.tensor
                )),
                Some(_) => {}
            }
            match spec.dtype {
                Some(d) if d.lanes == 1 && matches!(d.bits, 8 | 16 | 32 | 64) => {
                    if let Some(e) = self.pad_error(t, u64::from(d.bits)) {
                        errors.push(e);
                    }
                }
                Some(d) => errors.push(format!(
                    "`{}` has dtype {}; a TDM descriptor takes elements of 8, 16, 32 or 64 bits",
                    t.tensor,
                    syntax::dtype(d)
                )),
                None => errors.push(format!(
                    "`{}` accepts any dtype, so the descriptor's element size is unknown; \
                     declare the tensor's dtype",
                    t.tensor
                )),
            }
        }
        for (i, &b) in t.block.iter().enumerate() {
            if !(1..=limits::MAX_BLOCK).contains(&b) {
                errors.push(format!(
                    "block[{i}] is {b}; it must be 1 to {}",
                    limits::MAX_BLOCK
                ));
            }
        }
        if !(1..=limits::MAX_WARPS).contains(&t.warps) {
            errors.push(format!(
                "warps is {}; it must be 1 to {}",
                t.warps,
                limits::MAX_WARPS
            ));
        }
        let ok = errors.is_empty();
        for e in errors {
            self.stmt_err(path, StmtFocus::Whole, format!("{what}: {e}"));
        }
        ok.then_some(rank).flatten()
    }

    /// Why the padding does not fit the descriptor for elements of `bits`, if it does not:
    /// the interval and the amount are whole 32-bit words, the interval a power of two of 2
    /// to 256 words, the amount 1 to 128 words.
    fn pad_error(&self, t: &TdmArg, bits: u64) -> Option<String> {
        let (interval, amount) = t.pad?;
        let (Some(ib), Some(ab)) = (interval.checked_mul(bits), amount.checked_mul(bits)) else {
            return Some(format!(
                "pad=({interval}, {amount}) is too large: the interval must be at most {} \
                 words, the amount {}",
                limits::MAX_PAD_INTERVAL_DWORDS,
                limits::MAX_PAD_AMOUNT_DWORDS
            ));
        };
        if !ib.is_multiple_of(32) || !ab.is_multiple_of(32) {
            return Some(format!(
                "pad=({interval}, {amount}) is not a whole number of 32-bit words of \
                 {bits}-bit elements"
            ));
        }
        let (iw, aw) = (ib / 32, ab / 32);
        if !iw.is_power_of_two() || !(2..=limits::MAX_PAD_INTERVAL_DWORDS).contains(&iw) {
            return Some(format!(
                "the padding interval is {interval} elements = {iw} words; it must be a \
                 power of two of 2 to {} words",
                limits::MAX_PAD_INTERVAL_DWORDS
            ));
        }
        if !(1..=limits::MAX_PAD_AMOUNT_DWORDS).contains(&aw) {
            return Some(format!(
                "the padding amount is {amount} elements = {aw} words; it must be 1 to {} words",
                limits::MAX_PAD_AMOUNT_DWORDS
            ));
        }
        None
    }
}
