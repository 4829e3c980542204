//! `f16` and `bf16` in generated code: a half is its 16 bits in an `I16`, and the conversions
//! are integer instructions (plus, for subnormal `f16`s, an exact integer-to-float conversion
//! and multiplication), so every backend runs the same steps and no backend needs a
//! half-precision instruction or a runtime helper. The steps are those of
//! [`crate::ir::half`], which computes constants on the host and is tested against references;
//! see there for the rounding rules.

use crate::ir::FloatType;
use crate::lir::builder::FuncBuilder;
use crate::lir::{BinOp, ConvOp, IntCC, Ty, Var};

const F64_FRACTION_BITS: i64 = 52;
const F64_INF: i64 = 0x7ff0_0000_0000_0000;

/// The `I16` bits of the `f64` value `x` rounded to the half type `ty`: to nearest, ties to
/// even; overflow to infinity; NaN stays NaN (quiet, leading payload bits kept).
pub(crate) fn round_from_f64(b: &mut FuncBuilder, x: Var, ty: FloatType) -> Var {
    let m = i64::from(ty.fraction_bits());
    let inf = ((1i64 << ty.exponent_bits()) - 1) << m;
    let bits = b.convert(ConvOp::Bitcast, x, Ty::I64);
    let sign_bit = b.binary_imm(BinOp::Ushr, bits, 63);
    let sign = b.binary_imm(BinOp::Shl, sign_bit, 15);
    let abs = b.binary_imm(BinOp::And, bits, i64::MAX);
    let fraction = b.binary_imm(BinOp::And, abs, (1 << F64_FRACTION_BITS) - 1);
    // NaN: the leading fraction bits, the quiet bit, the sign.
    let kept = b.binary_imm(BinOp::Ushr, fraction, F64_FRACTION_BITS - m);
    let nan_magnitude = b.binary_imm(BinOp::Or, kept, inf | (1 << (m - 1)));
    let nan = b.binary(BinOp::Or, nan_magnitude, sign);
    let is_nan = b.icmp_imm(IntCC::Ugt, abs, F64_INF);
    // The half's biased exponent if the value were normal there (<= 0: subnormal or zero).
    let field = b.binary_imm(BinOp::Ushr, abs, F64_FRACTION_BITS);
    let exponent = b.binary_imm(BinOp::Iadd, field, i64::from(ty.bias()) - 1023);
    // Bits to drop from the 53-bit significand: 52 - m, and more below the normal range.
    let one = b.iconst(Ty::I64, 1);
    let below = b.binary(BinOp::Isub, one, exponent);
    let extra = b.binary_imm(BinOp::Smax, below, 0);
    let wide_shift = b.binary_imm(BinOp::Iadd, extra, F64_FRACTION_BITS - m);
    let shift = b.binary_imm(BinOp::Smin, wide_shift, 63);
    let significand = b.binary_imm(BinOp::Or, fraction, 1 << F64_FRACTION_BITS);
    // Round to nearest even: add half an output unit minus one, plus the output's lowest bit.
    let shifted = b.binary(BinOp::Ushr, significand, shift);
    let odd = b.binary_imm(BinOp::And, shifted, 1);
    let shift_less = b.binary_imm(BinOp::Isub, shift, 1);
    let half_unit = b.binary(BinOp::Shl, one, shift_less);
    let bias = b.binary_imm(BinOp::Isub, half_unit, 1);
    let biased = b.binary(BinOp::Iadd, significand, bias);
    let biased = b.binary(BinOp::Iadd, biased, odd);
    let rounded = b.binary(BinOp::Ushr, biased, shift);
    // The exponent above the first binade; a carry out of the fraction moves it up.
    let above = b.binary_imm(BinOp::Isub, exponent, 1);
    let above = b.binary_imm(BinOp::Smax, above, 0);
    let exponent_part = b.binary_imm(BinOp::Shl, above, m);
    let magnitude = b.binary(BinOp::Iadd, rounded, exponent_part);
    let magnitude = b.binary_imm(BinOp::Umin, magnitude, inf);
    let finite = b.binary(BinOp::Or, magnitude, sign);
    let result = b.select(is_nan, nan, finite);
    b.resize(result, Ty::I16, false)
}

/// The `f32` value `x` rounded to the half type `ty` (through `f64`, which is exact, so the
/// value is rounded once).
pub(crate) fn round_from_f32(b: &mut FuncBuilder, x: Var, ty: FloatType) -> Var {
    let wide = b.convert(ConvOp::Fpromote, x, Ty::F64);
    round_from_f64(b, wide, ty)
}

/// The half `h` (`I16` bits of type `from`) as a value of the float type `to` (`f32` or
/// `f64`), exactly: NaN payloads are kept.
pub(crate) fn widen(b: &mut FuncBuilder, h: Var, from: FloatType, to: FloatType) -> Var {
    let (m, e) = (i64::from(from.fraction_bits()), from.exponent_bits());
    let (wide_m, wide_e) = (i64::from(to.fraction_bits()), to.exponent_bits());
    let (int_ty, float_ty) = match to {
        FloatType::F32 => (Ty::I32, Ty::F32),
        FloatType::F64 | FloatType::F16 | FloatType::BF16 => (Ty::I64, Ty::F64),
    };
    let w = b.resize(h, Ty::I64, false);
    let sign_bit = b.binary_imm(BinOp::Ushr, w, 15);
    let sign = b.binary_imm(BinOp::Shl, sign_bit, i64::from(to.bits()) - 1);
    let shifted = b.binary_imm(BinOp::Ushr, w, m);
    let exponent = b.binary_imm(BinOp::And, shifted, (1 << e) - 1);
    let fraction = b.binary_imm(BinOp::And, w, (1 << m) - 1);
    let moved = b.binary_imm(BinOp::Shl, fraction, wide_m - m);
    // Infinity and NaN: the wide type's top exponent, the fraction moved up.
    let special = b.binary_imm(BinOp::Or, moved, ((1 << wide_e) - 1) << wide_m);
    // Normal: the exponent rebiased.
    let rebiased = b.binary_imm(BinOp::Iadd, exponent, i64::from(to.bias() - from.bias()));
    let exponent_part = b.binary_imm(BinOp::Shl, rebiased, wide_m);
    let normal = b.binary(BinOp::Or, exponent_part, moved);
    // Zero and subnormal: the same bits when the exponent ranges agree (bf16 in f32), else
    // fraction * 2^(1 - bias - m), computed exactly in the wide type (its result is normal).
    let subnormal = if from.bias() == to.bias() {
        moved
    } else {
        let scale = 1 - from.bias() - from.fraction_bits() as i32;
        let value = b.convert(ConvOp::UtoF, fraction, float_ty);
        let factor = b.fconst(float_ty, 2f64.powi(scale).to_bits());
        let scaled = b.binary(BinOp::Fmul, value, factor);
        let scaled_bits = b.convert(ConvOp::Bitcast, scaled, int_ty);
        b.resize(scaled_bits, Ty::I64, false)
    };
    let is_special = b.icmp_imm(IntCC::Eq, exponent, (1 << e) - 1);
    let is_small = b.icmp_imm(IntCC::Eq, exponent, 0);
    let finite = b.select(is_small, subnormal, normal);
    let magnitude = b.select(is_special, special, finite);
    let bits = b.binary(BinOp::Or, magnitude, sign);
    let narrow = b.resize(bits, int_ty, false);
    b.convert(ConvOp::Bitcast, narrow, float_ty)
}
