//! Text forms of Cranelift's output: the annotated CLIF of each function as built, and the
//! disassembly of its final VCode.

use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::Module;

use super::annotate;
use super::define::declare;
use super::error::{CraneliftError, err};
use super::isa::{IsaPurpose, host_isa};
use super::settings::CraneliftOptions;
use super::translate::{self, Declared};
use crate::lir;

/// An object module for the target of `options` with everything of `module` declared, to
/// translate its functions into.
fn declared_object_module(
    module: &lir::Module,
    options: &CraneliftOptions,
) -> Result<(cranelift_object::ObjectModule, Declared), CraneliftError> {
    let isa = host_isa(IsaPurpose::Aot, options)?;
    let builder = cranelift_object::ObjectBuilder::new(
        isa,
        module.name.as_bytes().to_vec(),
        cranelift_module::default_libcall_names(),
    )
    .map_err(err)?;
    let mut m = cranelift_object::ObjectModule::new(builder);
    let declared = declare(&mut m, module, false)?;
    Ok((m, declared))
}

/// The annotated CLIF of every function of a lowered module (as built, before optimization),
/// for the target of `options` (pointer width and calling convention).
pub(crate) fn clif_text_for(
    module: &lir::Module,
    options: &CraneliftOptions,
) -> Result<String, CraneliftError> {
    let (mut m, declared) = declared_object_module(module, options)?;
    let mut out = String::new();
    let mut ctx = m.make_context();
    let mut fb_ctx = FunctionBuilderContext::new();
    let names = annotate::symbol_names(module, &declared);
    for (i, func) in module.functions.iter().enumerate() {
        ctx.clear();
        let markers =
            translate::translate_function(&mut m, module, &declared, i, &mut ctx.func, &mut fb_ctx);
        annotate::write_annotated(&mut out, &names, &func.name, &ctx.func, &markers);
    }
    Ok(out)
}

/// The machine code of every function of a lowered module as Cranelift's disassembly of its
/// final VCode (register-allocated machine instructions by block, as Cranelift prints them),
/// compiled for the host with `options` as for an object file. Calls and data references show
/// Cranelift's external names (`userextname0`, ...); the function headers give the symbols.
pub(crate) fn disasm_text(
    module: &lir::Module,
    options: &CraneliftOptions,
) -> Result<String, CraneliftError> {
    use std::fmt::Write as _;
    let (mut m, declared) = declared_object_module(module, options)?;
    let isa = host_isa(IsaPurpose::Aot, options)?;
    let mut out = String::new();
    let mut ctx = m.make_context();
    let mut fb_ctx = FunctionBuilderContext::new();
    for (i, func) in module.functions.iter().enumerate() {
        ctx.clear();
        translate::translate_function(&mut m, module, &declared, i, &mut ctx.func, &mut fb_ctx);
        ctx.set_disasm(true);
        let code = ctx.compile(&*isa, &mut Default::default()).map_err(|e| {
            CraneliftError(format!(
                "compiling `{}`: {}",
                func.name,
                cranelift_codegen::print_errors::pretty_error(e.func, e.inner)
            ))
        })?;
        let _ = writeln!(
            out,
            "; {} ({} bytes of code)",
            func.name,
            code.code_buffer().len()
        );
        out.push_str(code.vcode.as_deref().unwrap_or_default());
        out.push('\n');
    }
    Ok(out)
}
