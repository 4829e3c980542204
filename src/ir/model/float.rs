//! Floating-point types: their spellings, their literal words and their formats.

keyword_enum! {
    /// Floating-point types.
    ///
    /// `f16` (IEEE binary16) and `bf16` (bfloat16: the upper half of an `f32`) are storage types:
    /// they convert to and from `f32`/`f64` with [`Expr::Cast`](super::Expr::Cast) (to a half:
    /// round to nearest, ties to even; back: exact) and compare; arithmetic is done in `f32` or
    /// `f64` (see docs/ir.md, "Half-precision floats").
    FloatType {
        /// `f16`: IEEE 754 binary16 (5 exponent bits, 10 fraction bits); the suffix of its
        /// literals (`1.5f16`), as each type's keyword is.
        F16 = "f16",
        /// `bf16`: bfloat16 (8 exponent bits, 7 fraction bits).
        BF16 = "bf16",
        /// `f32`
        F32 = "f32",
        /// `f64`
        F64 = "f64",
    }
}

impl FloatType {
    /// The word of positive infinity: `inf` for `f64`, `inf_f32`, `inf_f16`, `inf_bf16`.
    pub fn inf_word(self) -> &'static str {
        match self {
            FloatType::F16 => "inf_f16",
            FloatType::BF16 => "inf_bf16",
            FloatType::F32 => "inf_f32",
            FloatType::F64 => "inf",
        }
    }

    /// The word of the canonical quiet NaN (sign clear, only the quiet bit of the fraction
    /// set): `nan` for `f64`, `nan_f32`, `nan_f16`, `nan_bf16`.
    pub fn nan_word(self) -> &'static str {
        match self {
            FloatType::F16 => "nan_f16",
            FloatType::BF16 => "nan_bf16",
            FloatType::F32 => "nan_f32",
            FloatType::F64 => "nan",
        }
    }

    /// The builtin that writes a value by its bits in this type: `f16bits(0x3c00)`.
    pub fn bits_word(self) -> &'static str {
        match self {
            FloatType::F16 => "f16bits",
            FloatType::BF16 => "bf16bits",
            FloatType::F32 => "f32bits",
            FloatType::F64 => "f64bits",
        }
    }

    /// The builtin that writes a constant of this type by the `f64` bits the model holds, for
    /// values the type cannot hold (which the verifier rejects): `f64bits_f16(0x...)`. `None`
    /// for `f64`.
    pub fn wide_bits_word(self) -> Option<&'static str> {
        match self {
            FloatType::F16 => Some("f64bits_f16"),
            FloatType::BF16 => Some("f64bits_bf16"),
            FloatType::F32 => Some("f64bits_f32"),
            FloatType::F64 => None,
        }
    }

    /// The storage width in bits: 16, 16, 32 or 64.
    pub fn bits(self) -> u32 {
        match self {
            FloatType::F16 | FloatType::BF16 => 16,
            FloatType::F32 => 32,
            FloatType::F64 => 64,
        }
    }

    /// The number of exponent bits: 5, 8, 8 or 11.
    pub fn exponent_bits(self) -> u32 {
        match self {
            FloatType::F16 => 5,
            FloatType::BF16 | FloatType::F32 => 8,
            FloatType::F64 => 11,
        }
    }

    /// The number of stored fraction bits (without the implicit leading one): 10, 7, 23 or 52.
    pub fn fraction_bits(self) -> u32 {
        self.bits() - 1 - self.exponent_bits()
    }

    /// The exponent bias: 15, 127, 127 or 1023.
    pub fn bias(self) -> i32 {
        (1 << (self.exponent_bits() - 1)) - 1
    }

    /// Whether the type is a 16-bit storage type (`f16`, `bf16`): no arithmetic, lowered as
    /// its bits in a 16-bit integer.
    pub fn is_half(self) -> bool {
        self.bits() == 16
    }
}
