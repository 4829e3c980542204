//! `tensormap(..)` launch arguments (docs/ir.md, "TMA descriptors"): the encoder's inputs read
//! from the tensor ([`prepare`]), then the descriptor taken from the launch site's cache or,
//! after checking every rule of `cuTensorMapEncodeTiled`, encoded by the driver into 128-byte
//! aligned storage ([`build`]).
//!
//! The cache is module data, [`SLOTS`] entries per launch argument. Each entry is the 128
//! descriptor bytes, a lock word, a valid word and the key (every encoder input that is not a
//! constant of the site). A thread takes an entry's lock with one compare-and-swap and never
//! waits: a locked entry counts as a miss. On a hit the launch passes the entry's descriptor
//! and holds the lock until `cuLaunchKernelEx` has copied the parameters ([`release`]); a
//! miss checks and encodes on the stack, then stores key and descriptor into the entry a
//! round-robin counter picks, if its lock is free. Entries are never freed: a descriptor
//! holds addressing, not contents, so it is valid as long as the key is the same.

use crate::ir::{
    Expr, Strides, TensorField, TensorMapArg, TensorMapDtype, tensormap_limits as limits,
};
use crate::lir::{BinOp, ConvOp, DataId, IntCC, Linkage, Symbol, Ty, Var};
use safecall_runtime::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};

use super::super::context::{Binding, FnCtx};
use super::super::expr::{Val, lower_expr, lower_tensor_field};
use super::super::layout::{compact_strides, effective_strides};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::context::{Switch, restore};
use super::cuda::{self, Entry};
use super::support::{call_entry, describe_error};

/// Cache entries per launch argument.
pub(crate) const SLOTS: i64 = 4;
/// Bytes of the descriptor.
const MAP: usize = limits::MAP_SIZE as usize;
/// An entry: the descriptor first (entries are multiples of 128 bytes and the cache is
/// 128-byte aligned, so the descriptor is too), then the lock word, the valid word and the key.
const MAP_AT: usize = 0;
/// Offset of the lock word in an entry.
const LOCK_AT: usize = MAP;
/// Offset of the valid word.
const VALID_AT: usize = LOCK_AT + 8;
/// Offset of the key.
const KEY_AT: usize = VALID_AT + 8;
/// Alignment of descriptor storage.
const MAP_ALIGN: usize = limits::MAP_ALIGN as usize;

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
    let rank = tensor.spec.shape.len();

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

    let mut key = vec![addr_int];
    key.extend(&dims);
    key.extend(&strides);
    let mut boxes = Vec::with_capacity(rank);
    for e in t.box_dims.iter().rev() {
        let v = int_i64(fx, e)?;
        if !matches!(e, Expr::Int { .. }) {
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
        strides,
        boxes,
        element_strides,
        key,
    })
}

/// Every rule of `cuTensorMapEncodeTiled` that constants did not decide, each a ValueError
/// naming the argument, the rule and the values (run before encoding).
fn check_rules(fx: &mut FnCtx<'_, '_>, p: &Prepared<'_>, cleanup: &Cleanup<'_>) {
    let t = p.arg;
    let what = p.what.as_str();
    let rank = p.dims.len();
    let size = i64::from(p.elem.size());
    let align = i64::from(t.interleave.alignment());
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
                " (data + byte_offset) is not aligned to {align} bytes, as TMA requires"
            )),
        ],
    );
    // `dims` is innermost first; messages use the tensor's order.
    for (j, &d) in p.dims.iter().enumerate().rev() {
        let i = rank - 1 - j;
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
    if let (Some(&s), Some(&d)) = (p.elem_strides.last(), p.dims.first()) {
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
                    " bytes; a TMA stride must be a multiple of {align} bytes and below 2^40"
                )),
            ],
        );
    }
    for (j, (e, &v)) in t.box_dims.iter().rev().zip(&p.boxes).enumerate().rev() {
        if matches!(e, Expr::Int { .. }) {
            continue;
        }
        let i = rank - 1 - j;
        let ok = in_range(fx, v, 1, limits::MAX_BOX);
        rule(
            fx,
            cleanup,
            ok,
            what,
            vec![
                MsgPart::text(format!("box[{i}] is ")),
                MsgPart::Value(Tag::I64, v),
                MsgPart::text(format!("; it must be 1 to {}", limits::MAX_BOX)),
            ],
        );
        if j == 0 {
            inner_box_rules(fx, cleanup, t, what, v, size);
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

/// The rules on a run-time inner box extent `v`: its bytes a multiple of 16 (without
/// interleave) and within the swizzle span.
fn inner_box_rules(
    fx: &mut FnCtx<'_, '_>,
    cleanup: &Cleanup<'_>,
    t: &TensorMapArg,
    what: &str,
    v: Var,
    size: i64,
) {
    if t.interleave != crate::ir::Interleave::None {
        return;
    }
    let bytes = fx.b.binary_imm(BinOp::Imul, v, size);
    let ok = multiple_of(fx, bytes, limits::BOX_INNER_MULTIPLE);
    rule(
        fx,
        cleanup,
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
            cleanup,
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

/// What a launch must undo when a descriptor fails after its context was made current: the
/// caller's context, and the cache entries earlier descriptors of the launch hold.
pub(super) struct Cleanup<'s> {
    /// The driver table.
    pub table: Var,
    /// The context switch to undo.
    pub switch: &'s Switch,
    /// The entries held so far (their locks' `I64` addresses, 0 for none).
    pub held: Vec<Var>,
}

impl Cleanup<'_> {
    /// Emits the undoing, on a failure path.
    fn emit(&self, fx: &mut FnCtx<'_, '_>) {
        release(fx, &self.held);
        restore(fx, self.table, self.switch);
    }
}

/// Releases the cache entries `held` (the `I64` addresses of their locks, 0 for none).
pub(super) fn release(fx: &mut FnCtx<'_, '_>, held: &[Var]) {
    for &h in held {
        let some = fx.b.icmp_imm(IntCC::Ne, h, 0);
        let unlock = fx.b.new_block();
        let done = fx.b.new_block();
        fx.b.branch(some, unlock, done);
        fx.b.switch_to(unlock);
        let lock = fx.b.convert(ConvOp::IntToPtr, h, Ty::Ptr);
        let (one, zero) = (fx.b.iconst(Ty::I64, 1), fx.b.iconst(Ty::I64, 0));
        fx.b.atomic_cas(lock, one, zero);
        fx.b.jump(done);
        fx.b.switch_to(done);
    }
}

/// The descriptor of `p` for the launch: a cache entry's, whose lock stays held until
/// [`release`] (after `cuLaunchKernelEx`, which copies the parameters), or, on a miss, checked
/// and encoded into `out` (128-byte aligned stack storage) and then cached. Returns the
/// descriptor's address and the held entry (an `I64`, 0 when none).
pub(super) fn build(
    fx: &mut FnCtx<'_, '_>,
    p: &Prepared<'_>,
    out: Var,
    cleanup: &Cleanup<'_>,
) -> (Var, Var) {
    let n = p.key.len();
    let entry_size = (KEY_AT + 8 * n).next_multiple_of(MAP_ALIGN);
    let cache = cache_data(fx, SLOTS as usize * entry_size + 8);
    let base = fx.b.symbol_addr(Symbol::Data(cache));
    let zero = fx.b.iconst(Ty::I64, 0);
    let one = fx.b.iconst(Ty::I64, 1);
    let map = fx.b.mutable_var(Ty::Ptr);
    fx.b.assign(map, out);
    let held = fx.b.mutable_var(Ty::I64);
    fx.b.assign_iconst(held, 0);

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
    let lock = fx.b.ptr_add_imm(entry, LOCK_AT as i64);
    let was = fx.b.atomic_cas(lock, zero, one);
    let free = fx.b.icmp_imm(IntCC::Eq, was, 0);
    fx.b.branch(free, locked, next);

    fx.b.switch_to(locked);
    // valid ^ 1 | key[0] ^ stored[0] | ...: zero exactly on a hit.
    let valid = fx.b.load(Ty::I64, entry, VALID_AT);
    let mut diff = fx.b.binary_imm(BinOp::Xor, valid, 1);
    for (j, &k) in p.key.iter().enumerate() {
        let stored = fx.b.load(Ty::I64, entry, KEY_AT + 8 * j);
        let x = fx.b.binary(BinOp::Xor, stored, k);
        diff = fx.b.binary(BinOp::Or, diff, x);
    }
    let same = fx.b.icmp_imm(IntCC::Eq, diff, 0);
    fx.b.branch(same, hit, unlock);

    fx.b.switch_to(hit);
    let lock_int = fx.b.convert(ConvOp::PtrToInt, lock, Ty::I64);
    fx.b.assign(held, lock_int);
    let in_cache = fx.b.ptr_add_imm(entry, MAP_AT as i64);
    fx.b.assign(map, in_cache);
    fx.b.jump(done);

    fx.b.switch_to(unlock);
    fx.b.atomic_cas(lock, one, zero);
    fx.b.jump(next);

    fx.b.switch_to(next);
    let i1 = fx.b.binary_imm(BinOp::Iadd, i, 1);
    fx.b.assign(i, i1);
    fx.b.jump(head);

    fx.b.switch_to(miss);
    check_rules(fx, p, cleanup);
    encode(fx, p, out, cleanup);
    insert(fx, cache, p, out, entry_size);
    fx.b.jump(done);

    fx.b.switch_to(done);
    (map, held)
}

/// A writable, zeroed cache of `bytes` bytes, aligned as a descriptor's storage.
fn cache_data(fx: &mut FnCtx<'_, '_>, bytes: usize) -> DataId {
    let name = fx.m.local_name("tensormap_cache");
    fx.m.add_data(crate::lir::Data {
        name,
        linkage: Linkage::Local,
        writable: true,
        align: limits::MAP_ALIGN,
        contents: vec![0; bytes],
        relocs: Vec::new(),
        section: None,
    })
}

/// Copies the 128 descriptor bytes at `from` to `to`.
fn copy_map(fx: &mut FnCtx<'_, '_>, from: Var, to: Var, to_at: usize) {
    for w in 0..MAP / 8 {
        let v = fx.b.load(Ty::I64, from, 8 * w);
        fx.b.store(to, to_at + 8 * w, v);
    }
}

/// Stores key and descriptor into the entry the round-robin counter (the cache's last word)
/// picks, when its lock is free.
fn insert(fx: &mut FnCtx<'_, '_>, cache: DataId, p: &Prepared<'_>, out: Var, entry_size: usize) {
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
    let lock = fx.b.ptr_add_imm(entry, LOCK_AT as i64);
    let was = fx.b.atomic_cas(lock, zero, one);
    let free = fx.b.icmp_imm(IntCC::Eq, was, 0);
    let fill = fx.b.new_block();
    let skip = fx.b.new_block();
    fx.b.branch(free, fill, skip);
    fx.b.switch_to(fill);
    for (j, &k) in p.key.iter().enumerate() {
        fx.b.store(entry, KEY_AT + 8 * j, k);
    }
    copy_map(fx, out, entry, MAP_AT);
    fx.b.store_imm(Ty::I64, entry, VALID_AT, 1);
    fx.b.atomic_cas(lock, one, zero);
    fx.b.jump(skip);
    fx.b.switch_to(skip);
}

/// Calls `cuTensorMapEncodeTiled` into `out`, then applies the driver workaround
/// ([`workaround`]).
fn encode(fx: &mut FnCtx<'_, '_>, p: &Prepared<'_>, out: Var, cleanup: &Cleanup<'_>) {
    let table = cleanup.table;
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
    driver_ok(
        fx,
        rc,
        cleanup,
        format!("{}: cuTensorMapEncodeTiled returned ", p.what),
    );
    workaround(fx, p, out, cleanup);
}

/// Continues when `rc` is `CUDA_SUCCESS`; otherwise undoes `cleanup` and raises a RuntimeError:
/// `text`, then the driver's description of `rc`.
fn driver_ok(fx: &mut FnCtx<'_, '_>, rc: Var, cleanup: &Cleanup<'_>, text: String) {
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    fx.check(ok, RUNTIME_ERROR, |fx| {
        cleanup.emit(fx);
        let mut parts = vec![MsgPart::text(text)];
        parts.extend(describe_error(fx.m, &mut fx.b, cleanup.table, rc));
        parts
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
