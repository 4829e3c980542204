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
//! let jit = safecall::jit::compile(&module, &safecall::jit::JitOptions::default())?;
//! let twice = jit.function("twice").expect("defined");
//! let out = twice.call(&[21i64.into()]).expect("no error");
//! assert_eq!(out.cast::<i64>().unwrap(), 42);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cranelift_jit::{JITBuilder, JITModule};
use safecall_runtime::abi::TVMFFISafeCallType;
use safecall_runtime::{Function, c_api_symbol};

use crate::backend::cranelift::{self as clif, CraneliftOptions};
use crate::backend::llvm::LlvmOptions;
use crate::lower::{self, EXPORT_PREFIX, ExplainStrategy, LowerOptions, RaiseHelper};
use crate::{Backend, Error, ir, lir};

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod memory;
#[cfg(target_arch = "x86_64")]
mod tier;
#[cfg(not(target_arch = "x86_64"))]
pub use fallback::{FirstTier, TierUp};
#[cfg(target_arch = "x86_64")]
pub use tier::{FirstTier, TierUp};

/// Which runtime the TVM-FFI C API calls of JIT-compiled code go to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SymbolBinding {
    /// The bundled safecall-runtime (linked into this program).
    #[default]
    SafecallRuntime,
    /// Whatever the process has loaded globally (e.g. libtvm_ffi loaded by Python with
    /// `RTLD_GLOBAL`), looked up with `dlsym`, so errors land in that runtime's slot.
    Process,
}

/// An address callable from JIT-compiled code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolAddress(pub *const u8);

// SAFETY: an address of code or data that lives as long as the process (the caller promises
// this when inserting it); sharing the number between threads is harmless.
unsafe impl Send for SymbolAddress {}
// SAFETY: as above.
unsafe impl Sync for SymbolAddress {}

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

/// Compiled code of one module, by backend.
enum Code {
    Cranelift(Box<JITModule>),
    #[cfg(target_arch = "x86_64")]
    Baseline(tier::BaselineCode),
    #[cfg(feature = "llvm")]
    Llvm(crate::backend::llvm::jit::LlvmJitCode),
}

/// Executable memory of one compiled module; freed when the last reference goes.
pub struct JitCode {
    /// The module's code: the first tier's, then the code of a tier-up.
    module: Mutex<Vec<Code>>,
    /// Lazy explanations of the module's functions. Boxed: the compiled code holds their
    /// addresses, so they must not move; dropped after the code (field order).
    #[allow(clippy::vec_box)]
    _explains: Vec<Box<LazyExplain>>,
}

// SAFETY: after finalization the module is only touched again by `Drop`, which runs once, when
// the last reference is gone; the mutex serializes that access anyway.
unsafe impl Send for JitCode {}
// SAFETY: as above.
unsafe impl Sync for JitCode {}

impl Drop for JitCode {
    fn drop(&mut self) {
        let codes = std::mem::take(self.module.get_mut().unwrap_or_else(|p| p.into_inner()));
        // Upper tiers first: their code may be what the first tier's entries jump to.
        for code in codes.into_iter().rev() {
            // SAFETY: no function of this module can run any more: every `Function` made from
            // it holds an `Arc<JitCode>`, and this is the last one.
            unsafe { free_code(code) };
        }
    }
}

/// Frees the memory of `code`.
///
/// # Safety
/// No function of `code` may run any more, nor be called later.
unsafe fn free_code(code: Code) {
    match code {
        // SAFETY: guaranteed by the caller.
        Code::Cranelift(m) => unsafe { m.free_memory() },
        // Disposing of the LLJIT frees its memory.
        #[cfg(feature = "llvm")]
        Code::Llvm(code) => drop(code),
        #[cfg(target_arch = "x86_64")]
        Code::Baseline(code) => drop(code),
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

/// Symbol of the shared error helper inside JIT-compiled code.
const RAISE_SYMBOL: &str = "__safecall_jit_raise";

/// Resolves a TVM-FFI C API name for a binding.
fn capi_address(binding: SymbolBinding, name: &str) -> Option<*const u8> {
    match binding {
        SymbolBinding::SafecallRuntime => c_api_symbol(name),
        SymbolBinding::Process => process_symbol(name),
    }
}

fn process_symbol(name: &str) -> Option<*const u8> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbol is only used as an address; its type is fixed by the caller's
    // declaration.
    let sym = unsafe { this.get::<*const u8>(name.as_bytes()) }.ok()?;
    let address: *const u8 = *sym;
    (!address.is_null()).then_some(address)
}

/// The address of `name` for JIT-compiled code: the C API of `binding`, then `table`, then
/// the libc functions GPU launches use, then (with `process_symbols`) the process.
fn resolve(
    name: &str,
    binding: SymbolBinding,
    table: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
) -> Option<*const u8> {
    capi_address(binding, name)
        .or_else(|| table.get(name).map(|a| a.0))
        .or_else(|| lower::libc_symbol(name))
        .or_else(|| {
            if process_symbols {
                process_symbol(name)
            } else {
                None
            }
        })
}

/// The error helper compiled once per binding and backend, kept for the life of the process.
fn shared_raise_helper(
    binding: SymbolBinding,
    options: &JitOptions,
) -> Result<SymbolAddress, Error> {
    type Helpers = HashMap<(SymbolBinding, Backend, bool), SymbolAddress>;
    static HELPERS: OnceLock<Mutex<Helpers>> = OnceLock::new();
    let helpers = HELPERS.get_or_init(Default::default);
    let mut map = helpers.lock().unwrap_or_else(|p| p.into_inner());
    let key = (binding, options.backend, uses_baseline(options));
    if let Some(addr) = map.get(&key) {
        return Ok(*addr);
    }
    let module = lower::raise::helper_module(RAISE_SYMBOL);
    let (code, addresses) = build_code(
        &module,
        &[RAISE_SYMBOL.to_owned()],
        binding,
        &HashMap::new(),
        false,
        &JitOptions {
            tier_up: TierUp::Never,
            ..options.clone()
        },
    )?;
    // The helper lives as long as the process.
    std::mem::forget(code);
    let addr = SymbolAddress(addresses[0]);
    map.insert(key, addr);
    Ok(addr)
}

/// Compiles a lowered module with the backend `options` choose; returns the code and the
/// addresses of the functions named `entries`.
fn build_code(
    module: &lir::Module,
    entries: &[String],
    binding: SymbolBinding,
    symbols: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
    options: &JitOptions,
) -> Result<(Code, Vec<*const u8>), Error> {
    let index = |name: &str| {
        module
            .functions
            .iter()
            .position(|f| f.name == name)
            .expect("lowered")
    };
    #[cfg(target_arch = "x86_64")]
    if uses_baseline(options) {
        // With a tier-up, the entries can be switched to the upper tier's code.
        let switchable: Vec<lir::FuncId> = match options.tier_up {
            TierUp::Never => Vec::new(),
            TierUp::Background => entries
                .iter()
                .map(|e| lir::FuncId(index(e) as u32))
                .collect(),
        };
        let (code, functions) =
            tier::build_baseline(module, binding, symbols, process_symbols, &switchable)?;
        let addresses = entries.iter().map(|e| functions[index(e)]).collect();
        return Ok((Code::Baseline(code), addresses));
    }
    match options.backend {
        Backend::Cranelift => {
            let (jit, declared) = build_cranelift(
                module,
                binding,
                symbols,
                process_symbols,
                &options.cranelift,
                compile_threads(module, options.compile_threads),
            )?;
            let addresses = entries
                .iter()
                .map(|e| jit.get_finalized_function(declared.functions[index(e)]))
                .collect();
            Ok((Code::Cranelift(Box::new(jit)), addresses))
        }
        #[cfg(feature = "llvm")]
        Backend::Llvm => {
            // Entries are found by symbol lookup, so they must be exported from the JIT's
            // object even where the module registers them as a system library instead.
            let mut module = module.clone();
            for e in entries {
                let i = index(e);
                module.functions[i].linkage = lir::Linkage::Export;
            }
            let code = build_llvm(&module, binding, symbols, process_symbols, &options.llvm)?;
            let addresses = entries
                .iter()
                .map(|e| code.lookup(e))
                .collect::<Result<_, _>>()
                .map_err(Error::backend)?;
            Ok((Code::Llvm(code), addresses))
        }
        #[cfg(not(feature = "llvm"))]
        Backend::Llvm => Err(crate::compile::unavailable_llvm()),
    }
}

/// Whether `options` select the baseline compiler.
fn uses_baseline(options: &JitOptions) -> bool {
    cfg!(target_arch = "x86_64")
        && options.first_tier == FirstTier::Baseline
        && options.backend == Backend::Cranelift
}

/// Symbol of the lazy-explain dispatcher inside JIT-compiled code.
const EXPLAIN_DISPATCHER: &str = "__safecall_jit_explain";

/// The explanation of one host function's rejected calls, compiled on the first failure.
struct LazyExplain {
    /// A module holding just the host function (its parameters are all the explanation needs).
    module: ir::Module,
    /// Backend, binding and settings of the module (no symbol table: explanations call only
    /// the error helper).
    options: JitOptions,
    compiled: OnceLock<Result<ExplainCode, String>>,
}

/// A compiled explain function and the memory holding it.
struct ExplainCode {
    _code: JitCode,
    function: TVMFFISafeCallType,
}

impl LazyExplain {
    fn compile(&self) -> Result<ExplainCode, String> {
        let binding = self.options.binding;
        let name = &self.module.functions[0].name;
        let helper = shared_raise_helper(binding, &self.options).map_err(|e| e.to_string())?;
        let lower_options = LowerOptions {
            raise_helper: RaiseHelper::External(RAISE_SYMBOL.to_owned()),
            skip_annotations: true,
            ..LowerOptions::default()
        };
        let lowered =
            lower::lower_explain(&self.module, name, &lower_options).map_err(|e| e.to_string())?;
        let symbols = HashMap::from([(RAISE_SYMBOL.to_owned(), helper)]);
        let (code, addresses) = build_code(
            &lowered,
            &[lower::EXPLAIN_SYMBOL.to_owned()],
            binding,
            &symbols,
            false,
            &self.options,
        )
        .map_err(|e| e.to_string())?;
        // SAFETY: a finalized function with the safe-call signature.
        let function =
            unsafe { std::mem::transmute::<*const u8, TVMFFISafeCallType>(addresses[0]) };
        Ok(ExplainCode {
            _code: JitCode {
                module: Mutex::new(vec![code]),
                _explains: Vec::new(),
            },
            function,
        })
    }
}

/// Raises an error in the runtime the code is bound to.
fn raise_bound(binding: SymbolBinding, kind: &str, message: &str) {
    type SetRaised = unsafe extern "C" fn(*const std::ffi::c_char, *const std::ffi::c_char);
    let Some(address) = capi_address(binding, "TVMFFIErrorSetRaisedFromCStr") else {
        return;
    };
    let kind = std::ffi::CString::new(kind).unwrap_or_default();
    let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the address is the C API function of that name, with this signature.
    unsafe {
        std::mem::transmute::<*const u8, SetRaised>(address)(kind.as_ptr(), message.as_ptr())
    };
}

/// `int dispatcher(ctx, handle, args, num_args, result)`: compiles the explanation of the
/// function behind `ctx` on first use and runs it. Never unwinds into the generated caller.
unsafe extern "C" fn dispatch_explain(
    ctx: *const LazyExplain,
    handle: *mut c_void,
    args: *const safecall_runtime::abi::TVMFFIAny,
    num_args: i32,
    result: *mut safecall_runtime::abi::TVMFFIAny,
) -> i32 {
    // SAFETY: the compiled code holds the address of a `LazyExplain` that lives as long as it.
    let lazy = unsafe { &*ctx };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lazy.compiled
            .get_or_init(|| lazy.compile())
            .as_ref()
            .map(|c| c.function)
    }));
    let message = match outcome {
        // SAFETY: the caller's arguments are passed on unchanged to a safe-call function.
        Ok(Ok(explain)) => return unsafe { explain(handle, args, num_args, result) },
        Ok(Err(message)) => format!("cannot explain the rejected call: {message}"),
        Err(_) => {
            "cannot explain the rejected call: a panic while compiling the explanation".to_owned()
        }
    };
    raise_bound(lazy.options.binding, "InternalError", &message);
    -1
}

/// How many threads compile `module` with Cranelift, for the setting `requested`.
fn compile_threads(module: &lir::Module, requested: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    let instructions: usize = module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .map(|b| b.insts.len())
        .sum();
    if module.functions.len() < 2 || instructions < PARALLEL_MIN_INSTRUCTIONS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn build_cranelift(
    module: &lir::Module,
    binding: SymbolBinding,
    symbols: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
    options: &CraneliftOptions,
    threads: usize,
) -> Result<(JITModule, clif::Declared), Error> {
    let isa = clif::host_isa(clif::IsaPurpose::Jit, options).map_err(Error::backend)?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    builder.memory_provider(Box::new(memory::PooledMemory::default()));
    let table = symbols.clone();
    let missing = Arc::new(Mutex::new(Vec::<String>::new()));
    let missing_in_lookup = missing.clone();
    builder.symbol_lookup_fn(Box::new(move |name| {
        let found = resolve(name, binding, &table, process_symbols);
        if found.is_none() {
            missing_in_lookup
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(name.to_owned());
        }
        // cranelift-jit panics on an unresolved name; a null address is checked below instead.
        Some(found.unwrap_or(std::ptr::null()))
    }));
    let mut jit = JITModule::new(builder);
    let declared = clif::declare(&mut jit, module).map_err(Error::backend)?;
    clif::define_data(&mut jit, module, &declared).map_err(Error::backend)?;
    if threads > 1 && module.functions.len() > 1 {
        clif::define_functions_parallel(&mut jit, module, &declared, threads)
    } else {
        clif::define_functions(&mut jit, module, &declared, None, |_| Ok(()))
    }
    .map_err(Error::backend)?;
    jit.finalize_definitions()
        .map_err(|e| Error::Backend(e.to_string()))?;
    let missing = std::mem::take(&mut *missing.lock().unwrap_or_else(|p| p.into_inner()));
    if !missing.is_empty() {
        // SAFETY: nothing from this module was handed out.
        unsafe { jit.free_memory() };
        return Err(Error::UnresolvedSymbols(missing));
    }
    Ok((jit, declared))
}

/// Compiles with LLVM, every import resolved up front through [`resolve`].
#[cfg(feature = "llvm")]
fn build_llvm(
    module: &lir::Module,
    binding: SymbolBinding,
    symbols: &HashMap<String, SymbolAddress>,
    process_symbols: bool,
    options: &LlvmOptions,
) -> Result<crate::backend::llvm::jit::LlvmJitCode, Error> {
    let mut addresses = Vec::with_capacity(module.imports.len());
    let mut missing = Vec::new();
    for import in &module.imports {
        match resolve(&import.name, binding, symbols, process_symbols) {
            Some(a) => addresses.push(a),
            None => missing.push(import.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(Error::UnresolvedSymbols(missing));
    }
    crate::backend::llvm::jit::compile(module, options, &addresses).map_err(Error::backend)
}

unsafe extern "C" fn release_code(context: *mut c_void) {
    // SAFETY: `context` came from `Arc::into_raw` in `compile`, once per function.
    drop(unsafe { Arc::from_raw(context.cast::<JitCode>().cast_const()) });
}

/// Verifies, lowers and JIT-compiles a module.
pub fn compile(module: &ir::Module, options: &JitOptions) -> Result<JitModule, Error> {
    crate::verify(module)?;
    compile_unverified(module, options)
}

/// Lowers and JIT-compiles a module that was verified already (no second verifier pass).
pub fn compile_verified(
    module: &ir::VerifiedModule,
    options: &JitOptions,
) -> Result<JitModule, Error> {
    compile_unverified(module, options)
}

fn compile_unverified(module: &ir::Module, options: &JitOptions) -> Result<JitModule, Error> {
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
        .map(|f| {
            Box::new(LazyExplain {
                module: ir::Module {
                    name: module.name.clone(),
                    externs: Vec::new(),
                    imported_modules: Vec::new(),
                    device_binaries: Vec::new(),
                    imports: Vec::new(),
                    system_lib_prefix: None,
                    functions: vec![f.clone()],
                },
                options: explain_options.clone(),
                compiled: OnceLock::new(),
            })
        })
        .collect();
    let contexts = module
        .functions
        .iter()
        .zip(&explains)
        .map(|(f, e)| (f.name.clone(), &**e as *const LazyExplain as u64))
        .collect();
    let lower_options = LowerOptions {
        raise_helper: RaiseHelper::External(RAISE_SYMBOL.to_owned()),
        explain: ExplainStrategy::Lazy {
            dispatcher: EXPLAIN_DISPATCHER.to_owned(),
            contexts,
        },
        skip_annotations: true,
        skip_metadata_getters: true,
        ..LowerOptions::default()
    };
    let lowered = lower::lower(module, &lower_options)?;
    let mut symbols = options.symbols.clone();
    symbols.insert(RAISE_SYMBOL.to_owned(), helper);
    symbols.insert(
        EXPLAIN_DISPATCHER.to_owned(),
        SymbolAddress(dispatch_explain as *const u8),
    );
    let entries: Vec<String> = module
        .functions
        .iter()
        .map(|f| format!("{EXPORT_PREFIX}{}", f.name))
        .collect();
    let (code, addresses) = build_code(
        &lowered,
        &entries,
        options.binding,
        &symbols,
        options.process_symbols,
        options,
    )?;
    #[cfg(target_arch = "x86_64")]
    let switches = match &code {
        Code::Baseline(b) => b.switches(),
        _ => Vec::new(),
    };
    let code = Arc::new(JitCode {
        module: Mutex::new(vec![code]),
        _explains: explains,
    });
    #[cfg(target_arch = "x86_64")]
    if !switches.is_empty() {
        tier::spawn_tier_up(
            Arc::downgrade(&code),
            lowered,
            entries,
            symbols,
            options,
            switches,
        );
    }
    let mut functions = HashMap::new();
    for (f, ptr) in module.functions.iter().zip(addresses) {
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
}
