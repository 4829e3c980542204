//! The half-precision formats (`f16`, `bf16`) on the host: rounding an `f64` to the nearest
//! half (ties to even) and widening a half back exactly.
//!
//! The parser, the printer, the verifier and the builders use these functions for constants;
//! the lowering emits the same steps as integer instructions (`lower::half`), so that generated
//! code and compile-time constants agree bit for bit on every backend. Both follow IEEE 754:
//! - rounding is to nearest, ties to even, in one step from the `f64` (an `f32` source is
//!   widened to `f64` first, which is exact, so there is never a double rounding);
//! - a value at or above the largest half plus half a unit in the last place becomes infinity
//!   (of its sign); one at or below half the smallest subnormal becomes zero (of its sign);
//!   subnormal halves are produced and read exactly;
//! - a NaN stays a NaN: the sign and the leading fraction bits are kept and the quiet bit is
//!   set (so a NaN never turns into an infinity);
//! - widening (`f16`/`bf16` to `f32`/`f64`) is exact, NaN payloads included.

use super::model::FloatType;

const F64_SIGN: u64 = 1 << 63;
const F64_FRACTION_BITS: u32 = 52;
const F64_INF: u64 = 0x7ff0_0000_0000_0000;

/// Rounds the `f64` whose bits are `bits` to the nearest value of the half type `ty` (ties to
/// even) and returns the half's 16 bits.
///
/// # Panics
///
/// When `ty` is not a half type (`f32`, `f64`); the caller picks the type.
pub fn round_f64_bits(bits: u64, ty: FloatType) -> u16 {
    assert!(
        ty.is_half(),
        "{} is not a half-precision type",
        ty.keyword()
    );
    let m = ty.fraction_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let abs = bits & !F64_SIGN;
    let fraction = abs & ((1 << F64_FRACTION_BITS) - 1);
    let inf = ((1u64 << ty.exponent_bits()) - 1) << m;
    if abs > F64_INF {
        // NaN: keep the leading fraction bits, set the quiet bit.
        let quiet = 1u64 << (m - 1);
        return sign | (inf | quiet | (fraction >> (F64_FRACTION_BITS - m))) as u16;
    }
    // The half's biased exponent if the value were normal there (<= 0: subnormal or zero).
    let exponent = (abs >> F64_FRACTION_BITS) as i64 - 1023 + i64::from(ty.bias());
    // Bits to drop from the 53-bit significand: more below the normal range.
    let shift = (i64::from(F64_FRACTION_BITS - m) + (1 - exponent).max(0)).min(63) as u32;
    // The implicit leading one (for an f64 zero or subnormal the shift drops everything).
    let significand = fraction | (1 << F64_FRACTION_BITS);
    let odd = (significand >> shift) & 1;
    let rounded = (significand + (1u64 << (shift - 1)) - 1 + odd) >> shift;
    // A carry out of the fraction moves to the next exponent (to infinity at the top).
    let magnitude = rounded + (((exponent - 1).max(0) as u64) << m);
    sign | magnitude.min(inf) as u16
}

/// The bits of `h`, a value of the half type `from`, in the wider type `to` (`f32`: the low
/// 32 bits; `f64`): exact, NaN payloads included.
///
/// # Panics
///
/// When `from` is not a half type or `to` is not `f32` or `f64`.
pub fn widen_bits(h: u16, from: FloatType, to: FloatType) -> u64 {
    assert!(
        from.is_half() && !to.is_half(),
        "widen_bits: {from:?} to {to:?}"
    );
    let (m, e) = (from.fraction_bits(), from.exponent_bits());
    let (wide_m, wide_e) = (to.fraction_bits(), to.exponent_bits());
    let sign = u64::from(h >> 15) << (to.bits() - 1);
    let exponent = u64::from(h >> m) & ((1 << e) - 1);
    let fraction = u64::from(h) & ((1 << m) - 1);
    let moved = fraction << (wide_m - m);
    let magnitude = if exponent == (1 << e) - 1 {
        (((1u64 << wide_e) - 1) << wide_m) | moved
    } else if exponent == 0 && from.bias() == to.bias() {
        moved
    } else if exponent == 0 {
        // A subnormal half: fraction * 2^(1 - bias - m), a normal value in `to`.
        let scale = 1 - from.bias() - m as i32;
        match to {
            FloatType::F64 => (fraction as f64 * 2f64.powi(scale)).to_bits(),
            _ => u64::from((fraction as f32 * 2f32.powi(scale)).to_bits()),
        }
    } else {
        let rebias = (to.bias() - from.bias()) as u64;
        ((exponent + rebias) << wide_m) | moved
    };
    sign | magnitude
}

/// The bits of the `f64` equal to the half `h` of type `ty` (exact).
pub fn half_to_f64_bits(h: u16, ty: FloatType) -> u64 {
    widen_bits(h, ty, FloatType::F64)
}

/// The half bits of the `f64` with bits `bits` when the half type `ty` holds that value
/// exactly (NaN payloads included), else `None`.
pub fn f64_bits_to_half_exact(bits: u64, ty: FloatType) -> Option<u16> {
    let m = ty.fraction_bits();
    if bits & !F64_SIGN > F64_INF {
        let fraction = bits & ((1 << F64_FRACTION_BITS) - 1);
        let kept = fraction >> (F64_FRACTION_BITS - m);
        if kept == 0 || kept << (F64_FRACTION_BITS - m) != fraction {
            return None;
        }
        let sign = ((bits >> 63) as u16) << 15;
        let inf = ((1u64 << ty.exponent_bits()) - 1) << m;
        return Some(sign | (inf | kept) as u16);
    }
    let h = round_f64_bits(bits, ty);
    (half_to_f64_bits(h, ty) == bits).then_some(h)
}

#[cfg(test)]
mod tests;
