//! The TVM-FFI ABI: every C layout, type index and flag of `tvm/ffi/c_api.h`,
//! `tvm/ffi/extra/c_env_api.h` and `dlpack/dlpack.h` (apache-tvm-ffi 0.1.x, DLPack 1.3).
//!
//! This module is the **one place** where ABI offsets live. The runtime uses the
//! `#[repr(C)]` structs directly; code generators (the `safecall` crate's lowering)
//! use the `*_OFFSET` / `*_SIZE` constants, which are derived from these structs with
//! `core::mem::offset_of!` and so can never drift from them. `tests/layout.rs` checks
//! every size and offset against a C program compiled with the real headers. Symbol names
//! (exports, C API functions, error kinds) are in [`symbols`].

#![allow(non_camel_case_types, non_snake_case)]

mod constants;
mod dlpack;
mod ffi;
mod offsets;
pub mod symbols;

pub use constants::*;
pub use dlpack::*;
pub use ffi::*;
pub use offsets::*;
