//! What a launch undoes when one of its `tensormap(..)` descriptors fails after the context
//! was made current: the cache entries it holds and the caller's context. Shared by the
//! descriptor's checks (`rules`) and its cache (`cache`).

use std::cell::Cell;

use crate::lir::{ConvOp, IntCC, Ty, Var};

use super::super::super::context::{FnCtx, SharedExit};
use super::super::super::raise::MsgPart;
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
    /// The failure exit that undoes all this, shared by the checks of the descriptor being
    /// built (made by its first check; a new one once another entry is held).
    exit: Cell<Option<SharedExit>>,
}

impl<'s> Cleanup<'s> {
    /// Nothing held yet.
    pub(crate) fn new(table: Var, switch: &'s Switch) -> Self {
        Cleanup {
            table,
            switch,
            held: Vec::new(),
            exit: Cell::new(None),
        }
    }

    /// Adds a descriptor's held entry (an `I64` lock address, 0 for none): later failures
    /// release it too.
    pub(crate) fn hold(&mut self, held: Var) {
        self.held.push(held);
        self.exit.set(None);
    }

    /// The entries held, for the release after the launch.
    pub(crate) fn into_held(self) -> Vec<Var> {
        self.held
    }

    /// Continues when `ok` is true; otherwise undoes this cleanup and raises `kind` with the
    /// message `parts` (then the call context). The undoing is emitted once per descriptor, in
    /// an exit its failing checks share.
    pub(crate) fn check(
        &self,
        fx: &mut FnCtx<'_, '_>,
        ok: Var,
        kind: &str,
        parts: impl FnOnce(&mut FnCtx<'_, '_>) -> Vec<MsgPart>,
    ) {
        if fx.always(ok) {
            return;
        }
        let exit = match self.exit.get() {
            Some(exit) => exit,
            None => {
                let exit = fx.shared_exit(|fx| {
                    release(fx, &self.held);
                    restore(fx, self.table, self.switch);
                });
                self.exit.set(Some(exit));
                exit
            }
        };
        fx.check_via(exit, ok, kind, parts);
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
