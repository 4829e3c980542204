//! Encoding: the descriptor's storage, the driver's encoder called, and the workaround Triton
//! applies to small tensors on drivers up to 13010 (bit 21 of the second qword).

use crate::ir::{TensorMapLayout, tensormap_limits as limits};
use crate::lir::{BinOp, ConvOp, IntCC, Ty, Var};

use super::super::super::context::FnCtx;
use super::super::super::raise::MsgPart;
use super::super::cuda::{self, Entry};
use super::super::support::{call_entry, describe_error};
use super::miss_fn::{Miss, MissFn};
use safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR;

/// The storage of a descriptor on the stack, aligned to [`limits::MAP_ALIGN`] (128) bytes as
/// CUDA 13 declares `CUtensorMap` (the driver checks 64). Stack slots are aligned to at most
/// 16 bytes by every backend (the frame's own alignment), so the slot is `MAP_ALIGN` bytes
/// longer than the map and its address is rounded up inside it.
pub(crate) fn storage(fx: &mut FnCtx<'_, '_>) -> Var {
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
pub(crate) fn encode(cx: &mut MissFn<'_, '_>, q: &Miss<'_>, out: Var) {
    let (table, t, p) = (cx.table, q.t, &q.v);
    let rank = p.dims.len();
    // dims (5 x u64), strides (5 x u64), then 4 arrays of 5 x 32 bits: the box or the lower
    // corner, the upper corner, the element strides.
    let arrays = cx.b.slot(80 + 3 * 20, 8);
    let dims_at = cx.b.stack_addr(arrays, 0);
    let strides_at = cx.b.stack_addr(arrays, 40);
    let first_at = cx.b.stack_addr(arrays, 80);
    let second_at = cx.b.stack_addr(arrays, 100);
    let es_at = cx.b.stack_addr(arrays, 120);
    // The driver's arrays are innermost first: each list is reversed as it is stored.
    for (j, &d) in p.dims.iter().rev().enumerate() {
        cx.b.store(dims_at, 8 * j, d);
    }
    for (j, &s) in p.byte_strides.iter().rev().enumerate() {
        cx.b.store(strides_at, 8 * j, s);
    }
    let store32 = |cx: &mut MissFn<'_, '_>, at: Var, values: &[Var]| {
        for (j, &v) in values.iter().rev().enumerate() {
            let v = cx.b.resize(v, Ty::I32, false);
            cx.b.store(at, 4 * j, v);
        }
    };
    store32(cx, es_at, &p.element_strides);
    let i32c = |cx: &mut MissFn<'_, '_>, v: u32| cx.b.iconst(Ty::I32, i64::from(v));
    let mut args = vec![
        out,
        i32c(cx, q.elem.cuda_value()),
        i32c(cx, rank as u32),
        p.addr,
        dims_at,
        strides_at,
    ];
    let entry = match &t.layout {
        TensorMapLayout::Tiled { .. } => {
            store32(cx, first_at, &p.layout);
            args.extend([first_at, es_at]);
            Entry::TensorMapEncodeTiled
        }
        TensorMapLayout::Im2col { lower, .. } => {
            let spatial = lower.len();
            store32(cx, first_at, &p.layout[..spatial]);
            store32(cx, second_at, &p.layout[spatial..2 * spatial]);
            let channels = cx.b.resize(p.layout[2 * spatial], Ty::I32, false);
            let pixels = cx.b.resize(p.layout[2 * spatial + 1], Ty::I32, false);
            args.extend([first_at, second_at, channels, pixels, es_at]);
            Entry::TensorMapEncodeIm2col
        }
    };
    args.extend([
        i32c(cx, t.interleave.cuda_value()),
        i32c(cx, t.swizzle.cuda_value()),
        i32c(cx, t.l2_promotion.cuda_value()),
        i32c(cx, t.oob_fill.cuda_value()),
    ]);
    let rc = call_entry(&mut cx.b, table, entry, args);
    driver_ok(cx, rc, format!("{} returned ", entry.name()));
    if entry == Entry::TensorMapEncodeTiled {
        workaround(cx, q, out);
    }
}

/// Continues when `rc` is `CUDA_SUCCESS`; otherwise raises a RuntimeError: `WHAT: `, `text`,
/// then the driver's description of `rc`.
fn driver_ok(cx: &mut MissFn<'_, '_>, rc: Var, text: String) {
    let ok = cx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    let table = cx.table;
    cx.check(ok, RUNTIME_ERROR, |cx| {
        let mut all = vec![MsgPart::text(text)];
        all.extend(describe_error(cx.m, &mut cx.b, table, rc));
        all
    });
}

/// Triton's driver workaround (after a CUTLASS change): with a driver of version at most
/// [`cuda::TMA_WORKAROUND_MAX_DRIVER`] and a tensor spanning fewer than
/// [`cuda::TMA_WORKAROUND_SPAN`] bytes (`1 + sum((dim - 1) * byte stride)`, the innermost
/// byte stride being the element size), bit [`cuda::TMA_WORKAROUND_BIT`] of the descriptor's
/// word [`cuda::TMA_WORKAROUND_WORD`] is cleared.
fn workaround(cx: &mut MissFn<'_, '_>, q: &Miss<'_>, out: Var) {
    let (table, p) = (cx.table, &q.v);
    let slot = cx.b.slot(8, 8);
    let at = cx.b.stack_addr(slot, 0);
    cx.b.store_imm(Ty::I32, at, 0, 0);
    let rc = call_entry(&mut cx.b, table, Entry::DriverGetVersion, vec![at]);
    let text = "cannot read the driver's version: cuDriverGetVersion returned ".to_owned();
    driver_ok(cx, rc, text);
    let version = cx.b.load(Ty::I32, at, 0);
    let version = cx.b.resize(version, Ty::I64, true);
    let old =
        cx.b.icmp_imm(IntCC::Sle, version, cuda::TMA_WORKAROUND_MAX_DRIVER);
    let mut last = cx.b.iconst(Ty::I64, 0);
    let size = cx.b.iconst(Ty::I64, i64::from(q.elem.size()));
    let rank = p.dims.len();
    // Innermost first, as the driver counts.
    for (i, &d) in p.dims.iter().enumerate().rev() {
        // The span is in bytes: a packed type's innermost extent is the tensor's, in bytes.
        let innermost = i + 1 == rank;
        let (d, stride) = match (innermost, p.inner_extent) {
            (true, Some(bytes)) => (bytes, size),
            (true, None) => (d, size),
            (false, _) => (d, p.byte_strides[i]),
        };
        let extent = cx.b.binary_imm(BinOp::Isub, d, 1);
        last = span_term(cx, last, extent, stride);
    }
    let small =
        cx.b.icmp_imm(IntCC::Slt, last, cuda::TMA_WORKAROUND_SPAN - 1);
    let apply = cx.b.binary(BinOp::And, old, small);
    let word_at = 8 * cuda::TMA_WORKAROUND_WORD;
    let word = cx.b.load(Ty::I64, out, word_at);
    let cleared =
        cx.b.binary_imm(BinOp::And, word, !(1i64 << cuda::TMA_WORKAROUND_BIT));
    let new = cx.b.select(apply, cleared, word);
    cx.b.store(out, word_at, new);
}

/// `last + extent * stride`, exactly as far as the span's comparison with
/// [`cuda::TMA_WORKAROUND_SPAN`] goes, with no wrapping: a term whose extent or stride is the
/// limit or more (or negative) counts as the limit, unless its extent or its stride is 0 (the
/// product of two smaller ones stays below 2^34, a sum of five below 2^37). A tensor spanning
/// 2^64 bytes or more (dims to 2^32 and strides to 2^40 bytes allow it) is then not taken for
/// a small one.
fn span_term(cx: &mut MissFn<'_, '_>, last: Var, extent: Var, stride: Var) -> Var {
    let limit = cuda::TMA_WORKAROUND_SPAN;
    let large_extent = cx.b.icmp_imm(IntCC::Uge, extent, limit);
    let large_stride = cx.b.icmp_imm(IntCC::Uge, stride, limit);
    let large = cx.b.binary(BinOp::Or, large_extent, large_stride);
    let product = cx.b.binary(BinOp::Imul, extent, stride);
    let capped = cx.b.iconst(Ty::I64, limit);
    let term = cx.b.select(large, capped, product);
    let single = cx.b.icmp_imm(IntCC::Eq, extent, 0);
    let repeated = cx.b.icmp_imm(IntCC::Eq, stride, 0);
    let empty = cx.b.binary(BinOp::Or, single, repeated);
    let zero = cx.b.iconst(Ty::I64, 0);
    let term = cx.b.select(empty, zero, term);
    cx.b.binary(BinOp::Iadd, last, term)
}
