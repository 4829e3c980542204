//! safecall-runtime: the TVM-FFI C API (apache-tvm-ffi 0.1.x) implemented in Rust.
//!
//! Generated host code links against these symbols (or against the real `libtvm_ffi`);
//! JIT-compiled functions run on them, bound through [`c_api_symbols`]. [`abi`] holds every
//! C layout. The data flow, bottom up:
//!
//! - [`object`]: allocation (16 bytes reserved in front of each object) and the strong/weak
//!   reference-count protocol;
//! - [`registry`]: type keys, indices, type info and reflection tables;
//! - [`error`], [`string`], [`shape`], [`big_int`], [`function`], [`tensor`]: the object kinds;
//! - [`env`](mod@env): per-thread streams and allocators, host C API, module symbols, init-once;
//! - [`module`](mod@module), modules: libraries loaded from a path, the system library, Rust-built ones,
//!   and [`library_bin`], the format of the import tree a library embeds;
//! - [`capi`]: the exported `extern "C"` functions (panics never cross them);
//! - [`rust_api`]: the safe API ([`Any`], [`AnyView`], [`Function`], [`Tensor`], [`Error`]...).

#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod abi;
pub mod big_int;
pub mod capi;
pub mod dtype;
pub mod env;
pub mod error;
pub mod function;
pub mod library_bin;
pub mod module;
pub mod object;
pub mod registry;
pub mod rust_api;
pub mod shape;
pub mod string;
pub mod tensor;

pub use capi::{CApiSymbol, c_api_symbol, c_api_symbols};
pub use rust_api::{
    Any, AnyView, Array, Bytes, Element, Error, FromAnyView, Function, Module, ObjectRef, Shape,
    String, Tensor, WeakObjectRef,
};
