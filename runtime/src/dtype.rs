//! DLPack data type strings: `float32`, `int8x4`, `bfloat16`, `float8_e4m3fn`, `bool`, `handle`...
//!
//! Pure Rust, no C API: [`parse()`] and [`format()`] implement exactly the grammar of
//! `TVMFFIDataTypeFromString` / `TVMFFIDataTypeToString` of apache-tvm-ffi 0.1.x (aliases
//! `i8`, `u16`, `f32`, `bf16`, `fp8_*`, `f8_*`..., scalable vectors `xvscalex4`, the real
//! runtime's error messages), and the IR's text format uses the same functions so a dtype is
//! spelled one way everywhere. `custom[...]` types need the global functions
//! `dtype.get_custom_type_code` / `dtype.get_custom_type_name`: [`parse_bytes_with`] and
//! [`format_with`] take them as hooks (the C API passes the global registry's).

use crate::abi::{DLDataType, dtype_code as code};

/// The `void` data type: code handle, 0 bits, 0 lanes.
pub const VOID: DLDataType = DLDataType {
    code: code::OPAQUE_HANDLE,
    bits: 0,
    lanes: 0,
};

/// The first custom type code (`kDLExtCustomBegin`).
pub const CUSTOM_BEGIN: u8 = 129;

/// Why a dtype string was rejected. The text matches the real runtime's ValueError messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DTypeParseError(pub String);

impl core::fmt::Display for DTypeParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DTypeParseError {}

fn err<T>(message: String) -> Result<T, DTypeParseError> {
    Err(DTypeParseError(message))
}

/// The default custom-type hooks: no such global function.
fn no_custom_code(_: &str) -> Result<u8, DTypeParseError> {
    err("Function dtype.get_custom_type_code not found".to_owned())
}

fn no_custom_name(_: u8) -> Result<String, DTypeParseError> {
    err("Function dtype.get_custom_type_name not found".to_owned())
}

/// Parses a dtype string (`float32`, `int8x4`, `float8_e4m3fn`, `bool`, `handle`, `void`...).
pub fn parse(s: &str) -> Result<DLDataType, DTypeParseError> {
    parse_bytes_with(s.as_bytes(), &no_custom_code)
}

/// The float8/6/4 variants, in the order the real parser tries them.
const FLOAT8_VARIANTS: &[(&str, u8)] = &[
    ("e4m3b11fnuz", code::FLOAT8_E4M3B11FNUZ),
    ("e4m3fnuz", code::FLOAT8_E4M3FNUZ),
    ("e4m3fn", code::FLOAT8_E4M3FN),
    ("e5m2fnuz", code::FLOAT8_E5M2FNUZ),
    ("e8m0fnu", code::FLOAT8_E8M0FNU),
    ("e3m4", code::FLOAT8_E3M4),
    ("e4m3", code::FLOAT8_E4M3),
    ("e5m2", code::FLOAT8_E5M2),
];
const FLOAT6_VARIANTS: &[(&str, u8)] = &[
    ("e2m3fn", code::FLOAT6_E2M3FN),
    ("e3m2fn", code::FLOAT6_E3M2FN),
];
const FLOAT4_VARIANTS: &[(&str, u8)] = &[("e2m1fn", code::FLOAT4_E2M1FN)];

/// A parser over the (normalized) dtype string.
struct Parser<'s> {
    s: &'s [u8],
}

impl Parser<'_> {
    fn text(&self) -> String {
        String::from_utf8_lossy(self.s).into_owned()
    }

    fn unknown<T>(&self) -> Result<T, DTypeParseError> {
        err(format!("unknown dtype `{}`", self.text()))
    }

    /// Decimal digits at `pos` (u64 arithmetic wrapping like the C++); returns (value, end).
    fn digits(&self, pos: usize) -> Result<(u32, usize), DTypeParseError> {
        let end = pos
            + self.s[pos..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
        let value = self.s[pos..end].iter().fold(0u64, |acc, &b| {
            acc.wrapping_mul(10).wrapping_add(u64::from(b - b'0'))
        });
        if value > u64::from(u32::MAX) {
            return err(format!(
                "Integer value in dtype string '{}' is out of range for uint32_t",
                String::from_utf8_lossy(&self.s[pos..end])
            ));
        }
        Ok((value as u32, end))
    }

    /// Lanes at `pos`: none, `x<N>` or (when `scalable`) `xvscalex<N>`; returns (lanes, end).
    fn lanes(&self, mut pos: usize, scalable: bool) -> Result<(u16, usize), DTypeParseError> {
        let mut negative = false;
        if scalable && self.s[pos..].starts_with(b"xvscale") {
            negative = true;
            pos += 7;
        }
        if pos >= self.s.len() || self.s[pos] != b'x' {
            return Ok((1, pos));
        }
        let (value, end) = self.digits(pos + 1)?;
        if end == pos + 1 || value == 0 {
            return err(format!(
                "Invalid lanes specification in dtype '{}'. Lanes must be a positive integer.",
                self.text()
            ));
        }
        if value > u32::from(u16::MAX) {
            return err(format!(
                "Lanes value {value} is out of range for uint16_t in dtype '{}'",
                self.text()
            ));
        }
        let lanes = value as u16;
        Ok((
            if negative {
                lanes.wrapping_neg()
            } else {
                lanes
            },
            end,
        ))
    }

    /// A float8/6/4 type whose variant name starts at `offset`.
    fn small_float(
        &self,
        offset: usize,
        width: u8,
        variants: &[(&str, u8)],
    ) -> Result<DLDataType, DTypeParseError> {
        let underscore = width == 4;
        for &(name, c) in variants {
            let end = offset + name.len();
            if self.s.len() < end || &self.s[offset..end] != name.as_bytes() {
                continue;
            }
            let next = self.s.get(end).copied();
            if !(next.is_none() || next == Some(b'x') || (underscore && next == Some(b'_'))) {
                continue;
            }
            let mut pos = end;
            if underscore && next == Some(b'_') {
                pos += 1;
            }
            let (lanes, end) = self.lanes(pos, false)?;
            if end != self.s.len() {
                return self.unknown();
            }
            return Ok(DLDataType {
                code: c,
                bits: width,
                lanes,
            });
        }
        err(format!("unknown float{width} type `{}`", self.text()))
    }

    /// `custom[name]` at the start; returns (code, position after `]`).
    fn custom(
        &self,
        custom_code: &dyn Fn(&str) -> Result<u8, DTypeParseError>,
    ) -> Result<(u8, usize), DTypeParseError> {
        if self.s.get(6) != Some(&b'[') {
            return err(format!(
                "expected opening brace after 'custom' type in{}",
                self.text()
            ));
        }
        let Some(close) = self.s[7..].iter().position(|&b| b == b']') else {
            return err(format!(
                "expected closing brace after 'custom' type in{}",
                self.text()
            ));
        };
        let name = String::from_utf8_lossy(&self.s[7..7 + close]).into_owned();
        Ok((custom_code(&name)?, 7 + close + 1))
    }
}

/// Rewrites the short aliases (`i8`, `u8`, `f32`, `bf16`, `fp8_`...) to canonical prefixes.
fn normalize(s: &[u8]) -> Vec<u8> {
    let digit_at = |i: usize| s.get(i).is_some_and(u8::is_ascii_digit);
    let (canonical, alias_len): (&[u8], usize) = if s.first() == Some(&b'i') && digit_at(1) {
        (b"int", 1)
    } else if s.first() == Some(&b'u') && digit_at(1) {
        (b"uint", 1)
    } else if s.starts_with(b"bf") && digit_at(2) {
        (b"bfloat", 2)
    } else if s.starts_with(b"fp8_") {
        (b"float8_", 4)
    } else if s.starts_with(b"fp6_") {
        (b"float6_", 4)
    } else if s.starts_with(b"fp4_") {
        (b"float4_", 4)
    } else if s.first() == Some(&b'f') && digit_at(1) {
        (b"float", 1)
    } else {
        return s.to_vec();
    };
    [canonical, &s[alias_len..]].concat()
}

/// Parses a dtype string given as bytes, resolving `custom[name]` through `custom_code`.
pub fn parse_bytes_with(
    s: &[u8],
    custom_code: &dyn Fn(&str) -> Result<u8, DTypeParseError>,
) -> Result<DLDataType, DTypeParseError> {
    if s.is_empty() || s == b"void" {
        return Ok(VOID);
    }
    let normalized = normalize(s);
    let p = Parser { s: &normalized };
    let s = p.s;
    let (c, mut bits, scan) = if s.starts_with(b"int") {
        (code::INT, 32, 3)
    } else if s.starts_with(b"uint") {
        (code::UINT, 32, 4)
    } else if s.starts_with(b"bool") {
        (code::BOOL, 8, 4)
    } else if s.starts_with(b"float") {
        match &s[5..s.len().min(7)] {
            b"8_" => return p.small_float(7, 8, FLOAT8_VARIANTS),
            b"6_" => return p.small_float(7, 6, FLOAT6_VARIANTS),
            b"4_" => return p.small_float(7, 4, FLOAT4_VARIANTS),
            _ => (code::FLOAT, 32, 5),
        }
    } else if s.starts_with(b"handle") {
        (code::OPAQUE_HANDLE, 64, 6)
    } else if s.starts_with(b"bfloat") {
        (code::BFLOAT, 16, 6)
    } else if s.starts_with(b"custom") {
        let (c, scan) = p.custom(custom_code)?;
        (c, 32, scan)
    } else {
        return p.unknown();
    };
    let (bits_value, after_bits) = p.digits(scan)?;
    if bits_value > u32::from(u8::MAX) {
        return err(format!(
            "Bits value {bits_value} is out of range for uint8_t in dtype '{}'",
            p.text()
        ));
    }
    if bits_value != 0 {
        bits = bits_value as u8;
    }
    let (lanes, end) = p.lanes(after_bits, true)?;
    if end != s.len() {
        return p.unknown();
    }
    Ok(DLDataType {
        code: c,
        bits,
        lanes,
    })
}

/// The name of a type code as the real runtime prints it (`custom` for codes from 129),
/// or `None` for a code it rejects (complex among them).
pub fn code_name(c: u8) -> Option<&'static str> {
    Some(match c {
        code::INT => "int",
        code::UINT => "uint",
        code::FLOAT => "float",
        code::OPAQUE_HANDLE => "handle",
        code::BFLOAT => "bfloat",
        code::BOOL => "bool",
        code::FLOAT8_E3M4 => "float8_e3m4",
        code::FLOAT8_E4M3 => "float8_e4m3",
        code::FLOAT8_E4M3B11FNUZ => "float8_e4m3b11fnuz",
        code::FLOAT8_E4M3FN => "float8_e4m3fn",
        code::FLOAT8_E4M3FNUZ => "float8_e4m3fnuz",
        code::FLOAT8_E5M2 => "float8_e5m2",
        code::FLOAT8_E5M2FNUZ => "float8_e5m2fnuz",
        code::FLOAT8_E8M0FNU => "float8_e8m0fnu",
        code::FLOAT6_E2M3FN => "float6_e2m3fn",
        code::FLOAT6_E3M2FN => "float6_e3m2fn",
        code::FLOAT4_E2M1FN => "float4_e2m1fn",
        c if c >= CUSTOM_BEGIN => "custom",
        _ => return None,
    })
}

/// Whether [`format()`] names `dtype` (void, or a known code below the custom ones), without
/// building the name.
pub fn has_name(dtype: DLDataType) -> bool {
    dtype == VOID || (dtype.code < CUSTOM_BEGIN && code_name(dtype.code).is_some())
}

/// Formats a dtype the way `TVMFFIDataTypeToString` does (`float32`, `int8x4`, `bool`, `""`
/// for void). Unknown codes are an error, as in the real runtime.
pub fn format(dtype: DLDataType) -> Result<String, DTypeParseError> {
    format_with(dtype, &no_custom_name)
}

/// [`format()`], naming custom codes through `custom_name`.
pub fn format_with(
    dtype: DLDataType,
    custom_name: &dyn Fn(u8) -> Result<String, DTypeParseError>,
) -> Result<String, DTypeParseError> {
    if dtype.code == code::BOOL && dtype.bits == 8 && dtype.lanes == 1 {
        return Ok("bool".to_owned());
    }
    if dtype == VOID {
        return Ok(String::new());
    }
    let mut out = if dtype.code >= CUSTOM_BEGIN {
        format!("custom[{}]", custom_name(dtype.code)?)
    } else {
        match code_name(dtype.code) {
            Some(name) => name.to_owned(),
            None => {
                return err(format!(
                    "DLDataType contains unknown type_code={}",
                    dtype.code
                ));
            }
        }
    };
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
    fn has_name_agrees_with_format() {
        for code in 0..=255u8 {
            for (bits, lanes) in [(0, 0), (8, 1), (16, 1), (32, 4), (1, 1), (64, 0xffff)] {
                let d = DLDataType { code, bits, lanes };
                assert_eq!(has_name(d), format(d).is_ok(), "{d:?}");
            }
        }
        assert!(has_name(VOID));
    }

    #[test]
    fn common_names_round_trip() {
        for s in [
            "float32",
            "int8x4",
            "uint1",
            "bfloat16",
            "float8_e4m3fn",
            "float4_e2m1fnx2",
            "bool",
        ] {
            assert_eq!(format(parse(s).unwrap()).unwrap(), s);
        }
    }

    #[test]
    fn aliases_and_defaults() {
        assert_eq!(
            parse("float").unwrap(),
            DLDataType {
                code: code::FLOAT,
                bits: 32,
                lanes: 1
            }
        );
        assert_eq!(
            parse("handle").unwrap(),
            DLDataType {
                code: code::OPAQUE_HANDLE,
                bits: 64,
                lanes: 1
            }
        );
        assert_eq!(parse("").unwrap(), VOID);
        assert_eq!(parse("i8x4").unwrap(), parse("int8x4").unwrap());
        assert_eq!(parse("bf16").unwrap(), parse("bfloat16").unwrap());
        assert_eq!(parse("f8_e5m2").unwrap(), parse("float8_e5m2").unwrap());
        assert_eq!(parse("int32xvscalex4").unwrap().lanes, 4u16.wrapping_neg());
    }

    #[test]
    fn bad_strings_are_errors() {
        for s in [
            "float32_",
            "int8x0",
            "int256",
            "Int32",
            "b8",
            "float8_e9m9",
            "int8x65536",
            "complex64",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
        assert_eq!(
            parse("i8x0").unwrap_err().0,
            "Invalid lanes specification in dtype 'int8x0'. Lanes must be a positive integer."
        );
        assert_eq!(
            parse("custom[x]").unwrap_err().0,
            "Function dtype.get_custom_type_code not found"
        );
    }

    #[test]
    fn complex_is_not_printable() {
        let complex = DLDataType {
            code: code::COMPLEX,
            bits: 64,
            lanes: 1,
        };
        assert_eq!(
            format(complex).unwrap_err().0,
            "DLDataType contains unknown type_code=5"
        );
    }
}
