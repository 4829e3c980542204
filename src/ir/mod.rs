//! The host IR: what a DSL compiler hands to safecall.
//!
//! - [`model`]: the data model (re-exported here).
//! - [`build`]: the builder API for compilers.
//! - [`parse`](mod@parse) / [`print`](mod@print): the `.scir` text format (documented in `docs/ir.md`), with a
//!   [`source_map`] for positions.
//! - [`half`](mod@half): the `f16`/`bf16` conversions of constants (the lowering emits the same).
//! - [`typing`]: the typing rules, shared with the lowering.
//! - [`verify`](mod@verify): the verifier; lowering only ever sees verified IR.
//!
//! ```
//! use safecall::ir;
//! let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir/add_one.scir")).unwrap();
//! let (module, map) = ir::parse::parse_with_source_map(&text).unwrap();
//! ir::verify::verify(&module).unwrap();
//! assert_eq!(ir::parse::parse(&ir::print::print(&module)).unwrap(), module);
//! # let _ = map;
//! ```

#![warn(missing_docs)]

pub mod build;
pub mod diag;
pub mod half;
pub mod model;
pub mod parse;
pub mod print;
pub mod source_map;
pub mod syntax;
pub mod typing;
pub mod verify;

pub use model::*;
pub use parse::{ParseError, parse, parse_with_source_map};
pub use print::print;
pub use source_map::{SourceMap, Span, StmtPath};
pub use verify::{VerifiedModule, VerifyError, VerifyWarning, verify};
