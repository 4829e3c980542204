//! Casts: conversions between scalar types (by the rules of `ir::typing::cast_allowed`), and
//! the checked conversion of a dynamically typed value (TypeError / ValueError).

use safecall_runtime::abi::{ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, type_index as ti};

use crate::ir::{FloatType, ScalarType};
use crate::lir::{self, ConvOp, FloatCC, IntCC, Ty, Var};

use super::super::context::FnCtx;
use super::super::layout::{int_lir_type, scalar_lir_type};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::super::schema::{int_name, int_range, scalar_name};
use safecall_runtime::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};

/// `cast<to>(var)` for a `var` of scalar type `from`.
pub(super) fn convert(
    fx: &mut FnCtx<'_, '_>,
    var: Var,
    from: ScalarType,
    to: ScalarType,
) -> Result<Var, LowerError> {
    let target = scalar_lir_type(to);
    Ok(match (from, to) {
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
    })
}

/// A checked conversion of a dynamically typed value to a scalar (TypeError / ValueError).
pub(super) fn unpack_any(fx: &mut FnCtx<'_, '_>, any: Var, to: ScalarType) -> Var {
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
