//! Ints beyond 64 bits where a float is taken: tvm_ffi passes a Python int outside `i64` as an
//! `ffi.BigInt` (minimal two's-complement words). An `f64` parameter and `cast<f64>` of an
//! `any` take the nearest `f64` (ties to even), as Python's `float()` does, an `f32` one that
//! `f64` rounded again (as a float argument is, and as Triton's launcher converts an int for an
//! `fp32`); an int whose magnitude rounds to 2^1024 or more is a ValueError naming the argument
//! (Python's `OverflowError`); a `bool` parameter takes one as true. Checked on every JIT tier
//! and backend of the build against an independent reference: the int's decimal digits parsed
//! by Rust's `f64::from_str`, which rounds correctly.

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use safecall::jit::{self, JitOptions};
use safecall_runtime::{Any, big_int};

use crate::common::big_int_text::decimal;
use crate::common::delivery::jit_tiers;

const TEXT: &str = "module big_floats;\n\
    fn wide(x: f64) -> f64 { return x; }\n\
    fn narrow(x: f32) -> f64 { return cast<f64>(x); }\n\
    fn dynamic(x: any) -> f64 { return cast<f64>(x); }\n\
    fn maybe(x: optional[f64]) -> f64 { if is_none(x) { return -1.0; } return x; }\n\
    fn flag(x: bool) -> bool { return x; }\n\
    fn dynamic_flag(x: any) -> bool { return cast<bool>(x); }\n\
    fn two(x: f64, y: i8) -> f64 { return x + cast<f64>(y); }\n";

const RANGE: &str = "the int is out of range for a float: its magnitude rounds to 2^1024 or more";

fn modules() -> Vec<jit::JitModule> {
    let module = safecall::ir::parse::parse(TEXT)
        .unwrap_or_else(|e| panic!("{}", e.render("big_floats.scir", TEXT)));
    jit_tiers()
        .into_iter()
        .map(|(first_tier, backend)| {
            let options = JitOptions {
                first_tier,
                backend,
                ..JitOptions::default()
            };
            // SAFETY: the IR dereferences nothing but its arguments and calls no extern.
            unsafe { jit::compile(&module, &options) }.unwrap()
        })
        .collect()
}

/// The minimal two's-complement words of `sign * magnitude` (`magnitude` least significant
/// limb first), as tvm_ffi writes a BigInt's.
fn words(negative: bool, magnitude: &[u64]) -> Vec<i64> {
    let mut w = magnitude.to_vec();
    w.push(0);
    if negative {
        let mut carry = true;
        for limb in w.iter_mut() {
            let (sum, overflow) = (!*limb).overflowing_add(u64::from(carry));
            *limb = sum;
            carry = overflow;
        }
    }
    while w.len() >= 2 {
        let (top, next) = (w[w.len() - 1], w[w.len() - 2]);
        let redundant = (top == 0 && next >> 63 == 0) || (top == u64::MAX && next >> 63 == 1);
        if !redundant {
            break;
        }
        w.pop();
    }
    w.into_iter().map(|limb| limb as i64).collect()
}

/// `m * 2^k + delta` (`delta` -1, 0 or 1; the result non-negative) as limbs.
fn shifted(m: u64, k: u32, delta: i8) -> Vec<u64> {
    let mut limbs = vec![0u64; (k / 64) as usize + 2];
    let (at, bits) = ((k / 64) as usize, k % 64);
    limbs[at] = m << bits;
    if bits > 0 {
        limbs[at + 1] = m >> (64 - bits);
    }
    match delta {
        1 => {
            for limb in limbs.iter_mut() {
                let (sum, overflow) = limb.overflowing_add(1);
                *limb = sum;
                if !overflow {
                    break;
                }
            }
        }
        -1 => {
            for limb in limbs.iter_mut() {
                let (diff, borrow) = limb.overflowing_sub(1);
                *limb = diff;
                if !borrow {
                    break;
                }
            }
        }
        _ => {}
    }
    limbs
}

/// Ints beyond `i64` of every size that matters: random words (2 to 18 of them), and values at
/// and next to the halfway points between two `f64`s (an odd 54-bit significand shifted, plus
/// -1, 0 or 1), where a wrong sticky bit or a double rounding would show.
fn big_ints() -> impl Strategy<Value = Vec<i64>> {
    let random = (any::<bool>(), prop::collection::vec(any::<u64>(), 1..=17))
        .prop_map(|(negative, magnitude)| words(negative, &magnitude));
    let halfway = (
        any::<bool>(),
        any::<u64>(),
        prop_oneof![10u32..=80, 80u32..=1000, 960u32..=980],
        -1i8..=1,
        any::<bool>(),
    )
        .prop_map(|(negative, bits, k, delta, tie)| {
            // A 54-bit significand: its lowest bit set makes it a tie at 53 bits.
            let m = (1u64 << 53) | (bits & ((1 << 53) - 1)) | u64::from(tie);
            words(negative, &shifted(m, k, delta))
        });
    let sparse = (
        any::<bool>(),
        63u32..1100,
        prop::collection::vec(0u32..1100, 0..3),
    )
        .prop_map(|(negative, top, others)| {
            let mut limbs = vec![0u64; 19];
            for bit in std::iter::once(top).chain(others.into_iter().filter(|b| *b < top)) {
                limbs[(bit / 64) as usize] |= 1 << (bit % 64);
            }
            words(negative, &limbs)
        });
    prop_oneof![random, halfway, sparse].prop_filter("beyond i64", |w| w.len() >= 2)
}

#[test]
fn the_reference_reads_words_as_python_prints_the_int() {
    assert_eq!(decimal(&words(false, &[1 << 63])), "9223372036854775808");
    assert_eq!(
        decimal(&words(true, &[(1 << 63) + 1])),
        "-9223372036854775809"
    );
    assert_eq!(decimal(&words(false, &[0, 1])), "18446744073709551616");
    assert_eq!(words(true, &[1 << 63]), vec![i64::MIN]);
    assert_eq!(words(false, &[1 << 63]), vec![i64::MIN, 0]);
    assert_eq!(
        decimal(&words(false, &shifted(1, 200, -1))),
        "1606938044258990275541962092341162602522202993782792835301375"
    );
}

#[test]
fn a_bigint_becomes_the_nearest_f64_as_python_float_converts_it() {
    let modules = modules();
    // A fixed seed: the same draws on every run (the counts below are theirs).
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 2000,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let (finite, beyond) = (Cell::new(0), Cell::new(0));
    let result = runner.run(&big_ints(), |w| {
        let arg: Any = big_int::any_from_words(&w);
        let expected: f64 = decimal(&w).parse().unwrap();
        let counter = if expected.is_finite() {
            &finite
        } else {
            &beyond
        };
        counter.set(counter.get() + 1);
        for jit in &modules {
            for name in ["wide", "dynamic", "maybe", "narrow"] {
                let got = jit.function(name).unwrap().call(&[arg.view()]);
                if expected.is_finite() {
                    // `narrow` (f32) rounds that f64 again, as a float argument is rounded.
                    let want = if name == "narrow" {
                        f64::from(expected as f32)
                    } else {
                        expected
                    };
                    let got = got.unwrap().cast::<f64>().unwrap();
                    prop_assert_eq!(got.to_bits(), want.to_bits(), "{} {:?}", name, w);
                } else {
                    let err = got.unwrap_err();
                    prop_assert_eq!(err.kind(), "ValueError");
                    prop_assert!(err.message().contains(RANGE), "{}", err.message());
                }
            }
            prop_assert!(
                jit.function("flag")
                    .unwrap()
                    .call(&[arg.view()])
                    .unwrap()
                    .cast::<bool>()
                    .unwrap()
            );
            prop_assert!(
                jit.function("dynamic_flag")
                    .unwrap()
                    .call(&[arg.view()])
                    .unwrap()
                    .cast::<bool>()
                    .unwrap()
            );
        }
        Ok(())
    });
    result.unwrap();
    // The draws reach both sides of the range (so the overflow path is exercised).
    let (finite, beyond) = (finite.get(), beyond.get());
    assert!(
        finite > 500 && beyond > 100,
        "{finite} finite, {beyond} beyond"
    );
}

#[test]
fn the_edges_of_the_f64_range_round_as_python_rounds_them() {
    // (words, Python's float() of the int, or None for OverflowError).
    let max = f64::MAX;
    let cases: Vec<(Vec<i64>, Option<f64>)> = vec![
        (words(false, &[1 << 63]), Some(2f64.powi(63))),
        (words(true, &[(1 << 63) + 1]), Some(-(2f64.powi(63)))),
        (words(false, &[u64::MAX]), Some(18446744073709551616.0)),
        // 2^64 + 2^11 is halfway between 2^64 and 2^64 + 2^12: to even, 2^64; one more is above.
        (
            words(false, &shifted(1 << 53 | 1, 11, 0)),
            Some(18446744073709551616.0),
        ),
        (
            words(false, &shifted(1 << 53 | 1, 11, 1)),
            Some(18446744073709555712.0),
        ),
        (
            words(true, &shifted(1 << 53 | 1, 11, 1)),
            Some(-18446744073709555712.0),
        ),
        // The largest f64, and the halfway point above it, which rounds (to even) to 2^1024.
        (words(false, &shifted((1 << 53) - 1, 971, 0)), Some(max)),
        (
            words(false, &shifted(((1 << 53) - 1) << 1 | 1, 970, -1)),
            Some(max),
        ),
        (
            words(false, &shifted(((1 << 53) - 1) << 1 | 1, 970, 0)),
            None,
        ),
        (
            words(true, &shifted(((1 << 53) - 1) << 1 | 1, 970, -1)),
            Some(-max),
        ),
        (words(true, &shifted(1, 1024, 0)), None),
        (words(false, &shifted(1, 1023, 0)), Some(2f64.powi(1023))),
        (words(true, &shifted(1, 1023, 0)), Some(-(2f64.powi(1023)))),
        // 18 words: at least 2^1087.
        (words(false, &shifted(1, 1087, 0)), None),
    ];
    for jit in modules() {
        for (w, expected) in &cases {
            let arg = big_int::any_from_words(w);
            let reference: f64 = decimal(w).parse().unwrap();
            match expected {
                Some(value) => assert_eq!(reference, *value, "{w:?}"),
                None => assert!(reference.is_infinite(), "{w:?}"),
            }
            let got = jit.function("wide").unwrap().call(&[arg.view()]);
            match expected {
                Some(value) => assert_eq!(got.unwrap().cast::<f64>().unwrap(), *value, "{w:?}"),
                None => {
                    let err = got.unwrap_err();
                    assert_eq!(err.kind(), "ValueError");
                    assert_eq!(
                        err.message().lines().next().unwrap(),
                        format!("wide: argument 'x' (#0): {RANGE}")
                    );
                }
            }
        }
    }
}

#[test]
fn an_out_of_range_bigint_is_named_after_a_valid_one_and_in_a_cast() {
    for jit in modules() {
        let huge = big_int::any_from_words(&words(false, &shifted(1, 1030, 0)));
        let fine = big_int::any_from_words(&words(false, &shifted(3, 100, 0)));
        let err = jit
            .function("two")
            .unwrap()
            .call(&[huge.view(), Any::from(1i64).view()])
            .unwrap_err();
        assert_eq!(
            err.message().lines().next().unwrap(),
            format!("two: argument 'x' (#0): {RANGE}")
        );
        // A valid BigInt first, then a bad second argument: the explain function reads the
        // BigInt again and names the int.
        let err = jit
            .function("two")
            .unwrap()
            .call(&[fine.view(), Any::from(300i64).view()])
            .unwrap_err();
        assert_eq!(err.kind(), "ValueError");
        assert!(
            err.message()
                .starts_with("two: argument 'y' (#1): 300 is out of range for i8"),
            "{}",
            err.message()
        );
        let ok = jit
            .function("two")
            .unwrap()
            .call(&[fine.view(), Any::from(2i64).view()])
            .unwrap();
        assert_eq!(ok.cast::<f64>().unwrap(), 3.0 * 2f64.powi(100) + 2.0);
        let err = jit
            .function("dynamic")
            .unwrap()
            .call(&[huge.view()])
            .unwrap_err();
        assert_eq!(err.kind(), "ValueError");
        assert!(err.message().contains(RANGE), "{}", err.message());
        assert!(
            err.message().starts_with("dynamic: in `"),
            "{}",
            err.message()
        );
        // None still reaches the optional parameter's branch.
        let none = jit
            .function("maybe")
            .unwrap()
            .call(&[Any::none().view()])
            .unwrap();
        assert_eq!(none.cast::<f64>().unwrap(), -1.0);
    }
}
