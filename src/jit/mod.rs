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
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use safecall_runtime::Function;
use safecall_runtime::abi::TVMFFISafeCallType;

use crate::backend::cranelift::CraneliftOptions;
use crate::backend::llvm::LlvmOptions;
use crate::backend::{Backend, JitOutput, JitRequest, LoadedCode, code_generator};
use crate::compile::ModuleInput;
use crate::lower::{self, ExplainStrategy, LowerSettings, RaiseHelper};
use crate::{Error, ir, lir};
use safecall_runtime::abi::symbols::EXPORT_PREFIX;

mod explain;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod memory;
mod symbols;
#[cfg(target_arch = "x86_64")]
mod tier;

use explain::{
    EXPLAIN_DISPATCHER, LazyExplain, RAISE_SYMBOL, dispatch_explain, shared_raise_helper,
};
#[cfg(not(target_arch = "x86_64"))]
use fallback as tier;
#[cfg(not(target_arch = "x86_64"))]
pub use fallback::{FirstTier, TierUp};
use symbols::Resolver;
pub use symbols::{SymbolAddress, SymbolBinding};
#[cfg(target_arch = "x86_64")]
pub use tier::{FirstTier, TierUp};

/// Options of [`compile`].
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// Where TVM-FFI C API calls go.
    pub binding: SymbolBinding,
    /// Addresses of extern C functions (and direct safe-call symbols) by name.
    pub symbols: HashMap<String, SymbolAddress>,
    /// Also resolve names missing from `symbols` in the process (`dlsym`).
    pub process_symbols: bool,
    /// The code generator behind the first tier (Cranelift by default).
    pub backend: Backend,
    /// Which compiler produces the code: on x86-64 the baseline compiler by default, standing in
    /// for Cranelift (set [`FirstTier::Backend`] for Cranelift's code).
    pub first_tier: FirstTier,
    /// Whether baseline-compiled modules are compiled again by Cranelift (with
    /// [`JitOptions::cranelift`]): [`TierUp::Never`] by default (see docs/jit.md for the
    /// measurements behind it).
    pub tier_up: TierUp,
    /// Cranelift settings; [`CraneliftOptions::fast_compile`] by default (set
    /// `CraneliftOptions::default()` for the optimized code AOT objects get).
    pub cranelift: CraneliftOptions,
    /// LLVM settings (with the `llvm` feature).
    pub llvm: LlvmOptions,
    /// Threads that compile a module's functions with Cranelift: `0` (the default) uses
    /// [`std::thread::available_parallelism`] for modules large enough to gain from it
    /// ([`PARALLEL_MIN_INSTRUCTIONS`]), `1` compiles on the calling thread only.
    pub compile_threads: usize,
}

/// Lowered instructions a module needs before [`JitOptions::compile_threads`]` = 0` starts
/// threads for it. Starting and joining a thread took about 60 µs on the 2-core machine this
/// was measured on, where Cranelift compiles a typical launcher (about 380 lowered
/// instructions) in about half a millisecond.
pub const PARALLEL_MIN_INSTRUCTIONS: usize = 500;

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            binding: SymbolBinding::default(),
            symbols: HashMap::new(),
            process_symbols: true,
            backend: Backend::default(),
            first_tier: FirstTier::default(),
            tier_up: TierUp::default(),
            // The JIT is for callables microseconds after the IR is built: compile fast by
            // default (`CraneliftOptions::default()` gives AOT-quality code instead).
            cranelift: CraneliftOptions::fast_compile(),
            llvm: LlvmOptions::default(),
            compile_threads: 0,
        }
    }
}

/// Executable memory of one compiled module; freed when the last reference goes.
pub struct JitCode {
    /// The module's code: the first tier's, then the code of a tier-up.
    module: Mutex<Vec<Box<dyn LoadedCode>>>,
    /// Lazy explanations of the module's functions. Boxed: the compiled code holds their
    /// addresses, so they must not move; dropped after the code (field order).
    #[allow(clippy::vec_box)]
    _explains: Vec<Box<LazyExplain>>,
}

// SAFETY: after finalization the code is only touched again by `Drop`, which runs once, when
// the last reference is gone; the mutex serializes that access anyway.
unsafe impl Send for JitCode {}
// SAFETY: as above.
unsafe impl Sync for JitCode {}

impl Drop for JitCode {
    fn drop(&mut self) {
        let codes = std::mem::take(self.module.get_mut().unwrap_or_else(|p| p.into_inner()));
        // Upper tiers first: their code may be what the first tier's entries jump to. No
        // function of this module can run any more: every `Function` made from it holds an
        // `Arc<JitCode>`, and this is the last one.
        for code in codes.into_iter().rev() {
            drop(code);
        }
    }
}

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
        self.code
            .module
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
            > 1
    }
}

/// The pointer a switchable entry of baseline code jumps through (in the module's writable
/// memory).
pub(crate) struct Switch(pub(crate) *const AtomicU64);

// SAFETY: an aligned atomic in memory that lives as long as the module's `JitCode`; the tier-up
// thread writes it only while it holds a strong reference to that code.
unsafe impl Send for Switch {}

/// The code of one compile and the switches of its entries (baseline code with a tier-up).
pub(crate) struct Built {
    out: JitOutput,
    switches: Vec<Switch>,
}

/// Compiles a lowered module with the compiler `options` choose; returns the code and the
/// addresses of the functions named `entries`.
fn build_code(
    module: &lir::Module,
    entries: &[String],
    resolver: &Resolver,
    options: &JitOptions,
) -> Result<Built, Error> {
    if uses_baseline(options) {
        return tier::build_baseline(module, entries, resolver, options.tier_up);
    }
    let generator = code_generator(options.backend, &options.cranelift, &options.llvm)?;
    let out = generator.jit(
        module,
        JitRequest {
            entries,
            lookup: resolver.lookup(),
            threads: compile_threads(module, options.compile_threads),
        },
    )?;
    Ok(Built {
        out,
        switches: Vec::new(),
    })
}

/// Whether `options` select the baseline compiler.
fn uses_baseline(options: &JitOptions) -> bool {
    cfg!(target_arch = "x86_64")
        && options.first_tier == FirstTier::Baseline
        && options.backend == Backend::Cranelift
}

/// How many threads compile `module` with Cranelift, for the setting `requested`.
fn compile_threads(module: &lir::Module, requested: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    if module.functions.len() < 2 || module.inst_count() < PARALLEL_MIN_INSTRUCTIONS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, usize::from)
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
    let lower_options = LowerSettings {
        raise_helper: RaiseHelper::External(RAISE_SYMBOL.to_owned()),
        explain: ExplainStrategy::Lazy {
            dispatcher: EXPLAIN_DISPATCHER.to_owned(),
            contexts,
        },
        skip_annotations: true,
        skip_metadata_getters: true,
        ..LowerSettings::default()
    };
    let lowered = lower::lower_with(module, &lower_options)?;
    let mut table = options.symbols.clone();
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
        module: Mutex::new(vec![built.out.code]),
        _explains: explains,
    });
    #[cfg(target_arch = "x86_64")]
    if !built.switches.is_empty() {
        tier::spawn_tier_up(
            Arc::downgrade(&code),
            lowered,
            entries,
            resolver,
            options,
            built.switches,
        );
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

/// The tier choice on hosts without the baseline compiler.
#[cfg(not(target_arch = "x86_64"))]
mod fallback {
    /// Which compiler produces a JIT module's code (the baseline compiler is x86-64 only: other
    /// hosts always use the backend).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub enum FirstTier {
        /// The baseline compiler (x86-64 only; the backend here).
        Baseline,
        /// The backend of `JitOptions::backend`.
        #[default]
        Backend,
    }

    /// Whether baseline-compiled modules are compiled again (never here: no baseline tier).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub enum TierUp {
        /// Never.
        #[default]
        Never,
        /// On a background thread (x86-64 only; nothing to do here).
        Background,
    }

    /// Builds nothing: there is no baseline compiler on this host.
    pub(super) fn build_baseline(
        _: &crate::lir::Module,
        _: &[String],
        _: &super::Resolver,
        _: TierUp,
    ) -> Result<super::Built, crate::Error> {
        unreachable!("`uses_baseline` is false on hosts without the baseline compiler")
    }
}
