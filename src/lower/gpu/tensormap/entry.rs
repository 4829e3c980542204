//! A cache entry of `tensormap(..)` descriptors ([`super::cache`]): its layout, and how a miss
//! stores its key and descriptor into one ([`insert`]).

use crate::ir::tensormap_limits as limits;
use crate::lir::{BinOp, IntCC, Ty, Var, builder::FuncBuilder};

/// Cache entries per launch argument.
pub(crate) const SLOTS: i64 = 4;
/// Bytes of the descriptor.
const MAP: usize = limits::MAP_SIZE as usize;
/// An entry: the descriptor first (entries are multiples of 128 bytes and the cache is
/// 128-byte aligned, so the descriptor is too), then the lock word, the valid word and the key.
pub(super) const MAP_AT: usize = 0;
/// Offset of the lock word in an entry.
pub(super) const LOCK_AT: usize = MAP;
/// Offset of the valid word.
pub(super) const VALID_AT: usize = LOCK_AT + 8;
/// Offset of the key.
pub(super) const KEY_AT: usize = VALID_AT + 8;
/// Alignment of descriptor storage.
pub(super) const MAP_ALIGN: usize = limits::MAP_ALIGN as usize;

/// Copies the 128 descriptor bytes at `from` to `to`.
fn copy_map(b: &mut FuncBuilder, from: Var, to: Var, to_at: usize) {
    for w in 0..MAP / 8 {
        let v = b.load(Ty::I64, from, 8 * w);
        b.store(to, to_at + 8 * w, v);
    }
}

/// Stores `key` and the descriptor at `out` into the entry of the cache at `base` (entries of
/// `entry_size` bytes) that the round-robin counter (the cache's last word) picks, when its
/// lock is free.
pub(crate) fn insert(b: &mut FuncBuilder, base: Var, key: &[Var], out: Var, entry_size: usize) {
    let counter = b.ptr_add_imm(base, SLOTS * entry_size as i64);
    let zero = b.iconst(Ty::I64, 0);
    let one = b.iconst(Ty::I64, 1);
    // A compare-and-swap of 0 with 0 reads the counter atomically.
    let turn = b.atomic_cas(counter, zero, zero);
    let after = b.binary_imm(BinOp::Iadd, turn, 1);
    b.atomic_cas(counter, turn, after);
    let victim = b.binary_imm(BinOp::And, turn, SLOTS - 1);
    let offset = b.binary_imm(BinOp::Imul, victim, entry_size as i64);
    let entry = b.ptr_add(base, offset);
    let lock = b.ptr_add_imm(entry, LOCK_AT as i64);
    let was = b.atomic_cas(lock, zero, one);
    let free = b.icmp_imm(IntCC::Eq, was, 0);
    let fill = b.new_block();
    let skip = b.new_block();
    b.branch(free, fill, skip);
    b.switch_to(fill);
    for (j, &k) in key.iter().enumerate() {
        b.store(entry, KEY_AT + 8 * j, k);
    }
    copy_map(b, out, entry, MAP_AT);
    b.store_imm(Ty::I64, entry, VALID_AT, 1);
    b.atomic_cas(lock, one, zero);
    b.jump(skip);
    b.switch_to(skip);
}
