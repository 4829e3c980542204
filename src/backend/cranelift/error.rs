//! The Cranelift backend's error.

backend_error!(
    /// A backend failure (an ISA that cannot be built, or a Cranelift error).
    CraneliftError,
    "cranelift"
);

pub(super) fn err(e: impl std::fmt::Display) -> CraneliftError {
    CraneliftError(e.to_string())
}
