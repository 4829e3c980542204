//! Mechanical translation of lowered modules to LLVM IR.
//!
//! Blocks are translated in reverse postorder (so the single definition of a non-`mutable`
//! variable, which dominates its uses, is always translated before them) and laid out in
//! lowered order with the cold ones last. Variables that are `mutable` (or, defensively,
//! assigned more than once) live in entry-block allocas that `mem2reg` promotes; all others map
//! straight to SSA values.

use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::targets::TargetMachine;

mod address;
mod analyze;
mod function;
mod module;

use crate::backend::llvm::error::LlvmError;
use crate::lir;
use function::FunctionTranslator;
pub(crate) use function::SOURCE_KIND;
use module::ModuleTranslator;

/// Translates `lir` into a new LLVM module of `ctx` for `machine`'s target. With `annotate`,
/// values and blocks are named after the lowered form and instructions carry
/// [`SOURCE_KIND`] metadata. Every function keeps a frame pointer when `frame_pointers`
/// ([`LlvmOptions::frame_pointers`](super::LlvmOptions::frame_pointers)). The result has passed
/// LLVM's verifier.
pub(crate) fn translate_module<'ctx>(
    ctx: &'ctx Context,
    lir: &lir::Module,
    machine: &TargetMachine,
    annotate: bool,
    frame_pointers: bool,
) -> Result<Module<'ctx>, LlvmError> {
    let mut t = ModuleTranslator::new(ctx, lir, machine, annotate, frame_pointers);
    t.declare()?;
    t.define_data()?;
    t.define_aliases()?;
    for i in 0..lir.functions.len() {
        FunctionTranslator::new(&t, i)?.translate()?;
    }
    t.emit_used();
    t.module.verify().map_err(|e| {
        LlvmError(format!(
            "LLVM rejected the translation of module `{}`: {}",
            lir.name,
            e.to_string().trim_end()
        ))
    })?;
    Ok(t.module)
}
