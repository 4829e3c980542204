//! DLPack data type strings: `float32`, `int8x4`, `bfloat16`, `float8_e4m3fn`, `bool`, `handle`...
//!
//! Pure Rust, no C API: [`parse`] and [`format`] implement the grammar of
//! `TVMFFIDataTypeFromString` / `TVMFFIDataTypeToString` of apache-tvm-ffi 0.1.x, and the
//! IR's text format uses the same functions so a dtype is spelled one way everywhere.

use crate::abi::{DLDataType, dtype_code as code};

/// Names of the codes whose bit width is part of the name (no digits follow them).
const FIXED_WIDTH_FLOATS: &[(&str, u8, u8)] = &[
    ("float8_e3m4", code::FLOAT8_E3M4, 8),
    ("float8_e4m3b11fnuz", code::FLOAT8_E4M3B11FNUZ, 8),
    ("float8_e4m3fnuz", code::FLOAT8_E4M3FNUZ, 8),
    ("float8_e4m3fn", code::FLOAT8_E4M3FN, 8),
    ("float8_e4m3", code::FLOAT8_E4M3, 8),
    ("float8_e5m2fnuz", code::FLOAT8_E5M2FNUZ, 8),
    ("float8_e5m2", code::FLOAT8_E5M2, 8),
    ("float8_e8m0fnu", code::FLOAT8_E8M0FNU, 8),
    ("float6_e2m3fn", code::FLOAT6_E2M3FN, 6),
    ("float6_e3m2fn", code::FLOAT6_E3M2FN, 6),
    ("float4_e2m1fn", code::FLOAT4_E2M1FN, 4),
];

/// Base names followed by an optional bit width: (prefix, code, default bits).
const SIZED_CODES: &[(&str, u8, u8)] = &[
    ("int", code::INT, 32),
    ("uint", code::UINT, 32),
    ("bool", code::BOOL, 8),
    ("handle", code::OPAQUE_HANDLE, 64),
    ("bfloat", code::BFLOAT, 16),
    ("float", code::FLOAT, 32),
];

/// The `void` data type: code handle, 0 bits, 0 lanes.
pub const VOID: DLDataType = DLDataType { code: code::OPAQUE_HANDLE, bits: 0, lanes: 0 };

/// Why a dtype string was rejected. The text matches the real runtime's ValueError messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DTypeParseError(pub String);

impl core::fmt::Display for DTypeParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DTypeParseError {}

/// Parses a dtype string (`float32`, `int8x4`, `float8_e4m3fn`, `bool`, `handle`, `void`...).
pub fn parse(s: &str) -> Result<DLDataType, DTypeParseError> {
    if s.is_empty() || s == "void" {
        return Ok(VOID);
    }
    let unknown = || DTypeParseError(format!("unknown dtype `{s}`"));
    if let Some(&(name, c, bits)) = FIXED_WIDTH_FLOATS.iter().find(|(name, ..)| {
        s.strip_prefix(name).is_some_and(|rest| rest.is_empty() || rest.starts_with('x'))
    }) {
        let rest = &s[name.len()..];
        let lanes = parse_lanes(s, rest, false)?.ok_or_else(unknown)?;
        return Ok(DLDataType { code: c, bits, lanes });
    }
    for prefix in ["float8_", "float6_", "float4_"] {
        if s.starts_with(prefix) {
            let width = &prefix[5..6];
            return Err(DTypeParseError(format!("unknown float{width} type `{s}`")));
        }
    }
    let &(name, c, default_bits) =
        SIZED_CODES.iter().find(|(name, ..)| s.starts_with(name)).ok_or_else(unknown)?;
    let rest = &s[name.len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let mut bits = default_bits;
    if digits > 0 {
        let value = parse_u32(&rest[..digits])?;
        if value > u32::from(u8::MAX) {
            return Err(DTypeParseError(format!(
                "Bits value {value} is out of range for uint8_t in dtype '{s}'"
            )));
        }
        if value != 0 {
            bits = value as u8;
        }
    }
    let rest = &rest[digits..];
    let (rest, scalable) = match rest.strip_prefix("xvscale") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let lanes = parse_lanes(s, rest, scalable)?.ok_or_else(unknown)?;
    Ok(DLDataType { code: c, bits, lanes })
}

/// Parses `""` (1 lane) or `x<N>`; returns `None` when `rest` is neither.
fn parse_lanes(s: &str, rest: &str, scalable: bool) -> Result<Option<u16>, DTypeParseError> {
    if rest.is_empty() {
        return Ok(Some(1));
    }
    let Some(num) = rest.strip_prefix('x') else {
        return Ok(None);
    };
    let invalid = || {
        DTypeParseError(format!(
            "Invalid lanes specification in dtype '{s}'. Lanes must be a positive integer."
        ))
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let value = parse_u32(num)?;
    if value == 0 {
        return Err(invalid());
    }
    if value > u32::from(u16::MAX) {
        return Err(DTypeParseError(format!(
            "Lanes value {value} is out of range for uint16_t in dtype '{s}'"
        )));
    }
    let lanes = value as u16;
    Ok(Some(if scalable { lanes.wrapping_neg() } else { lanes }))
}

fn parse_u32(digits: &str) -> Result<u32, DTypeParseError> {
    digits.parse::<u32>().map_err(|_| {
        DTypeParseError(format!(
            "Integer value in dtype string '{digits}' is out of range for uint32_t"
        ))
    })
}

/// The name of a type code, or `None` for an unknown code.
pub fn code_name(c: u8) -> Option<&'static str> {
    Some(match c {
        code::INT => "int",
        code::UINT => "uint",
        code::FLOAT => "float",
        code::OPAQUE_HANDLE => "handle",
        code::BFLOAT => "bfloat",
        code::BOOL => "bool",
        code::COMPLEX => "complex",
        _ => FIXED_WIDTH_FLOATS.iter().find(|(_, fc, _)| *fc == c)?.0,
    })
}

/// Formats a dtype the way `TVMFFIDataTypeToString` does (`float32`, `int8x4`, `bool`, `""` for void).
/// Unknown codes are an error, as in the real runtime.
pub fn format(dtype: DLDataType) -> Result<String, DTypeParseError> {
    if dtype.code == code::BOOL && dtype.bits == 8 && dtype.lanes == 1 {
        return Ok("bool".to_owned());
    }
    if dtype == VOID {
        return Ok(String::new());
    }
    let name = code_name(dtype.code).ok_or_else(|| {
        DTypeParseError(format!("DLDataType contains unknown type_code={}", dtype.code))
    })?;
    let mut out = name.to_owned();
    if dtype.code == code::OPAQUE_HANDLE {
        return Ok(out);
    }
    if dtype.code < code::FLOAT8_E3M4 && (dtype.code != code::BOOL || dtype.bits != 8) {
        out.push_str(&dtype.bits.to_string());
    }
    let lanes = dtype.lanes as i16;
    if lanes > 1 {
        out.push_str(&format!("x{lanes}"));
    } else if lanes < -1 {
        out.push_str(&format!("xvscalex{}", -i32::from(lanes)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_names_round_trip() {
        for s in ["float32", "int8x4", "uint1", "bfloat16", "float8_e4m3fn", "float4_e2m1fnx2", "bool"] {
            assert_eq!(format(parse(s).unwrap()).unwrap(), s);
        }
    }

    #[test]
    fn aliases_and_defaults() {
        assert_eq!(parse("float").unwrap(), DLDataType { code: code::FLOAT, bits: 32, lanes: 1 });
        assert_eq!(parse("handle").unwrap(), DLDataType { code: code::OPAQUE_HANDLE, bits: 64, lanes: 1 });
        assert_eq!(parse("").unwrap(), VOID);
    }

    #[test]
    fn bad_strings_are_errors() {
        for s in ["float32_", "int8x0", "int256", "Int32", "b8", "float8_e9m9", "int8x65536"] {
            assert!(parse(s).is_err(), "{s}");
        }
    }
}
