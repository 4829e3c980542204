//! safecall: compile host functions to native TVM-FFI safe-call code.
//!
//! A DSL or ML compiler describes a host function in the [`ir`]; safecall verifies it,
//! lowers it to native code that exports `__tvm_ffi_<name>` with inline argument checks,
//! and delivers it as an object file, a shared library or JIT-compiled memory.

pub mod ir;
