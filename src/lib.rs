//! safecall: compile host functions to native TVM-FFI safe-call code.
//!
//! A DSL or ML compiler describes a host function in the [`ir`]; safecall [verifies](ir::verify())
//! it, [lowers](lower) it to a small backend-neutral form ([`lir`]) in which every ABI rule has
//! been applied, and a [backend] turns that into native code delivered as an object file or a
//! shared library ([`aot`]), or as JIT-compiled memory ([`jit`]).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = std::fs::read_to_string("examples/ir/add_one.scir")?;
//! let module = safecall::ir::parse::parse(&text).map_err(|e| e.render("add_one.scir", &text))?;
//! safecall::build_shared_library(&module, "add_one.so".as_ref(), &safecall::Options::default(), &Default::default())?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod aot;
pub mod backend;
mod compile;
mod error;
pub mod gpu_binary;
mod input;
pub mod ir;
pub mod jit;
pub mod lir;
pub mod lower;
pub mod target;

pub use backend::Backend;
pub use compile::{Emit, Options, build_shared_library, compile_object, emit};
pub use error::Error;
pub use input::ModuleInput;

/// The guides in `docs/` whose Rust samples run as doctests (`cargo test --doc`).
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../docs/guide.md")]
    struct Guide;

    #[doc = include_str!("../docs/jit.md")]
    struct Jit;
}
