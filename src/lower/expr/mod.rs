//! Expressions: values typed as the verifier recorded them (`FnCtx::expr_type`), operators with
//! defined semantics (`arith`), casts (`cast`), tensor fields, and writing values into
//! `TVMFFIAny` slots (`values`).

use safecall_runtime::abi::{
    ANY_TYPE_INDEX_OFFSET, DLTENSOR_BYTE_OFFSET_OFFSET, DLTENSOR_DATA_OFFSET,
    DLTENSOR_DEVICE_ID_OFFSET, DLTENSOR_DEVICE_TYPE_OFFSET, DLTENSOR_DTYPE_OFFSET,
    DLTENSOR_NDIM_OFFSET, DLTENSOR_SHAPE_OFFSET, type_index as ti,
};

use crate::ir::{self, BinOp, Expr, ScalarType, TensorField, UnOp, typing};
use crate::lir::{self, IntCC, Ty, Var};

use super::context::{Binding, FnCtx, TensorBinding};
use super::layout::{declared_strides, int_lir_type, scalar_lir_type};
use super::options::LowerError;
use super::raise::MsgPart;
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

mod arith;
mod cast;
mod values;

pub(crate) use values::{copy_any, write_pod, write_scalar_any};

/// The value of an expression.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// A machine value of an IR scalar type.
    Scalar(Var, ScalarType),
    /// A device (`I64`, packed).
    Device(Var),
    /// A dtype (`I32`, packed).
    DType(Var),
    /// A value held in a `TVMFFIAny` at `any` (its type is the expression's).
    Ref { any: Var },
    /// A tensor parameter.
    Tensor(TensorBinding),
    /// A string literal.
    Str(String),
}

impl Val {
    /// The machine value `var` of an expression of type `ty`.
    fn machine(var: Var, ty: &ir::Type) -> Result<Val, LowerError> {
        match ty {
            ir::Type::Scalar(s) => Ok(Val::Scalar(var, *s)),
            ir::Type::Device => Ok(Val::Device(var)),
            ir::Type::DType => Ok(Val::DType(var)),
            other @ (ir::Type::Str
            | ir::Type::Bytes
            | ir::Type::Shape
            | ir::Type::Func
            | ir::Type::Tensor
            | ir::Type::Any) => Err(LowerError::internal(format!(
                "a value of type {other} is not a machine value"
            ))),
        }
    }
}

/// Lowers an expression that must be a machine value.
pub(crate) fn lower_scalar(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    Ok(lower_machine(fx, e)?.0)
}

/// Lowers an expression that must be a machine value, with its type.
fn lower_machine(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<(Var, ir::Type), LowerError> {
    match lower_expr(fx, e)? {
        Val::Scalar(v, s) => Ok((v, ir::Type::Scalar(s))),
        Val::Device(v) => Ok((v, ir::Type::Device)),
        Val::DType(v) => Ok((v, ir::Type::DType)),
        other @ (Val::Ref { .. } | Val::Tensor(_) | Val::Str(_)) => Err(LowerError::internal(
            format!("expected a scalar value, found {other:?}"),
        )),
    }
}

/// Lowers an expression that must be a pointer (a `ptr` value, or a string literal's address).
pub(crate) fn lower_ptr(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    match lower_expr(fx, e)? {
        Val::Scalar(v, ScalarType::Ptr) => Ok(v),
        Val::Str(s) => {
            let data = fx.m.cstring(s.as_bytes());
            Ok(fx.b.symbol_addr(lir::Symbol::Data(data)))
        }
        other @ (Val::Scalar(..)
        | Val::Device(_)
        | Val::DType(_)
        | Val::Ref { .. }
        | Val::Tensor(_)) => Err(LowerError::internal(format!(
            "expected a pointer, found {other:?}"
        ))),
    }
}

/// Lowers an expression, with the type the verifier recorded for it.
pub(crate) fn lower_expr(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Val, LowerError> {
    let ty = fx.expr_type(e)?;
    match e {
        Expr::Int { value, ty: int } => Val::machine(fx.b.iconst(int_lir_type(*int), *value), &ty),
        Expr::Float { bits, ty: float } => match float {
            ir::FloatType::F32 | ir::FloatType::F64 => {
                let lty = scalar_lir_type(ScalarType::Float(*float));
                Val::machine(fx.b.fconst(lty, *bits), &ty)
            }
            // A half is its bits (the verifier checked that the type holds the value).
            ir::FloatType::F16 | ir::FloatType::BF16 => {
                let h = ir::half::round_f64_bits(*bits, *float);
                Val::machine(fx.b.iconst(Ty::I16, i64::from(h)), &ty)
            }
        },
        Expr::Bool(b) => Val::machine(fx.b.iconst(Ty::I8, i64::from(*b)), &ty),
        Expr::Str(s) => Ok(Val::Str(s.clone())),
        Expr::Var(name) => lower_var(fx, name, ty),
        Expr::Field { tensor, field } => lower_field(fx, tensor, *field, &ty),
        Expr::Unary { op, arg } => {
            let v = lower_scalar(fx, arg)?;
            let out = match (op, &ty) {
                (UnOp::Neg, ir::Type::Scalar(ScalarType::Float(f))) if f.is_half() => {
                    return Err(LowerError::internal(format!(
                        "negation is not defined on {}",
                        f.keyword()
                    )));
                }
                (UnOp::Neg, ir::Type::Scalar(ScalarType::Float(_))) => {
                    fx.b.unary(lir::UnOp::Fneg, v)
                }
                (UnOp::Neg, _) => fx.b.unary(lir::UnOp::Ineg, v),
                (UnOp::Not, _) => fx.b.binary_imm(lir::BinOp::Xor, v, 1),
                (UnOp::BitNot, _) => fx.b.unary(lir::UnOp::Bnot, v),
            };
            Val::machine(out, &ty)
        }
        Expr::Binary {
            op: op @ (BinOp::And | BinOp::Or),
            lhs,
            rhs,
        } => {
            // Short-circuit: the right operand is evaluated only when it decides the result.
            let l = lower_scalar(fx, lhs)?;
            let result = fx.b.mutable_var(Ty::I8);
            fx.b.assign(result, l);
            let eval_rhs = fx.b.new_block();
            let join = fx.b.new_block();
            if *op == BinOp::And {
                fx.b.branch(l, eval_rhs, join);
            } else {
                fx.b.branch(l, join, eval_rhs);
            }
            fx.b.switch_to(eval_rhs);
            let r = lower_scalar(fx, rhs)?;
            fx.b.assign(result, r);
            fx.b.jump(join);
            fx.b.switch_to(join);
            Val::machine(result, &ty)
        }
        Expr::Binary { op, lhs, rhs } => {
            let (a, operand) = lower_machine(fx, lhs)?;
            let b = lower_scalar(fx, rhs)?;
            let constant_rhs = if let Expr::Int { value, .. } = **rhs {
                Some(value)
            } else {
                None
            };
            let out = arith::lower_binary(fx, *op, &operand, a, b, constant_rhs)?;
            Val::machine(out, &ty)
        }
        Expr::Select {
            cond,
            then_value,
            else_value,
        } => {
            let c = lower_scalar(fx, cond)?;
            let a = lower_scalar(fx, then_value)?;
            let b = lower_scalar(fx, else_value)?;
            Val::machine(fx.b.select(c, a, b), &ty)
        }
        Expr::Cast { ty: to, arg } => {
            let out = match lower_expr(fx, arg)? {
                Val::Scalar(v, from) => cast::convert(fx, v, from, *to)?,
                // A value of type any, checked at run time.
                Val::Ref { any } => cast::unpack_any(fx, any, *to),
                other @ (Val::Device(_) | Val::DType(_) | Val::Tensor(_) | Val::Str(_)) => {
                    return Err(LowerError::internal(format!("cannot cast {other:?}")));
                }
            };
            Val::machine(out, &ty)
        }
        Expr::PtrOffset { ptr, offset } => {
            let p = lower_ptr(fx, ptr)?;
            let off = lower_scalar(fx, offset)?;
            Val::machine(fx.b.ptr_add(p, off), &ty)
        }
        Expr::Load { ty: loaded, ptr } => {
            let p = lower_ptr(fx, ptr)?;
            Val::machine(fx.b.load(scalar_lir_type(*loaded), p, 0), &ty)
        }
        Expr::IsNone(name) => {
            let flag = is_none(fx, name)?;
            Val::machine(flag, &ty)
        }
    }
}

/// A name's value; `ty` is the type the verifier recorded for the use.
fn lower_var(fx: &mut FnCtx<'_, '_>, name: &str, ty: ir::Type) -> Result<Val, LowerError> {
    match fx.lookup(name)? {
        Binding::Scalar { var, guard, .. }
        | Binding::Device { var, guard }
        | Binding::DType { var, guard } => {
            fx.check_present(&guard);
            Val::machine(var, &ty)
        }
        Binding::Ref { any, guard, .. } => {
            fx.check_present(&guard);
            Ok(Val::Ref { any })
        }
        Binding::Tensor(t) => {
            fx.check_present(&t.guard);
            Ok(Val::Tensor(t))
        }
        Binding::Sym { var, unbound_check } => {
            if let Some((flag, sym)) = unbound_check {
                let message = format!(
                    "{}: symbolic variable `{sym}` is not bound: every tensor argument that binds it is None",
                    fx.func.name
                );
                fx.check(flag, VALUE_ERROR, |_| vec![MsgPart::Text(message)]);
            }
            Val::machine(var, &ty)
        }
        Binding::StrLit(s) => Ok(Val::Str(s)),
        Binding::Unit => Err(LowerError::limit(format!("`{name}` has no value"))),
    }
}

/// `is_none(name)`: an `I8` flag.
fn is_none(fx: &mut FnCtx<'_, '_>, name: &str) -> Result<Var, LowerError> {
    Ok(match fx.lookup(name)? {
        Binding::Scalar { guard, .. }
        | Binding::Device { guard, .. }
        | Binding::DType { guard, .. }
        | Binding::Tensor(TensorBinding { guard, .. }) => match guard {
            Some(g) => g.is_none,
            None => fx.b.iconst(Ty::I8, 0),
        },
        Binding::Ref { any, guard, .. } => match guard {
            Some(g) => g.is_none,
            None => {
                let index = fx.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
                fx.b.icmp_imm(IntCC::Eq, index, i64::from(ti::NONE))
            }
        },
        Binding::Unit => fx.b.iconst(Ty::I8, 1),
        Binding::Sym { .. } | Binding::StrLit(_) => fx.b.iconst(Ty::I8, 0),
    })
}

/// Field `field` of tensor parameter `tensor`, for a use the IR does not spell (a default
/// the lowering fills in): typed by the typing rules ([`typing::field_type`]).
pub(crate) fn lower_tensor_field(
    fx: &mut FnCtx<'_, '_>,
    tensor: &str,
    field: TensorField,
) -> Result<Val, LowerError> {
    lower_field(fx, tensor, field, &typing::field_type(field))
}

/// [`lower_tensor_field`] of a scalar field (data, shape, strides, byte offset) as its
/// machine value.
pub(crate) fn lower_tensor_scalar(
    fx: &mut FnCtx<'_, '_>,
    tensor: &str,
    field: TensorField,
) -> Result<Var, LowerError> {
    let v = lower_tensor_field(fx, tensor, field)?;
    scalar_var(v, || format!("{tensor}: field {field:?}"))
}

/// A value the verifier made a scalar or a pointer, as its machine value (`what` names it in
/// the internal error of any other).
pub(crate) fn scalar_var(v: Val, what: impl FnOnce() -> String) -> Result<Var, LowerError> {
    match v {
        Val::Scalar(v, _) => Ok(v),
        other @ (Val::Device(_)
        | Val::DType(_)
        | Val::Ref { .. }
        | Val::Tensor(_)
        | Val::Str(_)) => Err(LowerError::internal(format!(
            "{} is not a scalar: {other:?}",
            what()
        ))),
    }
}

/// Field `field` of tensor parameter `tensor`, of type `ty`. The loads have the widths of the
/// DLTensor fields; the typing rules give each field the type of its width.
fn lower_field(
    fx: &mut FnCtx<'_, '_>,
    tensor: &str,
    field: TensorField,
    ty: &ir::Type,
) -> Result<Val, LowerError> {
    let Binding::Tensor(t) = fx.lookup(tensor)? else {
        return Err(LowerError::internal(format!(
            "`{tensor}` is not a tensor parameter"
        )));
    };
    fx.check_present(&t.guard);
    let dl = t.dl;
    // A tensor of any rank has no dims to index (the verifier refuses `shape[i]` there).
    let ndim = t.spec.shape.dims().len();
    let dims = |fx: &mut FnCtx<'_, '_>| -> Vec<Var> {
        match &t.shape {
            Some(dims) => dims.clone(),
            None => {
                let shape_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
                (0..ndim)
                    .map(|k| fx.b.load(Ty::I64, shape_ptr, k * 8))
                    .collect()
            }
        }
    };
    let var = match field {
        TensorField::Data => fx.b.load(Ty::Ptr, dl, DLTENSOR_DATA_OFFSET),
        TensorField::Shape(k) => {
            if k >= ndim {
                return Err(LowerError::internal(format!(
                    "{tensor}.shape[{k}] is out of range (ndim {ndim})"
                )));
            }
            match &t.shape {
                Some(d) => d[k],
                None => {
                    let shape_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
                    fx.b.load(Ty::I64, shape_ptr, k * 8)
                }
            }
        }
        TensorField::Stride(k) => {
            if k >= ndim {
                return Err(LowerError::internal(format!(
                    "{tensor}.strides[{k}] is out of range (ndim {ndim})"
                )));
            }
            let d = dims(fx);
            declared_strides(fx, dl, &t.spec.strides, &d)[k]
        }
        TensorField::NDim => match t.spec.shape.rank() {
            Some(rank) => fx.b.iconst(Ty::I32, rank as i64),
            None => fx.b.load(Ty::I32, dl, DLTENSOR_NDIM_OFFSET),
        },
        TensorField::DType => fx.b.load(Ty::I32, dl, DLTENSOR_DTYPE_OFFSET),
        // `device_type` and `device_id` together, packed.
        TensorField::Device => fx.b.load(Ty::I64, dl, DLTENSOR_DEVICE_TYPE_OFFSET),
        TensorField::DeviceType => fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_TYPE_OFFSET),
        TensorField::DeviceId => fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_ID_OFFSET),
        TensorField::ByteOffset => fx.b.load(Ty::I64, dl, DLTENSOR_BYTE_OFFSET_OFFSET),
    };
    Val::machine(var, ty)
}
