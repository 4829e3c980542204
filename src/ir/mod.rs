//! The host IR: what a DSL compiler hands to safecall.
//!
//! [`model`] is the data model. The builder, text format (parser and printer) and verifier
//! live next to it; lowering only ever sees verified IR.

pub mod model;

pub use model::*;
