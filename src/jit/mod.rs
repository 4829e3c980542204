//! In-process compilation: host functions become callable TVM-FFI [`Function`]s in
//! microseconds, with no C compiler or linker.
//!
//! The same lowering as AOT runs; the chosen [backend](JitOptions::backend) (Cranelift by
//! default, or LLVM's ORC JIT with the `llvm` feature) compiles into executable memory owned by
//! a reference-counted [`JitCode`]. Every [`Function`] made from it holds a reference, so the
//! memory is freed when the last of them (and the [`JitModule`]) is dropped.
//!
//! Symbols are resolved, in order, from: the cold error helper (compiled once per process,
//! binding and backend), the TVM-FFI C API ([`SymbolBinding`]), the caller's
//! [`JitOptions::symbols`] table (extern C functions and direct safe-call targets), and finally
//! the process ([`JitOptions::process_symbols`]). Both backends resolve through this one chain.
//!
//! ```no_run
//! # fn main() -> Result<(), safecall::Error> {
//! let module = safecall::ir::parse::parse(r#"
//!     module demo;
//!     fn twice(n: i64) -> i64 { return n * 2; }
//! "#).expect("valid IR");
//! // SAFETY: the IR only multiplies an integer: it reads no memory and calls nothing.
//! let jit = unsafe { safecall::jit::compile(&module, &safecall::jit::JitOptions::default()) }?;
//! let twice = jit.function("twice").expect("defined");
//! let out = twice.call(&[21i64.into()]).expect("no error");
//! assert_eq!(out.cast::<i64>().unwrap(), 42);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use safecall_runtime::Function;
use safecall_runtime::abi::TVMFFISafeCallType;

use crate::backend::Backend;
use crate::backend::cranelift::OptLevel;
use crate::error::Error;
use crate::input::ModuleInput;
use crate::ir;
use crate::lower::{self, ExplainStrategy, GpuRuntimes, LowerSettings, RaiseHelper};
use safecall_runtime::abi::symbols::EXPORT_PREFIX;

mod build;
mod code;
mod direct;
mod explain;
mod options;
mod runtimes;
mod symbols;
#[cfg(target_arch = "x86_64")]
mod tier;
mod worker;

use build::build_code;
pub use code::JitCode;
use explain::{
    EXPLAIN_DISPATCHER, LazyExplain, RAISE_SYMBOL, dispatch_explain, shared_raise_helper,
};
pub use options::{FirstTier, JitOptions, PARALLEL_MIN_INSTRUCTIONS, TierUp};
use symbols::Resolver;
pub use symbols::{SymbolAddress, SymbolBinding};

/// A compiled module: its host functions as TVM-FFI functions.
pub struct JitModule {
    functions: HashMap<String, (Function, TVMFFISafeCallType)>,
    code: Arc<JitCode>,
}

impl std::fmt::Debug for JitModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitModule")
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl JitModule {
    /// The host function `name` (its IR name, without `__tvm_ffi_`).
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.get(name).map(|(f, _)| f)
    }

    /// The raw safe-call entry of `name`, for calling it directly. The pointer is valid while
    /// this module or any [`Function`] from it is alive.
    pub fn safe_call(&self, name: &str) -> Option<TVMFFISafeCallType> {
        self.functions.get(name).map(|(_, p)| *p)
    }

    /// Names of the host functions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }

    /// The shared executable memory (kept alive by every function of the module).
    pub fn code(&self) -> &Arc<JitCode> {
        &self.code
    }

    /// Whether a [tier-up](JitOptions::tier_up) has switched the functions to the upper tier's
    /// code.
    pub fn tiered_up(&self) -> bool {
        self.code.tiered_up()
    }
}

unsafe extern "C" fn release_code(context: *mut c_void) {
    // SAFETY: `context` came from `Arc::into_raw` in `compile`, once per function.
    drop(unsafe { Arc::from_raw(context.cast::<JitCode>().cast_const()) });
}

/// Lowers and JIT-compiles a module: an [`ir::Module`], verified first, or an
/// [`ir::VerifiedModule`], not verified again (see [`ModuleInput`]).
///
/// # Safety
/// The IR can load and store through raw pointers it is given, call any symbol of
/// [`JitOptions::symbols`] or (with [`JitOptions::process_symbols`]) of the process with the
/// signature it declares, and launch GPU kernels with the arguments it computes. The caller
/// must make sure that running the compiled functions on the arguments they accept cannot break
/// memory safety: the pointers the IR dereferences are valid, the extern functions it calls
/// have the signatures it declares, the kernels it launches exist with its argument layout.
/// (The checks safecall generates make the *arguments* safe: a wrong type, shape, dtype or
/// device is an error, not undefined behaviour.)
pub unsafe fn compile(
    module: &(impl ModuleInput + ?Sized),
    options: &JitOptions,
) -> Result<JitModule, Error> {
    compile_unchecked(&*module.verified()?, options)
}

/// [`compile`], safe inside the crate.
fn compile_unchecked(
    module: &ir::VerifiedModule<'_>,
    options: &JitOptions,
) -> Result<JitModule, Error> {
    let helper = shared_raise_helper(options.binding, options)?;
    // Each function's explanation is compiled on its first rejected call; the code refers to
    // its context by address.
    let explain_options = JitOptions {
        symbols: HashMap::new(),
        process_symbols: false,
        tier_up: TierUp::Never,
        ..options.clone()
    };
    let explains: Vec<Box<LazyExplain>> = module
        .functions
        .iter()
        .map(|f| Box::new(LazyExplain::new(module, f, explain_options.clone())))
        .collect();
    let contexts = module
        .functions
        .iter()
        .zip(&explains)
        .map(|(f, e)| (f.name.clone(), &**e as *const LazyExplain as u64))
        .collect();
    let optimized_cranelift = !options::uses_baseline(options)
        && options.backend == Backend::Cranelift
        && options.cranelift.opt_level != OptLevel::None;
    let mut lower_options = LowerSettings {
        raise_helper: RaiseHelper::External(RAISE_SYMBOL.to_owned()),
        explain: ExplainStrategy::Lazy {
            dispatcher: EXPLAIN_DISPATCHER.to_owned(),
            contexts,
        },
        skip_annotations: true,
        skip_metadata_getters: true,
        // The baseline compiler, LLVM and optimizing Cranelift make a branch per check into
        // compare-and-branch (see `compile::lower_verified`); Cranelift's fast-compile
        // settings keep the folded checks.
        branch_per_check: options::uses_baseline(options)
            || options.backend == Backend::Llvm
            || optimized_cranelift,
        explain_args_on_stack: optimized_cranelift,
        optimizing_backend: options.backend == Backend::Llvm || optimized_cranelift,
        llvm_check_forms: options.backend == Backend::Llvm,
        ..LowerSettings::default()
    };
    let mut table = options.symbols.clone();
    if options.share_gpu_runtimes && !module.device_binaries.is_empty() {
        // The runtimes' tables come from helpers compiled once (see `runtimes`).
        let [cuda, hip] = runtimes::shared_tables(options.binding, options, helper)?;
        table.insert(runtimes::CUDA_TABLE.to_owned(), cuda);
        table.insert(runtimes::HIP_TABLE.to_owned(), hip);
        lower_options.gpu_runtimes = GpuRuntimes::Shared {
            cuda: runtimes::CUDA_TABLE.to_owned(),
            hip: runtimes::HIP_TABLE.to_owned(),
        };
    }
    let lowered = lower::lower_with(module, &lower_options)?;
    table.insert(RAISE_SYMBOL.to_owned(), helper);
    // SAFETY: the dispatcher is a function of this program with the dispatcher signature the
    // lowering declares.
    let dispatcher = unsafe { SymbolAddress::new(dispatch_explain as *const u8) };
    table.insert(EXPLAIN_DISPATCHER.to_owned(), dispatcher);
    let resolver = Resolver {
        binding: options.binding,
        table,
        process_symbols: options.process_symbols,
    };
    let entries: Vec<String> = module
        .functions
        .iter()
        .map(|f| format!("{EXPORT_PREFIX}{}", f.name))
        .collect();
    let built = build_code(&lowered, &entries, &resolver, options)?;
    let code = Arc::new(JitCode {
        pending: Mutex::new(None),
        module: Mutex::new(vec![built.out.code]),
        _keep: explains
            .into_iter()
            .map(|e| e as Box<dyn std::any::Any>)
            .collect(),
    });
    #[cfg(target_arch = "x86_64")]
    if !built.switches.is_empty() {
        let job = tier::tier_up_job(
            Arc::downgrade(&code),
            tier::without_data_contents(lowered),
            entries,
            resolver,
            options,
            built.switches,
            &built.data,
        );
        match options.tier_up {
            TierUp::OnRequest => {
                *code.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(job)
            }
            _ => worker::submit(job),
        }
    }
    let mut functions = HashMap::new();
    for (f, ptr) in module.functions.iter().zip(built.out.entries) {
        // SAFETY: `ptr` is a finalized function with the safe-call signature.
        let safe_call: TVMFFISafeCallType =
            unsafe { std::mem::transmute::<*const u8, TVMFFISafeCallType>(ptr) };
        let context = Arc::into_raw(code.clone()).cast_mut().cast::<c_void>();
        // SAFETY: the code stays alive until `release_code` drops the reference held by the
        // function; generated code may run on any thread.
        let function = unsafe { Function::from_safe_call(safe_call, context, Some(release_code)) };
        functions.insert(f.name.clone(), (function, safe_call));
    }
    Ok(JitModule { functions, code })
}
