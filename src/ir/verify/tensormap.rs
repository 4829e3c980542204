//! Verification of `tensormap(..)` launch arguments: a tensor parameter whose dtype has a TMA
//! element type, one box extent per dimension, and every rule of `cuTensorMapEncodeTiled`
//! that constants decide (the rest is checked at call time, docs/ir.md "TMA descriptors").

use super::super::model::{
    Dim, Expr, Interleave, OobFill, ParamType, ScalarType, TensorMapArg, TensorMapDtype,
    TensorMapLayout, TensorShape, TensorSpec, Type, tensormap_limits as limits,
};
use super::super::source_map::StmtPath;
use super::super::syntax;
use super::{FnVerifier, StmtFocus};
use safecall_runtime::abi::dtype_code;

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
        if t.interleave == Interleave::B32 && t.swizzle != crate::ir::model::Swizzle::B32 {
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
            self.packed_rules(path, index, &what, t, &spec, elem);
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
            if let Some(inner) =
                inner.filter(|_| t.interleave == Interleave::None && !elem.is_packed())
            {
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

impl FnVerifier<'_, '_> {
    /// The rules of a packed element type `elem` (docs/ir.md, "Packed element types") that
    /// constants decide: the tensor a container of bytes, the interleave and swizzle the type
    /// allows, the inner box (exactly 128 values for the `align16` types; a multiple of 16
    /// bytes and within the swizzle span at half a byte per value for `u4x16_align8`), and a
    /// constant innermost extent a whole number of packed groups.
    fn packed_rules(
        &mut self,
        path: &StmtPath,
        index: usize,
        what: &str,
        t: &TensorMapArg,
        spec: &TensorSpec,
        elem: TensorMapDtype,
    ) {
        let err = |this: &mut Self, at: Option<usize>, message: String| {
            let focus = at.map_or(StmtFocus::Whole, |i| StmtFocus::Expr(vec![i]));
            this.stmt_err(path, focus, format!("{what}: {message}"));
        };
        let dtype = elem.keyword();
        let byte_container = spec
            .dtype
            .is_some_and(|d| d.bits == 8 && d.lanes == 1 && d.code != dtype_code::BOOL);
        if !byte_container {
            let found = spec.dtype.map_or("any".to_owned(), syntax::dtype);
            let message = format!(
                "dtype={dtype} reads `{}` as packed bytes, so its dtype must be a 1-byte type \
                 (uint8, int8 or a float8 type), found {found}",
                t.tensor
            );
            err(self, None, message);
        }
        if elem == TensorMapDtype::U6x16Align16 && t.interleave != Interleave::None {
            let message = format!(
                "dtype={dtype} needs interleave=none, found interleave={}",
                t.interleave.keyword()
            );
            err(self, None, message);
        }
        if let Some(allowed) = elem.swizzles().filter(|a| !a.contains(&t.swizzle)) {
            let words: Vec<&str> = allowed.iter().map(|s| s.keyword()).collect();
            let message = format!(
                "dtype={dtype} allows swizzle={}, found swizzle={}",
                words.join(", "),
                t.swizzle.keyword()
            );
            err(self, None, message);
        }
        if let (Some((values, bytes)), TensorShape::Dims(dims)) = (elem.packing(), &spec.shape)
            && let Some(Dim::Const(extent)) = dims.last()
        {
            let group = if elem.is_align16() {
                limits::PACKED_INNER_BOX * bytes / values
            } else {
                bytes
            };
            if extent % group != 0 {
                let message = format!(
                    "`{}`'s innermost extent is {extent} bytes; dtype={dtype} needs a multiple \
                     of {group} bytes ({} values)",
                    t.tensor,
                    group * values / bytes
                );
                err(self, None, message);
            }
        }
        let Some((at, multiple)) = t.layout.inner() else {
            return;
        };
        let Some(inner) = t.layout.exprs().nth(at).and_then(literal) else {
            return;
        };
        let name = &t.layout.ranges(spec.shape.rank().unwrap_or(0))[at].0;
        let at = Some(index + at);
        if elem.is_align16() {
            if inner != limits::PACKED_INNER_BOX {
                let message = format!(
                    "{name} is {inner}; dtype={dtype} needs exactly {}",
                    limits::PACKED_INNER_BOX
                );
                err(self, at, message);
            }
            return;
        }
        if t.interleave != Interleave::None {
            return;
        }
        let per = elem.box_bits();
        let bits = inner * i64::from(per);
        let unit = 8 * limits::BOX_INNER_MULTIPLE;
        if multiple && bits % unit != 0 {
            let message = format!(
                "the inner box is {inner} x {per} bits = {bits} bits; it must be a multiple of \
                 {} bytes ({unit} bits)",
                limits::BOX_INNER_MULTIPLE
            );
            err(self, at, message);
        }
        if let Some(span) = t.swizzle.span().filter(|s| bits > 8 * i64::from(*s)) {
            let message = format!(
                "the inner box is {inner} x {per} bits = {bits} bits; swizzle={} allows at \
                 most {span} bytes ({} bits)",
                t.swizzle.keyword(),
                8 * span
            );
            err(self, at, message);
        }
    }
}

/// The value of an integer literal.
fn literal(e: &Expr) -> Option<i64> {
    if let Expr::Int { value, .. } = e {
        Some(*value)
    } else {
        None
    }
}
