//! The state of lowering one host function ([`FnCtx`]) shared by every part of it: the
//! names in scope, owned references and exits, and the check/fail protocol (an argument check,
//! a checked condition with its cold failing block, raising a message made of parts).

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;
use safecall_runtime::abi::{
    ANY_SIZE, ANY_SMALL_STR_LEN_OFFSET, ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, type_index,
};

use crate::ir;
use crate::lir::{BinOp, BlockId, Callee, IntCC, SlotId, Ty, Var, builder::FuncBuilder};

use super::capi::CApi;
use super::modctx::ModuleCtx;
use super::options::LowerError;
use super::raise::{MsgPart, emit_raise};
use super::schema;
use safecall_runtime::abi::symbols::error_kind::{INTERNAL_ERROR, VALUE_ERROR};

/// A value of a name in scope.
#[derive(Clone, Debug)]
pub(crate) enum Binding {
    /// A machine value.
    Scalar { var: Var, guard: Option<NoneGuard> },
    /// A device, packed `type | id << 32` in an `I64`.
    Device { var: Var, guard: Option<NoneGuard> },
    /// A data type, packed `code | bits << 8 | lanes << 16` in an `I32`.
    DType { var: Var, guard: Option<NoneGuard> },
    /// A value held in a `TVMFFIAny` (a borrowed argument, or an owned call result).
    Ref { any: Var, guard: Option<NoneGuard> },
    /// A tensor parameter.
    Tensor(TensorBinding),
    /// A symbolic variable (`I64`).
    Sym {
        var: Var,
        unbound_check: Option<(Var, String)>,
    },
    /// A string literal bound by `let`.
    StrLit(String),
    /// A parameter whose value is not usable (`Const(None)`).
    Unit,
}

/// Raises when an optional value that is None is used.
#[derive(Clone, Debug)]
pub(crate) struct NoneGuard {
    /// `I8`, 1 when the argument was None.
    pub is_none: Var,
    /// The argument, as messages name it.
    pub label: String,
}

/// A tensor parameter in scope.
#[derive(Clone, Debug)]
pub(crate) struct TensorBinding {
    /// Pointer to the argument's `TVMFFIAny`.
    pub any: Var,
    /// Pointer to the `DLTensor` (mutable var when the tensor is optional).
    pub dl: Var,
    /// The spec (shared with the tensor's checks: bindings are cloned on every lookup).
    pub spec: std::rc::Rc<ir::TensorSpec>,
    /// Shape values loaded by the checks, when they dominate the body.
    pub shape: Option<Vec<Var>>,
    /// Set when the tensor is optional (or inside an optional tuple).
    pub guard: Option<NoneGuard>,
    /// Whether the function owns it (an allocation, held in an owned slot at `any`): a
    /// `return` moves it to the caller.
    pub owned: bool,
}

/// How argument checks behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CheckMode {
    /// Each failing check raises its own precise message (the explain function).
    Explain,
    /// A failing check jumps to `explain`, which calls the explain function: the success path
    /// carries no message code at all.
    Fast {
        /// The shared block calling the explain function for every failure after the count
        /// check: the argument count is known there, and is passed as a constant.
        explain: BlockId,
        /// The block calling the explain function when the argument count is wrong (with
        /// the count received), with
        /// [`optimizing_backend`](super::LowerSettings::optimizing_backend); else `explain`,
        /// which then passes the count received.
        count_explain: BlockId,
    },
}

/// Per-function lowering state.
pub(crate) struct FnCtx<'a, 'm> {
    pub m: &'a mut ModuleCtx<'m>,
    pub func: &'a ir::Function,
    pub b: FuncBuilder,
    pub args: Var,
    pub num_args: Var,
    pub result: Var,
    pub(super) mode: CheckMode,
    /// Fast mode: the conjunction of the checks since the last branch.
    pub(super) pending: Option<Var>,
    pub(super) prologue: BlockId,
    pub(super) start: BlockId,
    pub(super) error_exit: BlockId,
    pub(super) ok_exit: BlockId,
    pub(super) parts_slot: SlotId,
    /// Fast mode with [`LowerSettings::explain_args_on_stack`](super::LowerSettings): where the
    /// entry stores `args` and `num_args` for the explain call.
    pub(super) explain_args_slot: Option<SlotId>,
    pub(super) owned: Vec<SlotId>,
    pub(super) entry_inits: Vec<(Var, i64)>,
    /// `name(param: type, ...)`, for the `when calling` line of messages (built on first use).
    pub(super) signature: std::cell::OnceCell<String>,
    pub(super) scopes: Vec<HashMap<String, Binding, FxBuildHasher>>,
    /// The statement being lowered, for messages raised by its expressions.
    pub current_stmt: Option<&'a ir::Stmt>,
}

impl FnCtx<'_, '_> {
    /// Writes None into `result`: the type index (None is 0) and the padding after it in one
    /// 8-byte store, then the value.
    pub fn write_none_result(&mut self) {
        const _: () = assert!(ANY_TYPE_INDEX_OFFSET == 0 && ANY_SMALL_STR_LEN_OFFSET == 4);
        const _: () = assert!(type_index::NONE == 0);
        self.b
            .store_imm(Ty::I64, self.result, ANY_TYPE_INDEX_OFFSET, 0);
        self.b.store_imm(Ty::I64, self.result, ANY_VALUE_OFFSET, 0);
    }

    /// Ends the current block successfully: owned references are released, 0 is returned.
    pub fn return_ok(&mut self) {
        self.b.jump(self.ok_exit);
    }

    /// The block that releases owned references and returns -1 (an error is already raised).
    pub fn error_block(&self) -> BlockId {
        self.error_exit
    }

    /// Ends the current block with -1 (an error is already raised).
    pub fn return_error(&mut self) {
        self.b.jump(self.error_exit);
    }

    /// A new mutable variable holding `value` (0 for floats) from the function's entry, so that
    /// it is defined on every path (values decoded only when an optional argument is present).
    pub fn entry_var(&mut self, ty: Ty, value: i64) -> Var {
        let var = self.b.mutable_var(ty);
        self.entry_inits.push((var, value));
        var
    }

    /// A new mutable variable for a value decoded from an argument: one holding `value` from
    /// the entry ([`FnCtx::entry_var`]) when `maybe_unassigned` (the argument sits inside an
    /// optional one, or is bound only on some paths), else a plain one, which the decoding
    /// assigns before every later use (the lowered form's verifier checks it in debug builds).
    pub fn decoded_var(&mut self, ty: Ty, value: i64, maybe_unassigned: bool) -> Var {
        if maybe_unassigned {
            self.entry_var(ty, value)
        } else {
            self.b.mutable_var(ty)
        }
    }

    /// A new owned `TVMFFIAny` slot: None at entry, released on every exit.
    pub fn owned_slot(&mut self) -> SlotId {
        let slot = self.b.slot(ANY_SIZE as u32, 8);
        self.owned.push(slot);
        slot
    }

    /// DecRefs the object held by the `TVMFFIAny` at `any`, if it holds one, and sets it to None.
    pub fn release_any(&mut self, any: Var) {
        let ti = self.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
        let is_object = self
            .b
            .icmp_imm(IntCC::Sge, ti, i64::from(type_index::STATIC_OBJECT_BEGIN));
        let release = self.b.new_block();
        let join = self.b.new_block();
        self.b.branch(is_object, release, join);
        self.b.switch_to(release);
        let obj = self.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET);
        let dec_ref = self.m.capi(CApi::ObjectDecRef);
        self.b
            .call(Callee::Import(dec_ref), Some(Ty::I32), vec![obj]);
        self.b.store_imm(
            Ty::I32,
            any,
            ANY_TYPE_INDEX_OFFSET,
            i64::from(type_index::NONE),
        );
        self.b.jump(join);
        self.b.switch_to(join);
    }

    /// Raises `kind` with the message `parts` followed by the call context (`\n  when calling
    /// <signature>`) and leaves through the error exit. The current block ends.
    pub fn fail(&mut self, kind: &str, mut parts: Vec<MsgPart>) {
        parts.push(MsgPart::Text(self.call_context()));
        self.fail_verbatim(kind, parts);
    }

    /// The line every message safecall composes ends with: `\n  when calling <signature>`.
    pub fn call_context(&self) -> String {
        call_context_text(self.signature())
    }

    /// Raises `kind` with exactly the message `parts` (an `assert`'s own message) and leaves
    /// through the error exit. The current block ends.
    pub fn fail_verbatim(&mut self, kind: &str, parts: Vec<MsgPart>) {
        emit_raise(self.m, &mut self.b, self.parts_slot, kind, parts);
        self.return_error();
    }

    /// An argument check: continues when `ok` (an `I8`) is true. In fast mode a failure jumps to
    /// the explain block (`parts` is never evaluated); in explain mode it raises `kind` with
    /// the message `parts`.
    pub fn check_arg(
        &mut self,
        ok: Var,
        kind: &str,
        parts: impl FnOnce(&mut Self) -> Vec<MsgPart>,
    ) {
        match self.mode {
            // Conditions accumulate; `flush_checks` turns them into one branch (or each
            // check branches at once: `LowerSettings::branch_per_check`).
            CheckMode::Fast { .. } => {
                let all = match self.pending {
                    Some(p) => self.b.binary(BinOp::And, p, ok),
                    None => ok,
                };
                self.pending = Some(all);
                if self.m.options.branch_per_check {
                    self.flush_checks();
                }
            }
            CheckMode::Explain => self.check(ok, kind, parts),
        }
    }

    /// The argument-count check, the first of all: on the fast path of an optimizing backend
    /// its failure has an explain call of its own, so that every later one passes the count
    /// as a constant (no register or stack slot holds it through the checks).
    pub fn check_count(
        &mut self,
        ok: Var,
        kind: &str,
        parts: impl FnOnce(&mut Self) -> Vec<MsgPart>,
    ) {
        match self.mode {
            CheckMode::Fast { count_explain, .. } => {
                debug_assert!(self.pending.is_none(), "the count check comes first");
                let pass = self.b.new_block();
                self.b.branch(ok, pass, count_explain);
                self.b.switch_to(pass);
            }
            CheckMode::Explain => self.check(ok, kind, parts),
        }
    }

    /// Whether this is the fast path (checks only branch to the explain function).
    pub fn fast_path(&self) -> bool {
        matches!(self.mode, CheckMode::Fast { .. })
    }

    /// Leaves through the error exit when a C API call returned non-zero (its error is raised).
    pub fn fail_on_nonzero(&mut self, rc: Var) {
        let failed = self.b.icmp_imm(IntCC::Ne, rc, 0);
        let error = self.b.new_cold_block();
        let ok = self.b.new_block();
        self.b.branch(failed, error, ok);
        self.b.switch_to(error);
        self.return_error();
        self.b.switch_to(ok);
    }

    /// Fast mode only: adds `ok` to the pending checks. For a condition that stands for
    /// several checks at once; the explain function makes those checks one by one, each with
    /// its message.
    pub fn require_fast(&mut self, ok: Var) {
        assert!(self.fast_path(), "require_fast outside the fast path");
        self.check_arg(ok, INTERNAL_ERROR, |_| Vec::new());
    }

    /// Fast mode: branches to the explain block unless every accumulated check holds. Must run
    /// before code whose memory safety depends on those checks, and before any control flow
    /// (the `branch` / `jump` helpers do it).
    pub fn flush_checks(&mut self) {
        if let (CheckMode::Fast { explain, .. }, Some(ok)) = (self.mode, self.pending.take()) {
            let pass = self.b.new_block();
            self.b.branch(ok, pass, explain);
            self.b.switch_to(pass);
        }
    }

    /// Flushes pending checks, then ends the block with a conditional branch.
    pub fn branch(&mut self, cond: Var, then_block: BlockId, else_block: BlockId) {
        self.flush_checks();
        self.b.branch(cond, then_block, else_block);
    }

    /// Ends the block with a jump; pending checks branch to `target` when they hold (one
    /// branch, no block of their own).
    pub fn jump(&mut self, target: BlockId) {
        match (self.mode, self.pending.take()) {
            (CheckMode::Fast { explain, .. }, Some(ok)) => self.b.branch(ok, target, explain),
            (CheckMode::Fast { .. }, None) | (CheckMode::Explain, _) => self.b.jump(target),
        }
    }

    /// Continues when `ok` (an `I8`) is true; otherwise raises. `parts` is only evaluated into
    /// the cold block. A condition that is a true constant (a check of constants) emits
    /// nothing.
    pub fn check(&mut self, ok: Var, kind: &str, parts: impl FnOnce(&mut Self) -> Vec<MsgPart>) {
        let Some(pass) = self.failure_branch(ok) else {
            return;
        };
        let parts = parts(self);
        self.fail(kind, parts);
        self.b.switch_to(pass);
    }

    /// Branches on `ok` to a new block (returned) and, when false, to a new cold block, which
    /// becomes current for the failure's code; `None`, emitting nothing, when `ok` is a true
    /// constant (a check of constants that cannot fail).
    fn failure_branch(&mut self, ok: Var) -> Option<BlockId> {
        if self.always(ok) {
            return None;
        }
        let pass = self.b.new_block();
        let failing = self.b.new_cold_block();
        self.b.branch(ok, pass, failing);
        self.b.switch_to(failing);
        Some(pass)
    }

    /// Whether the condition `ok` is a true constant: a check of constants that cannot fail,
    /// which then emits no code.
    pub(crate) fn always(&self, ok: Var) -> bool {
        self.b.constant(ok).is_some_and(|c| c != 0)
    }

    /// `name(param: type, ...)`, shown on the `when calling` line of messages.
    pub fn signature(&self) -> &str {
        self.signature
            .get_or_init(|| schema::signature_text(self.func))
    }

    /// Whether argument checks raise their own messages (only then are messages built).
    pub fn explaining(&self) -> bool {
        self.mode == CheckMode::Explain
    }

    /// The argument prefix of check messages when explaining; empty on the fast path, whose
    /// checks never build messages.
    pub fn message_prefix(&self, label: &str) -> String {
        if self.explaining() {
            self.arg_prefix(label)
        } else {
            String::new()
        }
    }

    /// `"<name>: argument 'x' (#0): "`.
    pub fn arg_prefix(&self, label: &str) -> String {
        format!("{}: argument {label}: ", self.func.name)
    }

    /// The statement being lowered, printed on one line.
    pub fn current_stmt_text(&self) -> String {
        self.current_stmt
            .map(crate::ir::print::print_stmt_head)
            .unwrap_or_default()
    }

    /// Opens a block scope.
    pub fn push_scope(&mut self) {
        self.scopes.push(HashMap::default());
    }

    /// Closes a block scope.
    pub fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// Binds a name in the innermost scope.
    pub fn bind(&mut self, name: &str, binding: Binding) {
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .insert(name.to_owned(), binding);
    }

    /// The binding of a name bound in the innermost scope, to update in place.
    pub fn innermost_binding_mut(&mut self, name: &str) -> Option<&mut Binding> {
        self.scopes.last_mut()?.get_mut(name)
    }

    /// Looks a name up.
    pub fn lookup(&self, name: &str) -> Result<Binding, LowerError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .cloned()
            .ok_or_else(|| {
                LowerError::internal(format!(
                    "`{name}` is not in scope (the verifier should have rejected this)"
                ))
            })
    }

    /// The type the verifier recorded for `e`, an expression of the function being lowered.
    pub fn expr_type(&self, e: &ir::Expr) -> Result<ir::Type, LowerError> {
        self.m.types.get(e).ok_or_else(|| {
            LowerError::internal(format!(
                "the verifier recorded no type for `{}` (it should have rejected this)",
                ir::print::print_expr(e)
            ))
        })
    }

    /// Raises a ValueError if the guarded optional value is None.
    pub fn check_present(&mut self, guard: &Option<NoneGuard>) {
        if let Some(g) = guard {
            let zero = self.b.iconst(Ty::I8, 0);
            let present = self.b.icmp(IntCC::Eq, g.is_none, zero);
            self.check(present, VALUE_ERROR, |fx| {
                vec![MsgPart::Text(format!(
                    "{}: argument {} is None, but `{}` uses its value",
                    fx.func.name,
                    g.label,
                    fx.current_stmt_text()
                ))]
            });
        }
    }
}

/// `\n  when calling <signature>`: the last line of every message safecall composes, after
/// the fact (`name: argument 'x' (#0): ...`).
pub(crate) fn call_context_text(signature: &str) -> String {
    format!("\n  when calling {signature}")
}
