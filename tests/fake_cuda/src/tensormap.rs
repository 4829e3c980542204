//! `cuTensorMapEncodeTiled`: records every argument and writes a descriptor whose bytes encode
//! them, so a test can read back, from a launch's argument bytes, what reached the kernel.
//!
//! The descriptor's 16 little-endian 64-bit words:
//! - 0: the global address;
//! - 1: element type (bits 0-7), rank (8-15), interleave (16-19), bit 21 always set (the bit
//!   Triton's driver workaround clears), swizzle (24-31), L2 promotion (32-39), OOB fill
//!   (40-47), [`MAGIC`] (48-63);
//! - 2-6: the dims, innermost first (unused ones 0);
//! - 7-10: the strides in bytes of dims 1..;
//! - 11-13: the box extents, two per word (low half first);
//! - 14: the element strides, 8 bits each;
//! - 15: 0 (so that two encodes of the same inputs give the same bytes, whoever calls).
//!
//! The double checks the driver's rules too (rank 1..5, address aligned to 16 bytes, strides
//! multiples of 16, box 1..256, element strides 1..8) and returns `CUDA_ERROR_INVALID_VALUE`
//! when one fails.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::{CUresult, INVALID_VALUE, SUCCESS, record};

/// The top 16 bits of word 1.
pub const MAGIC: u64 = 0x7e4a;

/// Encode calls in the process, counted even in quiet mode.
static ENCODES: AtomicU64 = AtomicU64::new(0);

/// How many times `cuTensorMapEncodeTiled` has been called in the process.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_tensormap_encodes() -> u64 {
    ENCODES.load(Ordering::Relaxed)
}

/// Reads `n` values from `p` (none when NULL).
///
/// # Safety
/// `p` is NULL or points at `n` readable values.
unsafe fn read<T: Copy>(p: *const T, n: usize) -> Vec<T> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// `cuTensorMapEncodeTiled`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    map: *mut u64,
    dtype: c_int,
    rank: u32,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    box_dims: *const u32,
    element_strides: *const u32,
    interleave: c_int,
    swizzle: c_int,
    l2_promotion: c_int,
    oob_fill: c_int,
) -> CUresult {
    ENCODES.fetch_add(1, Ordering::Relaxed);
    let n = rank.min(5) as usize;
    // SAFETY: the driver's contract: arrays of `rank` (strides `rank - 1`) entries.
    let (dims, strides, boxes, es) = unsafe {
        (
            read(dims, n),
            read(strides, n.saturating_sub(1)),
            read(box_dims, n),
            read(element_strides, n),
        )
    };
    if let Some(code) = record("cuTensorMapEncodeTiled", || {
        json!({
            "dtype": dtype,
            "rank": rank,
            "address": address as usize,
            "dims": dims,
            "strides": strides,
            "box": boxes,
            "element_strides": es,
            "interleave": interleave,
            "swizzle": swizzle,
            "l2_promotion": l2_promotion,
            "oob_fill": oob_fill,
            "map_align": (map as usize) & 127,
        })
    }) {
        return code;
    }
    let valid = (1..=5).contains(&rank)
        && (address as usize).is_multiple_of(16)
        && dims.len() == n
        && strides.iter().all(|s| s % 16 == 0 && *s < (1 << 40))
        && boxes.iter().all(|b| (1..=256).contains(b))
        && es.iter().all(|e| (1..=8).contains(e));
    if map.is_null() || !(map as usize).is_multiple_of(64) || !valid {
        return INVALID_VALUE;
    }
    let mut words = [0u64; 16];
    words[0] = address as u64;
    words[1] = (dtype as u64 & 0xff)
        | (u64::from(rank) & 0xff) << 8
        | (interleave as u64 & 0xf) << 16
        | 1 << 21
        | (swizzle as u64 & 0xff) << 24
        | (l2_promotion as u64 & 0xff) << 32
        | (oob_fill as u64 & 0xff) << 40
        | MAGIC << 48;
    for (j, d) in dims.iter().enumerate() {
        words[2 + j] = *d;
    }
    for (j, s) in strides.iter().enumerate() {
        words[7 + j] = *s;
    }
    for (j, b) in boxes.iter().enumerate() {
        words[11 + j / 2] |= u64::from(*b) << (32 * (j % 2));
    }
    for (j, e) in es.iter().enumerate() {
        words[14] |= u64::from(*e & 0xff) << (8 * j);
    }
    // SAFETY: `map` points at a 64-byte aligned, writable CUtensorMap (checked non-NULL and
    // aligned above).
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), map, 16) };
    SUCCESS
}
