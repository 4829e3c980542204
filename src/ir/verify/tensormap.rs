//! Verification of `tensormap(..)` launch arguments: a tensor parameter whose dtype has a TMA
//! element type, one box extent per dimension, and every rule of `cuTensorMapEncodeTiled`
//! that constants decide (the rest is checked at call time, docs/ir.md "TMA descriptors").

use super::super::model::{
    Expr, Interleave, OobFill, ParamType, ScalarType, TensorMapArg, TensorMapDtype,
    TensorMapLayout, Type, tensormap_limits as limits,
};
use super::super::source_map::StmtPath;
use super::super::syntax;
use super::{FnVerifier, StmtFocus};

impl FnVerifier<'_, '_> {
    /// Descriptor argument `k` of a launch, whose expressions start at `index`; whether it is
    /// well formed.
    pub(super) fn tensormap_arg(
        &mut self,
        path: &StmtPath,
        index: usize,
        k: usize,
        t: &TensorMapArg,
    ) -> bool {
        let before = self.v.errors.len();
        let what = format!("kernel argument {k} (tensormap of `{}`)", t.tensor);
        for (i, e) in t.exprs().enumerate() {
            match self.expr(path, index + i, e) {
                Some(Type::Scalar(ScalarType::Int(_))) | None => {}
                Some(found) => self.stmt_err(
                    path,
                    StmtFocus::Expr(vec![index + i]),
                    format!("{what}: box and element strides are integers, found {found}"),
                ),
            }
        }
        let spec = match self.f.param_named(&t.tensor).map(|p| &p.ty) {
            Some(ParamType::Tensor(spec)) => spec.clone(),
            Some(other) => {
                let message = format!(
                    "{what}: `{}` is a {}, not a tensor parameter",
                    t.tensor,
                    crate::ir::print::print_param_type(other)
                );
                self.stmt_err(path, StmtFocus::Whole, message);
                return false;
            }
            None => {
                let message = format!("{what}: no tensor parameter `{}`", t.tensor);
                self.stmt_err(path, StmtFocus::Whole, message);
                return false;
            }
        };
        let err = |this: &mut Self, at: Option<usize>, message: String| {
            let focus = at.map_or(StmtFocus::Whole, |i| StmtFocus::Expr(vec![i]));
            this.stmt_err(path, focus, format!("{what}: {message}"));
        };
        let Some(rank) = spec.shape.rank() else {
            let message = format!(
                "`{}` is a tensor of any rank; a descriptor needs one box entry per dimension, so \
                 the tensor's rank must be fixed",
                t.tensor
            );
            err(self, None, message);
            return false;
        };
        let (min_rank, why) = match (&t.layout, t.interleave) {
            (TensorMapLayout::Im2col { .. }, _) => (limits::MIN_RANK_IM2COL, " for im2col"),
            (TensorMapLayout::Tiled { .. }, Interleave::None) => (1, ""),
            (TensorMapLayout::Tiled { .. }, Interleave::B16 | Interleave::B32) => {
                (limits::MIN_RANK_INTERLEAVED, " with interleave")
            }
        };
        if rank < min_rank || rank > limits::MAX_RANK {
            err(
                self,
                None,
                format!(
                    "rank is {rank}; it must be {min_rank} to {}{why}",
                    limits::MAX_RANK
                ),
            );
        }
        let counts: Vec<(&str, usize, usize)> = match &t.layout {
            TensorMapLayout::Tiled { box_dims } => vec![("box", box_dims.len(), rank)],
            TensorMapLayout::Im2col { lower, upper, .. } => {
                let spatial = rank.saturating_sub(2);
                vec![
                    ("lower", lower.len(), spatial),
                    ("upper", upper.len(), spatial),
                ]
            }
        };
        for (key, found, wanted) in counts {
            if found != wanted {
                err(
                    self,
                    None,
                    format!(
                        "{key} has {found} entries; `{}` (rank {rank}) needs {wanted}",
                        t.tensor
                    ),
                );
            }
        }
        if !t.element_strides.is_empty() && t.element_strides.len() != rank {
            err(
                self,
                None,
                format!(
                    "element_strides has {} entries; `{}` has {rank} dimensions",
                    t.element_strides.len(),
                    t.tensor
                ),
            );
        }
        let elem = match t.element_type(spec.dtype) {
            Some(e) => Some(e),
            None => {
                if let Some(d) = spec.dtype {
                    err(
                        self,
                        None,
                        format!(
                            "`{}` has dtype {}, which no TMA element type represents; \
                             give `dtype=` ({})",
                            t.tensor,
                            syntax::dtype(d),
                            TensorMapDtype::KEYWORDS.join(", ")
                        ),
                    );
                } else {
                    err(
                        self,
                        None,
                        format!(
                            "`{}` accepts any dtype, so the descriptor's element type is \
                             unknown; declare the tensor's dtype or give `dtype=`",
                            t.tensor
                        ),
                    );
                }
                None
            }
        };
        let ranges = t.layout.ranges(rank);
        for (i, (e, (name, lo, hi))) in t.layout.exprs().zip(&ranges).enumerate() {
            if let Some(v) = literal(e).filter(|v| !(*lo..=*hi).contains(v)) {
                let message = format!("{name} is {v}; it must be {lo} to {hi}");
                err(self, Some(index + i), message);
            }
        }
        let strides_at = index + t.layout.exprs().count();
        for (i, e) in t.element_strides.iter().enumerate() {
            if let Some(v) = literal(e).filter(|v| !(1..=limits::MAX_ELEMENT_STRIDE).contains(v)) {
                err(
                    self,
                    Some(strides_at + i),
                    format!(
                        "element_strides[{i}] is {v}; it must be 1 to {}",
                        limits::MAX_ELEMENT_STRIDE
                    ),
                );
            }
        }
        if t.interleave == Interleave::B32 && t.swizzle != crate::ir::Swizzle::B32 {
            err(
                self,
                None,
                format!(
                    "interleave=b32 needs swizzle=b32, found swizzle={}",
                    t.swizzle.keyword()
                ),
            );
        }
        if let Some(elem) = elem.filter(|e| e.is_packed()) {
            err(
                self,
                None,
                format!(
                    "dtype={} is not supported yet: the driver counts the dims of the packed \
                     4- and 6-bit types in packed values, which the tensor's shape does not give",
                    elem.keyword()
                ),
            );
            return false;
        }
        if let Some(elem) = elem {
            if t.oob_fill == OobFill::Nan && !elem.is_float() {
                err(
                    self,
                    None,
                    format!(
                        "oob_fill=nan needs a float element type, found {}",
                        elem.keyword()
                    ),
                );
            }
            // The inner box: the innermost box extent, or an im2col pixel's channels.
            let (at, multiple) = t.layout.inner().unwrap_or_default();
            let inner = t.layout.exprs().nth(at);
            let at = index + at;
            let inner = inner.and_then(literal);
            if let Some(inner) = inner.filter(|_| t.interleave == Interleave::None) {
                let bytes = inner * i64::from(elem.size());
                let at = Some(at);
                if multiple && bytes % limits::BOX_INNER_MULTIPLE != 0 {
                    err(
                        self,
                        at,
                        format!(
                            "the inner box is {bytes} bytes ({inner} x {} bytes); it must be a \
                             multiple of {}",
                            elem.size(),
                            limits::BOX_INNER_MULTIPLE
                        ),
                    );
                }
                if let Some(span) = t.swizzle.span().filter(|s| bytes > i64::from(*s)) {
                    err(
                        self,
                        at,
                        format!(
                            "the inner box is {bytes} bytes; swizzle={} allows at most {span}",
                            t.swizzle.keyword()
                        ),
                    );
                }
            }
        }
        self.v.errors.len() == before
    }
}

/// The value of an integer literal.
fn literal(e: &Expr) -> Option<i64> {
    match e {
        Expr::Int { value, .. } => Some(*value),
        _ => None,
    }
}
