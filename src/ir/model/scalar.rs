//! Scalar types: the integers and [`ScalarType`], the types of plain machine values.

use super::float::FloatType;

keyword_enum! {
    /// Integer types.
    IntType {
        /// `i8`
        I8 = "i8",
        /// `i16`
        I16 = "i16",
        /// `i32`
        I32 = "i32",
        /// `i64`
        I64 = "i64",
        /// `u8`
        U8 = "u8",
        /// `u16`
        U16 = "u16",
        /// `u32`
        U32 = "u32",
        /// `u64`
        U64 = "u64",
    }
}

/// Types of plain machine values (and of extern C parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `bool` (one byte in memory, 0 or 1).
    Bool,
    /// An integer.
    Int(IntType),
    /// A float.
    Float(FloatType),
    /// `ptr`: an untyped pointer.
    Ptr,
}

impl ScalarType {
    /// Every scalar type: `bool`, the integers ([`IntType::ALL`]), the floats
    /// ([`FloatType::ALL`]), `ptr` (the order the parser's messages list them in).
    pub fn all() -> impl Iterator<Item = ScalarType> {
        std::iter::once(ScalarType::Bool)
            .chain(IntType::ALL.into_iter().map(ScalarType::Int))
            .chain(FloatType::ALL.into_iter().map(ScalarType::Float))
            .chain(std::iter::once(ScalarType::Ptr))
    }
}

impl IntType {
    /// Whether the type is signed (`i8`, `i16`, `i32`, `i64`).
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            IntType::I8 | IntType::I16 | IntType::I32 | IntType::I64
        )
    }

    /// The bit width: 8, 16, 32 or 64.
    pub fn bits(self) -> u32 {
        match self {
            IntType::I8 | IntType::U8 => 8,
            IntType::I16 | IntType::U16 => 16,
            IntType::I32 | IntType::U32 => 32,
            IntType::I64 | IntType::U64 => 64,
        }
    }
}

impl ScalarType {
    /// Whether the type is a signed integer (`i8` .. `i64`); false for unsigned integers,
    /// `bool`, floats and `ptr`.
    pub fn is_signed(self) -> bool {
        matches!(self, ScalarType::Int(t) if t.is_signed())
    }
}
