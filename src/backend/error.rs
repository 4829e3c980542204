//! The error of the backends, as the drivers see it: each code generator's own error
//! (`CraneliftError`, `LlvmError`, `BaselineError`) becomes a [`BackendError`], which the
//! crate's [`Error`](crate::Error) takes in (`From`). The backends know nothing above them.

use super::generator::Backend;

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
