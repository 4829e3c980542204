//! The context a launch runs in: the caller's current context when it is on the launch
//! device, else the device's primary context (retained once per device), made current for
//! the launch and the caller's restored after it.

use crate::lir::{BinOp, IntCC, Ty, Var};

use super::super::context::FnCtx;
use super::super::raise::MsgPart;
use super::cuda::{self, Entry};
use super::operands::Int;
use super::support::{cached_entry, call_entry, driver_check, zeroed};

/// What [`restore`] needs: the caller's context and whether it was switched away from.
pub(super) struct Switch {
    current: Var,
    switched: Var,
}

/// Makes a context of `dev` current; `out` is 16 bytes of scratch stack.
pub(super) fn make_current(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    dev: Var,
    device: Int,
    prefix: &str,
) -> Switch {
    let out_slot = fx.b.slot(16, 8);
    let cur_at = fx.b.stack_addr(out_slot, 8);
    fx.b.store_imm(Ty::Ptr, cur_at, 0, 0);
    let rc = call_entry(&mut fx.b, table, Entry::CtxGetCurrent, vec![cur_at]);
    driver_check(fx, table, rc, |_| {
        vec![MsgPart::text(format!(
            "{prefix}: cuCtxGetCurrent returned "
        ))]
    });
    let current = fx.b.load(Ty::Ptr, cur_at, 0);
    let switched = fx.b.mutable_var(Ty::I8);
    fx.b.assign_iconst(switched, 0);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let has_current = fx.b.icmp(IntCC::Ne, current, null);
    let check_primary = fx.b.new_block();
    let ask = fx.b.new_block();
    let switch = fx.b.new_block();
    let ready = fx.b.new_block();
    fx.b.branch(has_current, check_primary, switch);
    // The device's primary context, when known, is on the device: no question to ask.
    fx.b.switch_to(check_primary);
    let entry = primary_entry(fx, device);
    let cached = fx.b.load(Ty::Ptr, entry, 0);
    let is_primary = fx.b.icmp(IntCC::Eq, current, cached);
    fx.b.branch(is_primary, ready, ask);
    fx.b.switch_to(ask);
    let cur_dev_at = fx.b.stack_addr(out_slot, 4);
    let rc = call_entry(&mut fx.b, table, Entry::CtxGetDevice, vec![cur_dev_at]);
    let cur_dev = fx.b.load(Ty::I32, cur_dev_at, 0);
    let got = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    let same = fx.b.icmp(IntCC::Eq, cur_dev, dev);
    let keep = fx.b.binary(BinOp::And, got, same);
    let kept = fx.b.new_block();
    fx.b.branch(keep, kept, switch);
    fx.b.switch_to(kept);
    learn_primary(fx, table, dev, device, entry, cached);
    fx.b.jump(ready);
    fx.b.switch_to(switch);
    let primary = primary_context(fx, table, dev, device, prefix);
    let rc = call_entry(&mut fx.b, table, Entry::CtxSetCurrent, vec![primary]);
    driver_check(fx, table, rc, |_| {
        vec![
            MsgPart::text(format!(
                "{prefix}: cannot make the primary context of CUDA device "
            )),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" current: cuCtxSetCurrent returned "),
        ]
    });
    fx.b.assign_iconst(switched, 1);
    fx.b.jump(ready);
    fx.b.switch_to(ready);
    Switch { current, switched }
}

/// Makes the caller's context current again when [`make_current`] switched.
pub(super) fn restore(fx: &mut FnCtx<'_, '_>, table: Var, switch: &Switch) {
    let restore = fx.b.new_block();
    let done = fx.b.new_block();
    let was_switched = fx.b.icmp_imm(IntCC::Ne, switch.switched, 0);
    fx.b.branch(was_switched, restore, done);
    fx.b.switch_to(restore);
    call_entry(&mut fx.b, table, Entry::CtxSetCurrent, vec![switch.current]);
    fx.b.jump(done);
    fx.b.switch_to(done);
}

/// The address of the launch ordinal's entry in the primary-context cache: the retained
/// primary context, [`NOT_ACTIVE`], or 0 (not known yet).
fn primary_entry(fx: &mut FnCtx<'_, '_>, device: Int) -> Var {
    let cache = match fx.m.gpu.primary_contexts {
        Some(id) => id,
        None => {
            let id = zeroed(
                fx.m,
                "cuda_primary_contexts",
                cuda::CACHED_DEVICES as usize * 8,
            );
            fx.m.gpu.primary_contexts = Some(id);
            id
        }
    };
    cached_entry(fx, cache, device.var)
}

/// A primary-context cache entry for a device whose primary context was not active when a
/// launch on it first found a context of its own current (never a context handle).
const NOT_ACTIVE: i64 = 1;

/// After a launch found a context of the launch device current and the cache knows nothing of
/// the device's primary context (cold, once per device): when the primary context is active
/// (`cuDevicePrimaryCtxGetState`: PyTorch's, for one), retain it into the cache, so that the
/// next launches recognise it without asking the driver for the current context's device;
/// otherwise mark it [`NOT_ACTIVE`] (retaining would create a primary context the caller does
/// not use). Failures leave the entry unknown: only the shortcut is lost.
fn learn_primary(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    dev: Var,
    device: Int,
    entry: Var,
    cached: Var,
) {
    let unknown = fx.b.icmp_imm(IntCC::Eq, cached, 0);
    let in_cache =
        fx.b.icmp_imm(IntCC::Ult, device.var, i64::from(cuda::CACHED_DEVICES));
    let learn = fx.b.binary(BinOp::And, unknown, in_cache);
    let ask = fx.b.new_cold_block();
    let done = fx.b.new_block();
    fx.b.branch(learn, ask, done);
    fx.b.switch_to(ask);
    let slot = fx.b.slot(16, 8);
    let flags_at = fx.b.stack_addr(slot, 0);
    let active_at = fx.b.stack_addr(slot, 4);
    fx.b.store_imm(Ty::I32, active_at, 0, 0);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::DevicePrimaryCtxGetState,
        vec![dev, flags_at, active_at],
    );
    let active = fx.b.load(Ty::I32, active_at, 0);
    let got = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    let is_active = fx.b.icmp_imm(IntCC::Ne, active, 0);
    let retain_it = fx.b.binary(BinOp::And, got, is_active);
    let retain = fx.b.new_block();
    let inactive = fx.b.new_block();
    fx.b.branch(retain_it, retain, inactive);
    fx.b.switch_to(inactive);
    let failed = fx.b.icmp_imm(IntCC::Ne, rc, cuda::SUCCESS);
    let mark = fx.b.new_block();
    fx.b.branch(failed, done, mark);
    fx.b.switch_to(mark);
    fx.b.store_imm(Ty::Ptr, entry, 0, NOT_ACTIVE);
    fx.b.jump(done);
    fx.b.switch_to(retain);
    let ctx_at = fx.b.stack_addr(slot, 8);
    fx.b.store_imm(Ty::Ptr, ctx_at, 0, 0);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::DevicePrimaryCtxRetain,
        vec![ctx_at, dev],
    );
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    let store = fx.b.new_block();
    fx.b.branch(ok, store, done);
    fx.b.switch_to(store);
    let ctx = fx.b.load(Ty::Ptr, ctx_at, 0);
    fx.b.store(entry, 0, ctx);
    fx.b.jump(done);
    fx.b.switch_to(done);
}

/// The primary context of `dev`, retained once per device (cached per ordinal).
fn primary_context(fx: &mut FnCtx<'_, '_>, table: Var, dev: Var, device: Int, prefix: &str) -> Var {
    let entry = primary_entry(fx, device);
    let cached = fx.b.load(Ty::Ptr, entry, 0);
    let ctx = fx.b.mutable_var(Ty::Ptr);
    fx.b.assign(ctx, cached);
    // 0 (unknown) and NOT_ACTIVE are not contexts.
    let missing = fx.b.icmp_imm(IntCC::Ule, cached, NOT_ACTIVE);
    let retain = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.b.branch(missing, retain, join);
    fx.b.switch_to(retain);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::DevicePrimaryCtxRetain,
        vec![entry, dev],
    );
    let prefix = prefix.to_owned();
    driver_check(fx, table, rc, |_| {
        vec![
            MsgPart::text(format!(
                "{prefix}: cannot retain the primary context of CUDA device "
            )),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(": cuDevicePrimaryCtxRetain returned "),
        ]
    });
    let retained = fx.b.load(Ty::Ptr, entry, 0);
    fx.b.assign(ctx, retained);
    fx.b.jump(join);
    fx.b.switch_to(join);
    ctx
}
