//! Backends: mechanical translation of the [lowered form](crate::lir) to machine code.
//!
//! Each code generator (Cranelift, and LLVM with the `llvm` feature) implements one interface,
//! the crate-internal trait `CodeGenerator`: object bytes, in-process code, its own IR as text,
//! and assembly text. The drivers ([`crate::compile_object`], [`crate::emit`], [`crate::jit`])
//! reach a backend only through `backend::code_generator`, the one place that knows which
//! backends this build has. Each backend's object and JIT specifics live in its own folder.
//!
//! Backends trust their input: the lowered form was checked by [`crate::lir::verify::verify()`] (the
//! lowering runs it on its output in debug builds and in every test).

/// Declares a backend's error type: a message, shown after the backend's name.
macro_rules! backend_error {
    ($(#[$doc:meta])* $name:ident, $backend:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name(pub String);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($backend, ": {}"), self.0)
            }
        }

        impl std::error::Error for $name {}
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod baseline;
pub mod cranelift;
pub mod llvm;

mod generator;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod memory;

pub use generator::{Backend, BackendError};
pub(crate) use generator::{CodeGenerator, JitOutput, JitRequest, LoadedCode, SymbolLookup};

/// The code generator `backend` with its settings: the one place that knows which backends
/// this build of safecall has.
pub(crate) fn code_generator<'a>(
    backend: Backend,
    cranelift: &'a cranelift::CraneliftOptions,
    llvm: &'a llvm::LlvmOptions,
) -> Result<&'a dyn CodeGenerator, BackendError> {
    match backend {
        Backend::Cranelift => Ok(cranelift),
        #[cfg(feature = "llvm")]
        Backend::Llvm => Ok(llvm),
        #[cfg(not(feature = "llvm"))]
        Backend::Llvm => {
            let _ = llvm;
            Err(BackendError::Unavailable(Backend::Llvm))
        }
    }
}
