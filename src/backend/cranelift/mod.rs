//! The Cranelift backend: lowered modules to machine code through any `cranelift_module::Module`
//! (`ObjectModule` for objects in `object.rs`, `JITModule` for in-process code in `jit.rs`).

mod annotate;
mod cold;
mod jit;
pub(crate) mod object;
mod text;
pub(crate) mod translate;
mod unwind;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;

use cranelift_codegen::Context;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{DataDescription, Linkage as ClifLinkage, Module};

use crate::Error;
use crate::backend::generator::{CodeGenerator, JitOutput, JitRequest};
use crate::lir::{self, Linkage, Symbol};
use crate::target::Target;
pub use cold::ColdFunctions;
use text::{clif_text_for, disasm_text};
pub(crate) use translate::Declared;

/// Cranelift's optimization level (its `opt_level` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    /// No mid-end optimization: the fastest compiles. The code costs more instructions per
    /// call than with [`OptLevel::Speed`]: 149 against 144 inside add_one with 4 elements
    /// (`benches/instruction_count.sh`), and 433 against 339 for a launch with every launch
    /// setting (`benches/gpu_launch_count.sh`), both counted by callgrind.
    None,
    /// Optimize for speed (the default): the mid-end's e-graph rewrites and alias analysis
    /// (about 0.4 ms more for `examples/ir/launcher.scir`).
    #[default]
    Speed,
    /// Optimize for speed and code size.
    SpeedAndSize,
}

/// Cranelift's register allocator (its `regalloc_algorithm` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Regalloc {
    /// The backtracking allocator: better code (the default).
    #[default]
    Backtracking,
    /// The single-pass allocator: faster compiles, somewhat slower code.
    SinglePass,
}

/// A setting's value that is not one of its names, as [`std::str::FromStr`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSetting {
    /// The setting (`opt_level`, `regalloc`).
    pub setting: &'static str,
    /// The value given.
    pub value: String,
    /// The names the setting takes.
    pub expected: &'static [&'static str],
}

impl std::fmt::Display for UnknownSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.expected.iter().map(|n| format!("`{n}`")).collect();
        write!(
            f,
            "`{}` is not a Cranelift {}: use {}",
            self.value,
            self.setting,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownSetting {}

/// Names and values of an enum setting, in one table for parsing and printing.
macro_rules! named_setting {
    ($t:ident, $setting:literal, $($variant:ident = $name:literal),+) => {
        impl $t {
            /// The names the setting takes, as Cranelift spells them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// Cranelift's name of the value.
            pub fn name(self) -> &'static str {
                match self { $($t::$variant => $name),+ }
            }
        }

        impl std::str::FromStr for $t {
            type Err = UnknownSetting;

            fn from_str(s: &str) -> Result<Self, UnknownSetting> {
                match s {
                    $($name => Ok($t::$variant),)+
                    _ => Err(UnknownSetting {
                        setting: $setting,
                        value: s.to_owned(),
                        expected: $t::NAMES,
                    }),
                }
            }
        }
    };
}

named_setting!(
    OptLevel,
    "optimization level",
    None = "none",
    Speed = "speed",
    SpeedAndSize = "speed_and_size"
);
named_setting!(
    Regalloc,
    "register allocator",
    Backtracking = "backtracking",
    SinglePass = "single_pass"
);

/// Code generation settings of the Cranelift backend. The defaults are those of objects and
/// shared libraries (the JIT's own are [`JitOptions::cranelift`](crate::jit::JitOptions)):
/// optimized for speed, the backtracking register allocator (the single-pass one makes
/// argument checks much slower: 268 instructions per add_one call against 170), the error paths
/// by the baseline compiler. `opt_level: OptLevel::None` (`--opt none`) trades slower checks
/// and launches for a faster compile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CraneliftOptions {
    /// The optimization level.
    pub opt_level: OptLevel,
    /// Run Cranelift's IR verifier on every function (always on in debug builds).
    pub verify: bool,
    /// The register allocator.
    pub regalloc: Regalloc,
    /// The target: `None` (the default) is the host with its CPU's features; another
    /// [`Target`] gets its architecture's baseline features (AOT only: the JIT refuses a
    /// foreign target).
    pub target: Option<Target>,
    /// Objects only: the compiler of the functions that run only when a call fails (the
    /// baseline compiler by default on x86-64; see [`ColdFunctions`]).
    pub cold: ColdFunctions,
}

impl Default for CraneliftOptions {
    fn default() -> Self {
        CraneliftOptions {
            opt_level: OptLevel::Speed,
            verify: false,
            regalloc: Regalloc::Backtracking,
            target: None,
            cold: ColdFunctions::default(),
        }
    }
}

impl CraneliftOptions {
    /// Settings for the shortest compile time: no mid-end optimization and the single-pass
    /// register allocator (the code is somewhat slower).
    pub fn fast_compile() -> Self {
        CraneliftOptions {
            opt_level: OptLevel::None,
            verify: false,
            regalloc: Regalloc::SinglePass,
            target: None,
            cold: ColdFunctions::default(),
        }
    }
}

impl CodeGenerator for CraneliftOptions {
    fn object(&self, module: &lir::Module) -> Result<Vec<u8>, Error> {
        object::object(module, self).map_err(Error::backend)
    }

    fn backend_ir(&self, module: &lir::Module) -> Result<String, Error> {
        clif_text_for(module, self).map_err(Error::backend)
    }

    fn asm(&self, module: &lir::Module) -> Result<String, Error> {
        disasm_text(module, self).map_err(Error::backend)
    }

    fn jit(&self, module: &lir::Module, request: JitRequest<'_>) -> Result<JitOutput, Error> {
        jit::compile(module, self, request)
    }
}

backend_error!(
    /// A backend failure (an ISA that cannot be built, or a Cranelift error).
    CraneliftError,
    "cranelift"
);

fn err(e: impl std::fmt::Display) -> CraneliftError {
    CraneliftError(e.to_string())
}

/// What an ISA is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IsaPurpose {
    /// Relocatable objects: position-independent code with unwind info.
    Aot,
    /// In-process code: absolute addresses, no unwind tables.
    Jit,
}

/// The ISA of `options.target` (the host by default) for `purpose`, built once per purpose and settings and then shared (building
/// one detects the CPU's features and parses every setting, which a JIT compile of a small
/// function would otherwise pay each time).
pub(crate) fn host_isa(
    purpose: IsaPurpose,
    options: &CraneliftOptions,
) -> Result<OwnedTargetIsa, CraneliftError> {
    type Cache = HashMap<(IsaPurpose, CraneliftOptions), OwnedTargetIsa>;
    static ISAS: Mutex<Option<Cache>> = Mutex::new(None);
    let key = (purpose, options.clone());
    if let Some(isa) = lock(&ISAS).get_or_insert_with(HashMap::new).get(&key) {
        return Ok(isa.clone());
    }
    let isa = build_host_isa(purpose, options)?;
    lock(&ISAS)
        .get_or_insert_with(HashMap::new)
        .insert(key, isa.clone());
    Ok(isa)
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn build_host_isa(
    purpose: IsaPurpose,
    options: &CraneliftOptions,
) -> Result<OwnedTargetIsa, CraneliftError> {
    let aot = purpose == IsaPurpose::Aot;
    let mut flags = settings::builder();
    flags
        .set("opt_level", options.opt_level.name())
        .map_err(err)?;
    flags
        .set("regalloc_algorithm", options.regalloc.name())
        .map_err(err)?;
    flags
        .set("is_pic", if aot { "true" } else { "false" })
        .map_err(err)?;
    flags
        .set("unwind_info", if aot { "true" } else { "false" })
        .map_err(err)?;
    flags.set("preserve_frame_pointers", "true").map_err(err)?;
    // Cranelift's IR verifier costs a third of the compile time; the lowering's output is
    // checked by it in debug builds (and therefore in the test suite).
    flags
        .set(
            "enable_verifier",
            if options.verify || cfg!(debug_assertions) {
                "true"
            } else {
                "false"
            },
        )
        .map_err(err)?;
    let isa_builder = match options.target {
        Some(target) if !target.is_host() => {
            if !aot {
                return Err(CraneliftError(format!(
                    "the JIT generates code for the host only, not for {target}"
                )));
            }
            let triple = target.triple().parse().map_err(err)?;
            cranelift_codegen::isa::lookup(triple).map_err(err)?
        }
        _ => cranelift_native::builder().map_err(err)?,
    };
    isa_builder.finish(settings::Flags::new(flags)).map_err(err)
}

fn clif_linkage(l: Linkage) -> ClifLinkage {
    match l {
        Linkage::Export => ClifLinkage::Export,
        Linkage::Local => ClifLinkage::Local,
    }
}

/// Declares every import, data object and function of `module` in `m`.
pub(crate) fn declare<M: Module>(
    m: &mut M,
    module: &lir::Module,
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
            m.declare_data(&d.name, clif_linkage(d.linkage), d.writable, false)
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
    let names = text::symbol_names(module, declared);
    for (i, func) in module.functions.iter().enumerate() {
        if !selected(i) {
            continue;
        }
        let id = declared.functions[i];
        ctx.clear();
        let markers =
            translate::translate_function(m, module, declared, func, &mut ctx.func, fb_ctx);
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
    let functions: Vec<Mutex<Option<cranelift_codegen::ir::Function>>> = module
        .functions
        .iter()
        .map(|func| {
            let mut clif = cranelift_codegen::ir::Function::new();
            translate::translate_function(m, module, declared, func, &mut clif, &mut fb_ctx);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn settings_parse_from_and_print_to_their_cranelift_names() {
        for &name in OptLevel::NAMES {
            assert_eq!(name.parse::<OptLevel>().unwrap().name(), name);
        }
        for &name in Regalloc::NAMES {
            assert_eq!(name.parse::<Regalloc>().unwrap().name(), name);
        }
        assert_eq!(
            "fast".parse::<OptLevel>().unwrap_err().to_string(),
            "`fast` is not a Cranelift optimization level: use `none`, `speed`, `speed_and_size`"
        );
        // Every name is one Cranelift accepts.
        for o in OptLevel::NAMES {
            for r in Regalloc::NAMES {
                let options = CraneliftOptions {
                    opt_level: o.parse().unwrap(),
                    regalloc: r.parse().unwrap(),
                    ..CraneliftOptions::default()
                };
                host_isa(IsaPurpose::Jit, &options).expect("Cranelift accepts the setting");
            }
        }
    }

    #[test]
    fn host_isas_are_built_once_per_purpose_and_settings() {
        let fast = CraneliftOptions::fast_compile();
        let a = host_isa(IsaPurpose::Jit, &fast).unwrap();
        let b = host_isa(IsaPurpose::Jit, &fast).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same settings share one ISA");
        let aot = host_isa(IsaPurpose::Aot, &fast).unwrap();
        assert!(!Arc::ptr_eq(&a, &aot));
        assert!(aot.flags().is_pic() && !a.flags().is_pic());
        let speed = CraneliftOptions {
            opt_level: OptLevel::Speed,
            ..CraneliftOptions::default()
        };
        let optimized = host_isa(IsaPurpose::Jit, &speed).unwrap();
        assert_eq!(optimized.flags().opt_level(), settings::OptLevel::Speed);
        assert_eq!(a.flags().opt_level(), settings::OptLevel::None);
    }
}
