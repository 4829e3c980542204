//! `tdm(..)` arguments: the 80 bytes of an AMD TDM descriptor, built on the stack from the
//! tensor at call time as Triton 3.9's `encodeTDMDescriptor` builds them (the layout is in
//! [`crate::ir::TdmArg`]'s module), after checking what the descriptor's fields can hold.
//! The kernel's parameter is the first 48 or all 80 bytes (`TdmArg::param_size`); the
//! runtime copies that many.

use crate::ir::{TdmArg, tdm_limits as limits};
use crate::lir::{BinOp, IntCC, Ty, Var, builder::FuncBuilder};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

use super::super::context::{Binding, FnCtx};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::descriptor_source::{self, Source};

/// Builds descriptor argument `k` (messages start with `prefix`); returns the address of its
/// 80 bytes.
pub(super) fn build(
    fx: &mut FnCtx<'_, '_>,
    t: &TdmArg,
    k: usize,
    prefix: &str,
) -> Result<Var, LowerError> {
    let what = format!("{prefix}: kernel argument {k} (tdm of '{}')", t.tensor);
    let internal = |why: &str| LowerError::internal(format!("{what}: {why}"));
    let Binding::Tensor(tensor) = fx.lookup(&t.tensor)? else {
        return Err(internal("not a tensor parameter"));
    };
    let rank = tensor
        .spec
        .shape
        .rank()
        .ok_or_else(|| internal("any rank"))?;
    let bits = tensor.spec.dtype.ok_or_else(|| internal("any dtype"))?.bits;
    let Source {
        addr_int: addr,
        dims,
        strides,
        ..
    } = descriptor_source::read(fx, &t.tensor, rank)?;
    check(fx, &what, t, &dims, &strides);

    // Innermost first, as the descriptor counts: `sh[0]` is the last dim.
    let sh: Vec<Var> = dims.iter().rev().copied().collect();
    let st: Vec<Var> = strides.iter().rev().copied().collect();
    let wb: Vec<i64> = t.warp_block().iter().rev().map(|&b| b as i64).collect();
    let b = &mut fx.b;
    let zero = b.iconst(Ty::I64, 0);
    let shl = |b: &mut FuncBuilder, v: Var, n: i64| b.binary_imm(BinOp::Shl, v, n);
    let shr = |b: &mut FuncBuilder, v: Var, n: i64| b.binary_imm(BinOp::Ushr, v, n);
    let and = |b: &mut FuncBuilder, v: Var, m: i64| b.binary_imm(BinOp::And, v, m);
    let or_imm = |b: &mut FuncBuilder, v: Var, c: i64| b.binary_imm(BinOp::Or, v, c);
    let or = |b: &mut FuncBuilder, x: Var, y: Var| b.binary(BinOp::Or, x, y);
    let mut w = [zero; limits::WORDS];
    // Group 0: the predicate (1), the global address (bits 64-126: its low 63 bits, as
    // Triton writes them), the type bit (127).
    w[0] = b.iconst(Ty::I64, 1);
    w[2] = and(b, addr, 0xFFFF_FFFF);
    let high = shr(b, addr, 32);
    let high = and(b, high, 0x7FFF_FFFF);
    w[3] = or_imm(b, high, 1 << 31);
    // Group 1: element size and padding, dims 0-1 (32 bits at bit 48), block extents 0-2
    // (16 bits each), strides 1 (48 bits at bit 160) and 2 (48 bits at bit 208).
    w[4] = b.iconst(Ty::I64, i64::from(t.config_word(u64::from(bits))));
    w[5] = shl(b, sh[0], 16);
    w[6] = shr(b, sh[0], 16);
    w[7] = b.iconst(Ty::I64, (wb[0] << 16) & 0xFFFF_FFFF);
    if rank >= 2 {
        let v = shl(b, sh[1], 16);
        w[6] = or(b, w[6], v);
        let v = shr(b, sh[1], 16);
        w[7] = or(b, w[7], v);
        w[9] = and(b, st[1], 0xFFFF_FFFF);
        let v = shr(b, st[1], 32);
        w[10] = and(b, v, 0xFFFF);
    }
    let block_1 = wb.get(1).map_or(0, |v| v & 0xFFFF);
    let block_2 = wb.get(2).map_or(0, |v| (v << 16) & 0xFFFF_FFFF);
    w[8] = b.iconst(Ty::I64, block_1 | block_2);
    if rank >= 3 {
        let v = and(b, st[2], 0xFFFF);
        let v = shl(b, v, 16);
        w[10] = or(b, w[10], v);
        let v = shr(b, st[2], 16);
        w[11] = and(b, v, 0xFFFF_FFFF);
        // Group 2: dims 2 and 3, stride 3, block extent 3.
        w[12] = sh[2];
    }
    if rank >= 4 {
        w[13] = sh[3];
        w[14] = and(b, st[3], 0xFFFF_FFFF);
        let v = shr(b, st[3], 32);
        let v = and(b, v, 0xFFFF);
        w[15] = or_imm(b, v, (wb[3] << 16) & 0xFFFF_FFFF);
    }
    if rank == 5 {
        // Group 3: stride 4, dim 4, block extent 4.
        w[16] = and(b, st[4], 0xFFFF_FFFF);
        let v = shr(b, st[4], 32);
        let v = and(b, v, 0xFFFF);
        let d = shl(b, sh[4], 16);
        w[17] = or(b, v, d);
        let v = shr(b, sh[4], 16);
        w[18] = or_imm(b, v, (wb[4] << 16) & 0xFFFF_FFFF);
    }
    let slot = b.slot((limits::WORDS * 4) as u32, 16);
    let base = b.stack_addr(slot, 0);
    for (i, &word) in w.iter().enumerate() {
        let word = b.resize(word, Ty::I32, false);
        b.store(base, i * 4, word);
    }
    Ok(base)
}

/// What the descriptor's fields hold, checked: every dim fits 32 bits, every stride 48 bits
/// (and is not negative), the innermost dimension is contiguous (Triton's `TensorDescriptor`
/// asserts it; the descriptor has no field for that stride).
fn check(fx: &mut FnCtx<'_, '_>, what: &str, t: &TdmArg, dims: &[Var], strides: &[Var]) {
    let rank = dims.len();
    let fail = |fx: &mut FnCtx<'_, '_>, ok: Var, parts: Vec<MsgPart>| {
        let what = what.to_owned();
        fx.check(ok, VALUE_ERROR, move |_| {
            let mut all = vec![MsgPart::text(format!("{what}: "))];
            all.extend(parts);
            all
        });
    };
    for (i, &d) in dims.iter().enumerate() {
        let ok = fx.b.icmp_imm(IntCC::Ule, d, limits::MAX_DIM);
        let parts = vec![
            MsgPart::text(format!("{}.shape[{i}] is ", t.tensor)),
            MsgPart::Value(Tag::I64, d),
            MsgPart::text(format!(
                "; a TDM dimension must be at most {}",
                limits::MAX_DIM
            )),
        ];
        fail(fx, ok, parts);
    }
    for (i, &s) in strides.iter().enumerate() {
        let ok = if i + 1 == rank {
            let one = fx.b.icmp_imm(IntCC::Eq, s, 1);
            let single = fx.b.icmp_imm(IntCC::Eq, dims[i], 1);
            fx.b.binary(BinOp::Or, one, single)
        } else {
            fx.b.icmp_imm(IntCC::Ult, s, 1 << limits::STRIDE_BITS)
        };
        let rule = if i + 1 == rank {
            "; TDM needs the innermost dimension contiguous (stride 1)".to_owned()
        } else {
            format!(
                " elements; a TDM stride must be 0 to 2^{} - 1 elements",
                limits::STRIDE_BITS
            )
        };
        let parts = vec![
            MsgPart::text(format!("{}.strides[{i}] is ", t.tensor)),
            MsgPart::Value(Tag::I64, s),
            MsgPart::text(rule),
        ];
        fail(fx, ok, parts);
    }
}
