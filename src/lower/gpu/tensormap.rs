//! `tensormap(..)` launch arguments (docs/ir.md, "TMA descriptors"): the encoder's inputs read
//! from the tensor ([`prepare`]), every rule of `cuTensorMapEncodeTiled` checked
//! ([`check_rules`]) and the driver's encoder called ([`encode`]) on a miss of the launch
//! site's cache (`tensormap_cache`).

use crate::ir::{
    Expr, Strides, TensorField, TensorMapArg, TensorMapDtype, TensorMapLayout,
    tensormap_limits as limits,
};
use crate::lir::{BinOp, ConvOp, IntCC, Ty, Var};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

use super::super::context::{Binding, FnCtx};
use super::super::expr::{Val, lower_expr, lower_tensor_field};
use super::super::layout::{compact_strides, effective_strides};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::cuda::{self, Entry};
use super::support::{call_entry, driver_check};
use super::tensormap_cleanup::Cleanup;

/// The encoder's inputs of one descriptor argument (checked on a cache miss only: a hit has
/// the key of inputs that passed).
pub(super) struct Prepared<'a> {
    arg: &'a TensorMapArg,
    what: String,
    elem: TensorMapDtype,
    addr: Var,
    /// `addr` as an `I64`.
    addr_int: Var,
    /// Strides in elements, in the tensor's order (`I64`).
    elem_strides: Vec<Var>,
    /// Dims, innermost first (`I64`), as the driver counts them (values of a packed type).
    dims: Vec<Var>,
    /// The tensor's innermost extent (bytes for a packed type; `dims[0]` otherwise).
    inner_extent: Option<Var>,
    /// Strides in bytes of dims 1.. innermost first (`I64`).
    strides: Vec<Var>,
    /// The layout's values (`I64`), in [`TensorMapLayout::exprs`] order (outermost first).
    layout: Vec<Var>,
    /// Element strides, innermost first (`I64`).
    element_strides: Vec<Var>,
    /// The cache key: address, dims, strides, then each layout value and element stride that
    /// is not a constant.
    pub key: Vec<Var>,
}

/// A field of the tensor as a machine value.
fn field(fx: &mut FnCtx<'_, '_>, tensor: &str, f: TensorField) -> Result<Var, LowerError> {
    match lower_tensor_field(fx, tensor, f)? {
        Val::Scalar(v, _) => Ok(v),
        other => Err(LowerError::internal(format!(
            "{tensor}: field {f:?} is not a scalar: {other:?}"
        ))),
    }
}

/// An integer expression widened to `I64`.
fn int_i64(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    match lower_expr(fx, e)? {
        Val::Scalar(v, crate::ir::ScalarType::Int(i)) => Ok(fx.b.resize(v, Ty::I64, i.is_signed())),
        other => Err(LowerError::internal(format!(
            "a box or element stride is not an integer: {other:?}"
        ))),
    }
}

/// Raises a ValueError unless `ok`: `what: TEXT VALUE TEXT...` (after `cleanup`).
fn rule(fx: &mut FnCtx<'_, '_>, cleanup: &Cleanup<'_>, ok: Var, what: &str, parts: Vec<MsgPart>) {
    let what = what.to_owned();
    fx.check(ok, VALUE_ERROR, move |fx| {
        cleanup.emit(fx);
        let mut all = vec![MsgPart::text(format!("{what}: "))];
        all.extend(parts);
        all
    });
}

/// `lo <= v <= hi` (signed).
fn in_range(fx: &mut FnCtx<'_, '_>, v: Var, lo: i64, hi: i64) -> Var {
    let ge = fx.b.icmp_imm(IntCC::Sge, v, lo);
    let le = fx.b.icmp_imm(IntCC::Sle, v, hi);
    fx.b.binary(BinOp::And, ge, le)
}

/// `v % m == 0` for a power of two `m`.
fn multiple_of(fx: &mut FnCtx<'_, '_>, v: Var, m: i64) -> Var {
    let low = fx.b.binary_imm(BinOp::And, v, m - 1);
    fx.b.icmp_imm(IntCC::Eq, low, 0)
}

/// Reads the encoder's inputs of descriptor argument `k` (`prefix` starts every message).
pub(super) fn prepare<'a>(
    fx: &mut FnCtx<'_, '_>,
    t: &'a TensorMapArg,
    k: usize,
    prefix: &str,
) -> Result<Prepared<'a>, LowerError> {
    let what = format!(
        "{prefix}: kernel argument {k} (tensormap of '{}')",
        t.tensor
    );
    let Binding::Tensor(tensor) = fx.lookup(&t.tensor)? else {
        return Err(LowerError::internal(format!(
            "{what}: not a tensor parameter"
        )));
    };
    let elem = t
        .element_type(tensor.spec.dtype)
        .ok_or_else(|| LowerError::internal(format!("{what}: no element type")))?;
    let size = i64::from(elem.size());
    let rank = tensor
        .spec
        .shape
        .rank()
        .ok_or_else(|| LowerError::internal(format!("{what}: a tensor of any rank")))?;

    let data = field(fx, &t.tensor, TensorField::Data)?;
    let offset = field(fx, &t.tensor, TensorField::ByteOffset)?;
    let addr = fx.b.ptr_add(data, offset);
    let addr_int = fx.b.convert(ConvOp::PtrToInt, addr, Ty::I64);
    let mut dims = Vec::with_capacity(rank);
    for i in 0..rank {
        dims.push(field(fx, &t.tensor, TensorField::Shape(i))?);
    }
    // All strides at once (a compact tensor's from its dims, else NULL read as compact).
    let elem_strides = match tensor.spec.strides {
        Strides::Compact => compact_strides(fx, &dims),
        Strides::Any | Strides::Exact(_) => effective_strides(fx, tensor.dl, &dims),
    };
    let mut strides = Vec::with_capacity(rank.saturating_sub(1));
    for i in (0..rank.saturating_sub(1)).rev() {
        strides.push(fx.b.binary_imm(BinOp::Imul, elem_strides[i], size));
    }
    dims.reverse();
    let inner_extent = dims.first().copied();
    if let (Some((values, bytes)), Some(d)) = (elem.packing(), dims.first_mut()) {
        let scaled = fx.b.binary_imm(BinOp::Imul, *d, values);
        *d = if bytes == 1 {
            scaled
        } else {
            let by = fx.b.iconst(Ty::I64, bytes);
            fx.b.binary(BinOp::Sdiv, scaled, by)
        };
    }

    let mut key = vec![addr_int];
    key.extend(&dims);
    key.extend(&strides);
    let mut layout = Vec::new();
    for e in t.layout.exprs() {
        let v = int_i64(fx, e)?;
        if !matches!(e, Expr::Int { .. }) {
            key.push(v);
        }
        layout.push(v);
    }
    let mut element_strides = Vec::with_capacity(rank);
    for i in (0..rank).rev() {
        let v = match t.element_strides.get(i) {
            None => fx.b.iconst(Ty::I64, 1),
            Some(e) => {
                let v = int_i64(fx, e)?;
                if !matches!(e, Expr::Int { .. }) {
                    key.push(v);
                }
                v
            }
        };
        element_strides.push(v);
    }
    Ok(Prepared {
        arg: t,
        what,
        elem,
        addr,
        addr_int,
        elem_strides,
        dims,
        inner_extent,
        strides,
        layout,
        element_strides,
        key,
    })
}

/// Every rule of `cuTensorMapEncodeTiled` that constants did not decide, each a ValueError
/// naming the argument, the rule and the values (run before encoding).
pub(super) fn check_rules(fx: &mut FnCtx<'_, '_>, p: &Prepared<'_>, cleanup: &Cleanup<'_>) {
    let t = p.arg;
    let what = p.what.as_str();
    let rank = p.dims.len();
    let align = i64::from(t.interleave.alignment().max(p.elem.alignment()));
    let because = if p.elem.alignment() > t.interleave.alignment() {
        format!(" for dtype={}", p.elem.keyword())
    } else {
        String::new()
    };
    let ok = multiple_of(fx, p.addr_int, align);
    rule(
        fx,
        cleanup,
        ok,
        what,
        vec![
            MsgPart::text("the global address "),
            MsgPart::Value(Tag::Ptr, p.addr),
            MsgPart::text(format!(
                " (data + byte_offset) is not aligned to {align} bytes, as TMA requires{because}"
            )),
        ],
    );
    // `dims` is innermost first; messages use the tensor's order.
    for (j, &d) in p.dims.iter().enumerate().rev() {
        let i = rank - 1 - j;
        if j == 0 && p.elem.is_packed() {
            packed_inner_rules(fx, cleanup, p, d);
            continue;
        }
        let ok = in_range(fx, d, 1, limits::MAX_DIM);
        rule(
            fx,
            cleanup,
            ok,
            what,
            vec![
                MsgPart::text(format!("{}.shape[{i}] is ", t.tensor)),
                MsgPart::Value(Tag::I64, d),
                MsgPart::text(format!(
                    "; a TMA dimension must be 1 to {}",
                    limits::MAX_DIM
                )),
            ],
        );
    }
    // The innermost dimension is contiguous.
    if let (Some(&s), Some(d)) = (p.elem_strides.last(), p.inner_extent) {
        let one = fx.b.icmp_imm(IntCC::Eq, s, 1);
        let single = fx.b.icmp_imm(IntCC::Eq, d, 1);
        let ok = fx.b.binary(BinOp::Or, one, single);
        rule(
            fx,
            cleanup,
            ok,
            what,
            vec![
                MsgPart::text(format!("{}.strides[{}] is ", t.tensor, rank - 1)),
                MsgPart::Value(Tag::I64, s),
                MsgPart::text("; TMA needs the innermost dimension contiguous (stride 1)"),
            ],
        );
    }
    for (j, &bytes) in p.strides.iter().enumerate().rev() {
        let i = rank - 2 - j;
        let s = p.elem_strides[i];
        let aligned = multiple_of(fx, bytes, align);
        let nonneg = fx.b.icmp_imm(IntCC::Sge, bytes, 0);
        let below = fx.b.icmp_imm(IntCC::Slt, bytes, limits::STRIDE_LIMIT);
        let range = fx.b.binary(BinOp::And, nonneg, below);
        let ok = fx.b.binary(BinOp::And, aligned, range);
        rule(
            fx,
            cleanup,
            ok,
            what,
            vec![
                MsgPart::text(format!("{}.strides[{i}] is ", t.tensor)),
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
        let ok = in_range(fx, v, *lo, *hi);
        rule(
            fx,
            cleanup,
            ok,
            what,
            vec![
                MsgPart::text(format!("{name} is ")),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!("; it must be {lo} to {hi}")),
            ],
        );
        if let Some((_, multiple)) = inner.filter(|(at, _)| *at == k) {
            inner_box_rules(fx, cleanup, p, v, multiple);
        }
    }
    for (j, &v) in p.element_strides.iter().enumerate().rev() {
        let i = rank - 1 - j;
        if t.element_strides
            .get(i)
            .is_none_or(|e| matches!(e, Expr::Int { .. }))
        {
            continue;
        }
        let ok = in_range(fx, v, 1, limits::MAX_ELEMENT_STRIDE);
        rule(
            fx,
            cleanup,
            ok,
            what,
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
fn inner_box_rules(
    fx: &mut FnCtx<'_, '_>,
    cleanup: &Cleanup<'_>,
    p: &Prepared<'_>,
    v: Var,
    multiple: bool,
) {
    let (t, what, elem) = (p.arg, p.what.as_str(), p.elem);
    if elem.is_align16() {
        let ok = fx.b.icmp_imm(IntCC::Eq, v, limits::PACKED_INNER_BOX);
        let rank = p.dims.len();
        let (at, _) = t.layout.inner().unwrap_or_default();
        let name = t.layout.ranges(rank)[at].0.clone();
        rule(
            fx,
            cleanup,
            ok,
            what,
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
    let amount = fx.b.binary_imm(BinOp::Imul, v, per);
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
        let ok = multiple_of(fx, amount, 8 * limits::BOX_INNER_MULTIPLE / unit_bits);
        let limit = if packed {
            format!(
                "it must be a multiple of {} bytes ({} bits)",
                limits::BOX_INNER_MULTIPLE,
                8 * limits::BOX_INNER_MULTIPLE
            )
        } else {
            format!("it must be a multiple of {}", limits::BOX_INNER_MULTIPLE)
        };
        rule(fx, cleanup, ok, what, shown(limit));
    }
    if let Some(span) = t.swizzle.span() {
        let ok =
            fx.b.icmp_imm(IntCC::Sle, amount, 8 * i64::from(span) / unit_bits);
        let limit = if packed {
            format!(
                "swizzle={} allows at most {span} bytes ({} bits)",
                t.swizzle.keyword(),
                8 * span
            )
        } else {
            format!("swizzle={} allows at most {span}", t.swizzle.keyword())
        };
        rule(fx, cleanup, ok, what, shown(limit));
    }
}

/// The rules on a packed type's innermost dim `values` (the driver's count): the tensor's
/// extent in bytes and the values both 1 to 2^32, and for the `align16` types a whole number
/// of 128-value groups (64 bytes of 4-bit values, 96 of 6-bit ones).
fn packed_inner_rules(
    fx: &mut FnCtx<'_, '_>,
    cleanup: &Cleanup<'_>,
    p: &Prepared<'_>,
    values: Var,
) {
    let (t, what, elem) = (p.arg, p.what.as_str(), p.elem);
    let Some(bytes) = p.inner_extent else {
        return;
    };
    let i = p.dims.len() - 1;
    let dtype = elem.keyword();
    let a = in_range(fx, bytes, 1, limits::MAX_DIM);
    let b = in_range(fx, values, 1, limits::MAX_DIM);
    let ok = fx.b.binary(BinOp::And, a, b);
    rule(
        fx,
        cleanup,
        ok,
        what,
        vec![
            MsgPart::text(format!("{}.shape[{i}] is ", t.tensor)),
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
    let by = fx.b.iconst(Ty::I64, group);
    let rem = fx.b.binary(BinOp::Srem, bytes, by);
    let ok = fx.b.icmp_imm(IntCC::Eq, rem, 0);
    rule(
        fx,
        cleanup,
        ok,
        what,
        vec![
            MsgPart::text(format!("{}.shape[{i}] is ", t.tensor)),
            MsgPart::Value(Tag::I64, bytes),
            MsgPart::text(format!(
                " bytes; dtype={dtype} needs a multiple of {group} bytes ({} values)",
                limits::PACKED_INNER_BOX
            )),
        ],
    );
}

/// The 128-byte aligned storage of a descriptor on the stack.
pub(super) fn storage(fx: &mut FnCtx<'_, '_>) -> Var {
    let align = i64::from(limits::MAP_ALIGN);
    let slot = fx.b.slot(limits::MAP_SIZE + limits::MAP_ALIGN, 16);
    let base = fx.b.stack_addr(slot, 0);
    let base = fx.b.convert(ConvOp::PtrToInt, base, Ty::I64);
    let up = fx.b.binary_imm(BinOp::Iadd, base, align - 1);
    let aligned = fx.b.binary_imm(BinOp::And, up, !(align - 1));
    fx.b.convert(ConvOp::IntToPtr, aligned, Ty::Ptr)
}

/// Calls `cuTensorMapEncodeTiled` into `out`, then applies the driver workaround
/// ([`workaround`]).
pub(super) fn encode(fx: &mut FnCtx<'_, '_>, p: &Prepared<'_>, out: Var, cleanup: &Cleanup<'_>) {
    let table = cleanup.table;
    let t = p.arg;
    let rank = p.dims.len();
    // dims (5 x u64), strides (5 x u64), then 4 arrays of 5 x 32 bits: the box or the lower
    // corner, the upper corner, the element strides.
    let arrays = fx.b.slot(80 + 3 * 20, 8);
    let dims_at = fx.b.stack_addr(arrays, 0);
    let strides_at = fx.b.stack_addr(arrays, 40);
    let first_at = fx.b.stack_addr(arrays, 80);
    let second_at = fx.b.stack_addr(arrays, 100);
    let es_at = fx.b.stack_addr(arrays, 120);
    for (j, &d) in p.dims.iter().enumerate() {
        fx.b.store(dims_at, 8 * j, d);
    }
    for (j, &s) in p.strides.iter().enumerate() {
        fx.b.store(strides_at, 8 * j, s);
    }
    // 32-bit arrays, innermost first.
    let store32 = |fx: &mut FnCtx<'_, '_>, at: Var, values: &[Var]| {
        for (j, &v) in values.iter().rev().enumerate() {
            let v = fx.b.resize(v, Ty::I32, false);
            fx.b.store(at, 4 * j, v);
        }
    };
    let mut es = p.element_strides.clone();
    es.reverse();
    store32(fx, es_at, &es);
    let i32c = |fx: &mut FnCtx<'_, '_>, v: u32| fx.b.iconst(Ty::I32, i64::from(v));
    let mut args = vec![
        out,
        i32c(fx, p.elem.cuda_value()),
        i32c(fx, rank as u32),
        p.addr,
        dims_at,
        strides_at,
    ];
    let entry = match &t.layout {
        TensorMapLayout::Tiled { .. } => {
            store32(fx, first_at, &p.layout);
            args.extend([first_at, es_at]);
            Entry::TensorMapEncodeTiled
        }
        TensorMapLayout::Im2col { lower, .. } => {
            let spatial = lower.len();
            store32(fx, first_at, &p.layout[..spatial]);
            store32(fx, second_at, &p.layout[spatial..2 * spatial]);
            let channels = fx.b.resize(p.layout[2 * spatial], Ty::I32, false);
            let pixels = fx.b.resize(p.layout[2 * spatial + 1], Ty::I32, false);
            args.extend([first_at, second_at, channels, pixels, es_at]);
            Entry::TensorMapEncodeIm2col
        }
    };
    args.extend([
        i32c(fx, t.interleave.cuda_value()),
        i32c(fx, t.swizzle.cuda_value()),
        i32c(fx, t.l2_promotion.cuda_value()),
        i32c(fx, t.oob_fill.cuda_value()),
    ]);
    let rc = call_entry(&mut fx.b, table, entry, args);
    driver_ok(
        fx,
        rc,
        cleanup,
        format!("{}: {} returned ", p.what, entry.name()),
    );
    if entry == Entry::TensorMapEncodeTiled {
        workaround(fx, p, out, cleanup);
    }
}

/// Continues when `rc` is `CUDA_SUCCESS`; otherwise undoes `cleanup` and raises a RuntimeError:
/// `text`, then the driver's description of `rc`.
fn driver_ok(fx: &mut FnCtx<'_, '_>, rc: Var, cleanup: &Cleanup<'_>, text: String) {
    driver_check(fx, cleanup.table, rc, |fx| {
        cleanup.emit(fx);
        vec![MsgPart::text(text)]
    });
}

/// Triton's driver workaround (after a CUTLASS change): with a driver of version at most
/// [`cuda::TMA_WORKAROUND_MAX_DRIVER`] and a tensor spanning fewer than
/// [`cuda::TMA_WORKAROUND_SPAN`] bytes (`1 + sum((dim - 1) * byte stride)`, the innermost
/// byte stride being the element size), bit [`cuda::TMA_WORKAROUND_BIT`] of the descriptor's
/// word [`cuda::TMA_WORKAROUND_WORD`] is cleared.
fn workaround(fx: &mut FnCtx<'_, '_>, p: &Prepared<'_>, out: Var, cleanup: &Cleanup<'_>) {
    let table = cleanup.table;
    let slot = fx.b.slot(8, 8);
    let at = fx.b.stack_addr(slot, 0);
    fx.b.store_imm(Ty::I32, at, 0, 0);
    let rc = call_entry(&mut fx.b, table, Entry::DriverGetVersion, vec![at]);
    let text = format!(
        "{}: cannot read the driver's version: cuDriverGetVersion returned ",
        p.what
    );
    driver_ok(fx, rc, cleanup, text);
    let version = fx.b.load(Ty::I32, at, 0);
    let version = fx.b.resize(version, Ty::I64, true);
    let old =
        fx.b.icmp_imm(IntCC::Sle, version, cuda::TMA_WORKAROUND_MAX_DRIVER);
    let mut last = fx.b.iconst(Ty::I64, 0);
    let size = fx.b.iconst(Ty::I64, i64::from(p.elem.size()));
    for (j, &d) in p.dims.iter().enumerate() {
        // The span is in bytes: a packed type's innermost extent is the tensor's, in bytes.
        let (d, stride) = match (j, p.inner_extent) {
            (0, Some(bytes)) => (bytes, size),
            (0, None) => (d, size),
            _ => (d, p.strides[j - 1]),
        };
        let extent = fx.b.binary_imm(BinOp::Isub, d, 1);
        let bytes = fx.b.binary(BinOp::Imul, extent, stride);
        last = fx.b.binary(BinOp::Iadd, last, bytes);
    }
    let small =
        fx.b.icmp_imm(IntCC::Slt, last, cuda::TMA_WORKAROUND_SPAN - 1);
    let apply = fx.b.binary(BinOp::And, old, small);
    let word_at = 8 * cuda::TMA_WORKAROUND_WORD;
    let word = fx.b.load(Ty::I64, out, word_at);
    let cleared =
        fx.b.binary_imm(BinOp::And, word, !(1i64 << cuda::TMA_WORKAROUND_BIT));
    let new = fx.b.select(apply, cleared, word);
    fx.b.store(out, word_at, new);
}
