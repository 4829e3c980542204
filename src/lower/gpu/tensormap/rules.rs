//! The rules of `cuTensorMapEncodeTiled`/`Im2col` (cuda.h's documentation of the encoder),
//! each checked before the driver is called, with a ValueError naming the rule and the value.

use crate::ir::{Expr, tensormap_limits as limits};
use crate::lir::{BinOp, IntCC, Ty, Var};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

use super::super::super::raise::{MsgPart, Tag};
use super::miss_fn::{Miss, MissFn};

/// Raises a ValueError unless `ok`: `WHAT: TEXT VALUE TEXT...`.
fn rule(cx: &mut MissFn<'_, '_>, ok: Var, parts: Vec<MsgPart>) {
    cx.check(ok, VALUE_ERROR, move |_| parts);
}

/// `lo <= v <= hi` (signed).
fn in_range(cx: &mut MissFn<'_, '_>, v: Var, lo: i64, hi: i64) -> Var {
    let ge = cx.b.icmp_imm(IntCC::Sge, v, lo);
    let le = cx.b.icmp_imm(IntCC::Sle, v, hi);
    cx.b.binary(BinOp::And, ge, le)
}

/// `v % m == 0` for a power of two `m`.
fn multiple_of(cx: &mut MissFn<'_, '_>, v: Var, m: i64) -> Var {
    let low = cx.b.binary_imm(BinOp::And, v, m - 1);
    cx.b.icmp_imm(IntCC::Eq, low, 0)
}

/// Every rule of `cuTensorMapEncodeTiled` that constants did not decide, each a ValueError
/// naming the argument, the rule and the values (run before encoding).
pub(crate) fn check_rules(cx: &mut MissFn<'_, '_>, q: &Miss<'_>) {
    let (t, p) = (q.t, &q.v);
    let rank = p.dims.len();
    let align = i64::from(t.interleave.alignment().max(q.elem.alignment()));
    let because = if q.elem.alignment() > t.interleave.alignment() {
        format!(" for dtype={}", q.elem.keyword())
    } else {
        String::new()
    };
    let ok = multiple_of(cx, p.addr_int, align);
    rule(
        cx,
        ok,
        vec![
            MsgPart::text("the global address "),
            MsgPart::Value(Tag::Ptr, p.addr),
            MsgPart::text(format!(
                " (data + byte_offset) is not aligned to {align} bytes, as TMA requires{because}"
            )),
        ],
    );
    for (i, &d) in p.dims.iter().enumerate() {
        if i + 1 == rank && q.elem.is_packed() {
            packed_inner_rules(cx, q, d);
            continue;
        }
        let ok = in_range(cx, d, 1, limits::MAX_DIM);
        rule(
            cx,
            ok,
            vec![
                MsgPart::Value(Tag::CStr, cx.tensor),
                MsgPart::text(format!(".shape[{i}] is ")),
                MsgPart::Value(Tag::I64, d),
                MsgPart::text(format!(
                    "; a TMA dimension must be 1 to {}",
                    limits::MAX_DIM
                )),
            ],
        );
    }
    // The innermost dimension is contiguous.
    if let (Some(&s), Some(d)) = (p.tensor_strides.last(), p.inner_extent) {
        let one = cx.b.icmp_imm(IntCC::Eq, s, 1);
        let single = cx.b.icmp_imm(IntCC::Eq, d, 1);
        let ok = cx.b.binary(BinOp::Or, one, single);
        rule(
            cx,
            ok,
            vec![
                MsgPart::Value(Tag::CStr, cx.tensor),
                MsgPart::text(format!(".strides[{}] is ", rank - 1)),
                MsgPart::Value(Tag::I64, s),
                MsgPart::text("; TMA needs the innermost dimension contiguous (stride 1)"),
            ],
        );
    }
    for (i, &bytes) in p.byte_strides.iter().enumerate() {
        let s = p.tensor_strides[i];
        let aligned = multiple_of(cx, bytes, align);
        let nonneg = cx.b.icmp_imm(IntCC::Sge, bytes, 0);
        let below = cx.b.icmp_imm(IntCC::Slt, bytes, limits::STRIDE_LIMIT);
        let range = cx.b.binary(BinOp::And, nonneg, below);
        let ok = cx.b.binary(BinOp::And, aligned, range);
        rule(
            cx,
            ok,
            vec![
                MsgPart::Value(Tag::CStr, cx.tensor),
                MsgPart::text(format!(".strides[{i}] is ")),
                MsgPart::Value(Tag::I64, s),
                MsgPart::text(" elements = "),
                MsgPart::Value(Tag::I64, bytes),
                MsgPart::text(format!(
                    " bytes; a TMA stride must be a multiple of {align} bytes and below 2^40{because}"
                )),
            ],
        );
    }
    let ranges = t.layout.ranges(rank);
    let inner = t.layout.inner();
    for (k, (e, &v)) in t.layout.exprs().zip(&p.layout).enumerate() {
        if matches!(e, Expr::Int { .. }) {
            continue;
        }
        let (name, lo, hi) = &ranges[k];
        let ok = in_range(cx, v, *lo, *hi);
        rule(
            cx,
            ok,
            vec![
                MsgPart::text(format!("{name} is ")),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!("; it must be {lo} to {hi}")),
            ],
        );
        if let Some((_, multiple)) = inner.filter(|(at, _)| *at == k) {
            inner_box_rules(cx, q, v, multiple);
        }
    }
    for (i, &v) in p.element_strides.iter().enumerate() {
        if t.element_strides
            .get(i)
            .is_none_or(|e| matches!(e, Expr::Int { .. }))
        {
            continue;
        }
        let ok = in_range(cx, v, 1, limits::MAX_ELEMENT_STRIDE);
        rule(
            cx,
            ok,
            vec![
                MsgPart::text(format!("element_strides[{i}] is ")),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!("; it must be 1 to {}", limits::MAX_ELEMENT_STRIDE)),
            ],
        );
    }
}

/// The rules on a run-time inner box `v` (elements): exactly 128 values for the `align16`
/// packed types; otherwise, without interleave, its bytes a multiple of 16 (when `multiple`:
/// tiled only) and within the swizzle span (in bits at half a byte per value for
/// `u4x16_align8`).
fn inner_box_rules(cx: &mut MissFn<'_, '_>, q: &Miss<'_>, v: Var, multiple: bool) {
    let (t, p, elem) = (q.t, &q.v, q.elem);
    if elem.is_align16() {
        let ok = cx.b.icmp_imm(IntCC::Eq, v, limits::PACKED_INNER_BOX);
        let rank = p.dims.len();
        let (at, _) = t.layout.inner().unwrap_or_default();
        let name = t.layout.ranges(rank)[at].0.clone();
        rule(
            cx,
            ok,
            vec![
                MsgPart::text(format!("{name} is ")),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!(
                    "; dtype={} needs exactly {}",
                    elem.keyword(),
                    limits::PACKED_INNER_BOX
                )),
            ],
        );
        return;
    }
    if t.interleave != crate::ir::Interleave::None {
        return;
    }
    // Whole-byte types measure the inner box in bytes, `u4x16_align8` in bits.
    let packed = elem.is_packed();
    let (per, unit_bits) = if packed {
        (i64::from(elem.box_bits()), 1)
    } else {
        (i64::from(elem.size()), 8)
    };
    let amount = cx.b.binary_imm(BinOp::Imul, v, per);
    let shown = |limit: String| {
        if packed {
            vec![
                MsgPart::text("the inner box is "),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!(" x {per} bits = ")),
                MsgPart::Value(Tag::I64, amount),
                MsgPart::text(format!(" bits; {limit}")),
            ]
        } else {
            vec![
                MsgPart::text("the inner box is "),
                MsgPart::Value(Tag::I64, amount),
                MsgPart::text(format!(" bytes; {limit}")),
            ]
        }
    };
    if multiple {
        let ok = multiple_of(cx, amount, 8 * limits::BOX_INNER_MULTIPLE / unit_bits);
        let limit = if packed {
            format!(
                "it must be a multiple of {} bytes ({} bits)",
                limits::BOX_INNER_MULTIPLE,
                8 * limits::BOX_INNER_MULTIPLE
            )
        } else {
            format!("it must be a multiple of {}", limits::BOX_INNER_MULTIPLE)
        };
        rule(cx, ok, shown(limit));
    }
    if let Some(span) = t.swizzle.span() {
        let ok =
            cx.b.icmp_imm(IntCC::Sle, amount, 8 * i64::from(span) / unit_bits);
        let limit = if packed {
            format!(
                "swizzle={} allows at most {span} bytes ({} bits)",
                t.swizzle.keyword(),
                8 * span
            )
        } else {
            format!("swizzle={} allows at most {span}", t.swizzle.keyword())
        };
        rule(cx, ok, shown(limit));
    }
}

/// The rules on a packed type's innermost dim `values` (the driver's count): the tensor's
/// extent in bytes and the values both 1 to 2^32, and for the `align16` types a whole number
/// of 128-value groups (64 bytes of 4-bit values, 96 of 6-bit ones).
fn packed_inner_rules(cx: &mut MissFn<'_, '_>, q: &Miss<'_>, values: Var) {
    let (p, elem) = (&q.v, q.elem);
    let Some(bytes) = p.inner_extent else {
        return;
    };
    let i = p.dims.len() - 1;
    let dtype = elem.keyword();
    let a = in_range(cx, bytes, 1, limits::MAX_DIM);
    let b = in_range(cx, values, 1, limits::MAX_DIM);
    let ok = cx.b.binary(BinOp::And, a, b);
    rule(
        cx,
        ok,
        vec![
            MsgPart::Value(Tag::CStr, cx.tensor),
            MsgPart::text(format!(".shape[{i}] is ")),
            MsgPart::Value(Tag::I64, bytes),
            MsgPart::text(" bytes = "),
            MsgPart::Value(Tag::I64, values),
            MsgPart::text(format!(
                " values of dtype={dtype}; a TMA dimension must be 1 to {}",
                limits::MAX_DIM
            )),
        ],
    );
    let Some((per, group_bytes)) = elem.packing() else {
        return;
    };
    if !elem.is_align16() {
        return;
    }
    let group = limits::PACKED_INNER_BOX * group_bytes / per;
    let by = cx.b.iconst(Ty::I64, group);
    let rem = cx.b.binary(BinOp::Srem, bytes, by);
    let ok = cx.b.icmp_imm(IntCC::Eq, rem, 0);
    rule(
        cx,
        ok,
        vec![
            MsgPart::Value(Tag::CStr, cx.tensor),
            MsgPart::text(format!(".shape[{i}] is ")),
            MsgPart::Value(Tag::I64, bytes),
            MsgPart::text(format!(
                " bytes; dtype={dtype} needs a multiple of {group} bytes ({} values)",
                limits::PACKED_INNER_BOX
            )),
        ],
    );
}
