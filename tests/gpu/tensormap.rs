//! `tensormap(..)` launch arguments on every delivery path and backend: the encoder's inputs
//! and the descriptor bytes that reach the kernel, the launch site's cache (a hit per
//! repeated key, a miss per changed key field), every rule's message, and the driver
//! workaround on bit 21.

use std::path::Path;

use safecall::ir;
use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor};
use serde_json::{Value, json};

use crate::support::{self, Arg, Delivery, call, call_err, fake};

/// The module of `tests/gpu/tensormap.scir`.
fn tma_module() -> ir::Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gpu/tensormap.scir");
    let text = std::fs::read_to_string(&path).expect("read tensormap.scir");
    ir::parse::parse(&text).unwrap_or_else(|e| panic!("{}", e.render("tensormap.scir", &text)))
}

/// Runs `test` on a fresh build of the module for every delivery path.
fn each(test: impl Fn(Delivery, &support::Built)) {
    let m = tma_module();
    for how in support::deliveries() {
        fake().reset();
        let built = support::build(&m, how);
        test(how, &built);
    }
}

/// A CUDA tensor of `dtype` (code, bits) on device 0 at `data`.
pub(super) fn tensor(
    data: usize,
    dtype: (u8, u8),
    shape: &mut [i64],
    strides: Option<&mut [i64]>,
) -> DLTensor {
    DLTensor {
        data: data as *mut _,
        device: DLDevice {
            device_type: safecall_runtime::abi::device_type::CUDA,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: dtype.0,
            bits: dtype.1,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

pub(super) const F16: (u8, u8) = (2, 16);
const F32: (u8, u8) = (2, 32);

/// The 16 words of a descriptor from a launch record's argument hex.
fn words(hex: &Value) -> Vec<u64> {
    let s = hex.as_str().expect("hex bytes");
    assert_eq!(s.len(), 256, "a descriptor is 128 bytes");
    (0..16)
        .map(|w| {
            let bytes: Vec<u8> = (0..8)
                .map(|b| u8::from_str_radix(&s[16 * w + 2 * b..16 * w + 2 * b + 2], 16).unwrap())
                .collect();
            u64::from_le_bytes(bytes.try_into().unwrap())
        })
        .collect()
}

/// The encode records of this thread.
pub(super) fn encodes() -> Vec<Value> {
    fake()
        .log()
        .into_iter()
        .filter(|r| r["call"] == "cuTensorMapEncodeTiled")
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("call");
            r
        })
        .collect()
}

#[test]
fn descriptors_reach_the_kernel_by_value_in_aligned_storage() {
    each(|how, built| {
        let f = built.function("copy2d");
        // a: 256 x 128 halves with a padded row (192 elements = 384 bytes); b: compact.
        let (mut sa, mut ta, mut sb) = ([256i64, 128], [192i64, 1], [256i64, 128]);
        let a = tensor(0x10_0000, F16, &mut sa, Some(&mut ta));
        let b = tensor(0x20_0000, F16, &mut sb, None);
        call(&f, &[Arg::Tensor(&a), Arg::Tensor(&b)]).unwrap();
        let e = encodes();
        assert_eq!(e.len(), 2, "{how:?}");
        assert_eq!(
            e[0],
            json!({
                "dtype": 6, "rank": 2, "address": 0x10_0000, "dims": [128, 256],
                "strides": [384], "box": [64, 64], "element_strides": [1, 1],
                "interleave": 0, "swizzle": 3, "l2_promotion": 2, "oob_fill": 0,
                // The storage the kernel's parameter points at is 128-byte aligned.
                "map_align": 0,
            }),
            "{how:?}"
        );
        assert_eq!(e[1]["strides"], json!([256]), "{how:?}");
        assert_eq!(e[1]["box"], json!([64, 32]), "{how:?}");
        let l = &fake().launches()[0];
        let w = words(&l["args"][0]);
        assert_eq!(w[0], 0x10_0000);
        assert_eq!(w[1] >> 48, 0x7e4a, "the double's descriptor");
        assert_eq!(w[1] & 0xffff, 6 | 2 << 8, "dtype and rank");
        assert_eq!((w[1] >> 24) & 0xff, 3, "swizzle");
        assert_eq!(&w[2..4], [128, 256]);
        assert_eq!(w[7], 384);
        assert_eq!(w[11], 64 | 64 << 32);
        assert_eq!(w[14], 1 | 1 << 8);
        let wb = words(&l["args"][1]);
        assert_eq!((wb[0], wb[11]), (0x20_0000, 64 | 32 << 32), "{how:?}");
        assert_eq!(l["args"][2], support::hex(&256u32.to_le_bytes()));
    });
}

#[test]
fn the_cache_hits_for_the_same_key_and_misses_when_any_field_changes() {
    each(|how, built| {
        let f = built.function("dynbox");
        let mut shape = [64i64, 32];
        let mut strides = [32i64, 1];
        let args = |t: &DLTensor, bm: i64, bk: i64, es: i64| -> usize {
            fake().reset();
            call(
                &f,
                &[Arg::Tensor(t), Arg::Int(bm), Arg::Int(bk), Arg::Int(es)],
            )
            .unwrap();
            encodes().len()
        };
        let a = tensor(0x40_0000, F32, &mut shape, Some(&mut strides));
        assert_eq!(args(&a, 16, 8, 1), 2, "{how:?}: first call encodes both");
        assert_eq!(args(&a, 16, 8, 1), 0, "{how:?}: same key, two hits");
        let first = words(&fake().launches()[0]["args"][0]);
        assert_eq!(args(&a, 16, 8, 1), 0, "{how:?}");
        assert_eq!(
            words(&fake().launches()[0]["args"][0]),
            first,
            "{how:?}: the cached descriptor"
        );
        // Each key field: the address, each dim, the stride, each box extent and the element
        // stride (only the first descriptor has one).
        let moved = tensor(0x40_1000, F32, &mut shape, Some(&mut strides));
        assert_eq!(args(&moved, 16, 8, 1), 2, "{how:?}: address");
        let (mut s1, mut t1) = ([64i64, 28], [32i64, 1]);
        assert_eq!(
            args(&tensor(0x40_0000, F32, &mut s1, Some(&mut t1)), 16, 8, 1),
            2,
            "{how:?}: dim 1"
        );
        let (mut s0, mut t0) = ([48i64, 32], [32i64, 1]);
        assert_eq!(
            args(&tensor(0x40_0000, F32, &mut s0, Some(&mut t0)), 16, 8, 1),
            2,
            "{how:?}: dim 0"
        );
        let (mut s2, mut t2) = ([64i64, 32], [36i64, 1]);
        assert_eq!(
            args(&tensor(0x40_0000, F32, &mut s2, Some(&mut t2)), 16, 8, 1),
            2,
            "{how:?}: stride"
        );
        assert_eq!(args(&a, 32, 8, 1), 2, "{how:?}: box[0]");
        assert_eq!(args(&a, 16, 4, 1), 2, "{how:?}: box[1]");
        assert_eq!(args(&a, 16, 4, 2), 1, "{how:?}: element_strides[1]");
        // Four entries per site: the last four keys are still cached.
        assert_eq!(args(&a, 16, 4, 1), 0, "{how:?}: still cached");
        assert_eq!(args(&a, 32, 8, 1), 0, "{how:?}: still cached");
    });
}

#[test]
fn every_rule_is_checked_before_the_driver_is_called() {
    each(|how, built| {
        let f = built.function("dynbox");
        let prefix =
            "ValueError: dynbox: launch of tma.copy: kernel argument 0 (tensormap of 'a'): ";
        let check = |t: &DLTensor, bm: i64, bk: i64, es: i64, expected: &str| {
            fake().reset();
            let got = call_err(
                &f,
                &[Arg::Tensor(t), Arg::Int(bm), Arg::Int(bk), Arg::Int(es)],
            );
            assert_eq!(got, format!("{prefix}{expected}"), "{how:?}");
            assert!(encodes().is_empty(), "{how:?}: {expected}");
        };
        let (mut s, mut t) = ([64i64, 32], [32i64, 1]);
        check(
            &tensor(0x40_0008, F32, &mut s, Some(&mut t)),
            16,
            8,
            1,
            "the global address 0x400008 (data + byte_offset) is not aligned to 16 bytes, as TMA requires",
        );
        let a = tensor(0x40_0000, F32, &mut s, Some(&mut t));
        check(&a, 300, 8, 1, "box[0] is 300; it must be 1 to 256");
        check(&a, 16, 0, 1, "box[1] is 0; it must be 1 to 256");
        check(
            &a,
            16,
            6,
            1,
            "the inner box is 24 bytes; it must be a multiple of 16",
        );
        check(&a, 16, 8, 9, "element_strides[1] is 9; it must be 1 to 8");
        let (mut s2, mut t2) = ([64i64, 32], [30i64, 1]);
        check(
            &tensor(0x40_0000, F32, &mut s2, Some(&mut t2)),
            16,
            8,
            1,
            "a.strides[0] is 30 elements = 120 bytes; a TMA stride must be a multiple of 16 bytes and below 2^40",
        );
        let (mut s3, mut t3) = ([64i64, 32], [64i64, 2]);
        check(
            &tensor(0x40_0000, F32, &mut s3, Some(&mut t3)),
            16,
            8,
            1,
            "a.strides[1] is 2; TMA needs the innermost dimension contiguous (stride 1)",
        );
        let (mut s4, mut t4) = ([0i64, 32], [32i64, 1]);
        check(
            &tensor(0x40_0000, F32, &mut s4, Some(&mut t4)),
            16,
            8,
            1,
            "a.shape[0] is 0; a TMA dimension must be 1 to 4294967296",
        );
        let (mut s5, mut t5) = ([64i64, 32], [1i64 << 38, 1]);
        check(
            &tensor(0x40_0000, F32, &mut s5, Some(&mut t5)),
            16,
            8,
            1,
            "a.strides[0] is 274877906944 elements = 1099511627776 bytes; a TMA stride must be a multiple of 16 bytes and below 2^40",
        );
    });
}

#[test]
fn a_failed_encode_raises_with_the_drivers_words() {
    each(|how, built| {
        let f = built.function("dynbox");
        let (mut s, mut t) = ([64i64, 32], [32i64, 1]);
        let a = tensor(0x40_0000, F32, &mut s, Some(&mut t));
        fake().fail("cuTensorMapEncodeTiled", 1);
        assert_eq!(
            call_err(
                &f,
                &[Arg::Tensor(&a), Arg::Int(16), Arg::Int(8), Arg::Int(1)]
            ),
            "RuntimeError: dynbox: launch of tma.copy: kernel argument 0 (tensormap of 'a'): \
             cuTensorMapEncodeTiled returned CUDA_ERROR_INVALID_VALUE (error 1: invalid argument)",
            "{how:?}"
        );
        assert!(fake().launches().is_empty(), "{how:?}");
    });
}

#[test]
fn bit_21_is_cleared_for_small_tensors_on_drivers_up_to_13010() {
    each(|how, built| {
        let f = built.function("dynbox");
        let bit_strided = |version: i32, shape: [i64; 2], strides: [i64; 2], address: usize| {
            fake().reset();
            fake().set_driver_version(version);
            let (mut s, mut t) = (shape, strides);
            let a = tensor(address, F32, &mut s, Some(&mut t));
            call(
                &f,
                &[Arg::Tensor(&a), Arg::Int(16), Arg::Int(8), Arg::Int(1)],
            )
            .unwrap();
            fake().set_driver_version(0);
            words(&fake().launches()[0]["args"][0])[1] >> 21 & 1 == 1
        };
        let bit = |version: i32, shape: [i64; 2], address: usize| {
            bit_strided(version, shape, [shape[1], 1], address)
        };
        // 64 x 32 floats span 8 KiB: cleared on 13000 and 13010, kept on 13020.
        assert!(!bit(13000, [64, 32], 0x10_0000), "{how:?}");
        assert!(!bit(13010, [64, 32], 0x20_0000), "{how:?}");
        assert!(bit(13020, [64, 32], 0x30_0000), "{how:?}");
        // The span is 1 + sum((dim - 1) * byte stride): 1025 x 32 floats span 131197 bytes,
        // kept; 1024 x 32 span 131069, below 128 KiB, cleared.
        assert!(bit(13000, [1025, 32], 0x40_0000), "{how:?}");
        assert!(!bit(13000, [1024, 32], 0x50_0000), "{how:?}");
        // Computed exactly: 2^25 + 1 rows 2^39 bytes apart span 2^64 + 125 bytes, which a
        // 64-bit sum would wrap to 125 (a 32-bit one, as Triton's launcher computes it, too).
        assert!(
            bit_strided(13000, [(1 << 25) + 1, 32], [1 << 37, 1], 0x60_0000),
            "{how:?}"
        );
        // A stride of 0 repeats a row: 2^17 + 1 rows of 32 floats span 125 bytes, cleared.
        assert!(
            !bit_strided(13000, [(1 << 17) + 1, 32], [0, 1], 0x70_0000),
            "{how:?}"
        );
    });
}

#[test]
fn a_failure_after_a_hit_releases_the_entry_and_restores_the_context() {
    each(|how, built| {
        let f = built.function("copy2d");
        let (mut sa, mut ta, mut sb) = ([128i64, 64], [64i64, 1], [128i64, 64]);
        let a = tensor(0x10_0000, F16, &mut sa, Some(&mut ta));
        let b = tensor(0x20_0000, F16, &mut sb, None);
        let encodes_of = |b: &DLTensor| {
            fake().reset();
            call(&f, &[Arg::Tensor(&a), Arg::Tensor(b)]).unwrap();
            encodes().len()
        };
        assert_eq!(encodes_of(&b), 2, "{how:?}");
        // `a` hits (its entry locked for the launch), then `b` fails its rule.
        let mut sb2 = [128i64, 64];
        let misaligned = tensor(0x20_0008, F16, &mut sb2, None);
        fake().reset();
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&a), Arg::Tensor(&misaligned)]),
            "ValueError: copy2d: launch of tma.copy: kernel argument 1 (tensormap of 'b'): the \
             global address 0x200008 (data + byte_offset) is not aligned to 16 bytes, as TMA \
             requires",
            "{how:?}"
        );
        assert_eq!(fake().current(), "none", "{how:?}: the context is restored");
        assert_eq!(encodes_of(&b), 0, "{how:?}: a's entry was released");
        // The encoder fails for `b` after `a` hit.
        let mut sb3 = [128i64, 64];
        let other = tensor(0x30_0000, F16, &mut sb3, None);
        fake().reset();
        fake().fail("cuTensorMapEncodeTiled", 1);
        assert!(
            call_err(&f, &[Arg::Tensor(&a), Arg::Tensor(&other)])
                .starts_with("RuntimeError: copy2d: launch of tma.copy: kernel argument 1"),
            "{how:?}"
        );
        assert_eq!(fake().current(), "none", "{how:?}");
        assert_eq!(encodes_of(&b), 0, "{how:?}");
        // The launch fails with both entries held: both are released.
        fake().reset();
        fake().fail("cuLaunchKernelEx", 719);
        assert!(call_err(&f, &[Arg::Tensor(&a), Arg::Tensor(&b)]).starts_with("RuntimeError"));
        assert_eq!(encodes_of(&b), 0, "{how:?}");
    });
}

#[test]
fn concurrent_launches_get_the_descriptors_of_their_own_tensors() {
    let m = tma_module();
    for how in support::deliveries() {
        let built = support::build(&m, how);
        let f = built.function("dynbox");
        std::thread::scope(|s| {
            for thread in 0..4usize {
                let f = &f;
                s.spawn(move || {
                    fake().reset();
                    for i in 0..200usize {
                        // Six keys shared by all threads, more than a site's four entries.
                        let address = 0x100_0000 + 0x1_0000 * ((i + thread) % 6);
                        let (mut s, mut t) = ([64i64, 32], [32i64, 1]);
                        let a = tensor(address, F32, &mut s, Some(&mut t));
                        call(
                            f,
                            &[Arg::Tensor(&a), Arg::Int(16), Arg::Int(8), Arg::Int(1)],
                        )
                        .unwrap();
                        let l = fake().launches().pop().unwrap();
                        for arg in 0..2 {
                            let w = words(&l["args"][arg]);
                            assert_eq!(w[0], address as u64, "{how:?}: thread {thread}, call {i}");
                            assert_eq!(&w[2..4], [32, 64], "{how:?}");
                        }
                        fake().reset();
                    }
                });
            }
        });
    }
}

#[test]
fn im2col_descriptors_are_encoded_checked_and_cached() {
    each(|how, built| {
        let f = built.function("im2col");
        let mut shape = [2i64, 16, 16, 64];
        let x = tensor(0x60_0000, F16, &mut shape, None);
        let run = |pixels: i64| {
            fake().reset();
            call(&f, &[Arg::Tensor(&x), Arg::Int(pixels)]).unwrap();
            fake()
                .log()
                .into_iter()
                .filter(|r| r["call"] == "cuTensorMapEncodeIm2col")
                .count()
        };
        assert_eq!(run(128), 1, "{how:?}");
        let e = fake()
            .log()
            .into_iter()
            .find(|r| r["call"] == "cuTensorMapEncodeIm2col")
            .unwrap();
        assert_eq!(
            (&e["dims"], &e["strides"], &e["lower"], &e["upper"]),
            (
                &json!([64, 16, 16, 2]),
                &json!([128, 2048, 32768]),
                &json!([-2, -1]),
                &json!([0, 1])
            ),
            "{how:?}: innermost first"
        );
        assert_eq!(
            (&e["channels"], &e["pixels"], &e["swizzle"]),
            (&json!(64), &json!(128), &json!(3))
        );
        let w = words(&fake().launches()[0]["args"][0]);
        assert_eq!(w[1] >> 20 & 1, 1, "{how:?}: an im2col descriptor");
        assert_eq!(
            w[1] >> 21 & 1,
            1,
            "{how:?}: no bit-21 workaround for im2col"
        );
        assert_eq!(w[13], 64 | 128 << 32, "{how:?}");
        assert_eq!(run(128), 0, "{how:?}: cached");
        assert_eq!(run(256), 1, "{how:?}: pixels are part of the key");
        fake().reset();
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&x), Arg::Int(2000)]),
            "ValueError: im2col: launch of tma.conv: kernel argument 0 (tensormap of 'x'): \
             pixels is 2000; it must be 1 to 1024",
            "{how:?}"
        );
        // A failing encoder names its entry point (and is not cached: the next call encodes).
        fake().reset();
        fake().fail("cuTensorMapEncodeIm2col", 1);
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&x), Arg::Int(64)]),
            "RuntimeError: im2col: launch of tma.conv: kernel argument 0 (tensormap of 'x'): \
             cuTensorMapEncodeIm2col returned CUDA_ERROR_INVALID_VALUE (error 1: invalid argument)",
            "{how:?}"
        );
        assert!(fake().launches().is_empty(), "{how:?}");
        assert_eq!(run(64), 1, "{how:?}: encoded again");
    });
}

const U8: (u8, u8) = (1, 8);
const I8: (u8, u8) = (0, 8);

#[test]
fn packed_dtypes_encode_the_innermost_extent_in_values() {
    each(|how, built| {
        let f = built.function("packed4");
        // a: 16 rows of 64 bytes (128 4-bit values); b: 16 rows of 128 bytes (256 values).
        let (mut sa, mut ta, mut sb, mut tb) = ([16i64, 64], [64i64, 1], [16i64, 128], [128i64, 1]);
        let a = tensor(0x10_0000, U8, &mut sa, Some(&mut ta));
        let b = tensor(0x20_0000, U8, &mut sb, Some(&mut tb));
        call(&f, &[Arg::Tensor(&a), Arg::Tensor(&b), Arg::Int(64)]).unwrap();
        let e = encodes();
        assert_eq!(e.len(), 2, "{how:?}");
        // 16U4_ALIGN8B is 13, 16U4_ALIGN16B 14; strides stay in bytes.
        assert_eq!(
            (
                &e[0]["dtype"],
                &e[0]["dims"],
                &e[0]["strides"],
                &e[0]["box"]
            ),
            (&json!(13), &json!([128, 16]), &json!([64]), &json!([64, 8])),
            "{how:?}"
        );
        assert_eq!(
            (
                &e[1]["dtype"],
                &e[1]["dims"],
                &e[1]["strides"],
                &e[1]["box"]
            ),
            (
                &json!(14),
                &json!([256, 16]),
                &json!([128]),
                &json!([128, 8])
            ),
            "{how:?}"
        );
        let w = words(&fake().launches()[0]["args"][1]);
        assert_eq!(&w[2..4], [256, 16], "{how:?}: the values reach the kernel");
        // The same call again is a cache hit.
        call(&f, &[Arg::Tensor(&a), Arg::Tensor(&b), Arg::Int(64)]).unwrap();
        assert_eq!(encodes().len(), 2, "{how:?}");

        fake().reset();
        let f = built.function("packed6");
        // 16 rows of 192 bytes: 256 6-bit values (16 values in each 12 bytes).
        let (mut s, mut t) = ([16i64, 192], [192i64, 1]);
        let x = tensor(0x30_0000, I8, &mut s, Some(&mut t));
        call(&f, &[Arg::Tensor(&x), Arg::Int(128)]).unwrap();
        let e = encodes();
        assert_eq!(e.len(), 2, "{how:?}");
        for r in &e {
            assert_eq!(
                (&r["dtype"], &r["dims"], &r["strides"], &r["box"]),
                (
                    &json!(15),
                    &json!([256, 16]),
                    &json!([192]),
                    &json!([128, 8])
                ),
                "{how:?}"
            );
        }
        assert_eq!((&e[0]["swizzle"], &e[1]["swizzle"]), (&json!(0), &json!(4)));
    });
}

#[test]
fn packed_dtype_rules_are_checked_before_the_driver_is_called() {
    each(|how, built| {
        let f = built.function("packed4");
        let pre = "ValueError: packed4: launch of tma.copy: kernel argument";
        let check = |a: &DLTensor, b: &DLTensor, bk: i64, expected: &str| {
            fake().reset();
            let got = call_err(&f, &[Arg::Tensor(a), Arg::Tensor(b), Arg::Int(bk)]);
            assert_eq!(got, format!("{pre} {expected}"), "{how:?}");
            // No descriptor of the failing argument was encoded (argument 0's may have been, or
            // been found in its cache, when argument 1's rules fail).
            let e: Vec<Value> = encodes().iter().map(|r| r["dtype"].clone()).collect();
            let failing = if expected.starts_with("1 ") { 14 } else { 13 };
            assert!(!e.contains(&json!(failing)), "{how:?}: {expected}: {e:?}");
            assert!(
                expected.starts_with("1 ") || e.is_empty(),
                "{how:?}: {expected}"
            );
            assert!(fake().launches().is_empty(), "{how:?}: {expected}");
        };
        let (mut sa, mut ta, mut sb, mut tb) = ([16i64, 64], [64i64, 1], [16i64, 128], [128i64, 1]);
        let a = tensor(0x10_0000, U8, &mut sa, Some(&mut ta));
        let b = tensor(0x20_0000, U8, &mut sb, Some(&mut tb));
        check(
            &a,
            &b,
            16,
            "0 (tensormap of 'a'): the inner box is 16 x 4 bits = 64 bits; it must be a multiple of 16 bytes (128 bits)",
        );
        check(
            &a,
            &b,
            256,
            "0 (tensormap of 'a'): the inner box is 256 x 4 bits = 1024 bits; swizzle=b64 allows at most 64 bytes (512 bits)",
        );
        let (mut s0, mut t0) = ([16i64, 0], [64i64, 1]);
        check(
            &tensor(0x10_0000, U8, &mut s0, Some(&mut t0)),
            &b,
            64,
            "0 (tensormap of 'a'): a.shape[1] is 0 bytes = 0 values of dtype=u4x16_align8; a TMA dimension must be 1 to 4294967296",
        );
        let (mut s1, mut t1) = ([16i64, (1 << 31) + 16], [1i64 << 32, 1]);
        check(
            &tensor(0x10_0000, U8, &mut s1, Some(&mut t1)),
            &b,
            64,
            "0 (tensormap of 'a'): a.shape[1] is 2147483664 bytes = 4294967328 values of dtype=u4x16_align8; a TMA dimension must be 1 to 4294967296",
        );
        check(
            &a,
            &tensor(0x20_0010, U8, &mut sb, Some(&mut tb)),
            64,
            "1 (tensormap of 'b'): the global address 0x200010 (data + byte_offset) is not aligned to 32 bytes, as TMA requires for dtype=u4x16_align16",
        );
        let (mut s2, mut t2) = ([16i64, 128], [144i64, 1]);
        check(
            &a,
            &tensor(0x20_0000, U8, &mut s2, Some(&mut t2)),
            64,
            "1 (tensormap of 'b'): b.strides[0] is 144 elements = 144 bytes; a TMA stride must be a multiple of 32 bytes and below 2^40 for dtype=u4x16_align16",
        );
        let (mut s3, mut t3) = ([16i64, 96], [128i64, 1]);
        check(
            &a,
            &tensor(0x20_0000, U8, &mut s3, Some(&mut t3)),
            64,
            "1 (tensormap of 'b'): b.shape[1] is 96 bytes; dtype=u4x16_align16 needs a multiple of 64 bytes (128 values)",
        );

        let f = built.function("packed6");
        let check6 = |x: &DLTensor, bk: i64, expected: &str| {
            fake().reset();
            let got = call_err(&f, &[Arg::Tensor(x), Arg::Int(bk)]);
            assert_eq!(
                got,
                format!(
                    "ValueError: packed6: launch of tma.copy: kernel argument 0 (tensormap of 'a'): {expected}"
                ),
                "{how:?}"
            );
            assert!(encodes().is_empty(), "{how:?}: {expected}");
        };
        let (mut s, mut t) = ([16i64, 192], [192i64, 1]);
        let x = tensor(0x30_0000, I8, &mut s, Some(&mut t));
        check6(
            &x,
            64,
            "box[1] is 64; dtype=u6x16_align16 needs exactly 128",
        );
        let (mut s4, mut t4) = ([16i64, 128], [128i64, 1]);
        check6(
            &tensor(0x30_0000, I8, &mut s4, Some(&mut t4)),
            128,
            "a.shape[1] is 128 bytes; dtype=u6x16_align16 needs a multiple of 96 bytes (128 values)",
        );
    });
}

#[test]
fn the_workaround_measures_a_packed_tensor_in_bytes() {
    each(|how, built| {
        let f = built.function("packed4");
        let bit = |rows: i64, address: usize| -> bool {
            fake().reset();
            fake().set_driver_version(13000);
            let (mut sa, mut ta) = ([rows, 64], [64i64, 1]);
            let (mut sb, mut tb) = ([16i64, 128], [128i64, 1]);
            let a = tensor(address, U8, &mut sa, Some(&mut ta));
            let b = tensor(0x20_0000, U8, &mut sb, Some(&mut tb));
            call(&f, &[Arg::Tensor(&a), Arg::Tensor(&b), Arg::Int(64)]).unwrap();
            fake().set_driver_version(0);
            words(&fake().launches()[0]["args"][0])[1] >> 21 & 1 == 1
        };
        // 2047 rows of 64 bytes span 131008 bytes: below 128 KiB, cleared (counted in 4-bit
        // values, 1 + 2046 * 64 + 127 = 131072, it would be kept); 2048 rows span 131072: kept.
        assert!(!bit(2047, 0x40_0000), "{how:?}");
        assert!(bit(2048, 0x50_0000), "{how:?}");
    });
}
