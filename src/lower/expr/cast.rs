//! Casts: conversions between scalar types (by the rules of `ir::typing::cast_allowed`), and
//! the checked conversion of a dynamically typed value (TypeError / ValueError).

use safecall_runtime::abi::{ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, type_index as ti};

use crate::ir::{FloatType, IntType, ScalarType};
use crate::lir::{self, ConvOp, FloatCC, IntCC, Ty, Var};

use super::super::big_int;
use super::super::context::FnCtx;
use super::super::half;
use super::super::layout::{int_lir_type, scalar_lir_type};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::super::schema::{int_range, out_of_range_text, scalar_name};
use safecall_runtime::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};

/// `cast<to>(var)` for a `var` of scalar type `from`. Every pair of types has its arm; the
/// pairs the typing rules refuse are internal errors here.
pub(super) fn convert(
    fx: &mut FnCtx<'_, '_>,
    var: Var,
    from: ScalarType,
    to: ScalarType,
) -> Result<Var, LowerError> {
    use FloatType as F;
    use ScalarType as S;
    let target = scalar_lir_type(to);
    let refused = || {
        Err(LowerError::internal(format!(
            "cannot cast {} to {}",
            scalar_name(from),
            scalar_name(to)
        )))
    };
    Ok(match (from, to) {
        (S::Bool, S::Bool) | (S::Ptr, S::Ptr) => var,
        (S::Int(f), S::Int(_)) => fx.b.resize(var, target, f.is_signed()),
        (S::Bool, S::Int(_)) => fx.b.resize(var, target, false),
        (S::Int(_), S::Bool) => fx.b.icmp_imm(IntCC::Ne, var, 0),
        (S::Float(F::F32 | F::F64), S::Bool) => {
            let zero = fx.b.fconst(fx.b.ty(var), 0);
            fx.b.fcmp(FloatCC::Ne, var, zero)
        }
        (S::Bool, S::Float(F::F32 | F::F64)) => fx.b.convert(ConvOp::UtoF, var, target),
        (S::Int(f), S::Float(F::F32 | F::F64)) => fx.b.convert(
            if f.is_signed() {
                ConvOp::StoF
            } else {
                ConvOp::UtoF
            },
            var,
            target,
        ),
        (S::Float(F::F32 | F::F64), S::Int(t)) => fx.b.convert(
            if t.is_signed() {
                ConvOp::FtoSsat
            } else {
                ConvOp::FtoUsat
            },
            var,
            target,
        ),
        (S::Float(a), S::Float(b)) => float_to_float(fx, var, a, b),
        (S::Ptr, S::Int(_)) => {
            let wide = fx.b.convert(ConvOp::PtrToInt, var, Ty::I64);
            fx.b.resize(wide, target, false)
        }
        (S::Int(f), S::Ptr) => {
            let wide = fx.b.resize(var, Ty::I64, f.is_signed());
            fx.b.convert(ConvOp::IntToPtr, wide, Ty::Ptr)
        }
        // Halves convert only between floats; pointers only to and from integers.
        (S::Float(F::F16 | F::BF16), S::Int(_) | S::Bool)
        | (S::Int(_) | S::Bool, S::Float(F::F16 | F::BF16))
        | (S::Bool | S::Float(_), S::Ptr)
        | (S::Ptr, S::Bool | S::Float(_)) => return refused(),
    })
}

/// A conversion between float types: to `f16`/`bf16` rounds to nearest even (once, from the
/// exact `f64`), from them is exact (`lower::half`).
fn float_to_float(fx: &mut FnCtx<'_, '_>, var: Var, from: FloatType, to: FloatType) -> Var {
    use FloatType as F;
    match (from, to) {
        (F::F16, F::F16) | (F::BF16, F::BF16) | (F::F32, F::F32) | (F::F64, F::F64) => var,
        (F::F32, F::F64) => fx.b.convert(ConvOp::Fpromote, var, Ty::F64),
        (F::F64, F::F32) => fx.b.convert(ConvOp::Fdemote, var, Ty::F32),
        (F::F16 | F::BF16, F::F32 | F::F64) => half::widen(&mut fx.b, var, from, to),
        (F::F32, F::F16 | F::BF16) => half::round_from_f32(&mut fx.b, var, to),
        (F::F64, F::F16 | F::BF16) => half::round_from_f64(&mut fx.b, var, to),
        // Widening is exact, so the value is rounded once.
        (F::F16, F::BF16) | (F::BF16, F::F16) => {
            let wide = half::widen(&mut fx.b, var, from, F::F64);
            half::round_from_f64(&mut fx.b, wide, to)
        }
    }
}

/// A checked conversion of a dynamically typed value to a scalar (TypeError / ValueError).
pub(super) fn unpack_any(fx: &mut FnCtx<'_, '_>, any: Var, to: ScalarType) -> Var {
    let index = fx.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
    let is = |fx: &mut FnCtx<'_, '_>, i: i32| fx.b.icmp_imm(IntCC::Eq, index, i64::from(i));
    // An Int or a Bool (what every integer, bool and float target takes).
    let int_or_bool = |fx: &mut FnCtx<'_, '_>| {
        let a = is(fx, ti::INT);
        let b = is(fx, ti::BOOL);
        fx.b.binary(lir::BinOp::Or, a, b)
    };
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
        ScalarType::Int(IntType::U64) => {
            // An Int from 0, or the BigInt of two words (the high one 0) of 2^63 to 2^64 - 1.
            let small = int_or_bool(fx);
            let big = is(fx, ti::BIG_INT);
            let ok = fx.b.binary(lir::BinOp::Or, small, big);
            type_check(fx, ok);
            let out = fx.b.mutable_var(Ty::I64);
            let range = out_of_range_text(IntType::U64);
            let words = fx.b.new_block();
            let int_block = fx.b.new_block();
            let join = fx.b.new_block();
            fx.branch(big, words, int_block);
            fx.b.switch_to(int_block);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let non_negative = fx.b.icmp_imm(IntCC::Sge, raw, 0);
            let text = prefix.clone();
            let tail = range.clone();
            fx.check(non_negative, VALUE_ERROR, |_| {
                vec![
                    MsgPart::Text(text),
                    MsgPart::Value(Tag::I64, raw),
                    MsgPart::text(tail),
                ]
            });
            fx.b.assign(out, raw);
            fx.jump(join);
            fx.b.switch_to(words);
            let obj = fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET);
            let low = big_int::read_u64(fx, obj, |fx, ok| {
                let text = format!("{prefix}the int{range}");
                fx.check(ok, VALUE_ERROR, |_| vec![MsgPart::Text(text)]);
            });
            fx.b.assign(out, low);
            fx.jump(join);
            fx.b.switch_to(join);
            out
        }
        ScalarType::Int(t) => {
            let ok = int_or_bool(fx);
            type_check(fx, ok);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let (lo, hi) = int_range(t);
            if (lo, hi) != (i64::MIN, i64::MAX) {
                let ge = fx.b.icmp_imm(IntCC::Sge, raw, lo);
                let le = fx.b.icmp_imm(IntCC::Sle, raw, hi);
                let ok = fx.b.binary(lir::BinOp::And, ge, le);
                fx.check(ok, VALUE_ERROR, |_| {
                    vec![
                        MsgPart::Text(prefix.clone()),
                        MsgPart::Value(Tag::I64, raw),
                        MsgPart::text(out_of_range_text(t)),
                    ]
                });
            }
            fx.b.resize(raw, int_lir_type(t), true)
        }
        ScalarType::Bool => {
            // A BigInt (never zero) is true, as Python's `bool()` of such an int.
            let small = int_or_bool(fx);
            let big = is(fx, ti::BIG_INT);
            let ok = fx.b.binary(lir::BinOp::Or, small, big);
            type_check(fx, ok);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let nz = fx.b.icmp_imm(IntCC::Ne, raw, 0);
            fx.b.binary(lir::BinOp::Or, nz, big)
        }
        ScalarType::Float(ft) => {
            // A BigInt to the nearest f64, as Python's `float()` (see `big_int::read_f64`).
            let is_float = is(fx, ti::FLOAT);
            let is_int = int_or_bool(fx);
            let big = is(fx, ti::BIG_INT);
            let ok = fx.b.binary(lir::BinOp::Or, is_float, is_int);
            let ok = fx.b.binary(lir::BinOp::Or, ok, big);
            type_check(fx, ok);
            let as_float = fx.b.load(Ty::F64, any, ANY_VALUE_OFFSET);
            let raw = fx.b.load(Ty::I64, any, ANY_VALUE_OFFSET);
            let from_int = fx.b.convert(ConvOp::StoF, raw, Ty::F64);
            let selected = fx.b.select(is_float, as_float, from_int);
            let wide = big_int::f64_or_big_int(
                fx,
                selected,
                big,
                |fx| fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET),
                |fx, ok| {
                    let text = format!("{prefix}{}", big_int::F64_RANGE_TEXT);
                    fx.check(ok, VALUE_ERROR, |_| vec![MsgPart::Text(text)]);
                },
            );
            match ft {
                FloatType::F64 => wide,
                FloatType::F32 => fx.b.convert(ConvOp::Fdemote, wide, Ty::F32),
                FloatType::F16 | FloatType::BF16 => half::round_from_f64(&mut fx.b, wide, ft),
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
