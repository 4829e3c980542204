//! safecall: compile host functions to native TVM-FFI safe-call code.
//!
//! A DSL or ML compiler describes a host function in the [`ir`]; safecall verifies it,
//! [lowers](lower) it to a small backend-neutral form ([`lir`]) in which every ABI rule has
//! been applied, and a backend turns that into native code delivered as an object file, a
//! shared library or JIT-compiled memory.

pub mod blob;
pub mod ir;
pub mod lir;
pub mod lower;
pub mod aot;
pub mod backend;
