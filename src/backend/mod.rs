//! Backends: mechanical translation of the [lowered form](crate::lir) to machine code.

pub mod cranelift;
pub mod llvm;
