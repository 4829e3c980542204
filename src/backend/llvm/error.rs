//! The LLVM backend's error.

backend_error!(
    /// A failure of the LLVM backend (an unknown CPU, an invalid option, a translation that LLVM's
    /// verifier rejects, a reference to a symbol the module does not import).
    LlvmError,
    "llvm"
);

#[cfg(feature = "llvm")]
impl From<inkwell::builder::BuilderError> for LlvmError {
    fn from(e: inkwell::builder::BuilderError) -> Self {
        LlvmError(format!("IR builder: {e}"))
    }
}
