//! `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col`: each records every argument and
//! writes a descriptor whose bytes encode them, so a test can read back, from a launch's
//! argument bytes, what reached the kernel.
//!
//! The descriptor's 16 little-endian 64-bit words:
//! - 0: the global address;
//! - 1: element type (bits 0-7), rank (8-15), interleave (16-19), bit 20 set for im2col, bit
//!   21 always set (the bit
//!   Triton's driver workaround clears), swizzle (24-31), L2 promotion (32-39), OOB fill
//!   (40-47), [`MAGIC`] (48-63);
//! - 2-6: the dims, innermost first (unused ones 0);
//! - 7-10: the strides in bytes of dims 1..;
//! - 11-13 (tiled): the box extents, two per word (low half first); (im2col) 11: the lower
//!   corner, 12: the upper corner, 16 bits per offset, 13: channels | pixels << 32;
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

/// How many times `cuTensorMapEncodeTiled` or `cuTensorMapEncodeIm2col` has been called in
/// the process.
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

/// The words both encoders write (every word but the layout's, 11-13), or `None` when a rule
/// both check fails (address aligned to 16, strides multiples of 16 below 2^40, element strides
/// 1 to 8, the map 64-byte aligned).
#[allow(clippy::too_many_arguments)]
fn common_words(
    map: *mut u64,
    dtype: c_int,
    rank: u32,
    address: *mut c_void,
    dims: &[u64],
    strides: &[u64],
    es: &[u32],
    [interleave, swizzle, l2_promotion, oob_fill]: [c_int; 4],
) -> Option<[u64; 16]> {
    let valid = (address as usize).is_multiple_of(16)
        && dims.len() == rank.min(5) as usize
        && strides.iter().all(|s| s % 16 == 0 && *s < (1 << 40))
        && es.iter().all(|e| (1..=8).contains(e));
    if map.is_null() || !(map as usize).is_multiple_of(64) || !valid {
        return None;
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
    for (j, e) in es.iter().enumerate() {
        words[14] |= u64::from(*e & 0xff) << (8 * j);
    }
    Some(words)
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
    let mut words = match common_words(
        map,
        dtype,
        rank,
        address,
        &dims,
        &strides,
        &es,
        [interleave, swizzle, l2_promotion, oob_fill],
    ) {
        Some(w) if (1..=5).contains(&rank) && boxes.iter().all(|b| (1..=256).contains(b)) => w,
        _ => return INVALID_VALUE,
    };
    for (j, b) in boxes.iter().enumerate() {
        words[11 + j / 2] |= u64::from(*b) << (32 * (j % 2));
    }
    // SAFETY: `map` points at a 64-byte aligned, writable CUtensorMap (checked by
    // `common_words`).
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), map, 16) };
    SUCCESS
}

/// `cuTensorMapEncodeIm2col`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuTensorMapEncodeIm2col(
    map: *mut u64,
    dtype: c_int,
    rank: u32,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    lower: *const c_int,
    upper: *const c_int,
    channels: u32,
    pixels: u32,
    element_strides: *const u32,
    interleave: c_int,
    swizzle: c_int,
    l2_promotion: c_int,
    oob_fill: c_int,
) -> CUresult {
    ENCODES.fetch_add(1, Ordering::Relaxed);
    let n = rank.min(5) as usize;
    let spatial = n.saturating_sub(2);
    // SAFETY: the driver's contract: arrays of `rank` (strides `rank - 1`, corners `rank - 2`)
    // entries.
    let (dims, strides, lower, upper, es) = unsafe {
        (
            read(dims, n),
            read(strides, n.saturating_sub(1)),
            read(lower, spatial),
            read(upper, spatial),
            read(element_strides, n),
        )
    };
    if let Some(code) = record("cuTensorMapEncodeIm2col", || {
        json!({
            "dtype": dtype,
            "rank": rank,
            "address": address as usize,
            "dims": dims,
            "strides": strides,
            "lower": lower,
            "upper": upper,
            "channels": channels,
            "pixels": pixels,
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
    let mut words = match common_words(
        map,
        dtype,
        rank,
        address,
        &dims,
        &strides,
        &es,
        [interleave, swizzle, l2_promotion, oob_fill],
    ) {
        Some(w)
            if (3..=5).contains(&rank)
                && (1..=256).contains(&channels)
                && (1..=1024).contains(&pixels) =>
        {
            w
        }
        _ => return INVALID_VALUE,
    };
    words[1] |= 1 << 20;
    for (j, (l, u)) in lower.iter().zip(&upper).enumerate() {
        words[11] |= u64::from(*l as u16) << (16 * j);
        words[12] |= u64::from(*u as u16) << (16 * j);
    }
    words[13] = u64::from(channels) | u64::from(pixels) << 32;
    // SAFETY: `map` points at a 64-byte aligned, writable CUtensorMap (checked by
    // `common_words`).
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), map, 16) };
    SUCCESS
}
