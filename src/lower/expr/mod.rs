//! Expressions: values, operators with defined semantics (division, shifts, casts), tensor
//! fields, checked conversions of dynamically typed values.

use safecall_runtime::abi::{
    ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, DLTENSOR_BYTE_OFFSET_OFFSET, DLTENSOR_DATA_OFFSET,
    DLTENSOR_DEVICE_ID_OFFSET, DLTENSOR_DEVICE_TYPE_OFFSET, DLTENSOR_DTYPE_OFFSET,
    DLTENSOR_SHAPE_OFFSET, type_index as ti,
};

use crate::ir::{self, BinOp, Expr, FloatType, IntType, ScalarType, Strides, TensorField, UnOp};
use crate::lir::{self, ConvOp, FloatCC, IntCC, Ty, Var};

use super::context::{Binding, FnCtx, TensorBinding};
use super::layout::{compact_strides, effective_strides, int_lir_type, scalar_lir_type};
use super::options::LowerError;
use super::raise::{MsgPart, Tag};
use super::schema::{int_name, int_range, scalar_name};
use safecall_runtime::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};

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
    /// A value held in a `TVMFFIAny` at `any`.
    Ref { any: Var, ty: ir::Type },
    /// A tensor parameter.
    Tensor(TensorBinding),
    /// A string literal.
    Str(String),
}

/// Lowers an expression that must be a machine value.
pub(crate) fn lower_scalar(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    match lower_expr(fx, e)? {
        Val::Scalar(v, _) | Val::Device(v) | Val::DType(v) => Ok(v),
        other => Err(LowerError::internal(format!(
            "expected a scalar value, found {other:?}"
        ))),
    }
}

pub(crate) fn lower_ptr(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    match lower_expr(fx, e)? {
        Val::Scalar(v, ScalarType::Ptr) => Ok(v),
        Val::Str(s) => {
            let data = fx.m.cstring(s.as_bytes());
            Ok(fx.b.symbol_addr(lir::Symbol::Data(data)))
        }
        other => Err(LowerError::internal(format!(
            "expected a pointer, found {other:?}"
        ))),
    }
}

/// Lowers an expression.
pub(crate) fn lower_expr(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Val, LowerError> {
    Ok(match e {
        Expr::Int { value, ty } => {
            let var = fx.b.iconst(int_lir_type(*ty), *value);
            Val::Scalar(var, ScalarType::Int(*ty))
        }
        Expr::Float { bits, ty } => {
            let lty = if *ty == FloatType::F32 {
                Ty::F32
            } else {
                Ty::F64
            };
            Val::Scalar(fx.b.fconst(lty, *bits), ScalarType::Float(*ty))
        }
        Expr::Bool(b) => Val::Scalar(fx.b.iconst(Ty::I8, i64::from(*b)), ScalarType::Bool),
        Expr::Str(s) => Val::Str(s.clone()),
        Expr::Var(name) => match fx.lookup(name)? {
            Binding::Scalar { var, ty, guard } => {
                fx.check_present(&guard);
                Val::Scalar(var, ty)
            }
            Binding::Device { var, guard } => {
                fx.check_present(&guard);
                Val::Device(var)
            }
            Binding::DType { var, guard } => {
                fx.check_present(&guard);
                Val::DType(var)
            }
            Binding::Ref { any, ty, guard } => {
                fx.check_present(&guard);
                Val::Ref { any, ty }
            }
            Binding::Tensor(t) => {
                fx.check_present(&t.guard);
                Val::Tensor(t)
            }
            Binding::Sym { var, unbound_check } => {
                if let Some((flag, sym)) = unbound_check {
                    let message = format!(
                        "{}: symbolic variable `{sym}` is not bound: every tensor argument that binds it is None",
                        fx.func.name
                    );
                    fx.check(flag, VALUE_ERROR, |_| vec![MsgPart::Text(message)]);
                }
                Val::Scalar(var, ScalarType::Int(IntType::I64))
            }
            Binding::StrLit(s) => Val::Str(s),
            Binding::Unit => return Err(LowerError::limit(format!("`{name}` has no value"))),
        },
        Expr::Field { tensor, field } => lower_field(fx, tensor, *field)?,
        Expr::Unary { op, arg } => {
            let (v, ty) = scalar_of(lower_expr(fx, arg)?)?;
            let out = match (op, ty) {
                (UnOp::Neg, ScalarType::Float(_)) => fx.b.unary(lir::UnOp::Fneg, v),
                (UnOp::Neg, _) => fx.b.unary(lir::UnOp::Ineg, v),
                (UnOp::Not, _) => fx.b.binary_imm(lir::BinOp::Xor, v, 1),
                (UnOp::BitNot, _) => fx.b.unary(lir::UnOp::Bnot, v),
            };
            Val::Scalar(out, ty)
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
            Val::Scalar(result, ScalarType::Bool)
        }
        Expr::Binary { op, lhs, rhs } => {
            let l = lower_expr(fx, lhs)?;
            let r = lower_expr(fx, rhs)?;
            let constant_rhs = match **rhs {
                Expr::Int { value, .. } => Some(value),
                _ => None,
            };
            lower_binary(fx, *op, l, r, constant_rhs)?
        }
        Expr::Select {
            cond,
            then_value,
            else_value,
        } => {
            let c = lower_scalar(fx, cond)?;
            let a = lower_expr(fx, then_value)?;
            let b = lower_expr(fx, else_value)?;
            match (a, b) {
                (Val::Scalar(a, ty), Val::Scalar(b, _)) => Val::Scalar(fx.b.select(c, a, b), ty),
                (Val::Device(a), Val::Device(b)) => Val::Device(fx.b.select(c, a, b)),
                (Val::DType(a), Val::DType(b)) => Val::DType(fx.b.select(c, a, b)),
                _ => {
                    return Err(LowerError::internal(
                        "select arms must be scalar values of one type",
                    ));
                }
            }
        }
        Expr::Cast { ty, arg } => {
            let v = lower_expr(fx, arg)?;
            lower_cast(fx, *ty, v)?
        }
        Expr::PtrOffset { ptr, offset } => {
            let p = lower_ptr(fx, ptr)?;
            let off = lower_scalar(fx, offset)?;
            Val::Scalar(fx.b.ptr_add(p, off), ScalarType::Ptr)
        }
        Expr::Load { ty, ptr } => {
            let p = lower_ptr(fx, ptr)?;
            Val::Scalar(fx.b.load(scalar_lir_type(*ty), p, 0), *ty)
        }
        Expr::IsNone(name) => {
            let flag = match fx.lookup(name)? {
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
            };
            Val::Scalar(flag, ScalarType::Bool)
        }
    })
}

fn scalar_of(v: Val) -> Result<(Var, ScalarType), LowerError> {
    match v {
        Val::Scalar(var, ty) => Ok((var, ty)),
        other => Err(LowerError::internal(format!(
            "expected a scalar value, found {other:?}"
        ))),
    }
}

fn lower_field(
    fx: &mut FnCtx<'_, '_>,
    tensor: &str,
    field: TensorField,
) -> Result<Val, LowerError> {
    let Binding::Tensor(t) = fx.lookup(tensor)? else {
        return Err(LowerError::internal(format!(
            "`{tensor}` is not a tensor parameter"
        )));
    };
    fx.check_present(&t.guard);
    let dl = t.dl;
    let ndim = t.spec.shape.len();
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
    let i64t = ScalarType::Int(IntType::I64);
    Ok(match field {
        TensorField::Data => Val::Scalar(
            fx.b.load(Ty::Ptr, dl, DLTENSOR_DATA_OFFSET),
            ScalarType::Ptr,
        ),
        TensorField::Shape(k) => {
            if k >= ndim {
                return Err(LowerError::internal(format!(
                    "{tensor}.shape[{k}] is out of range (ndim {ndim})"
                )));
            }
            let v = match &t.shape {
                Some(d) => d[k],
                None => {
                    let shape_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
                    fx.b.load(Ty::I64, shape_ptr, k * 8)
                }
            };
            Val::Scalar(v, i64t)
        }
        TensorField::Stride(k) => {
            if k >= ndim {
                return Err(LowerError::internal(format!(
                    "{tensor}.strides[{k}] is out of range (ndim {ndim})"
                )));
            }
            let d = dims(fx);
            let strides = match t.spec.strides {
                Strides::Compact => compact_strides(fx, &d),
                _ => effective_strides(fx, dl, &d),
            };
            Val::Scalar(strides[k], i64t)
        }
        TensorField::NDim => Val::Scalar(
            fx.b.iconst(Ty::I32, ndim as i64),
            ScalarType::Int(IntType::I32),
        ),
        TensorField::DType => Val::DType(fx.b.load(Ty::I32, dl, DLTENSOR_DTYPE_OFFSET)),
        TensorField::Device => Val::Device(fx.b.load(Ty::I64, dl, DLTENSOR_DEVICE_TYPE_OFFSET)),
        TensorField::DeviceType => Val::Scalar(
            fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_TYPE_OFFSET),
            ScalarType::Int(IntType::I32),
        ),
        TensorField::DeviceId => Val::Scalar(
            fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_ID_OFFSET),
            ScalarType::Int(IntType::I32),
        ),
        TensorField::ByteOffset => Val::Scalar(
            fx.b.load(Ty::I64, dl, DLTENSOR_BYTE_OFFSET_OFFSET),
            ScalarType::Int(IntType::U64),
        ),
    })
}

/// A binary operation; `constant_rhs` is the right operand when it is an integer literal
/// (a division by a non-zero constant needs no zero check).
fn lower_binary(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    l: Val,
    r: Val,
    constant_rhs: Option<i64>,
) -> Result<Val, LowerError> {
    use lir::BinOp as L;
    // Devices and dtypes compare by their packed bits.
    if let (Val::Device(a), Val::Device(b)) | (Val::DType(a), Val::DType(b)) = (&l, &r) {
        let cc = match op {
            BinOp::Eq => IntCC::Eq,
            BinOp::Ne => IntCC::Ne,
            _ => {
                return Err(LowerError::internal(format!(
                    "operator {op:?} is not defined on devices or dtypes"
                )));
            }
        };
        return Ok(Val::Scalar(fx.b.icmp(cc, *a, *b), ScalarType::Bool));
    }
    let (a, ty) = scalar_of(l)?;
    let (b, _) = scalar_of(r)?;
    let bool_ty = ScalarType::Bool;
    if let ScalarType::Float(_) = ty {
        let arith = |op| Some(op);
        let lop = match op {
            BinOp::Add => arith(L::Fadd),
            BinOp::Sub => arith(L::Fsub),
            BinOp::Mul => arith(L::Fmul),
            BinOp::Div => arith(L::Fdiv),
            BinOp::Min => arith(L::Fmin),
            BinOp::Max => arith(L::Fmax),
            _ => None,
        };
        if let Some(lop) = lop {
            return Ok(Val::Scalar(fx.b.binary(lop, a, b), ty));
        }
        let cc = match op {
            BinOp::Eq => FloatCC::Eq,
            BinOp::Ne => FloatCC::Ne,
            BinOp::Lt => FloatCC::Lt,
            BinOp::Le => FloatCC::Le,
            BinOp::Gt => FloatCC::Gt,
            BinOp::Ge => FloatCC::Ge,
            _ => {
                return Err(LowerError::internal(format!(
                    "operator {op:?} is not defined on floats"
                )));
            }
        };
        return Ok(Val::Scalar(fx.b.fcmp(cc, a, b), bool_ty));
    }
    let signed = match ty {
        ScalarType::Int(t) => t.is_signed(),
        _ => false,
    };
    let cmp = |cc_s: IntCC, cc_u: IntCC| if signed { cc_s } else { cc_u };
    let out = match op {
        BinOp::Add => fx.b.binary(L::Iadd, a, b),
        BinOp::Sub => fx.b.binary(L::Isub, a, b),
        BinOp::Mul => fx.b.binary(L::Imul, a, b),
        BinOp::Div | BinOp::Rem | BinOp::FloorDiv | BinOp::FloorMod | BinOp::CeilDiv => {
            return Ok(Val::Scalar(
                lower_division(fx, op, a, b, signed, constant_rhs),
                ty,
            ));
        }
        BinOp::Min => fx.b.binary(if signed { L::Smin } else { L::Umin }, a, b),
        BinOp::Max => fx.b.binary(if signed { L::Smax } else { L::Umax }, a, b),
        BinOp::BitAnd => fx.b.binary(L::And, a, b),
        BinOp::BitOr => fx.b.binary(L::Or, a, b),
        BinOp::BitXor => fx.b.binary(L::Xor, a, b),
        BinOp::Shl | BinOp::Shr => {
            // The amount is taken modulo the bit width.
            let width = i64::from(fx.b.ty(a).bytes() * 8);
            let amount = fx.b.binary_imm(L::And, b, width - 1);
            let lop = match (op, signed) {
                (BinOp::Shl, _) => L::Shl,
                (_, true) => L::Sshr,
                (_, false) => L::Ushr,
            };
            fx.b.binary(lop, a, amount)
        }
        BinOp::Eq => return Ok(Val::Scalar(fx.b.icmp(IntCC::Eq, a, b), bool_ty)),
        BinOp::Ne => return Ok(Val::Scalar(fx.b.icmp(IntCC::Ne, a, b), bool_ty)),
        BinOp::Lt => {
            return Ok(Val::Scalar(
                fx.b.icmp(cmp(IntCC::Slt, IntCC::Ult), a, b),
                bool_ty,
            ));
        }
        BinOp::Le => {
            return Ok(Val::Scalar(
                fx.b.icmp(cmp(IntCC::Sle, IntCC::Ule), a, b),
                bool_ty,
            ));
        }
        BinOp::Gt => {
            return Ok(Val::Scalar(
                fx.b.icmp(cmp(IntCC::Sgt, IntCC::Ugt), a, b),
                bool_ty,
            ));
        }
        BinOp::Ge => {
            return Ok(Val::Scalar(
                fx.b.icmp(cmp(IntCC::Sge, IntCC::Uge), a, b),
                bool_ty,
            ));
        }
        BinOp::And | BinOp::Or => unreachable!("short-circuit operators are lowered by lower_expr"),
    };
    Ok(Val::Scalar(out, ty))
}

/// Integer division family with defined semantics: division by zero raises a ValueError,
/// `MIN / -1` wraps to `MIN` and `MIN % -1` is 0 (never a hardware trap).
fn lower_division(
    fx: &mut FnCtx<'_, '_>,
    op: BinOp,
    a: Var,
    b: Var,
    signed: bool,
    constant: Option<i64>,
) -> Var {
    use lir::BinOp as L;
    let ty = fx.b.ty(a);
    if constant.is_none_or(|c| c == 0) {
        let nonzero = fx.b.icmp_imm(IntCC::Ne, b, 0);
        fx.check(nonzero, VALUE_ERROR, |fx| {
            vec![
                MsgPart::Text(format!(
                    "{}: integer division by zero: `{}` divides ",
                    fx.func.name,
                    fx.current_stmt_text()
                )),
                MsgPart::Value(if signed { Tag::I64 } else { Tag::U64 }, a),
                MsgPart::text(" by 0"),
            ]
        });
    }
    // A constant divisor other than -1 (in the operand's width) cannot overflow.
    let may_overflow =
        signed && constant.is_none_or(|c| c == -1 || c & lane_mask(ty) == lane_mask(ty));
    let (q, r) = if signed && !may_overflow {
        (fx.b.binary(L::Sdiv, a, b), fx.b.binary(L::Srem, a, b))
    } else if signed {
        let minus_one = fx.b.icmp_imm(IntCC::Eq, b, -1);
        let one = fx.b.iconst(ty, 1);
        let safe = fx.b.select(minus_one, one, b);
        let q = fx.b.binary(L::Sdiv, a, safe);
        let neg = fx.b.unary(lir::UnOp::Ineg, a);
        let q = fx.b.select(minus_one, neg, q);
        let r0 = fx.b.binary(L::Srem, a, safe);
        let zero = fx.b.iconst(ty, 0);
        let r = fx.b.select(minus_one, zero, r0);
        (q, r)
    } else {
        (fx.b.binary(L::Udiv, a, b), fx.b.binary(L::Urem, a, b))
    };
    let rem_nonzero = fx.b.icmp_imm(IntCC::Ne, r, 0);
    match op {
        BinOp::Div => q,
        BinOp::Rem => r,
        BinOp::FloorDiv | BinOp::FloorMod if signed => {
            // Adjust when the remainder is non-zero and its sign differs from the divisor's.
            let x = fx.b.binary(L::Xor, r, b);
            let differ = fx.b.icmp_imm(IntCC::Slt, x, 0);
            let adjust = fx.b.binary(L::And, rem_nonzero, differ);
            if op == BinOp::FloorDiv {
                let q1 = fx.b.binary_imm(L::Isub, q, 1);
                fx.b.select(adjust, q1, q)
            } else {
                let r1 = fx.b.binary(L::Iadd, r, b);
                fx.b.select(adjust, r1, r)
            }
        }
        BinOp::FloorDiv => q,
        BinOp::FloorMod => r,
        BinOp::CeilDiv => {
            let bump = if signed {
                let x = fx.b.binary(L::Xor, r, b);
                let same = fx.b.icmp_imm(IntCC::Sge, x, 0);
                fx.b.binary(L::And, rem_nonzero, same)
            } else {
                rem_nonzero
            };
            let q1 = fx.b.binary_imm(L::Iadd, q, 1);
            fx.b.select(bump, q1, q)
        }
        _ => unreachable!("not a division operator"),
    }
}

/// All ones in the width of an integer type (as an `i64`).
fn lane_mask(ty: Ty) -> i64 {
    match ty.bytes() {
        8 => -1,
        n => (1i64 << (n * 8)) - 1,
    }
}

fn lower_cast(fx: &mut FnCtx<'_, '_>, to: ScalarType, v: Val) -> Result<Val, LowerError> {
    let (var, from) = match v {
        Val::Scalar(var, from) => (var, from),
        Val::Ref { any, .. } | Val::Tensor(TensorBinding { any, .. }) => {
            return Ok(Val::Scalar(unpack_any(fx, any, to), to));
        }
        other => return Err(LowerError::internal(format!("cannot cast {other:?}"))),
    };
    let target = scalar_lir_type(to);
    let out = match (from, to) {
        _ if from == to => var,
        (ScalarType::Int(f), ScalarType::Int(_)) => fx.b.resize(var, target, f.is_signed()),
        (ScalarType::Bool, ScalarType::Int(_)) => fx.b.resize(var, target, false),
        (ScalarType::Int(_), ScalarType::Bool) => fx.b.icmp_imm(IntCC::Ne, var, 0),
        (ScalarType::Float(_), ScalarType::Bool) => {
            let zero = fx.b.fconst(fx.b.ty(var), 0);
            fx.b.fcmp(FloatCC::Ne, var, zero)
        }
        (ScalarType::Bool, ScalarType::Float(_)) => fx.b.convert(ConvOp::UtoF, var, target),
        (ScalarType::Int(f), ScalarType::Float(_)) => fx.b.convert(
            if f.is_signed() {
                ConvOp::StoF
            } else {
                ConvOp::UtoF
            },
            var,
            target,
        ),
        (ScalarType::Float(_), ScalarType::Int(t)) => fx.b.convert(
            if t.is_signed() {
                ConvOp::FtoSsat
            } else {
                ConvOp::FtoUsat
            },
            var,
            target,
        ),
        (ScalarType::Float(FloatType::F32), ScalarType::Float(FloatType::F64)) => {
            fx.b.convert(ConvOp::Fpromote, var, target)
        }
        (ScalarType::Float(FloatType::F64), ScalarType::Float(FloatType::F32)) => {
            fx.b.convert(ConvOp::Fdemote, var, target)
        }
        (ScalarType::Ptr, ScalarType::Int(_)) => {
            let wide = fx.b.convert(ConvOp::PtrToInt, var, Ty::I64);
            fx.b.resize(wide, target, false)
        }
        (ScalarType::Int(f), ScalarType::Ptr) => {
            let wide = fx.b.resize(var, Ty::I64, f.is_signed());
            fx.b.convert(ConvOp::IntToPtr, wide, Ty::Ptr)
        }
        (from, to) => {
            return Err(LowerError::internal(format!(
                "cannot cast {} to {}",
                scalar_name(from),
                scalar_name(to)
            )));
        }
    };
    Ok(Val::Scalar(out, to))
}

/// A checked conversion of a dynamically typed value to a scalar (TypeError / ValueError).
fn unpack_any(fx: &mut FnCtx<'_, '_>, any: Var, to: ScalarType) -> Var {
    let index = fx.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
    let is = |fx: &mut FnCtx<'_, '_>, i: i32| fx.b.icmp_imm(IntCC::Eq, index, i64::from(i));
    let prefix = format!("{}: in `{}`: ", fx.func.name, fx.current_stmt_text());
    let name = scalar_name(to);
    let type_check = |fx: &mut FnCtx<'_, '_>, ok: Var| {
        let msg = format!("{prefix}cannot convert a value of type ");
        fx.check(ok, TYPE_ERROR, |_| {
            vec![
                MsgPart::Text(msg),
                MsgPart::Value(Tag::TypeIndex, index),
                MsgPart::text(format!(" to {name}")),
            ]
        });
    };
    match to {
        ScalarType::Int(t) => {
            let a = is(fx, ti::INT);
            let b = is(fx, ti::BOOL);
            let ok = fx.b.binary(lir::BinOp::Or, a, b);
            type_check(fx, ok);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let (lo, hi) = int_range(t);
            if (lo, hi) != (i64::MIN, i64::MAX) {
                let ge = fx.b.icmp_imm(IntCC::Sge, raw, lo);
                let le = fx.b.icmp_imm(IntCC::Sle, raw, hi);
                let ok = fx.b.binary(lir::BinOp::And, ge, le);
                let tn = int_name(t);
                fx.check(ok, VALUE_ERROR, |_| {
                    vec![
                        MsgPart::Text(prefix.clone()),
                        MsgPart::Value(Tag::I64, raw),
                        MsgPart::text(format!(" is out of range for {tn} [{lo}, {hi}]")),
                    ]
                });
            }
            fx.b.resize(raw, int_lir_type(t), true)
        }
        ScalarType::Bool => {
            let a = is(fx, ti::INT);
            let b = is(fx, ti::BOOL);
            let ok = fx.b.binary(lir::BinOp::Or, a, b);
            type_check(fx, ok);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            fx.b.icmp_imm(IntCC::Ne, raw, 0)
        }
        ScalarType::Float(ft) => {
            let is_float = is(fx, ti::FLOAT);
            let a = is(fx, ti::INT);
            let b = is(fx, ti::BOOL);
            let is_int = fx.b.binary(lir::BinOp::Or, a, b);
            let ok = fx.b.binary(lir::BinOp::Or, is_float, is_int);
            type_check(fx, ok);
            let as_float = fx.b.load(Ty::F64, any, ANY_VALUE_OFFSET);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let from_int = fx.b.convert(ConvOp::StoF, raw, Ty::F64);
            let wide = fx.b.select(is_float, as_float, from_int);
            match ft {
                FloatType::F64 => wide,
                FloatType::F32 => fx.b.convert(ConvOp::Fdemote, wide, Ty::F32),
            }
        }
        ScalarType::Ptr => {
            let a = is(fx, ti::OPAQUE_PTR);
            let b = is(fx, ti::NONE);
            let ok = fx.b.binary(lir::BinOp::Or, a, b);
            type_check(fx, ok);
            fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET)
        }
    }
}
