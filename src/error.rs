//! The error type of the compiler API.

use std::path::PathBuf;

use crate::aot::LinkError;
use crate::backend::BackendError;
use crate::ir::verify::VerifyError;
use crate::lower::LowerError;

/// Why compiling a module failed.
#[derive(Debug)]
pub enum Error {
    /// The IR did not pass the verifier; every problem found.
    Invalid(Vec<VerifyError>),
    /// The lowering could not express verified IR (a limit was exceeded).
    Lower(LowerError),
    /// The backend made no code: it failed, it is not built into this binary, or JIT-compiled
    /// code refers to symbols that were not found ([`BackendError`] owns the cases and their
    /// words).
    Backend(BackendError),
    /// Linking a shared library failed.
    Link(LinkError),
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What happened.
        error: std::io::Error,
    },
}

impl Error {
    /// A backend error from any displayable error ([`BackendError::Failed`]).
    pub fn backend(e: impl std::fmt::Display) -> Self {
        Error::Backend(BackendError::failed(e))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Invalid(errors) => {
                write!(
                    f,
                    "invalid IR ({} error{})",
                    errors.len(),
                    if errors.len() == 1 { "" } else { "s" }
                )?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            Error::Lower(e) => write!(f, "lowering failed: {e}"),
            Error::Backend(e) => e.fmt(f),
            Error::Link(e) => e.fmt(f),
            Error::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for Error {}

impl From<LowerError> for Error {
    fn from(e: LowerError) -> Self {
        Error::Lower(e)
    }
}

impl From<BackendError> for Error {
    fn from(e: BackendError) -> Self {
        Error::Backend(e)
    }
}

impl From<LinkError> for Error {
    fn from(e: LinkError) -> Self {
        Error::Link(e)
    }
}

impl From<Vec<VerifyError>> for Error {
    fn from(e: Vec<VerifyError>) -> Self {
        Error::Invalid(e)
    }
}
