//! safecall-runtime: the TVM-FFI C API (apache-tvm-ffi 0.1.x) implemented in Rust.
//!
//! Generated host code links against these symbols (or against the real `libtvm_ffi`);
//! JIT-compiled functions run on them. [`abi`] holds every C layout.

pub mod abi;
pub mod dtype;
