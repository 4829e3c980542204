//! What a launch undoes when one of its `tensormap(..)` descriptors fails after the context
//! was made current: the cache entries it holds and the caller's context. Shared by the
//! descriptor's checks (`rules`) and its cache (`cache`).

use crate::lir::{ConvOp, IntCC, Ty, Var};

use super::super::super::context::FnCtx;
use super::super::context::{Switch, restore};

/// What a launch must undo when a descriptor fails after its context was made current: the
/// caller's context, and the cache entries earlier descriptors of the launch hold.
pub(crate) struct Cleanup<'s> {
    /// The driver table.
    pub table: Var,
    /// The context switch to undo.
    pub switch: &'s Switch,
    /// The entries held so far (their locks' `I64` addresses, 0 for none).
    pub held: Vec<Var>,
}

impl Cleanup<'_> {
    /// Emits the undoing, on a failure path.
    pub(crate) fn emit(&self, fx: &mut FnCtx<'_, '_>) {
        release(fx, &self.held);
        restore(fx, self.table, self.switch);
    }
}

/// Releases the cache entries `held` (the `I64` addresses of their locks, 0 for none).
pub(crate) fn release(fx: &mut FnCtx<'_, '_>, held: &[Var]) {
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
