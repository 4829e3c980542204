//! Lowering of one host function: the frame (prologue, exits, owned references) around the
//! argument checks ([`params`](super::params)) and the body ([`body`](super::body)), and the
//! explain function that raises the precise message of a rejected call.

use safecall_runtime::abi::{ANY_TYPE_INDEX_OFFSET, type_index};

use crate::ir;
use crate::lir::{Callee, FuncId, Function, ImportId, Linkage, Ty, Var, builder::FuncBuilder};

use super::capi::safe_call_signature;
use super::context::{CheckMode, FnCtx};
use super::modctx::ModuleCtx;
use super::options::LowerError;
use super::raise::{MsgPart, PART_SIZE};
use super::{body, params};
use safecall_runtime::abi::symbols::EXPORT_PREFIX;
use safecall_runtime::abi::symbols::error_kind::{INTERNAL_ERROR, RUNTIME_ERROR};

/// How a host function's argument checks explain a failure.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ExplainTarget {
    /// Call this function of the module (`int f(handle, args, num_args, result)`).
    Function(FuncId),
    /// Call the import `dispatcher(ctx, handle, args, num_args, result)` with `ctx` = `context`
    /// (the JIT compiles the explanation lazily).
    Lazy { dispatcher: ImportId, context: u64 },
}

/// The slot of the explain call's arguments
/// ([`explain_args_on_stack`](super::LowerSettings::explain_args_on_stack)): `args` at 0,
/// `num_args` at 8 (unless the count is a constant there: `optimizing_backend`).
const EXPLAIN_ARGS_SLOT_SIZE: u32 = 16;
const EXPLAIN_ARGS_OFFSET: usize = 0;
const EXPLAIN_NUM_ARGS_OFFSET: usize = 8;

impl<'a, 'm> FnCtx<'a, 'm> {
    fn new(
        m: &'a mut ModuleCtx<'m>,
        func: &'a ir::Function,
        name: String,
        linkage: Linkage,
        mode: Option<()>,
    ) -> Self {
        let mut b = FuncBuilder::new(name, linkage, safe_call_signature());
        b.set_annotate(!m.options.skip_annotations);
        // The handle (param 0), the function object, is never read.
        let (args, num_args, result) = (b.param(1), b.param(2), b.param(3));
        let prologue = b.current();
        let start = b.new_block();
        let error_exit = b.new_cold_block();
        let ok_exit = b.new_block();
        let parts_slot = b.slot(PART_SIZE, 8);
        let mode = match mode {
            Some(()) => {
                let explain = b.new_cold_block();
                let count_explain = if m.options.optimizing_backend {
                    b.new_cold_block()
                } else {
                    explain
                };
                CheckMode::Fast {
                    explain,
                    count_explain,
                }
            }
            None => CheckMode::Explain,
        };
        let explain_args_slot = (mode != CheckMode::Explain && m.options.explain_args_on_stack)
            .then(|| b.slot(EXPLAIN_ARGS_SLOT_SIZE, 8));
        b.switch_to(start);
        FnCtx {
            m,
            func,
            b,
            args,
            num_args,
            result,
            mode,
            pending: None,
            prologue,
            start,
            error_exit,
            ok_exit,
            parts_slot,
            explain_args_slot,
            owned: Vec::new(),
            entry_inits: Vec::new(),
            signature: std::cell::OnceCell::new(),
            scopes: vec![std::collections::HashMap::default()],
            current_stmt: None,
        }
    }
}

/// Lowers one host function to `__tvm_ffi_<name>`: the argument checks (branching to
/// `explain` on any failure), then the body.
pub(crate) fn lower_function(
    m: &mut ModuleCtx<'_>,
    func: &ir::Function,
    linkage: Linkage,
    explain: ExplainTarget,
) -> Result<Function, LowerError> {
    let mut fx = FnCtx::new(
        m,
        func,
        format!("{EXPORT_PREFIX}{}", func.name),
        linkage,
        Some(()),
    );
    params::lower_params(&mut fx)?;
    body::lower_block(&mut fx, &func.body)?;
    if !fx.b.is_terminated() {
        fx.fall_off_end();
    }
    fx.finish_explain_block(explain);
    fx.finish_frame();
    Ok(fx.b.finish())
}

/// Lowers the explain function of a host function: the same argument checks, each raising
/// its precise message. It is only called after a check failed; should every check pass
/// (which would be a lowering bug), it raises an internal error rather than return -1 with no
/// error set.
pub(crate) fn lower_explain_function(
    m: &mut ModuleCtx<'_>,
    func: &ir::Function,
    name: String,
    linkage: Linkage,
) -> Result<Function, LowerError> {
    let mut fx = FnCtx::new(m, func, name, linkage, None);
    if fx.b.annotating() {
        fx.b.source(format!(
            "explain why a call of `{}` was rejected",
            func.name
        ));
    }
    params::lower_params(&mut fx)?;
    let message = format!(
        "{}: internal error: an argument check failed, but explaining it found no failure",
        fx.func.name
    );
    fx.fail(INTERNAL_ERROR, vec![MsgPart::Text(message)]);
    fx.finish_frame();
    Ok(fx.b.finish())
}

impl FnCtx<'_, '_> {
    /// The end of the body was reached without a `return`.
    fn fall_off_end(&mut self) {
        self.b.source("end of body");
        if self.func.ret == ir::RetType::None {
            self.write_none_result();
            self.b.jump(self.ok_exit);
        } else {
            // The verifier rejects bodies whose paths can end without a return; this block is
            // unreachable, but must still end in a defined way.
            let message = format!(
                "{}: reached the end of the body without returning a value",
                self.func.name
            );
            self.fail(RUNTIME_ERROR, vec![MsgPart::Text(message)]);
        }
    }

    /// Fills the prologue (owned slots start as None) and both exits (release them).
    fn finish_frame(&mut self) {
        let owned = self.owned.clone();
        self.b.switch_to(self.prologue);
        if let Some(slot) = self.explain_args_slot {
            let p = self.b.stack_addr(slot, 0);
            self.b.store(p, EXPLAIN_ARGS_OFFSET, self.args);
            if !self.m.options.optimizing_backend {
                self.b.store(p, EXPLAIN_NUM_ARGS_OFFSET, self.num_args);
            }
        }
        for (var, value) in std::mem::take(&mut self.entry_inits) {
            if self.b.ty(var).is_float() {
                self.b.push_fconst(var, 0);
            } else {
                self.b.assign_iconst(var, value);
            }
        }
        for &slot in &owned {
            let p = self.b.stack_addr(slot, 0);
            self.b.store_imm(
                Ty::I32,
                p,
                ANY_TYPE_INDEX_OFFSET,
                i64::from(type_index::NONE),
            );
        }
        self.b.jump(self.start);
        for (exit, code) in [(self.error_exit, -1), (self.ok_exit, 0)] {
            self.b.switch_to(exit);
            self.b.source(if code == 0 {
                "exit: release owned references, return 0"
            } else {
                "error exit: release owned references, return -1"
            });
            for &slot in &owned {
                let p = self.b.stack_addr(slot, 0);
                self.release_any(p);
            }
            let rc = self.b.iconst(Ty::I32, code);
            self.b.ret(Some(rc));
        }
    }

    /// Fills the shared block that argument checks jump to in fast mode.
    fn finish_explain_block(&mut self, target: ExplainTarget) {
        let CheckMode::Fast {
            explain,
            count_explain,
        } = self.mode
        else {
            return;
        };
        // The explain function re-runs the argument checks, which never read the handle (the
        // function object): it gets NULL, so that no register holds the handle through the
        // checks.
        let apart = count_explain != explain;
        if apart {
            self.b.switch_to(count_explain);
            self.b
                .source("the argument count is wrong: the explain function raises the error");
            // At the top of the function: the parameters are still at hand.
            let handle = self.b.iconst(Ty::Ptr, 0);
            let args = vec![handle, self.args, self.num_args, self.result];
            self.call_explain(target, args);
        }
        self.b.switch_to(explain);
        self.b
            .source("a check failed: the explain function raises its precise error");
        // Past the count check, `num_args` is the parameter count.
        let handle = self.b.iconst(Ty::Ptr, 0);
        let (args, num_args) = match self.explain_args_slot {
            // The entry stored `args` (and the count when it is not a constant): neither is
            // held in a register through the checks.
            Some(slot) => {
                let p = self.b.stack_addr(slot, 0);
                let args = self.b.load(Ty::Ptr, p, EXPLAIN_ARGS_OFFSET);
                let num_args = if apart {
                    self.b.iconst(Ty::I32, self.func.params.len() as i64)
                } else {
                    self.b.load(Ty::I32, p, EXPLAIN_NUM_ARGS_OFFSET)
                };
                (args, num_args)
            }
            None if apart => {
                let n = self.b.iconst(Ty::I32, self.func.params.len() as i64);
                (self.args, n)
            }
            None => (self.args, self.num_args),
        };
        let args = vec![handle, args, num_args, self.result];
        self.call_explain(target, args);
    }

    /// Calls the explain function with `args` (`handle, args, num_args, result`) and returns
    /// its result.
    fn call_explain(&mut self, target: ExplainTarget, args: Vec<Var>) {
        let rc = match target {
            ExplainTarget::Function(id) => self.b.call(Callee::Func(id), Some(Ty::I32), args),
            ExplainTarget::Lazy {
                dispatcher,
                context,
            } => {
                let ctx = self.b.iconst(Ty::Ptr, context as i64);
                let mut all = vec![ctx];
                all.extend(args);
                self.b.call(Callee::Import(dispatcher), Some(Ty::I32), all)
            }
        };
        self.b.ret(rc);
    }
}
