//! What a launch undoes when one of its `tensormap(..)` descriptors fails after the context
//! was made current: the cache entries it holds and the caller's context.

use crate::lir::{ConvOp, IntCC, Ty, Var};

use super::super::super::context::FnCtx;
use super::super::context::{Switch, restore};

/// What a launch must undo when a descriptor fails after its context was made current: the
/// caller's context, and the cache entries earlier descriptors of the launch hold.
pub(crate) struct Cleanup<'s> {
    /// The driver table.
    pub table: Var,
    /// The context switch to undo.
    switch: &'s Switch,
    /// The entries held so far (their locks' `I64` addresses, 0 for none).
    held: Vec<Var>,
}

impl<'s> Cleanup<'s> {
    /// Nothing held yet.
    pub(crate) fn new(table: Var, switch: &'s Switch) -> Self {
        Cleanup {
            table,
            switch,
            held: Vec::new(),
        }
    }

    /// Adds a descriptor's held entry (an `I64` lock address, 0 for none): later failures
    /// release it too.
    pub(crate) fn hold(&mut self, held: Var) {
        self.held.push(held);
    }

    /// The entries held, for the release after the launch.
    pub(crate) fn into_held(self) -> Vec<Var> {
        self.held
    }

    /// Continues when `rc` (an `I32`, a descriptor's miss function's result) is 0; otherwise,
    /// its error being raised, undoes this cleanup and leaves through the error exit.
    pub(crate) fn fail_on_nonzero(&self, fx: &mut FnCtx<'_, '_>, rc: Var) {
        let failed = fx.b.icmp_imm(IntCC::Ne, rc, 0);
        let error = fx.b.new_cold_block();
        let ok = fx.b.new_block();
        fx.b.branch(failed, error, ok);
        fx.b.switch_to(error);
        release(fx, &self.held);
        restore(fx, self.table, self.switch);
        fx.return_error();
        fx.b.switch_to(ok);
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
