//! The types a PTX kernel parameter may be declared with.

/// A PTX type a kernel parameter may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PtxType {
    /// `.s8`
    S8,
    /// `.s16`
    S16,
    /// `.s32`
    S32,
    /// `.s64`
    S64,
    /// `.u8`
    U8,
    /// `.u16`
    U16,
    /// `.u32`
    U32,
    /// `.u64`
    U64,
    /// `.f16`
    F16,
    /// `.f16x2`
    F16x2,
    /// `.bf16`
    Bf16,
    /// `.bf16x2`
    Bf16x2,
    /// `.f32`
    F32,
    /// `.f64`
    F64,
    /// `.b8`
    B8,
    /// `.b16`
    B16,
    /// `.b32`
    B32,
    /// `.b64`
    B64,
    /// `.b128`
    B128,
}

/// What kind of value a [`PtxType`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxClass {
    /// A signed integer (`.sN`).
    Signed,
    /// An unsigned integer (`.uN`).
    Unsigned,
    /// A floating-point value or pair (`.f16` .. `.f64`, `.bf16`, `.f16x2`, `.bf16x2`).
    Float,
    /// Untyped bits (`.bN`).
    Bits,
}

impl PtxType {
    /// Every type, in declaration order.
    pub const ALL: [PtxType; 19] = [
        PtxType::S8,
        PtxType::S16,
        PtxType::S32,
        PtxType::S64,
        PtxType::U8,
        PtxType::U16,
        PtxType::U32,
        PtxType::U64,
        PtxType::F16,
        PtxType::F16x2,
        PtxType::Bf16,
        PtxType::Bf16x2,
        PtxType::F32,
        PtxType::F64,
        PtxType::B8,
        PtxType::B16,
        PtxType::B32,
        PtxType::B64,
        PtxType::B128,
    ];

    /// The type's name without the dot (`u64`).
    pub fn keyword(self) -> &'static str {
        match self {
            PtxType::S8 => "s8",
            PtxType::S16 => "s16",
            PtxType::S32 => "s32",
            PtxType::S64 => "s64",
            PtxType::U8 => "u8",
            PtxType::U16 => "u16",
            PtxType::U32 => "u32",
            PtxType::U64 => "u64",
            PtxType::F16 => "f16",
            PtxType::F16x2 => "f16x2",
            PtxType::Bf16 => "bf16",
            PtxType::Bf16x2 => "bf16x2",
            PtxType::F32 => "f32",
            PtxType::F64 => "f64",
            PtxType::B8 => "b8",
            PtxType::B16 => "b16",
            PtxType::B32 => "b32",
            PtxType::B64 => "b64",
            PtxType::B128 => "b128",
        }
    }

    /// The type named `keyword` (without the dot).
    pub fn from_keyword(keyword: &str) -> Option<Self> {
        PtxType::ALL.into_iter().find(|t| t.keyword() == keyword)
    }

    /// Its size in bytes.
    pub fn size(self) -> u32 {
        match self {
            PtxType::S8 | PtxType::U8 | PtxType::B8 => 1,
            PtxType::S16 | PtxType::U16 | PtxType::F16 | PtxType::Bf16 | PtxType::B16 => 2,
            PtxType::S32
            | PtxType::U32
            | PtxType::F16x2
            | PtxType::Bf16x2
            | PtxType::F32
            | PtxType::B32 => 4,
            PtxType::S64 | PtxType::U64 | PtxType::F64 | PtxType::B64 => 8,
            PtxType::B128 => 16,
        }
    }

    /// What kind of value it holds.
    pub fn class(self) -> PtxClass {
        match self {
            PtxType::S8 | PtxType::S16 | PtxType::S32 | PtxType::S64 => PtxClass::Signed,
            PtxType::U8 | PtxType::U16 | PtxType::U32 | PtxType::U64 => PtxClass::Unsigned,
            PtxType::F16
            | PtxType::F16x2
            | PtxType::Bf16
            | PtxType::Bf16x2
            | PtxType::F32
            | PtxType::F64 => PtxClass::Float,
            PtxType::B8 | PtxType::B16 | PtxType::B32 | PtxType::B64 | PtxType::B128 => {
                PtxClass::Bits
            }
        }
    }
}
