//! Declaring and defining a lowered module's symbols in a `cranelift_module::Module`: imports,
//! data and functions, translated and compiled on this thread or on several.

use std::cell::RefCell;
use std::sync::Mutex;

use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{DataDescription, Linkage as ClifLinkage, Module};

use super::annotate;
use super::error::{CraneliftError, err};
use super::isa::lock;
use super::translate::{self, Declared};
use crate::lir::{self, Linkage, Symbol};

fn clif_linkage(l: Linkage) -> ClifLinkage {
    match l {
        Linkage::Export => ClifLinkage::Export,
        Linkage::Local => ClifLinkage::Local,
    }
}

/// Declares every import, data object and function of `module` in `m`; with `data_imported`,
/// the data objects are imports (placed by an earlier compile, found by name) rather than
/// definitions of this one.
pub(crate) fn declare<M: Module>(
    m: &mut M,
    module: &lir::Module,
    data_imported: bool,
) -> Result<Declared, CraneliftError> {
    let imports = module
        .imports
        .iter()
        .map(|imp| {
            let sig = translate::clif_signature(m, &imp.sig);
            m.declare_function(&imp.name, ClifLinkage::Import, &sig)
                .map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let data = module
        .data
        .iter()
        .map(|d| {
            let linkage = if data_imported {
                ClifLinkage::Import
            } else {
                clif_linkage(d.linkage)
            };
            m.declare_data(&d.name, linkage, d.writable, false)
                .map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let functions = module
        .functions
        .iter()
        .map(|f| {
            let sig = translate::clif_signature(m, &f.sig);
            m.declare_function(&f.name, clif_linkage(f.linkage), &sig)
                .map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Declared {
        functions,
        on_success_path: lir::success_path::success_path_functions(module),
        imports,
        data,
    })
}

/// Defines the data objects.
pub(crate) fn define_data<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
) -> Result<(), CraneliftError> {
    for (d, &id) in module.data.iter().zip(&declared.data) {
        let mut desc = DataDescription::new();
        desc.define(d.contents.clone().into_boxed_slice());
        desc.set_align(u64::from(d.align));
        if let Some(section) = &d.section {
            desc.set_custom_section(section);
            desc.set_used(true);
        }
        for r in &d.relocs {
            match r.symbol {
                Symbol::Func(f) => {
                    let fref = m.declare_func_in_data(declared.functions[f.0 as usize], &mut desc);
                    desc.write_function_addr(r.offset, fref);
                }
                Symbol::Data(t) => {
                    let gv = m.declare_data_in_data(declared.data[t.0 as usize], &mut desc);
                    desc.write_data_addr(r.offset, gv, r.addend);
                }
            }
        }
        m.define_data(id, &desc).map_err(err)?;
    }
    Ok(())
}

/// What [`define_functions`] reports about each compiled function.
pub(crate) struct Compiled<'a> {
    /// Cranelift function id.
    pub id: cranelift_module::FuncId,
    /// The context after compilation (compiled code, unwind info).
    pub ctx: &'a Context,
}

/// Translates and compiles every function. With `clif_dump`, appends the annotated CLIF of each
/// function as built (before optimization). `on_compiled` sees each compiled function.
pub(crate) fn define_functions<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
    clif_dump: Option<&mut String>,
    on_compiled: impl FnMut(Compiled<'_>) -> Result<(), CraneliftError>,
) -> Result<(), CraneliftError> {
    define_functions_where(m, module, declared, clif_dump, |_| true, on_compiled)
}

/// [`define_functions`] for the functions `selected` accepts (by index in the module).
pub(crate) fn define_functions_where<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
    clif_dump: Option<&mut String>,
    selected: impl Fn(usize) -> bool,
    mut on_compiled: impl FnMut(Compiled<'_>) -> Result<(), CraneliftError>,
) -> Result<(), CraneliftError> {
    with_contexts(m, |m, ctx, fb_ctx| {
        define_functions_in(
            m,
            (module, declared),
            clif_dump,
            (ctx, fb_ctx),
            &selected,
            &mut on_compiled,
        )
    })
}

/// Cranelift contexts kept by each thread between compiles: a context reused keeps its
/// allocations, which a fresh one would grow again for every function.
type Contexts = (Context, FunctionBuilderContext);

thread_local! {
    static CONTEXTS: RefCell<Option<Contexts>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's reusable contexts (fresh ones if `f` is already using them, as
/// in a nested compile), and keeps them for the next compile.
fn with_contexts<M: Module, R>(
    m: &mut M,
    f: impl FnOnce(&mut M, &mut Context, &mut FunctionBuilderContext) -> R,
) -> R {
    let (mut ctx, mut fb_ctx) = CONTEXTS
        .with(|c| c.borrow_mut().take())
        .unwrap_or_else(|| (m.make_context(), FunctionBuilderContext::new()));
    let out = f(m, &mut ctx, &mut fb_ctx);
    ctx.clear();
    CONTEXTS.with(|c| *c.borrow_mut() = Some((ctx, fb_ctx)));
    out
}

fn define_functions_in<M: Module>(
    m: &mut M,
    (module, declared): (&lir::Module, &Declared),
    mut clif_dump: Option<&mut String>,
    (ctx, fb_ctx): (&mut Context, &mut FunctionBuilderContext),
    selected: &impl Fn(usize) -> bool,
    on_compiled: &mut impl FnMut(Compiled<'_>) -> Result<(), CraneliftError>,
) -> Result<(), CraneliftError> {
    let names = annotate::symbol_names(module, declared);
    for (i, func) in module.functions.iter().enumerate() {
        if !selected(i) {
            continue;
        }
        let id = declared.functions[i];
        ctx.clear();
        let markers = translate::translate_function(m, module, declared, i, &mut ctx.func, fb_ctx);
        if let Some(out) = clif_dump.as_deref_mut() {
            annotate::write_annotated(out, &names, &func.name, &ctx.func, &markers);
        }
        m.define_function(id, ctx).map_err(|e| match e {
            cranelift_module::ModuleError::Compilation(inner) => CraneliftError(format!(
                "compiling `{}`: {}",
                func.name,
                cranelift_codegen::print_errors::pretty_error(&ctx.func, inner)
            )),
            other => CraneliftError(format!("compiling `{}`: {other}", func.name)),
        })?;
        on_compiled(Compiled { id, ctx })?;
    }
    Ok(())
}

/// Machine code of one function compiled off the module's thread, ready to be defined.
struct CompiledBytes {
    bytes: Vec<u8>,
    alignment: u64,
    relocs: Vec<cranelift_module::ModuleReloc>,
}

/// Translates every function on this thread, compiles them on `threads` threads at once and
/// defines their machine code in `m` in module order. The same code as [`define_functions`]
/// (each function is compiled on its own); worth its thread start-up for modules of several
/// functions.
pub(crate) fn define_functions_parallel<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
    threads: usize,
) -> Result<(), CraneliftError> {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let mut fb_ctx = FunctionBuilderContext::new();
    // Each translated function is taken (moved) by the thread that compiles it.
    let functions: Vec<Mutex<Option<cranelift_codegen::ir::Function>>> =
        (0..module.functions.len())
            .map(|i| {
                let mut clif = cranelift_codegen::ir::Function::new();
                translate::translate_function(m, module, declared, i, &mut clif, &mut fb_ctx);
                Mutex::new(Some(clif))
            })
            .collect();
    let next = AtomicUsize::new(0);
    let isa = m.isa();
    let results: Vec<Mutex<Option<Result<CompiledBytes, CraneliftError>>>> =
        functions.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        let mut ctx = Context::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(function) = functions.get(i).and_then(|f| lock(f).take()) else {
                break;
            };
            ctx.clear();
            ctx.func = function;
            let id = declared.functions[i];
            let out = compile_to_bytes(&mut ctx, isa, id, &module.functions[i].name);
            *lock(&results[i]) = Some(out);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads.clamp(1, functions.len().max(1)) {
            scope.spawn(work);
        }
        work();
    });
    for (i, slot) in results.into_iter().enumerate() {
        let compiled = slot
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .expect("every function is compiled")?;
        m.define_function_bytes(
            declared.functions[i],
            compiled.alignment,
            &compiled.bytes,
            &compiled.relocs,
        )
        .map_err(|e| CraneliftError(format!("defining `{}`: {e}", module.functions[i].name)))?;
    }
    Ok(())
}

/// Compiles the function in `ctx` to machine code and the relocations `define_function_bytes`
/// takes.
fn compile_to_bytes(
    ctx: &mut Context,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    id: cranelift_module::FuncId,
    name: &str,
) -> Result<CompiledBytes, CraneliftError> {
    ctx.compile(isa, &mut Default::default()).map_err(|e| {
        CraneliftError(format!(
            "compiling `{name}`: {}",
            cranelift_codegen::print_errors::pretty_error(e.func, e.inner)
        ))
    })?;
    let code = ctx.compiled_code().expect("compiled just now");
    let alignment = u64::from(code.buffer.alignment);
    let bytes = code.code_buffer().to_vec();
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    Ok(CompiledBytes {
        bytes,
        alignment,
        relocs,
    })
}
