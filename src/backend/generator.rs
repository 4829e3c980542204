//! The interface every code generator implements and the drivers use (the [module
//! docs](super)): the backend's name, what the JIT asks for and gets, the `CodeGenerator`
//! trait, and how a backend fails ([`BackendError`]: each backend's own error converted, which
//! the crate's [`Error`](crate::Error) takes in). The backends import it from here, and
//! `backend/mod.rs` chooses among them, so no backend depends on the module that dispatches to
//! it, nor on anything above the backends.

use std::sync::Arc;

use crate::lir;

/// The code generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Cranelift: fast compiles (the default).
    #[default]
    Cranelift,
    /// LLVM through inkwell: optimized code (cargo feature `llvm`).
    Llvm,
}

impl Backend {
    /// Every backend, in declaration order.
    pub const ALL: [Backend; 2] = [Backend::Cranelift, Backend::Llvm];

    /// Its name, as the Python package's `backend=` and the CLI's `--backend` take it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cranelift => "cranelift",
            Backend::Llvm => "llvm",
        }
    }

    /// The backend named `name`.
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether this build of safecall has it (LLVM needs the cargo feature `llvm`).
    pub fn available(self) -> bool {
        match self {
            Backend::Cranelift => true,
            Backend::Llvm => cfg!(feature = "llvm"),
        }
    }
}

/// Why a backend made no code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// The code generator failed: its message, which starts with its name (`cranelift: ...`).
    Failed(String),
    /// The requested backend is not built into this binary (pick another one, or build
    /// safecall with its cargo feature).
    Unavailable(Backend),
    /// JIT-compiled code refers to symbols that were not found.
    UnresolvedSymbols(Vec<String>),
}

impl BackendError {
    /// A code generator's failure, from its error.
    pub fn failed(e: impl std::fmt::Display) -> Self {
        BackendError::Failed(e.to_string())
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendError::Failed(e) => write!(f, "code generation failed: {e}"),
            BackendError::Unavailable(Backend::Llvm) => f.write_str(
                "backend unavailable: this build of safecall has no LLVM backend (build with `--features llvm`)",
            ),
            BackendError::Unavailable(backend) => write!(
                f,
                "backend unavailable: this build of safecall has no {backend:?} backend"
            ),
            BackendError::UnresolvedSymbols(names) => {
                write!(
                    f,
                    "unresolved symbols in JIT-compiled code: {}",
                    names.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for BackendError {}

/// Resolves a symbol name to an address for JIT-compiled code (`None`: unknown).
pub(crate) type SymbolLookup = Arc<dyn Fn(&str) -> Option<*const u8> + Send + Sync>;

/// What the JIT asks a backend for.
pub(crate) struct JitRequest<'a> {
    /// Functions whose addresses are wanted, by symbol name.
    pub entries: &'a [String],
    /// Where imports are found.
    pub lookup: SymbolLookup,
    /// Threads that may compile the module's functions (a backend may use fewer).
    pub threads: usize,
    /// Where the module's data objects already are, one address per object in module order,
    /// placed by an earlier compile of the same module whose code stays alive at least as long
    /// as this one's (a tier-up's first tier): the code uses those objects (their caches, their
    /// device binaries) instead of copies of its own. Empty: the compile places its own data.
    pub data_at: &'a [*const u8],
}

/// Machine code in executable memory, made by [`CodeGenerator::jit`]; dropping it frees the
/// memory, so its owner keeps it alive while any of its code may still run.
pub(crate) trait LoadedCode {}

/// In-process code and the addresses of the requested entries (in request order).
pub(crate) struct JitOutput {
    /// The memory; freed when dropped.
    pub code: Box<dyn LoadedCode>,
    /// Address of each of [`JitRequest::entries`].
    pub entries: Vec<*const u8>,
}

/// A code generator: the one interface the drivers use (see the [module docs](self)).
pub(crate) trait CodeGenerator {
    /// A relocatable, position-independent object file for the configured target: `.eh_frame`
    /// without text relocations, the TVM-FFI C API left undefined.
    fn object(&self, module: &lir::Module) -> Result<Vec<u8>, BackendError>;

    /// The backend's IR as built (before optimization), annotated with the host-IR item each
    /// part came from.
    fn backend_ir(&self, module: &lir::Module) -> Result<String, BackendError>;

    /// The machine code as assembly text.
    fn asm(&self, module: &lir::Module) -> Result<String, BackendError>;

    /// Compiles into executable memory of this process, resolving imports through
    /// `request.lookup`; unresolved imports are [`BackendError::UnresolvedSymbols`].
    fn jit(&self, module: &lir::Module, request: JitRequest<'_>)
    -> Result<JitOutput, BackendError>;
}

/// The index of the function named `name` in `module` (entries the JIT asks for are always
/// functions of the module it lowered).
pub(crate) fn function_index(module: &lir::Module, name: &str) -> Result<usize, BackendError> {
    module
        .functions
        .iter()
        .position(|f| f.name == name)
        .ok_or_else(|| BackendError::Failed(format!("no function `{name}` in the lowered module")))
}
