//! The explanations of rejected calls, compiled lazily, and the error helper they share.
//!
//! A JIT-compiled host function checks its arguments on a fast path; any failed check calls
//! [`dispatch_explain`] with the context of that function, which compiles the function's
//! explanation (the same checks, each with its message) on the first failure and runs it.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use safecall_runtime::abi::symbols::{c_api, error_kind::INTERNAL_ERROR};
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType};

use super::build::build_code;
use super::code::JitCode;
use super::options::{JitOptions, TierUp, uses_baseline};
use super::symbols::{Resolver, SymbolAddress, SymbolBinding, capi_address};
use crate::backend::Backend;
use crate::error::Error;
use crate::ir;
use crate::lower::{self, LowerSettings, RaiseHelper};

/// Symbol of the shared error helper inside JIT-compiled code.
pub(super) const RAISE_SYMBOL: &str = "__safecall_jit_raise";

/// Symbol of the lazy-explain dispatcher inside JIT-compiled code.
pub(super) const EXPLAIN_DISPATCHER: &str = "__safecall_jit_explain";

/// The error helper compiled once per binding and backend, kept for the life of the process.
pub(super) fn shared_raise_helper(
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
    let resolver = Resolver {
        binding,
        table: HashMap::new(),
        process_symbols: false,
    };
    let built = build_code(
        &module,
        &[RAISE_SYMBOL.to_owned()],
        &resolver,
        &JitOptions {
            tier_up: TierUp::Never,
            ..options.clone()
        },
    )?;
    // SAFETY: the helper's code lives as long as the process: it is leaked just below.
    let addr = unsafe { SymbolAddress::new(built.out.entries[0]) };
    std::mem::forget(built.out.code);
    map.insert(key, addr);
    Ok(addr)
}

/// The explanation of one host function's rejected calls, compiled on the first failure.
pub(super) struct LazyExplain {
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
    /// The lazy explanation of `func` of `module`, compiled with `options` when needed.
    pub fn new(module: &ir::Module, func: &ir::Function, options: JitOptions) -> Self {
        LazyExplain {
            module: ir::Module {
                // The explanation checks the parameters; it needs neither body nor doc.
                functions: vec![ir::Function {
                    name: func.name.clone(),
                    doc: String::new(),
                    params: func.params.clone(),
                    constraints: func.constraints.clone(),
                    ret: func.ret.clone(),
                    body: Vec::new(),
                }],
                ..ir::Module::new(module.name.clone())
            },
            options,
            compiled: OnceLock::new(),
        }
    }

    fn compile(&self) -> Result<ExplainCode, String> {
        let binding = self.options.binding;
        let name = &self.module.functions[0].name;
        let helper = shared_raise_helper(binding, &self.options).map_err(|e| e.to_string())?;
        let lower_options = LowerSettings {
            raise_helper: RaiseHelper::External(RAISE_SYMBOL.to_owned()),
            skip_annotations: true,
            ..LowerSettings::default()
        };
        let lowered =
            lower::lower_explain(&self.module, name, &lower_options).map_err(|e| e.to_string())?;
        let resolver = Resolver {
            binding,
            table: HashMap::from([(RAISE_SYMBOL.to_owned(), helper)]),
            process_symbols: false,
        };
        let built = build_code(
            &lowered,
            &[lower::EXPLAIN_SYMBOL.to_owned()],
            &resolver,
            &self.options,
        )
        .map_err(|e| e.to_string())?;
        // SAFETY: a finalized function with the safe-call signature.
        let function =
            unsafe { std::mem::transmute::<*const u8, TVMFFISafeCallType>(built.out.entries[0]) };
        Ok(ExplainCode {
            _code: JitCode {
                module: Mutex::new(vec![built.out.code]),
                _keep: Vec::new(),
                pending: Mutex::new(None),
            },
            function,
        })
    }
}

/// Raises an error in the runtime the code is bound to.
fn raise_bound(binding: SymbolBinding, kind: &str, message: &str) {
    type SetRaised = unsafe extern "C" fn(*const std::ffi::c_char, *const std::ffi::c_char);
    let Some(address) = capi_address(binding, c_api::ERROR_SET_RAISED_FROM_CSTR) else {
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
pub(super) unsafe extern "C" fn dispatch_explain(
    ctx: *const LazyExplain,
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
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
    raise_bound(lazy.options.binding, INTERNAL_ERROR, &message);
    -1
}
