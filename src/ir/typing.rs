//! Typing rules of the host IR: the verifier applies them (and records the types it finds);
//! the lowering reads the recorded types.
//!
//! - [`expr_type`] gives the [`Type`](super::model::Type) of an expression in a [`Scope`] (or says why it has none);
//!   [`unary_type`], [`binary_type`] and [`cast_allowed`] are its operator rules.
//!   The verifier types each expression once through a variant of it that records the type of
//!   every subexpression, and the lowering reads that record
//!   ([`VerifiedModule::expr_type`](super::VerifiedModule::expr_type)).
//! - [`param_bindings`] lists the names a function's parameters introduce (parameters, tuple
//!   elements, symbolic variables) with their types; [`FunctionScope`] is a ready [`Scope`]
//!   over them that statements can extend ([`FunctionScope::bind`]); [`stmt_binding`] gives
//!   the name and type a statement binds.
//!
//! The rules (no implicit conversions anywhere):
//!
//! | expression | operands | type |
//! |---|---|---|
//! | `-a` | int, `f32` or `f64` | same |
//! | `!a` | bool | bool |
//! | `~a` | int | same |
//! | `+ - * /`, `min`, `max` | same int, `f32` or `f64` type | same |
//! | `% floordiv floormod ceil_div & \| ^ << >>` | same int type | same |
//! | `== !=` | same scalar type (bool, int, float, ptr) | bool |
//! | `< <= > >=` | same int or float type (`f16`, `bf16` too) | bool |
//! | `&& \|\|` | bool | bool |
//! | `select(c, a, b)` | `c` bool, `a`/`b` the same scalar type | that type |
//! | `cast<T>(a)` | see [`cast_allowed`] | `T` |
//! | `offset(p, n)` | `p` ptr, `n` i64 | ptr |
//! | `load<T>(p)` | `p` ptr | `T` |
//! | `is_none(x)` | `x` optional parameter or any value | bool |
//! | `x.data` / `x.shape[i]`, `x.strides[i]` / `x.ndim` / `x.dtype` / `x.device` / `x.device_type`, `x.device_id` / `x.byte_offset` | `x` tensor parameter, `i < ndim` | ptr / i64 / i32 / dtype / device / i32 / u64 |

mod bindings;
mod expr;

pub use bindings::{Binding, BindingKind, FunctionScope, SymSource, param_bindings, stmt_binding};
pub(crate) use expr::{ExprTypes, expr_type_recorded};
pub use expr::{
    Scope, TypeError, TypeErrorKind, binary_type, bindable, cast_allowed, expr_type, field_type,
    formattable, param_nullable, param_value_type, spelled_type, unary_type,
};
