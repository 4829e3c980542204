//! The builder API: how a compiler makes IR without building strings.
//!
//! - [`ModuleBuilder`] collects externs, imported modules and functions into a [`Module`].
//! - [`FunctionBuilder`] declares parameters ([`FunctionBuilder::param`],
//!   [`FunctionBuilder::tensor`]), constraints and the return type; it derefs to a
//!   [`BlockBuilder`] for the body, whose `if`/`for` methods take closures for nested blocks.
//! - Expressions are [`Expr`] values: constructors ([`int`], [`float32`], [`float16`], [`var`], ...),
//!   operators (`+ - * / % & | ^ << >>`, unary `-` and `!`, also with an `i64` right-hand side),
//!   and methods ([`Expr::lt`], [`Expr::cast`], [`Expr::ceil_div`], ...). [`TensorRef`] reads
//!   tensor fields: `x.shape(0)`, `x.data()`.
//! - [`TensorSpecBuilder`] makes tensor specs with defaults: any dtype until set, compact
//!   strides, any device type, device id `Same`, byte offset `Zero`, no alignment, no index type.
//!
//! The builder does not check anything; run [`verify`](super::verify::verify) (or
//! [`ModuleBuilder::build_verified`]) before lowering.
//!
//! ```
//! use safecall::ir::build::*;
//! use safecall::ir::ErrorConvention;
//! use safecall_runtime::abi::device_type;
//!
//! let mut m = ModuleBuilder::new("kernels");
//! m.extern_fn("launch", [PTR, PTR, I64, PTR], Some(I32), ErrorConvention::NonZeroIsRaised);
//!
//! let mut f = FunctionBuilder::new("scale");
//! f.doc("y = 2 * x on the GPU.");
//! let cuda = || TensorSpecBuilder::new(["n"]).dtype_name("float32").device(device_type::CUDA);
//! let x = f.tensor("x", cuda());
//! let y = f.tensor("y", cuda());
//! f.divisible("n", 4);
//! f.assert(x.shape(0).gt(0), "ValueError", ["empty input of length ".into(), x.shape(0).into()]);
//! let grid = f.let_("grid", x.shape(0).ceil_div(int(256)));
//! let stream = f.get_stream("stream", x.device_type(), x.device_id());
//! f.for_range("i", int(0), int(2), |b, i| {
//!     b.if_then(i.equals(1), |t| {
//!         t.call_extern("launch", [x.data(), y.data(), grid.clone(), stream.clone()]);
//!     });
//! });
//! m.function(f.finish());
//!
//! let module = m.build_verified().expect("valid IR");
//! assert!(safecall::ir::print::print(&module).contains("let grid = ceil_div(x.shape[0], 256);"));
//! ```

use super::model::*;

mod alloc;
mod block;
mod expr;
mod function;
mod launch;
mod tensor;
mod tensormap;

pub use block::BlockBuilder;
pub use expr::*;
pub use function::{FunctionBuilder, ModuleBuilder};
pub use launch::LaunchBuilder;
pub use tensor::{TensorRef, TensorSpecBuilder, dtype};
pub use tensormap::{tensormap, tensormap_im2col};

/// `bool`.
pub const BOOL: ScalarType = ScalarType::Bool;
/// `i8`.
pub const I8: ScalarType = ScalarType::Int(IntType::I8);
/// `i16`.
pub const I16: ScalarType = ScalarType::Int(IntType::I16);
/// `i32`.
pub const I32: ScalarType = ScalarType::Int(IntType::I32);
/// `i64`.
pub const I64: ScalarType = ScalarType::Int(IntType::I64);
/// `u8`.
pub const U8: ScalarType = ScalarType::Int(IntType::U8);
/// `u16`.
pub const U16: ScalarType = ScalarType::Int(IntType::U16);
/// `u32`.
pub const U32: ScalarType = ScalarType::Int(IntType::U32);
/// `u64`.
pub const U64: ScalarType = ScalarType::Int(IntType::U64);
/// `f16` (IEEE binary16; converts and compares, no arithmetic).
pub const F16: ScalarType = ScalarType::Float(FloatType::F16);
/// `bf16` (bfloat16; converts and compares, no arithmetic).
pub const BF16: ScalarType = ScalarType::Float(FloatType::BF16);
/// `f32`.
pub const F32: ScalarType = ScalarType::Float(FloatType::F32);
/// `f64`.
pub const F64: ScalarType = ScalarType::Float(FloatType::F64);
/// `ptr`.
pub const PTR: ScalarType = ScalarType::Ptr;
