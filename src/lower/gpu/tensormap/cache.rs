//! The cache of `tensormap(..)` descriptors of a launch site (docs/ir.md, "TMA descriptors").
//!
//! The cache is module data, [`SLOTS`] entries per launch argument ([`super::entry`]: the 128
//! descriptor bytes, a lock word, a valid word and the key, every encoder input that is not a
//! constant of the site). A thread takes an entry's lock with one compare-and-swap and never
//! waits: a locked entry counts as a miss. On a hit the launch passes the entry's descriptor
//! and holds the lock until `cuLaunchKernelEx` has copied the parameters ([`release`]); a
//! miss calls the module's miss function of the descriptor's kind ([`super::miss`]), which
//! checks and encodes on the stack, then stores key and descriptor into the entry a
//! round-robin counter picks ([`super::entry::insert`]), if its lock is free. Entries are
//! never freed: a descriptor holds addressing, not contents, so it is valid as long as the key
//! is the same.

use crate::ir::tensormap_limits as limits;
use crate::lir::{BinOp, ConvOp, DataId, IntCC, Linkage, Symbol, Ty, Var};

use super::super::super::context::FnCtx;
use super::cleanup::Cleanup;
pub(crate) use super::cleanup::release;
use super::entry::{KEY_AT, LOCK_AT, MAP_ALIGN, MAP_AT, SLOTS, VALID_AT};
use super::miss;
use super::prepare::Prepared;

/// The descriptor of `p` for the launch: a cache entry's, whose lock stays held until
/// [`release`] (after `cuLaunchKernelEx`, which copies the parameters), or, on a miss, checked
/// and encoded into `out` (128-byte aligned stack storage) and then cached. Returns the
/// descriptor's address and the held entry (an `I64`, 0 when none).
pub(crate) fn build(
    fx: &mut FnCtx<'_, '_>,
    p: &Prepared<'_>,
    out: Var,
    cleanup: &Cleanup<'_>,
) -> (Var, Var) {
    let key = p.inputs.key(p.arg);
    let n = key.len();
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
    for (j, &k) in key.iter().enumerate() {
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
    let rc = miss::call(fx, p, out, cleanup.table, base, entry_size);
    cleanup.fail_on_nonzero(fx, rc);
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
