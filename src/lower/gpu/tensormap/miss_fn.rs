//! The miss function being built ([`super::miss`]): where the rules ([`super::rules`]) and the
//! encoder's call ([`super::encode`]) raise, and what they read.

use crate::ir::{TensorMapArg, TensorMapDtype};
use crate::lir::{SlotId, Ty, Var, builder::FuncBuilder};

use super::super::super::modctx::ModuleCtx;
use super::super::super::raise::{MsgPart, Tag, emit_raise};
use super::prepare::Inputs;

/// The miss function being built: where its checks raise, and the argument's texts.
pub(crate) struct MissFn<'a, 'm> {
    pub m: &'a mut ModuleCtx<'m>,
    pub b: FuncBuilder,
    /// The values of raised messages.
    pub(super) parts: SlotId,
    /// The driver table.
    pub table: Var,
    /// The C string `<prefix>: kernel argument K (tensormap of 'T')` that starts every
    /// message.
    pub(super) what: Var,
    /// The C string naming the tensor parameter.
    pub tensor: Var,
    /// The host function's `\n  when calling ...` line, which ends every message.
    pub(super) call_context: String,
}

impl MissFn<'_, '_> {
    /// Continues when `ok` is true; otherwise raises `kind` with the message `WHAT: `, then
    /// `parts`, then the call context, and returns -1. A condition that is a true constant
    /// emits nothing.
    pub(crate) fn check(
        &mut self,
        ok: Var,
        kind: &str,
        parts: impl FnOnce(&mut Self) -> Vec<MsgPart>,
    ) {
        if self.b.constant(ok).is_some_and(|c| c != 0) {
            return;
        }
        let pass = self.b.new_block();
        let failing = self.b.new_cold_block();
        self.b.branch(ok, pass, failing);
        self.b.switch_to(failing);
        let mut all = vec![MsgPart::Value(Tag::CStr, self.what), MsgPart::text(": ")];
        all.extend(parts(self));
        all.push(MsgPart::Text(self.call_context.clone()));
        emit_raise(self.m, &mut self.b, self.parts, kind, all);
        let failed = self.b.iconst(Ty::I32, -1);
        self.b.ret(Some(failed));
        self.b.switch_to(pass);
    }
}

/// What the miss function of a descriptor reads: the argument's form with its expressions
/// reduced to whether each is a constant, its element type, and the values.
pub(crate) struct Miss<'a> {
    pub t: &'a TensorMapArg,
    pub elem: TensorMapDtype,
    pub v: Inputs,
}
