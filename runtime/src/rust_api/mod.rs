//! The safe Rust API over the runtime: values ([`Any`], [`AnyView`]), object references
//! ([`ObjectRef`], [`Array`], [`String`], [`Bytes`], [`Shape`], [`Tensor`], [`Function`], [`Module`],
//! [`Error`]) and
//! registry helpers ([`registry`]).

pub mod any;
mod array;
mod error;
mod function;
mod module;
pub(crate) mod object_ref;
pub mod registry;
mod shape;
mod string;
mod tensor;

pub use any::{Any, AnyView, FromAnyView};
pub use array::Array;
pub use error::Error;
pub use function::Function;
pub use module::Module;
pub use object_ref::{ObjectRef, WeakObjectRef};
pub use shape::Shape;
pub use string::{Bytes, String};
pub use tensor::{Element, Tensor};
