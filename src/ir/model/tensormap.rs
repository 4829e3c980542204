//! Launch arguments, and the TMA descriptor argument: `tensormap(x, box=(64, 64), ...)`, a
//! `CUtensorMap` the host function builds from a tensor parameter with the driver's
//! `cuTensorMapEncodeTiled` and passes to the kernel by value (docs/ir.md, "TMA
//! descriptors").

use safecall_runtime::abi::DLDataType;

use super::expr::Expr;
use super::tdm::TdmArg;

/// One argument of a [`Launch`](super::Launch).
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchArg {
    /// A scalar or pointer, passed by value.
    Value(Expr),
    /// A 128-byte TMA descriptor built from a tensor parameter, passed by value.
    TensorMap(Box<TensorMapArg>),
    /// An AMD TDM descriptor built from a tensor parameter, passed by value.
    Tdm(Box<TdmArg>),
}

impl LaunchArg {
    /// Its expressions, in source-map order: the value, or the descriptor's
    /// ([`TensorMapArg::exprs`]).
    pub fn exprs(&self) -> Box<dyn Iterator<Item = &Expr> + '_> {
        match self {
            LaunchArg::Value(e) => Box::new(std::iter::once(e)),
            LaunchArg::TensorMap(t) => Box::new(t.exprs()),
            LaunchArg::Tdm(_) => Box::new(std::iter::empty()),
        }
    }

    /// How many expressions it has.
    pub fn expr_count(&self) -> usize {
        match self {
            LaunchArg::Value(_) => 1,
            LaunchArg::TensorMap(t) => t.exprs().count(),
            LaunchArg::Tdm(_) => 0,
        }
    }
}

impl From<Expr> for LaunchArg {
    fn from(e: Expr) -> LaunchArg {
        LaunchArg::Value(e)
    }
}

impl From<TdmArg> for LaunchArg {
    fn from(t: TdmArg) -> LaunchArg {
        LaunchArg::Tdm(Box::new(t))
    }
}

impl From<TensorMapArg> for LaunchArg {
    fn from(t: TensorMapArg) -> LaunchArg {
        LaunchArg::TensorMap(Box::new(t))
    }
}

/// `tensormap(TENSOR, box=(..)[, element_strides=(..)][, interleave=..][, swizzle=..]
/// [, l2_promotion=..][, oob_fill=..][, dtype=..])`: the arguments of `cuTensorMapEncodeTiled`;
/// `tensormap_im2col(TENSOR, lower=(..), upper=(..), channels=C, pixels=P[, ...])` those of
/// `cuTensorMapEncodeIm2col` ([`TensorMapLayout`]).
///
/// Dimensions are written in the tensor's own order, outermost first (as the tensor's shape
/// is); the lowering reverses them into the driver's innermost-first order. The address,
/// dims and strides come from the tensor at call time.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMapArg {
    /// The tensor parameter the descriptor addresses.
    pub tensor: String,
    /// What the descriptor loads: tiles, or im2col columns.
    pub layout: TensorMapLayout,
    /// The traversal stride per dimension, outermost first; empty means all 1.
    pub element_strides: Vec<Expr>,
    /// `interleave=`.
    pub interleave: Interleave,
    /// `swizzle=`.
    pub swizzle: Swizzle,
    /// `l2_promotion=`.
    pub l2_promotion: L2Promotion,
    /// `oob_fill=`.
    pub oob_fill: OobFill,
    /// `dtype=`: the element type the descriptor declares, when the tensor's dtype cannot say
    /// it (`tf32`, the packed 4- and 6-bit types).
    pub dtype: Option<TensorMapDtype>,
}

/// What a descriptor loads.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorMapLayout {
    /// `box=(..)`: tiles of the box extent per dimension, outermost first, one integer per
    /// dimension (`cuTensorMapEncodeTiled`).
    Tiled {
        /// The box extents.
        box_dims: Vec<Expr>,
    },
    /// `lower=(..), upper=(..), channels=C, pixels=P`: im2col columns of a tensor of rank 3
    /// to 5 (N, spatial dims, C) (`cuTensorMapEncodeIm2col`).
    Im2col {
        /// The pixel box's lower corner offsets, one per spatial dimension, outermost first.
        lower: Vec<Expr>,
        /// The pixel box's upper corner offsets, likewise.
        upper: Vec<Expr>,
        /// Channels per pixel, an integer.
        channels: Expr,
        /// Pixels per column, an integer.
        pixels: Expr,
    },
}

impl TensorMapLayout {
    /// The keyword of the argument (`tensormap` or `tensormap_im2col`).
    pub fn keyword(&self) -> &'static str {
        match self {
            TensorMapLayout::Tiled { .. } => "tensormap",
            TensorMapLayout::Im2col { .. } => "tensormap_im2col",
        }
    }

    /// The name and range (the driver's rules) of each expression, in [`Self::exprs`] order,
    /// for a tensor of `rank` dimensions: box extents 1 to 256; corner offsets by rank
    /// ([`limits::CORNER_RANGE`]), channels 1 to 256, pixels 1 to 1024.
    pub fn ranges(&self, rank: usize) -> Vec<(String, i64, i64)> {
        match self {
            TensorMapLayout::Tiled { box_dims } => (0..box_dims.len())
                .map(|i| (format!("box[{i}]"), 1, limits::MAX_BOX))
                .collect(),
            TensorMapLayout::Im2col { lower, upper, .. } => {
                let at = rank.clamp(limits::MIN_RANK_IM2COL, limits::MAX_RANK);
                let (lo, hi) = limits::CORNER_RANGE[at - limits::MIN_RANK_IM2COL];
                (0..lower.len())
                    .map(|i| (format!("lower[{i}]"), lo, hi))
                    .chain((0..upper.len()).map(|i| (format!("upper[{i}]"), lo, hi)))
                    .chain([
                        ("channels".to_owned(), 1, limits::MAX_CHANNELS),
                        ("pixels".to_owned(), 1, limits::MAX_PIXELS),
                    ])
                    .collect()
            }
        }
    }

    /// The expression that gives the inner box (the innermost box extent, or the channels per
    /// pixel), by [`Self::exprs`] index, and whether its bytes must be a multiple of 16 (tiled
    /// only); `None` for an empty box.
    pub fn inner(&self) -> Option<(usize, bool)> {
        match self {
            TensorMapLayout::Tiled { box_dims } => box_dims.len().checked_sub(1).map(|i| (i, true)),
            TensorMapLayout::Im2col { lower, upper, .. } => {
                Some((lower.len() + upper.len(), false))
            }
        }
    }

    /// Its expressions, in source-map order.
    pub fn exprs(&self) -> Box<dyn Iterator<Item = &Expr> + '_> {
        match self {
            TensorMapLayout::Tiled { box_dims } => Box::new(box_dims.iter()),
            TensorMapLayout::Im2col {
                lower,
                upper,
                channels,
                pixels,
            } => Box::new(lower.iter().chain(upper).chain([channels, pixels])),
        }
    }
}

impl TensorMapArg {
    /// A tiled descriptor of `tensor` with `box_dims` and the driver's zero value of every
    /// option.
    pub fn new(tensor: &str, box_dims: Vec<Expr>) -> TensorMapArg {
        TensorMapArg::with_layout(tensor, TensorMapLayout::Tiled { box_dims })
    }

    /// A descriptor of `tensor` with `layout` and the driver's zero value of every option.
    pub fn with_layout(tensor: &str, layout: TensorMapLayout) -> TensorMapArg {
        TensorMapArg {
            tensor: tensor.to_owned(),
            layout,
            element_strides: Vec::new(),
            interleave: Interleave::None,
            swizzle: Swizzle::None,
            l2_promotion: L2Promotion::None,
            oob_fill: OobFill::None,
            dtype: None,
        }
    }

    /// Its expressions, in source-map order: the layout's, then the element strides.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.layout.exprs().chain(&self.element_strides)
    }

    /// The element type: the override, else the TMA type of the tensor's `dtype`.
    pub fn element_type(&self, dtype: Option<DLDataType>) -> Option<TensorMapDtype> {
        self.dtype
            .or_else(|| dtype.and_then(TensorMapDtype::of_dtype))
    }
}

keyword_enum! {
    /// `interleave=` (`CUtensorMapInterleave`).
    Interleave, CUtensorMapInterleave_enum {
        /// `none`.
        None = "none" => CU_TENSOR_MAP_INTERLEAVE_NONE,
        /// `b16`: 16-byte interleave.
        B16 = "b16" => CU_TENSOR_MAP_INTERLEAVE_16B,
        /// `b32`: 32-byte interleave.
        B32 = "b32" => CU_TENSOR_MAP_INTERLEAVE_32B,
    }
}

keyword_enum! {
    /// `swizzle=` (`CUtensorMapSwizzle`).
    Swizzle, CUtensorMapSwizzle_enum {
        /// `none`.
        None = "none" => CU_TENSOR_MAP_SWIZZLE_NONE,
        /// `b32`: 32-byte swizzle.
        B32 = "b32" => CU_TENSOR_MAP_SWIZZLE_32B,
        /// `b64`: 64-byte swizzle.
        B64 = "b64" => CU_TENSOR_MAP_SWIZZLE_64B,
        /// `b128`: 128-byte swizzle.
        B128 = "b128" => CU_TENSOR_MAP_SWIZZLE_128B,
        /// `b128_atom32`: 128-byte swizzle of 32-byte atoms (Blackwell).
        B128Atom32 = "b128_atom32" => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
        /// `b128_atom32_flip8`: 128-byte swizzle of 32-byte atoms, 8-byte flip (Blackwell).
        B128Atom32Flip8 = "b128_atom32_flip8" => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
        /// `b128_atom64`: 128-byte swizzle of 64-byte atoms (Blackwell).
        B128Atom64 = "b128_atom64" => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
    }
}

impl Swizzle {
    /// The swizzle span in bytes (the most bytes the inner box dimension may have), `None`
    /// without swizzle.
    pub fn span(self) -> Option<u32> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128
            | Swizzle::B128Atom32
            | Swizzle::B128Atom32Flip8
            | Swizzle::B128Atom64 => Some(128),
        }
    }
}

impl Interleave {
    /// The alignment in bytes the address and strides need (16, or 32 with 32-byte
    /// interleave).
    pub fn alignment(self) -> u32 {
        match self {
            Interleave::None | Interleave::B16 => 16,
            Interleave::B32 => 32,
        }
    }
}

keyword_enum! {
    /// `l2_promotion=` (`CUtensorMapL2promotion`).
    L2Promotion, CUtensorMapL2promotion_enum {
        /// `none`.
        None = "none" => CU_TENSOR_MAP_L2_PROMOTION_NONE,
        /// `b64`: 64-byte L2 promotion.
        B64 = "b64" => CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        /// `b128`: 128-byte L2 promotion (what Triton asks for).
        B128 = "b128" => CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        /// `b256`: 256-byte L2 promotion.
        B256 = "b256" => CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }
}

keyword_enum! {
    /// `oob_fill=` (`CUtensorMapFloatOOBfill`): what out-of-bounds elements read as.
    OobFill, CUtensorMapFloatOOBfill_enum {
        /// `none`: zeros.
        None = "none" => CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        /// `nan`: NaN, requesting zero FMA (float element types only).
        Nan = "nan" => CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
    }
}

keyword_enum! {
    /// The descriptor's element type (`CUtensorMapDataType`), `dtype=`.
    TensorMapDtype, CUtensorMapDataType_enum {
        /// `u8`.
        U8 = "u8" => CU_TENSOR_MAP_DATA_TYPE_UINT8,
        /// `u16`.
        U16 = "u16" => CU_TENSOR_MAP_DATA_TYPE_UINT16,
        /// `u32`.
        U32 = "u32" => CU_TENSOR_MAP_DATA_TYPE_UINT32,
        /// `i32`.
        I32 = "i32" => CU_TENSOR_MAP_DATA_TYPE_INT32,
        /// `u64`.
        U64 = "u64" => CU_TENSOR_MAP_DATA_TYPE_UINT64,
        /// `i64`.
        I64 = "i64" => CU_TENSOR_MAP_DATA_TYPE_INT64,
        /// `f16`.
        F16 = "f16" => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        /// `f32`.
        F32 = "f32" => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        /// `f64`.
        F64 = "f64" => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        /// `bf16`.
        Bf16 = "bf16" => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        /// `f32_ftz`: f32, denormals flushed to zero.
        F32Ftz = "f32_ftz" => CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        /// `tf32`.
        Tf32 = "tf32" => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        /// `tf32_ftz`: tf32, denormals flushed to zero.
        Tf32Ftz = "tf32_ftz" => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        /// `u4x16_align8`: 16 packed 4-bit values, 8-byte aligned.
        U4x16Align8 = "u4x16_align8" => CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
        /// `u4x16_align16`: 16 packed 4-bit values, 16-byte aligned.
        U4x16Align16 = "u4x16_align16" => CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
        /// `u6x16_align16`: 16 packed 6-bit values, 16-byte aligned.
        U6x16Align16 = "u6x16_align16" => CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B,
    }
}

impl TensorMapDtype {
    /// Bytes per element of the tensor, which turn its strides into the driver's byte strides:
    /// 1 for the packed types, whose tensor is a container of bytes ([`Self::packing`]; the
    /// inner-box rules use [`Self::box_bits`]).
    pub fn size(self) -> u32 {
        match self {
            TensorMapDtype::U8
            | TensorMapDtype::U4x16Align8
            | TensorMapDtype::U4x16Align16
            | TensorMapDtype::U6x16Align16 => 1,
            TensorMapDtype::U16 | TensorMapDtype::F16 | TensorMapDtype::Bf16 => 2,
            TensorMapDtype::U32
            | TensorMapDtype::I32
            | TensorMapDtype::F32
            | TensorMapDtype::F32Ftz
            | TensorMapDtype::Tf32
            | TensorMapDtype::Tf32Ftz => 4,
            TensorMapDtype::U64 | TensorMapDtype::I64 | TensorMapDtype::F64 => 8,
        }
    }

    /// Whether it is one of the packed 4- and 6-bit types, whose innermost dim the driver
    /// counts in values ([`Self::packing`]) and whose rules differ (docs/ir.md, "Packed
    /// element types").
    pub fn is_packed(self) -> bool {
        matches!(
            self,
            TensorMapDtype::U4x16Align8
                | TensorMapDtype::U4x16Align16
                | TensorMapDtype::U6x16Align16
        )
    }

    /// How a packed type's values lie in the tensor, a container of bytes (docs/ir.md, "Packed
    /// element types"): `Some((values, bytes))`, `values` 4- or 6-bit values in each `bytes`
    /// bytes of global memory, which holds them without gaps (the gaps of the `align16` types
    /// are in shared memory): `(2, 1)` for the 4-bit types, `(4, 3)` for `u6x16_align16`;
    /// `None` for the other types. The driver's innermost dim is the tensor's innermost extent
    /// in bytes times `values / bytes`.
    pub fn packing(self) -> Option<(i64, i64)> {
        match self {
            TensorMapDtype::U4x16Align8 | TensorMapDtype::U4x16Align16 => Some((2, 1)),
            TensorMapDtype::U6x16Align16 => Some((4, 3)),
            TensorMapDtype::U8
            | TensorMapDtype::U16
            | TensorMapDtype::U32
            | TensorMapDtype::I32
            | TensorMapDtype::U64
            | TensorMapDtype::I64
            | TensorMapDtype::F16
            | TensorMapDtype::F32
            | TensorMapDtype::F64
            | TensorMapDtype::Bf16
            | TensorMapDtype::F32Ftz
            | TensorMapDtype::Tf32
            | TensorMapDtype::Tf32Ftz => None,
        }
    }

    /// Bits per element in the inner-box rules (the element size the driver derives from the
    /// type, in shared memory): 4 for `u4x16_align8` (no gaps), 8 for the `align16` types (16
    /// values in each 16 bytes), the size in bits otherwise.
    pub fn box_bits(self) -> u32 {
        match self {
            TensorMapDtype::U4x16Align8 => 4,
            other => 8 * other.size(),
        }
    }

    /// Whether it is one of the `align16` packed types: 32-byte address and strides, an
    /// innermost dim that is a multiple of [`limits::PACKED_INNER_BOX`] values and an inner box
    /// of exactly that many values.
    pub fn is_align16(self) -> bool {
        matches!(
            self,
            TensorMapDtype::U4x16Align16 | TensorMapDtype::U6x16Align16
        )
    }

    /// The swizzles the driver allows with it, `None` when any is allowed:
    /// `u4x16_align16` none, `b128`, `b128_atom32` (loads only); `u6x16_align16` those and
    /// `b128_atom64` (stores only).
    pub fn swizzles(self) -> Option<&'static [Swizzle]> {
        const LOADS: &[Swizzle] = &[Swizzle::None, Swizzle::B128, Swizzle::B128Atom32];
        const U6: &[Swizzle] = &[
            Swizzle::None,
            Swizzle::B128,
            Swizzle::B128Atom32,
            Swizzle::B128Atom64,
        ];
        match self {
            TensorMapDtype::U4x16Align16 => Some(LOADS),
            TensorMapDtype::U6x16Align16 => Some(U6),
            other => {
                debug_assert!(!other.is_align16());
                None
            }
        }
    }

    /// The alignment in bytes its address and strides need (32 for the `align16` types, else
    /// 16; interleave may ask more, [`Interleave::alignment`]).
    pub fn alignment(self) -> u32 {
        if self.is_align16() { 32 } else { 16 }
    }

    /// Whether it is a float type (only those take `oob_fill=nan`).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            TensorMapDtype::F16
                | TensorMapDtype::F32
                | TensorMapDtype::F64
                | TensorMapDtype::Bf16
                | TensorMapDtype::F32Ftz
                | TensorMapDtype::Tf32
                | TensorMapDtype::Tf32Ftz
        )
    }

    /// The TMA type of a DLPack dtype with one lane: integers by width (8- and 16-bit
    /// integers, bool and the 8-bit float codes are copied as `u8`/`u16`), floats as
    /// themselves; `None` when the driver has no such type (e.g. `float8x4`, `int4`).
    pub fn of_dtype(d: DLDataType) -> Option<TensorMapDtype> {
        use safecall_runtime::abi::dtype_code as code;
        if d.lanes != 1 {
            return None;
        }
        Some(match (d.code, d.bits) {
            (code::INT | code::UINT | code::BOOL, 8) => TensorMapDtype::U8,
            (code::INT | code::UINT, 16) => TensorMapDtype::U16,
            (code::UINT, 32) => TensorMapDtype::U32,
            (code::INT, 32) => TensorMapDtype::I32,
            (code::UINT, 64) => TensorMapDtype::U64,
            (code::INT, 64) => TensorMapDtype::I64,
            (code::FLOAT, 16) => TensorMapDtype::F16,
            (code::FLOAT, 32) => TensorMapDtype::F32,
            (code::FLOAT, 64) => TensorMapDtype::F64,
            (code::BFLOAT, 16) => TensorMapDtype::Bf16,
            (code::FLOAT8_E3M4..=code::FLOAT8_E8M0FNU, 8) => TensorMapDtype::U8,
            _ => return None,
        })
    }
}

/// Limits of `cuTensorMapEncodeTiled` (cuda.h's documentation of the encoder).
pub mod limits {
    /// Most dimensions.
    pub const MAX_RANK: usize = 5;
    /// Fewest dimensions with interleave.
    pub const MIN_RANK_INTERLEAVED: usize = 3;
    /// Largest box extent.
    pub const MAX_BOX: i64 = 256;
    /// Largest channels per pixel (im2col).
    pub const MAX_CHANNELS: i64 = 256;
    /// Largest pixels per column (im2col).
    pub const MAX_PIXELS: i64 = 1024;
    /// The range of im2col corner offsets, by tensor rank 3, 4, 5.
    pub const CORNER_RANGE: [(i64, i64); 3] = [(-32768, 32767), (-128, 127), (-16, 15)];
    /// Fewest dimensions of an im2col tensor.
    pub const MIN_RANK_IM2COL: usize = 3;
    /// Largest element stride.
    pub const MAX_ELEMENT_STRIDE: i64 = 8;
    /// Largest dimension (2^32).
    pub const MAX_DIM: i64 = 1 << 32;
    /// Strides in bytes are below 2^40.
    pub const STRIDE_LIMIT: i64 = 1 << 40;
    /// The inner box dimension in bytes is a multiple of this (without interleave).
    pub const BOX_INNER_MULTIPLE: i64 = 16;
    /// The inner box (and the innermost dim's multiple) of the `align16` packed types, in
    /// values.
    pub const PACKED_INNER_BOX: i64 = 128;
    /// Size of a `CUtensorMap` (cudarc's `CUtensorMap_st`: 128).
    pub const MAP_SIZE: u32 = size_of::<cudarc::driver::sys::CUtensorMap_st>() as u32;
    /// Alignment of the storage the lowering passes to the kernel (CUDA 13 declares 128;
    /// the driver needs 64).
    pub const MAP_ALIGN: u32 = 128;
    /// Alignment a kernel's parameter for a descriptor declares (`.param .align 64`).
    pub const PARAM_ALIGN: u32 = 64;
}
