//! Lowering: verified host IR to the [lowered form](crate::lir). All ABI knowledge lives here.
//!
//! For each host function `f` the lowering emits `__tvm_ffi_f` following the contract of
//! docs/abi.md: the argument-count check, per-parameter type-index checks and decoding
//! (`params`), per-tensor checks, constraints, then the body (`body`), with every error
//! path raising through one cold, shared helper (`raise`) and releasing owned references.
//! It also emits `__tvm_ffi__metadata_f` and `__tvm_ffi__doc_f` (`exports`).

mod alloc;
mod big_int;
mod blob;
mod body;
mod calls;
pub(crate) mod capi;
mod context;
mod exports;
mod expr;
mod function;
mod gpu;
mod half;
pub(crate) use gpu::helper_module as gpu_helper_module;
/// The HIP runtime's facts (entry points, constants, layouts) generated code and the Python
/// package's Triton driver rely on: the one place they live.
pub use gpu::hip::api as hip_api;
pub(crate) use gpu::{libc_names, libc_symbol};
mod layout;
mod modctx;
mod options;
mod params;
pub(crate) mod raise;
mod schema;
#[cfg(test)]
mod tests;

pub(crate) use options::{ExplainStrategy, GpuRuntimes, LowerSettings, RaiseHelper};
pub use options::{LowerError, LowerErrorKind, LowerOptions};
pub use schema::{metadata_json, signature_text};

use crate::ir::{self, typing::ExprTypes};
use crate::lir::{self, FuncId, Linkage, Signature};
use modctx::ModuleCtx;
use safecall_runtime::abi::symbols::MAIN_SYMBOL;

/// Symbol of the explain function in a module made by [`lower_explain`].
pub(crate) const EXPLAIN_SYMBOL: &str = "__safecall_explain";

/// The prefix of the local symbols the lowering names (its functions' and data objects' own,
/// never looked up by name outside the module).
pub(crate) const INTERNAL_PREFIX: &str = "__safecall_";

/// Lowers only the explain function of host function `name` of a verified module, exported as
/// [`EXPLAIN_SYMBOL`]. An explain function checks parameters and lowers no expression, so it
/// needs no expression types.
pub(crate) fn lower_explain(
    module: &ir::Module,
    name: &str,
    options: &LowerSettings,
) -> Result<lir::Module, LowerError> {
    let func = module
        .functions
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| LowerError::limit(format!("no function `{name}` to explain")))?;
    let no_expressions = ExprTypes::default();
    let mut ctx = ModuleCtx::new(module, &no_expressions, options);
    let explain = function::lower_explain_function(
        &mut ctx,
        func,
        EXPLAIN_SYMBOL.to_owned(),
        Linkage::Export,
    )
    .map_err(|e| e.in_function(name))?;
    ctx.add_function(explain);
    Ok(ctx.finish())
}

/// Lowers a verified module for an object file or a shared library.
pub fn lower(
    module: &ir::VerifiedModule<'_>,
    options: &LowerOptions,
) -> Result<lir::Module, LowerError> {
    lower_with(module, &LowerSettings::from(options))
}

/// Lowers a verified module with every setting (the JIT's entry).
pub(crate) fn lower_with(
    module: &ir::VerifiedModule<'_>,
    options: &LowerSettings,
) -> Result<lir::Module, LowerError> {
    let mut ctx = ModuleCtx::new(module.module(), module.expr_types(), options);
    let prefix = options
        .system_lib_prefix
        .clone()
        .or_else(|| module.system_lib_prefix.clone());
    let host_ids: Vec<FuncId> = module
        .functions
        .iter()
        .map(|_| ctx.reserve_function())
        .collect();
    ctx.host_functions = module
        .functions
        .iter()
        .map(|f| f.name.clone())
        .zip(host_ids.iter().copied())
        .collect();
    for (func, &id) in module.functions.iter().zip(&host_ids) {
        let linkage = if prefix.is_some() {
            Linkage::Local
        } else {
            Linkage::Export
        };
        let error = |e: LowerError| e.in_function(&func.name);
        let explain = match &options.explain {
            ExplainStrategy::Embedded => {
                let name = ctx.local_name(&format!("explain_{}", func.name));
                let f = function::lower_explain_function(&mut ctx, func, name, Linkage::Local)
                    .map_err(error)?;
                function::ExplainTarget::Function(ctx.add_function(f))
            }
            ExplainStrategy::Lazy {
                dispatcher,
                contexts,
            } => {
                let ptr = lir::Ty::Ptr;
                let sig =
                    Signature::new(vec![ptr, ptr, ptr, lir::Ty::I32, ptr], Some(lir::Ty::I32));
                let dispatcher = ctx.import(dispatcher, sig);
                let context = *contexts.get(&func.name).ok_or_else(|| {
                    error(LowerError::limit(format!(
                        "no explain context for `{}`",
                        func.name
                    )))
                })?;
                function::ExplainTarget::Lazy {
                    dispatcher,
                    context,
                }
            }
        };
        let lowered = function::lower_function(&mut ctx, func, linkage, explain).map_err(error)?;
        ctx.define_function(id, lowered);
    }
    exports::emit_exports(&mut ctx, &host_ids, prefix.as_deref())?;
    if let Some(main) = &options.main_alias {
        let index = module.functions.iter().position(|f| &f.name == main).ok_or_else(|| {
            LowerError::limit(format!(
                "`{main}` is not a function of this module and cannot be exported as `__tvm_ffi_main`"
            ))
        })?;
        if prefix.is_none() {
            ctx.out
                .aliases
                .push((MAIN_SYMBOL.to_owned(), host_ids[index]));
        }
    }
    Ok(ctx.finish())
}
