//! AMD TDM descriptors (`tdm(..)` launch arguments) on the HIP runtime double, on every
//! delivery path: the bytes the kernel receives (Triton 3.9's `encodeTDMDescriptor` layout,
//! worked out by hand below from its field list) and the call-time checks.

use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor, device_type};

use crate::hip_double::hip;
use crate::hip_launch::each;
use crate::support::{Arg, call, call_err, hex};
use serde_json::json;

/// A ROCm tensor on device 0 of `bits`-bit floats at `data`.
fn tensor(data: usize, bits: u8, shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
    DLTensor {
        data: data as *mut _,
        device: DLDevice {
            device_type: device_type::ROCM,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: 2,
            bits,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

/// Little-endian bytes of 32-bit words.
fn words(w: &[u32]) -> String {
    hex(&w.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>())
}

#[test]
fn a_2d_descriptor_is_groups_0_and_1_with_padding() {
    each(|how, built| {
        let f = built.function("tdm_2d");
        let mut shape = [100i64, 200];
        // An address above 4 GiB: its high bits go to word 3.
        let x = tensor(0x12_7000_0100, 16, &mut shape, None);
        call(&f, &[Arg::Tensor(&x), Arg::Int(7)]).unwrap();
        let launches = hip().launches();
        assert_eq!(launches.len(), 1, "{how:?}");
        let l = &launches[0];
        assert_eq!(l["kernel"], "tdm2");
        let expected = words(&[
            1,           // the predicate
            0,           // the LDS address (the kernel's)
            0x7000_0100, // the address, low
            0x8000_0012, // the address, bits 32-62, and the type bit (31 of this word)
            // 2-byte elements (1 at 16), padding on (20): 64 halves = 32 words (log2 5, less
            // 1 = 4 at 22), 8 halves = 4 words (less 1 = 3 at 25).
            (1 << 16) | (1 << 20) | (4 << 22) | (3 << 25),
            200 << 16, // the inner dim (200) from bit 48
            100 << 16, // the outer dim (100) from bit 80
            64 << 16,  // the inner block (64: no warp shares it) at bit 112
            16,        // the outer block: 64 over 4 warps
            200,       // the outer stride (elements), low 32 bits
            0,         // its high 16 bits; no third dim
            0,
        ]);
        assert_eq!(
            l["args"],
            json!([expected, hex(&7i32.to_le_bytes())]),
            "{how:?}"
        );
    });
}

#[test]
fn a_3d_descriptor_is_all_four_groups_with_the_tensors_strides() {
    each(|how, built| {
        let f = built.function("tdm_3d");
        let mut shape = [3i64, 20, 64];
        let mut strides = [2560i64, 128, 1];
        let x = tensor(0x7100_0000, 32, &mut shape, Some(&mut strides));
        call(&f, &[Arg::Tensor(&x), Arg::Ptr(0x5000)]).unwrap();
        let launches = hip().launches();
        let l = &launches[0];
        assert_eq!(l["kernel"], "tdm3", "{how:?}");
        // 8 warps over a (2, 16, 64) block: 2 on the outer dim, 4 on the middle one.
        let expected = words(&[
            1,
            0,
            0x7100_0000,
            0x8000_0000,
            2 << 16,               // 4-byte elements, no padding
            64 << 16,              // dim 0 (inner): 64
            20 << 16,              // dim 1: 20
            64 << 16,              // block 0: 64
            (1 << 16) | 4,         // block 1: 16 / 4 warps; block 2: 2 / 2 warps
            128,                   // stride 1, low
            (2560 & 0xFFFF) << 16, // stride 1, high (0); stride 2, low 16 bits
            0,                     // stride 2, high 32 bits
            3,                     // group 2: dim 2
            0,
            0,
            0,
            0, // group 3: nothing below rank 5
            0,
            0,
            0,
        ]);
        assert_eq!(
            l["args"],
            json!([expected, hex(&0x5000u64.to_le_bytes())]),
            "{how:?}"
        );
    });
}

#[test]
fn a_1d_descriptor_divides_its_block_by_every_warp() {
    each(|how, built| {
        let f = built.function("tdm_1d");
        let mut shape = [1000i64];
        let x = tensor(0x7100_0040, 32, &mut shape, None);
        call(&f, &[Arg::Tensor(&x), Arg::Int(3)]).unwrap();
        let launches = hip().launches();
        let expected = words(&[
            1,
            0,
            0x7100_0040,
            0x8000_0000,
            2 << 16,    // 4-byte elements
            1000 << 16, // the dim
            0,
            13 << 16, // 100 over 8 warps, rounded up
            0,
            0,
            0,
            0,
        ]);
        assert_eq!(
            launches[0]["args"],
            json!([expected, hex(&3i32.to_le_bytes())]),
            "{how:?}"
        );
    });
}

#[test]
fn a_5d_descriptor_fills_group_3_and_takes_strides_up_to_2_to_the_48() {
    each(|how, built| {
        let f = built.function("tdm_5d");
        let mut shape = [2i64, 3, 5, 7, 100];
        // The outermost stride is the largest a field holds (2^48 - 1).
        let mut strides = [(1i64 << 48) - 1, 3500, 700, 100, 1];
        let x = tensor(0x7200_0000, 16, &mut shape, Some(&mut strides));
        call(&f, &[Arg::Tensor(&x), Arg::Ptr(0x5000)]).unwrap();
        let launches = hip().launches();
        // 16 warps over (2, 2, 2, 4, 64): two on each of the four outer dims.
        let expected = words(&[
            1,
            0,
            0x7200_0000,
            0x8000_0000,
            1 << 16,            // 2-byte elements
            100 << 16,          // dim 0 (inner)
            7 << 16,            // dim 1
            64 << 16,           // block 0
            (1 << 16) | 2,      // blocks 1 (4 / 2 warps) and 2 (2 / 2)
            100,                // stride 1
            700 << 16,          // stride 2, low 16 bits
            0,                  // stride 2, high 32 bits
            5,                  // group 2: dim 2
            3,                  // dim 3
            3500,               // stride 3
            1 << 16,            // block 3 (2 / 2)
            0xFFFF_FFFF,        // group 3: stride 4, low 32 bits
            (2 << 16) | 0xFFFF, // stride 4, high 16 bits; dim 4
            1 << 16,            // block 4 (2 / 2)
            0,
        ]);
        assert_eq!(
            launches[0]["args"],
            json!([expected, hex(&0x5000u64.to_le_bytes())]),
            "{how:?}"
        );
    });
}

#[test]
fn what_the_fields_cannot_hold_is_a_value_error() {
    each(|how, built| {
        let f = built.function("tdm_3d");
        let prefix = "ValueError: tdm_3d: launch of kernels.tdm3: kernel argument 0 (tdm of 'x')";
        let mut shape = [3i64, 20, 64];
        let mut strides = [1i64 << 48, 128, 1];
        let x = tensor(0x7100_0000, 32, &mut shape, Some(&mut strides));
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&x), Arg::Ptr(0x5000)]),
            format!(
                "{prefix}: x.strides[0] is 281474976710656 elements; a TDM stride must be 0 to \
                 2^48 - 1 elements"
            ),
            "{how:?}"
        );
        let mut strides = [2560i64, 128, 2];
        let x = tensor(0x7100_0000, 32, &mut shape, Some(&mut strides));
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&x), Arg::Ptr(0x5000)]),
            format!(
                "{prefix}: x.strides[2] is 2; TDM needs the innermost dimension contiguous \
                 (stride 1)"
            ),
            "{how:?}"
        );
        let mut shape = [1i64 << 32, 1, 64];
        let mut strides = [64i64, 64, 1];
        let x = tensor(0x7100_0000, 32, &mut shape, Some(&mut strides));
        assert_eq!(
            call_err(&f, &[Arg::Tensor(&x), Arg::Ptr(0x5000)]),
            format!(
                "{prefix}: x.shape[0] is 4294967296; a TDM dimension must be at most 4294967295"
            ),
            "{how:?}"
        );
        assert!(hip().launches().is_empty(), "{how:?}: nothing launched");
    });
}
