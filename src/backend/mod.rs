//! Backends: mechanical translation of the [lowered form](crate::lir) to machine code.

#[cfg(target_arch = "x86_64")]
pub mod baseline;
pub mod cranelift;
pub mod llvm;
