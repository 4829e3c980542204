//! The TDM descriptor argument: `tdm(x, block=(64, 64), warps=4, pad=(64, 8))`, the tensor
//! data mover descriptor of AMD's gfx1250, which the host function builds from a tensor
//! parameter and passes to the kernel by value (docs/ir.md, "TDM descriptors").
//!
//! The layout is Triton's (3.9, `third_party/amd/backend/driver.c`, `encodeTDMDescriptor`,
//! with the warp distribution of `include/TDMCommon.h`): four groups of 32-bit words, 20 in
//! all. The kernel's parameter holds the first two groups (48 bytes) for a tensor of rank 1
//! or 2 and all four (80 bytes) for rank 3 to 5. What the kernel was compiled with (the
//! block, its warps, the shared-memory padding) is constant; the address, dims and strides
//! come from the tensor at call time.

/// The limits of a TDM descriptor's fields (Triton's encoder and the descriptor's widths).
pub mod limits {
    /// The largest rank.
    pub const MAX_RANK: usize = 5;
    /// The largest block extent (16-bit fields).
    pub const MAX_BLOCK: u64 = 0xFFFF;
    /// The largest warp count: a block has at most 1024 threads, 32 waves of gfx1250's 32
    /// lanes (the processor with TDM).
    pub const MAX_WARPS: u64 = 32;
    /// Strides are 48-bit fields: every stride is below `1 << STRIDE_BITS` elements.
    pub const STRIDE_BITS: u32 = 48;
    /// The largest dim (32-bit fields).
    pub const MAX_DIM: i64 = u32::MAX as i64;
    /// The largest padding interval, in 32-bit words (`log2 - 1` in 3 bits).
    pub const MAX_PAD_INTERVAL_DWORDS: u64 = 256;
    /// The largest padding amount, in 32-bit words (`amount - 1` in 7 bits).
    pub const MAX_PAD_AMOUNT_DWORDS: u64 = 128;
    /// The descriptor's words: group 0 (4), group 1 (8), group 2 (4), group 3 (4).
    pub const WORDS: usize = 20;
}

/// `tdm(TENSOR, block=(..), warps=W[, pad=(INTERVAL, AMOUNT)])`: an AMD TDM descriptor of a
/// tensor parameter of rank 1 to 5 and 8-, 16-, 32- or 64-bit elements.
///
/// `block` is the kernel's block shape, outermost first, one extent per dimension; `warps`
/// the warps it was compiled for (the descriptor holds each warp's share of the block); `pad`
/// the shared-memory padding, in elements: `AMOUNT` elements after every `INTERVAL` (each a
/// whole number of 32-bit words, the interval a power of two).
#[derive(Clone, Debug, PartialEq)]
pub struct TdmArg {
    /// The tensor parameter the descriptor addresses.
    pub tensor: String,
    /// The block extents, outermost first.
    pub block: Vec<u64>,
    /// The warps that share the block.
    pub warps: u64,
    /// The padding `(interval, amount)` in elements, when given.
    pub pad: Option<(u64, u64)>,
}

impl TdmArg {
    /// The bytes of the kernel's parameter for a tensor of `rank`: groups 0 and 1 up to rank
    /// 2, all four groups above.
    pub fn param_size(rank: usize) -> u32 {
        if rank <= 2 { 48 } else { 80 }
    }

    /// Each warp's block extents, outermost first (`tdmGetAdjustedBlockShape`): warps are
    /// given to the dimensions outermost first, doubling a dimension's share while it stays
    /// within the extent; a tensor of rank 1 divides its block by every warp.
    pub fn warp_block(&self) -> Vec<u64> {
        let warps = self.warps.max(1);
        if self.block.len() < 2 {
            return self.block.iter().map(|b| b.div_ceil(warps)).collect();
        }
        let mut share = vec![1u64; self.block.len()];
        let mut remaining = warps;
        for (i, &b) in self.block.iter().enumerate() {
            while remaining > 1 && share[i].saturating_mul(2) <= b {
                share[i] *= 2;
                remaining /= 2;
            }
            if remaining <= 1 {
                break;
            }
        }
        self.block
            .iter()
            .zip(&share)
            .map(|(b, s)| b.div_ceil(*s))
            .collect()
    }

    /// Group 1's first word: the element size (`log2` of its bytes, bits 16-17) and the
    /// padding (enable bit 20, `log2(interval) - 1` at 22, `amount - 1` at 25, in 32-bit
    /// words), for elements of `elem_bits` the verifier accepted.
    pub fn config_word(&self, elem_bits: u64) -> u32 {
        let mut word = ((elem_bits / 8).max(1).ilog2()) << 16;
        if let Some((interval, amount)) = self.pad {
            let interval = interval.saturating_mul(elem_bits) / 32;
            let amount = amount.saturating_mul(elem_bits) / 32;
            if interval > 0 && amount > 0 {
                word |= 1 << 20;
                word |= (interval.ilog2().wrapping_sub(1) & 0x7) << 22;
                word |= ((amount - 1) as u32 & 0x7F) << 25;
            }
        }
        word
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(block: &[u64], warps: u64, pad: Option<(u64, u64)>) -> TdmArg {
        TdmArg {
            tensor: "x".into(),
            block: block.to_vec(),
            warps,
            pad,
        }
    }

    #[test]
    fn warps_go_to_the_outer_dimensions_first() {
        // 4 warps over a 64 x 64 block: all four on the outer dimension.
        assert_eq!(arg(&[64, 64], 4, None).warp_block(), vec![16, 64]);
        // 8 warps over 2 x 64: two on the outer (its extent), four on the inner.
        assert_eq!(arg(&[2, 64], 8, None).warp_block(), vec![1, 16]);
        // Leftover warps stay unassigned: 8 warps over 2 x 2 use four.
        assert_eq!(arg(&[2, 2], 8, None).warp_block(), vec![1, 1]);
        // Rank 3: the third dimension is divided too when the first two are saturated.
        assert_eq!(arg(&[2, 2, 64], 8, None).warp_block(), vec![1, 1, 32]);
        // Rank 1 divides by every warp, rounding up.
        assert_eq!(arg(&[100], 8, None).warp_block(), vec![13]);
    }

    #[test]
    fn the_config_word_holds_the_size_and_the_padding() {
        assert_eq!(arg(&[64, 64], 4, None).config_word(16), 1 << 16);
        assert_eq!(arg(&[64, 64], 4, None).config_word(8), 0);
        assert_eq!(arg(&[64, 64], 4, None).config_word(64), 3 << 16);
        // 64 halves = 32 words (log2 5), 8 halves = 4 words.
        let padded = arg(&[64, 64], 4, Some((64, 8))).config_word(16);
        assert_eq!(padded, (1 << 16) | (1 << 20) | (4 << 22) | (3 << 25));
    }

    #[test]
    fn parameters_hold_two_groups_up_to_rank_2_and_four_above() {
        assert_eq!(TdmArg::param_size(1), 48);
        assert_eq!(TdmArg::param_size(2), 48);
        assert_eq!(TdmArg::param_size(3), 80);
        assert_eq!(TdmArg::param_size(5), 80);
    }
}
