//! `tensormap(..)` launch arguments (docs/ir.md, "TMA descriptors"): the encoder's inputs read
//! from the tensor and checked against every rule of `cuTensorMapEncodeTiled` ([`prepare`]),
//! then the descriptor taken from the launch site's cache or encoded by the driver into
//! 128-byte aligned storage ([`build`]).
//!
//! The cache is module data, [`SLOTS`] entries per launch argument. Each entry is a lock word,
//! a valid word, the key (every encoder input that is not a constant of the site) and the
//! 128 descriptor bytes. A thread takes an entry's lock with one compare-and-swap and never
//! waits: a locked entry counts as a miss. A hit copies the descriptor out under the lock; a
//! miss encodes on the stack, then stores key and descriptor into the entry a round-robin
//! counter picks, if its lock is free. Entries are never released: a descriptor holds
//! addressing, not contents, so it is valid as long as the key is the same.

use crate::ir::{Expr, TensorField, TensorMapArg, TensorMapDtype, tensormap_limits as limits};
use crate::lir::{BinOp, ConvOp, DataId, IntCC, Symbol, Ty, Var};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

use super::super::context::FnCtx;
use super::super::expr::{Val, lower_expr, lower_tensor_field};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::cuda::{self, Entry};
use super::support::{call_entry, driver_check, zeroed};

/// Cache entries per launch argument.
pub(crate) const SLOTS: i64 = 4;
/// Bytes of the descriptor.
const MAP: usize = limits::MAP_SIZE as usize;
/// Offset of the key in an entry (after the lock and valid words).
const KEY_AT: usize = 16;

/// The encoder's inputs of one descriptor argument, checked.
pub(super) struct Prepared<'a> {
    arg: &'a TensorMapArg,
    what: String,
    elem: TensorMapDtype,
    addr: Var,
    /// Dims, innermost first (`I64`).
    dims: Vec<Var>,
    /// Strides in bytes of dims 1.. innermost first (`I64`).
    strides: Vec<Var>,
    /// Box extents, innermost first (`I64`).
    boxes: Vec<Var>,
    /// Element strides, innermost first (`I64`).
    element_strides: Vec<Var>,
    /// The cache key: address, dims, strides, then each box extent and element stride that
    /// is not a constant.
    key: Vec<Var>,
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

/// Raises a ValueError unless `ok`: `what: TEXT VALUE TEXT...`.
fn rule(fx: &mut FnCtx<'_, '_>, ok: Var, what: &str, parts: Vec<MsgPart>) {
    let what = what.to_owned();
    fx.check(ok, VALUE_ERROR, move |_| {
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

/// Reads and checks the encoder's inputs of descriptor argument `k` (`prefix` starts every
/// message).
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
    let spec = match fx.func.param_named(&t.tensor).map(|p| &p.ty) {
        Some(crate::ir::ParamType::Tensor(spec)) => spec.clone(),
        _ => {
            return Err(LowerError::internal(format!(
                "{what}: not a tensor parameter"
            )));
        }
    };
    let elem = t
        .element_type(spec.dtype)
        .ok_or_else(|| LowerError::internal(format!("{what}: no element type")))?;
    let size = i64::from(elem.size());
    let rank = spec.shape.len();
    let align = i64::from(t.interleave.alignment());

    let data = field(fx, &t.tensor, TensorField::Data)?;
    let offset = field(fx, &t.tensor, TensorField::ByteOffset)?;
    let addr = fx.b.ptr_add(data, offset);
    let addr_int = fx.b.convert(ConvOp::PtrToInt, addr, Ty::I64);
    let ok = multiple_of(fx, addr_int, align);
    rule(
        fx,
        ok,
        &what,
        vec![
            MsgPart::text("the global address "),
            MsgPart::Value(Tag::Ptr, addr),
            MsgPart::text(format!(
                " (data + byte_offset) is not aligned to {align} bytes, as TMA requires"
            )),
        ],
    );

    let mut dims = Vec::with_capacity(rank);
    let mut elem_strides_ir = Vec::with_capacity(rank);
    for i in 0..rank {
        let d = field(fx, &t.tensor, TensorField::Shape(i))?;
        let ok = in_range(fx, d, 1, limits::MAX_DIM);
        rule(
            fx,
            ok,
            &what,
            vec![
                MsgPart::text(format!("{}.shape[{i}] is ", t.tensor)),
                MsgPart::Value(Tag::I64, d),
                MsgPart::text(format!(
                    "; a TMA dimension must be 1 to {}",
                    limits::MAX_DIM
                )),
            ],
        );
        dims.push(d);
        elem_strides_ir.push(field(fx, &t.tensor, TensorField::Stride(i))?);
    }
    // The innermost dimension is contiguous.
    if let (Some(&s), Some(&d)) = (elem_strides_ir.last(), dims.last()) {
        let one = fx.b.icmp_imm(IntCC::Eq, s, 1);
        let single = fx.b.icmp_imm(IntCC::Eq, d, 1);
        let ok = fx.b.binary(BinOp::Or, one, single);
        rule(
            fx,
            ok,
            &what,
            vec![
                MsgPart::text(format!("{}.strides[{}] is ", t.tensor, rank - 1)),
                MsgPart::Value(Tag::I64, s),
                MsgPart::text("; TMA needs the innermost dimension contiguous (stride 1)"),
            ],
        );
    }
    let mut strides = Vec::with_capacity(rank.saturating_sub(1));
    for i in (0..rank.saturating_sub(1)).rev() {
        let s = elem_strides_ir[i];
        let bytes = fx.b.binary_imm(BinOp::Imul, s, size);
        let aligned = multiple_of(fx, bytes, align);
        let nonneg = fx.b.icmp_imm(IntCC::Sge, bytes, 0);
        let below = fx.b.icmp_imm(IntCC::Slt, bytes, limits::STRIDE_LIMIT);
        let range = fx.b.binary(BinOp::And, nonneg, below);
        let ok = fx.b.binary(BinOp::And, aligned, range);
        rule(
            fx,
            ok,
            &what,
            vec![
                MsgPart::text(format!("{}.strides[{i}] is ", t.tensor)),
                MsgPart::Value(Tag::I64, s),
                MsgPart::text(" elements = "),
                MsgPart::Value(Tag::I64, bytes),
                MsgPart::text(format!(
                    " bytes; a TMA stride must be a multiple of {align} bytes and below 2^40"
                )),
            ],
        );
        strides.push(bytes);
    }
    dims.reverse();

    let mut key = vec![addr_int];
    key.extend(&dims);
    key.extend(&strides);
    let mut boxes = Vec::with_capacity(rank);
    for (i, e) in t.box_dims.iter().enumerate().rev() {
        let v = int_i64(fx, e)?;
        if !matches!(e, Expr::Int { .. }) {
            let ok = in_range(fx, v, 1, limits::MAX_BOX);
            rule(
                fx,
                ok,
                &what,
                vec![
                    MsgPart::text(format!("box[{i}] is ")),
                    MsgPart::Value(Tag::I64, v),
                    MsgPart::text(format!("; it must be 1 to {}", limits::MAX_BOX)),
                ],
            );
            if i + 1 == rank {
                inner_box_rules(fx, t, &what, v, size);
            }
            key.push(v);
        }
        boxes.push(v);
    }
    let mut element_strides = Vec::with_capacity(rank);
    for i in (0..rank).rev() {
        let v = match t.element_strides.get(i) {
            None => fx.b.iconst(Ty::I64, 1),
            Some(e) => {
                let v = int_i64(fx, e)?;
                if !matches!(e, Expr::Int { .. }) {
                    let ok = in_range(fx, v, 1, limits::MAX_ELEMENT_STRIDE);
                    rule(
                        fx,
                        ok,
                        &what,
                        vec![
                            MsgPart::text(format!("element_strides[{i}] is ")),
                            MsgPart::Value(Tag::I64, v),
                            MsgPart::text(format!(
                                "; it must be 1 to {}",
                                limits::MAX_ELEMENT_STRIDE
                            )),
                        ],
                    );
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
        dims,
        strides,
        boxes,
        element_strides,
        key,
    })
}

/// The rules on a run-time inner box extent `v`: its bytes a multiple of 16 (without
/// interleave) and within the swizzle span.
fn inner_box_rules(fx: &mut FnCtx<'_, '_>, t: &TensorMapArg, what: &str, v: Var, size: i64) {
    if t.interleave != crate::ir::Interleave::None {
        return;
    }
    let bytes = fx.b.binary_imm(BinOp::Imul, v, size);
    let ok = multiple_of(fx, bytes, limits::BOX_INNER_MULTIPLE);
    rule(
        fx,
        ok,
        what,
        vec![
            MsgPart::text("the inner box is "),
            MsgPart::Value(Tag::I64, bytes),
            MsgPart::text(format!(
                " bytes; it must be a multiple of {}",
                limits::BOX_INNER_MULTIPLE
            )),
        ],
    );
    if let Some(span) = t.swizzle.span() {
        let ok = fx.b.icmp_imm(IntCC::Sle, bytes, i64::from(span));
        rule(
            fx,
            ok,
            what,
            vec![
                MsgPart::text("the inner box is "),
                MsgPart::Value(Tag::I64, bytes),
                MsgPart::text(format!(
                    " bytes; swizzle={} allows at most {span}",
                    t.swizzle.keyword()
                )),
            ],
        );
    }
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

/// Fills `out` (128-byte aligned) with the descriptor of `p`: from the launch site's cache,
/// else encoded by the driver (and then cached).
pub(super) fn build(fx: &mut FnCtx<'_, '_>, table: Var, p: &Prepared<'_>, out: Var) {
    let n = p.key.len();
    let map_at = KEY_AT + 8 * n;
    let entry_size = map_at + MAP;
    let cache = zeroed(fx.m, "tensormap_cache", SLOTS as usize * entry_size + 8);
    let base = fx.b.symbol_addr(Symbol::Data(cache));
    let zero = fx.b.iconst(Ty::I64, 0);
    let one = fx.b.iconst(Ty::I64, 1);

    let i = fx.b.mutable_var(Ty::I64);
    fx.b.assign_iconst(i, 0);
    let head = fx.b.new_block();
    let body = fx.b.new_block();
    let locked = fx.b.new_block();
    let hit = fx.b.new_block();
    let unlock = fx.b.new_block();
    let next = fx.b.new_block();
    let miss = fx.b.new_cold_block();
    let done = fx.b.new_block();
    fx.b.jump(head);

    fx.b.switch_to(head);
    let more = fx.b.icmp_imm(IntCC::Slt, i, SLOTS);
    fx.b.branch(more, body, miss);

    fx.b.switch_to(body);
    let offset = fx.b.binary_imm(BinOp::Imul, i, entry_size as i64);
    let entry = fx.b.ptr_add(base, offset);
    let was = fx.b.atomic_cas(entry, zero, one);
    let free = fx.b.icmp_imm(IntCC::Eq, was, 0);
    fx.b.branch(free, locked, next);

    fx.b.switch_to(locked);
    let valid = fx.b.load(Ty::I64, entry, 8);
    let mut same = fx.b.icmp_imm(IntCC::Ne, valid, 0);
    for (j, &k) in p.key.iter().enumerate() {
        let stored = fx.b.load(Ty::I64, entry, KEY_AT + 8 * j);
        let eq = fx.b.icmp(IntCC::Eq, stored, k);
        same = fx.b.binary(BinOp::And, same, eq);
    }
    fx.b.branch(same, hit, unlock);

    fx.b.switch_to(hit);
    copy_map(fx, entry, map_at, out, 0);
    fx.b.atomic_cas(entry, one, zero);
    fx.b.jump(done);

    fx.b.switch_to(unlock);
    fx.b.atomic_cas(entry, one, zero);
    fx.b.jump(next);

    fx.b.switch_to(next);
    let i1 = fx.b.binary_imm(BinOp::Iadd, i, 1);
    fx.b.assign(i, i1);
    fx.b.jump(head);

    fx.b.switch_to(miss);
    encode(fx, table, p, out);
    insert(fx, cache, p, out, entry_size, map_at);
    fx.b.jump(done);

    fx.b.switch_to(done);
}

/// Copies the 128 descriptor bytes at `from + from_at` to `to + to_at`.
fn copy_map(fx: &mut FnCtx<'_, '_>, from: Var, from_at: usize, to: Var, to_at: usize) {
    for w in 0..MAP / 8 {
        let v = fx.b.load(Ty::I64, from, from_at + 8 * w);
        fx.b.store(to, to_at + 8 * w, v);
    }
}

/// Stores key and descriptor into the entry the round-robin counter (the cache's last word)
/// picks, when its lock is free.
fn insert(
    fx: &mut FnCtx<'_, '_>,
    cache: DataId,
    p: &Prepared<'_>,
    out: Var,
    entry_size: usize,
    map_at: usize,
) {
    let base = fx.b.symbol_addr(Symbol::Data(cache));
    let counter = fx.b.ptr_add_imm(base, SLOTS * entry_size as i64);
    let zero = fx.b.iconst(Ty::I64, 0);
    let one = fx.b.iconst(Ty::I64, 1);
    // A compare-and-swap of 0 with 0 reads the counter atomically.
    let turn = fx.b.atomic_cas(counter, zero, zero);
    let after = fx.b.binary_imm(BinOp::Iadd, turn, 1);
    fx.b.atomic_cas(counter, turn, after);
    let victim = fx.b.binary_imm(BinOp::And, turn, SLOTS - 1);
    let offset = fx.b.binary_imm(BinOp::Imul, victim, entry_size as i64);
    let entry = fx.b.ptr_add(base, offset);
    let was = fx.b.atomic_cas(entry, zero, one);
    let free = fx.b.icmp_imm(IntCC::Eq, was, 0);
    let fill = fx.b.new_block();
    let skip = fx.b.new_block();
    fx.b.branch(free, fill, skip);
    fx.b.switch_to(fill);
    for (j, &k) in p.key.iter().enumerate() {
        fx.b.store(entry, KEY_AT + 8 * j, k);
    }
    copy_map(fx, out, 0, entry, map_at);
    fx.b.store_imm(Ty::I64, entry, 8, 1);
    fx.b.atomic_cas(entry, one, zero);
    fx.b.jump(skip);
    fx.b.switch_to(skip);
}

/// Calls `cuTensorMapEncodeTiled` into `out`, then applies the driver workaround
/// ([`workaround`]).
fn encode(fx: &mut FnCtx<'_, '_>, table: Var, p: &Prepared<'_>, out: Var) {
    let rank = p.dims.len();
    // dims (5 x u64), strides (5 x u64), box (5 x u32), element strides (5 x u32).
    let arrays = fx.b.slot(2 * 40 + 2 * 20, 8);
    let dims_at = fx.b.stack_addr(arrays, 0);
    let strides_at = fx.b.stack_addr(arrays, 40);
    let box_at = fx.b.stack_addr(arrays, 80);
    let es_at = fx.b.stack_addr(arrays, 100);
    for (j, &d) in p.dims.iter().enumerate() {
        fx.b.store(dims_at, 8 * j, d);
    }
    for (j, &s) in p.strides.iter().enumerate() {
        fx.b.store(strides_at, 8 * j, s);
    }
    for (j, (&b, &e)) in p.boxes.iter().zip(&p.element_strides).enumerate() {
        let b = fx.b.resize(b, Ty::I32, false);
        fx.b.store(box_at, 4 * j, b);
        let e = fx.b.resize(e, Ty::I32, false);
        fx.b.store(es_at, 4 * j, e);
    }
    let t = p.arg;
    let i32c = |fx: &mut FnCtx<'_, '_>, v: u32| fx.b.iconst(Ty::I32, i64::from(v));
    let args = vec![
        out,
        i32c(fx, p.elem.cuda_value()),
        i32c(fx, rank as u32),
        p.addr,
        dims_at,
        strides_at,
        box_at,
        es_at,
        i32c(fx, t.interleave.cuda_value()),
        i32c(fx, t.swizzle.cuda_value()),
        i32c(fx, t.l2_promotion.cuda_value()),
        i32c(fx, t.oob_fill.cuda_value()),
    ];
    let rc = call_entry(&mut fx.b, table, Entry::TensorMapEncodeTiled, args);
    let what = p.what.clone();
    driver_check(fx, table, rc, || {
        vec![MsgPart::text(format!(
            "{what}: cuTensorMapEncodeTiled returned "
        ))]
    });
    workaround(fx, table, p, out);
}

/// Triton's driver workaround (after a CUTLASS change): with a driver of version at most
/// [`cuda::TMA_WORKAROUND_MAX_DRIVER`] and a tensor spanning fewer than
/// [`cuda::TMA_WORKAROUND_SPAN`] bytes (`1 + sum((dim - 1) * byte stride)`, the innermost
/// byte stride being the element size), bit [`cuda::TMA_WORKAROUND_BIT`] of the descriptor's
/// word [`cuda::TMA_WORKAROUND_WORD`] is cleared.
fn workaround(fx: &mut FnCtx<'_, '_>, table: Var, p: &Prepared<'_>, out: Var) {
    let slot = fx.b.slot(8, 8);
    let at = fx.b.stack_addr(slot, 0);
    fx.b.store_imm(Ty::I32, at, 0, 0);
    let rc = call_entry(&mut fx.b, table, Entry::DriverGetVersion, vec![at]);
    let what = p.what.clone();
    driver_check(fx, table, rc, || {
        vec![MsgPart::text(format!(
            "{what}: cannot read the driver's version: cuDriverGetVersion returned "
        ))]
    });
    let version = fx.b.load(Ty::I32, at, 0);
    let version = fx.b.resize(version, Ty::I64, true);
    let old =
        fx.b.icmp_imm(IntCC::Sle, version, cuda::TMA_WORKAROUND_MAX_DRIVER);
    let mut last = fx.b.iconst(Ty::I64, 0);
    let size = fx.b.iconst(Ty::I64, i64::from(p.elem.size()));
    for (j, &d) in p.dims.iter().enumerate() {
        let stride = if j == 0 { size } else { p.strides[j - 1] };
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
