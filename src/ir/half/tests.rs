//! The conversions against independent references: the `half` crate for `f32` sources (its
//! `f32` conversions round to nearest even), and for `f64` sources an `f32` rounded to odd
//! first, which `half` then rounds correctly (an `f32` keeps more than twice the bits of a
//! half, so rounding to odd and then to nearest equals rounding once).

use super::*;

const HALVES: [FloatType; 2] = [FloatType::F16, FloatType::BF16];

fn reference_from_f32(x: f32, ty: FloatType) -> u16 {
    match ty {
        FloatType::F16 => half::f16::from_f32(x).to_bits(),
        _ => half::bf16::from_f32(x).to_bits(),
    }
}

/// `x` rounded to an `f32` toward zero, with the lowest bit set when that was inexact.
fn round_to_odd_f32(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) == x {
        return r;
    }
    let mut t = r.to_bits();
    if f64::from(r).abs() > x.abs() {
        t -= 1;
    }
    f32::from_bits(t | 1)
}

fn reference_from_f64(x: f64, ty: FloatType) -> u16 {
    reference_from_f32(round_to_odd_f32(x), ty)
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn f32_sources_round_like_the_half_crate() {
    let lows = [
        0u32, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x7fff, 0x8000, 0x8001, 0xffff,
    ];
    for ty in HALVES {
        for high in 0..=0xffffu32 {
            for low in lows {
                let x = f32::from_bits(high << 16 | low);
                if x.is_nan() {
                    continue;
                }
                let got = round_f64_bits(f64::from(x).to_bits(), ty);
                assert_eq!(
                    got,
                    reference_from_f32(x, ty),
                    "{ty:?} of {x:e} ({:#x})",
                    x.to_bits()
                );
            }
        }
    }
}

#[test]
fn f64_sources_round_once() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for ty in HALVES {
        // Exponents from below the smallest subnormal to above the largest finite value.
        let span = 2 * ty.bias() as u64 + ty.fraction_bits() as u64 + 8;
        let low = 1023 - (ty.bias() as u64 + ty.fraction_bits() as u64 + 4);
        for _ in 0..400_000 {
            let r = rng.next();
            let exponent = low + (r >> 52) % span;
            let bits = (r & (1 << 63)) | exponent << 52 | (rng.next() & ((1 << 52) - 1));
            let x = f64::from_bits(bits);
            assert_eq!(
                round_f64_bits(bits, ty),
                reference_from_f64(x, ty),
                "{ty:?} of {x:e} ({bits:#x})"
            );
        }
    }
}

#[test]
fn halfway_points_and_their_neighbours() {
    for ty in HALVES {
        for h in 0..0x7fffu16 {
            let here = f64::from_bits(half_to_f64_bits(h, ty));
            let next = f64::from_bits(half_to_f64_bits(h + 1, ty));
            if !next.is_finite() && next.is_nan() {
                continue;
            }
            let mid = if next.is_infinite() {
                // Beyond the largest finite half: the point where rounding reaches infinity.
                here + (here - f64::from_bits(half_to_f64_bits(h - 1, ty))) / 2.0
            } else {
                (here + next) / 2.0
            };
            let m = mid.to_bits();
            for bits in [m - 1, m, m + 1, m - (1 << 30), m + (1 << 30)] {
                for sign in [0, 1u64 << 63] {
                    let x = f64::from_bits(bits | sign);
                    assert_eq!(
                        round_f64_bits(bits | sign, ty),
                        reference_from_f64(x, ty),
                        "{ty:?} near the midpoint after {h:#x}: {x:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn named_edge_cases() {
    let f16 = |x: f64| round_f64_bits(x.to_bits(), FloatType::F16);
    let bf16 = |x: f64| round_f64_bits(x.to_bits(), FloatType::BF16);
    // Ties to even: 1 + 2^-11 lies between 1.0 (even) and 1 + 2^-10 (odd).
    assert_eq!(f16(1.0 + 2f64.powi(-11)), 0x3c00);
    assert_eq!(f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    assert_eq!(f16(65504.0), 0x7bff);
    assert_eq!(f16(65519.99), 0x7bff);
    assert_eq!(
        f16(65520.0),
        0x7c00,
        "the tie above the largest f16 goes to infinity"
    );
    assert_eq!(f16(-1e300), 0xfc00);
    assert_eq!(f16(2f64.powi(-24)), 0x0001, "smallest subnormal");
    assert_eq!(f16(2f64.powi(-25)), 0x0000, "half of it ties to zero");
    assert_eq!(f16(2f64.powi(-25) * 1.0000001), 0x0001);
    assert_eq!(
        f16(2f64.powi(-14) - 2f64.powi(-25)),
        0x0400,
        "rounds up into the normals"
    );
    assert_eq!(f16(-0.0), 0x8000);
    assert_eq!(f16(f64::NAN), 0x7e00);
    assert_eq!(
        round_f64_bits(0x7ff0_0000_0000_0001, FloatType::F16),
        0x7e00,
        "a signaling NaN stays a NaN"
    );
    assert_eq!(
        round_f64_bits(0xfff4_0000_0000_0000, FloatType::F16),
        0xff00
    );
    assert_eq!(bf16(1.0 + 2f64.powi(-8)), 0x3f80);
    assert_eq!(bf16(1.0 + 3.0 * 2f64.powi(-8)), 0x3f82);
    assert_eq!(
        bf16(f64::from(f32::MAX)),
        0x7f80,
        "f32::MAX rounds up to infinity in bf16"
    );
    assert_eq!(bf16(f64::from(f32::from_bits(1))), 0x0000);
    assert_eq!(bf16(2f64.powi(-133)), 0x0001);
    assert_eq!(bf16(f64::NAN), 0x7fc0);
    assert_eq!(bf16(-f64::INFINITY), 0xff80);
    // Triton truncates bf16 scalars: 1 + 2^-8 + 2^-20 would be 0x3f80 there, 0x3f81 here.
    assert_eq!(bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-20)), 0x3f81);
}

#[test]
fn widening_is_exact() {
    for ty in HALVES {
        for h in 0..=0xffffu16 {
            let wide = half_to_f64_bits(h, ty);
            let narrow = widen_bits(h, ty, FloatType::F32) as u32;
            let x = f64::from_bits(wide);
            if x.is_nan() {
                let shift = 52 - ty.fraction_bits();
                let fraction = u64::from(h) & ((1 << ty.fraction_bits()) - 1);
                assert_eq!(
                    wide & ((1 << 52) - 1),
                    fraction << shift,
                    "payload of {h:#x}"
                );
                assert_eq!(wide >> 63, u64::from(h >> 15));
                assert!(f32::from_bits(narrow).is_nan());
                assert_eq!(f64_bits_to_half_exact(wide, ty), Some(h));
                continue;
            }
            let reference = match ty {
                FloatType::F16 => half::f16::from_bits(h).to_f64(),
                _ => half::bf16::from_bits(h).to_f64(),
            };
            assert_eq!(wide, reference.to_bits(), "{ty:?} {h:#x}");
            assert_eq!(
                f64::from(f32::from_bits(narrow)).to_bits(),
                wide,
                "{ty:?} {h:#x} as f32"
            );
            assert_eq!(
                round_f64_bits(wide, ty),
                h,
                "{ty:?} {h:#x} rounds back to itself"
            );
            assert_eq!(f64_bits_to_half_exact(wide, ty), Some(h));
        }
        assert_eq!(f64_bits_to_half_exact(0.1f64.to_bits(), ty), None);
        assert_eq!(f64_bits_to_half_exact(0x7ff8_0000_0000_0001, ty), None);
    }
}
