//! The options of the lowering, its error, and the symbol names every lowered module shares.

use std::collections::HashMap;

/// Options of the lowering of a module for an object file or a shared library.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LowerOptions {
    /// Overrides [`Module::system_lib_prefix`](crate::ir::Module::system_lib_prefix): register
    /// functions at load time as `__tvm_ffi_<prefix><name>` instead of exporting them.
    pub system_lib_prefix: Option<String>,
    /// Also export this host function as `__tvm_ffi_main`.
    pub main_alias: Option<String>,
}

/// Every setting of the lowering: the public [`LowerOptions`] and what the JIT sets for its
/// own modules (a shared error helper, explanations compiled lazily from addresses only it
/// knows, no dumps, no metadata getters).
#[derive(Clone, Debug, Default)]
pub(crate) struct LowerSettings {
    /// See [`LowerOptions::system_lib_prefix`].
    pub system_lib_prefix: Option<String>,
    /// See [`LowerOptions::main_alias`].
    pub main_alias: Option<String>,
    /// How generated code reaches the error-raising helper.
    pub raise_helper: RaiseHelper,
    /// How a rejected call is explained.
    pub explain: ExplainStrategy,
    /// Leave out the source annotations of dumps (faster; the JIT sets it).
    pub skip_annotations: bool,
    /// Leave out the `__tvm_ffi__metadata_<name>` / `__tvm_ffi__doc_<name>` getters (the JIT
    /// serves metadata from Rust instead).
    pub skip_metadata_getters: bool,
    /// Branch to the explain block after each argument check instead of folding the checks
    /// since the last branch into one condition (`and` of flags): fewer instructions and
    /// registers on the success path for a code generator that compiles each check's
    /// compare-and-branch (the baseline JIT tier, LLVM, optimizing Cranelift), more blocks to
    /// compile (Cranelift's `--opt none` keeps the folded form).
    pub branch_per_check: bool,
    /// The fast path stores `args` and `num_args` in a stack slot at entry and the explain
    /// call loads them from there (and gets a NULL handle, which the checks never read),
    /// instead of holding them in registers through every check (for a register allocator
    /// that would otherwise keep them in callee-saved registers, saved and restored on every
    /// call: Cranelift).
    pub explain_args_on_stack: bool,
    /// The code generator optimizes (LLVM; Cranelift above `--opt none`): the argument-count
    /// check has an explain call of its own, and every later one passes the count as a
    /// constant, so that no register holds it through the checks. The baseline tier and
    /// Cranelift's `--opt none`, where compile time counts most, keep one explain call.
    pub optimizing_backend: bool,
    /// The forms LLVM turns into the fewest instructions, and Cranelift into more (or into
    /// slower compiles): a tensor argument's `DLTensor` address computed from its type index
    /// (object or `DLTensor*`) instead of selected (LLVM folds the offset into every field's
    /// address; Cranelift built the launcher's `.so` 8% slower with it), and a tensor's data
    /// pointer read only when the tensor has elements (as C tests them; Cranelift, which
    /// keeps the order of `||`, tests a non-NULL pointer first and is done).
    pub llvm_check_forms: bool,
    /// Where launches get the CUDA driver's and the HIP runtime's entry points.
    pub gpu_runtimes: GpuRuntimes,
}

impl From<&LowerOptions> for LowerSettings {
    fn from(options: &LowerOptions) -> Self {
        LowerSettings {
            system_lib_prefix: options.system_lib_prefix.clone(),
            main_alias: options.main_alias.clone(),
            ..LowerSettings::default()
        }
    }
}

/// Where the explanation of a rejected call comes from.
///
/// Host functions check their arguments on a fast path that carries no message code: any
/// failed check calls an *explain function*, which runs the same checks again, each with its
/// precise message, and raises the first that fails.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum ExplainStrategy {
    /// One explain function per host function, compiled with the module (AOT).
    #[default]
    Embedded,
    /// Call the import `dispatcher(ctx, handle, args, num_args, result) -> int`, where `ctx` is
    /// the address the caller gives for the host function (the JIT compiles the explain
    /// function, from `lower_explain`, on the first failure).
    Lazy {
        /// Symbol of the dispatcher.
        dispatcher: String,
        /// `ctx` of each host function, by name (embedded as a constant: JIT code only).
        contexts: HashMap<String, u64>,
    },
}

/// Where a module's launches get the CUDA driver's (or HIP runtime's) table of entry points.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum GpuRuntimes {
    /// Each module finds the driver itself: its own init function (the library search, every
    /// entry point resolved, each failure's message) runs once per module (AOT objects and
    /// libraries, which must stand alone).
    #[default]
    Embedded,
    /// The external functions `cuda` and `hip` (`int f(void** table)`, compiled once, see
    /// `gpu::shared::helper_module`) hand every module the process's one table; a module keeps
    /// only a cell for it. The JIT's modules share them: the init code is neither lowered nor
    /// compiled per module.
    Shared {
        /// The CUDA driver's table.
        cuda: String,
        /// The HIP runtime's table.
        hip: String,
    },
}

/// Where the cold error-raising helper lives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum RaiseHelper {
    /// Emitted once into each module (AOT objects and libraries).
    #[default]
    Embedded,
    /// An external function with this symbol name and the helper's signature, compiled once
    /// (see `raise::helper_module`); the JIT shares one helper between all modules.
    External(String),
}

/// A lowering failure: verified IR that the lowering cannot express (a limit was exceeded),
/// options that do not fit the module, or, as [`LowerErrorKind::Internal`], a bug of safecall
/// (the IR breaks an invariant the verifier guarantees, or the lowering contradicts itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    /// Function the problem is in, if any.
    pub function: Option<String>,
    /// What is wrong.
    pub message: String,
    /// Whether the caller can act on it, or it is a bug.
    pub kind: LowerErrorKind,
}

/// What kind of failure a [`LowerError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowerErrorKind {
    /// A limit of the lowering, or options that do not fit the module: the input is valid but
    /// cannot be compiled as asked.
    Limit,
    /// A broken invariant: IR that should have been rejected by the verifier reached the
    /// lowering, or the lowering contradicts itself. A bug of safecall (or of a caller that
    /// lowered unverified IR).
    Internal,
}

impl LowerError {
    /// A limit of the lowering (or options that do not fit the module).
    pub(crate) fn limit(message: impl Into<String>) -> Self {
        LowerError {
            function: None,
            message: message.into(),
            kind: LowerErrorKind::Limit,
        }
    }

    /// A broken invariant of verified IR or of the lowering itself.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        LowerError {
            function: None,
            message: message.into(),
            kind: LowerErrorKind::Internal,
        }
    }

    /// The same error, located in host function `name` (unless it already is in one).
    pub(crate) fn in_function(mut self, name: &str) -> Self {
        self.function.get_or_insert_with(|| name.to_owned());
        self
    }

    /// Whether this is a bug of safecall rather than a limit a caller can act on.
    pub fn is_internal(&self) -> bool {
        self.kind == LowerErrorKind::Internal
    }
}

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_internal() {
            f.write_str("internal error (a bug in safecall): ")?;
        }
        match &self.function {
            Some(func) => write!(f, "in function `{func}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for LowerError {}
