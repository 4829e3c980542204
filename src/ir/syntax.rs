//! Lexical facts shared by the printer, the parser and the verifier: reserved words, names,
//! type spellings, device names, literal formatting.

use safecall_runtime::abi::{DLDataType, device_type};
use safecall_runtime::dtype;

use super::model::{FloatType, IntType, ScalarType};

/// Words with a meaning somewhere in the text format. A name spelled like one of them is
/// printed quoted (`` `step` ``) so that any name round-trips. Sorted ([`is_reserved`] searches
/// it by halves).
pub const RESERVED: &[&str] = &[
    "any",
    "assert",
    "call",
    "call_packed",
    "cast",
    "compact",
    "direct",
    "else",
    "extern",
    "false",
    "fn",
    "for",
    "free",
    "get_stream",
    "global",
    "if",
    "import",
    "imported_module",
    "in",
    "inf",
    "inf_bf16",
    "inf_f16",
    "inf_f32",
    "let",
    "load",
    "module",
    "mut",
    "nan",
    "nan_bf16",
    "nan_f16",
    "nan_f32",
    "none",
    "return",
    "same",
    "step",
    "store",
    "system_lib_prefix",
    "true",
    "where",
    "zero",
];

/// Whether `s` is a plain identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `s` is one of the [`RESERVED`] words.
pub fn is_reserved(s: &str) -> bool {
    RESERVED.binary_search(&s).is_ok()
}

/// Whether `s` can be printed as a bare name (an identifier that is not reserved).
pub fn is_bare_name(s: &str) -> bool {
    is_identifier(s) && !is_reserved(s)
}

/// Writes a name: bare when possible, otherwise quoted with backticks.
pub fn name(s: &str) -> String {
    if is_bare_name(s) {
        s.to_owned()
    } else {
        quote(s, '`')
    }
}

/// Quotes text with `delim` (`"` or `` ` ``), escaping `\`, the delimiter and control characters.
pub fn quote(s: &str, delim: char) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(delim);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c == delim => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(delim);
    out
}

/// Writes a byte string literal `b"..."`: printable ASCII as is, everything else `\xNN`.
pub fn bytes_literal(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push_str("b\"");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// The spelling of an integer type.
pub fn int_type(t: IntType) -> &'static str {
    t.keyword()
}

/// Parses the spelling of an integer type ([`IntType::from_keyword`]).
pub fn parse_int_type(s: &str) -> Option<IntType> {
    IntType::from_keyword(s)
}

/// The spelling of a float type ([`FloatType::keyword`]).
pub fn float_type(t: FloatType) -> &'static str {
    t.keyword()
}

/// Parses the spelling of a float type ([`FloatType::from_keyword`]).
pub fn parse_float_type(s: &str) -> Option<FloatType> {
    FloatType::from_keyword(s)
}

/// The spelling of a scalar type.
pub fn scalar_type(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "bool",
        ScalarType::Int(i) => int_type(i),
        ScalarType::Float(f) => float_type(f),
        ScalarType::Ptr => "ptr",
    }
}

/// Parses the spelling of a scalar type.
pub fn parse_scalar_type(s: &str) -> Option<ScalarType> {
    match s {
        "bool" => Some(ScalarType::Bool),
        "ptr" => Some(ScalarType::Ptr),
        _ => parse_int_type(s)
            .map(ScalarType::Int)
            .or_else(|| parse_float_type(s).map(ScalarType::Float)),
    }
}

/// Bit width of an integer type ([`IntType::bits`]).
pub fn int_bits(t: IntType) -> u32 {
    t.bits()
}

/// Whether an integer type is signed ([`IntType::is_signed`]).
pub fn int_signed(t: IntType) -> bool {
    t.is_signed()
}

/// Whether `value` (for unsigned types, the bit pattern) is in range of `t`.
pub fn int_fits(value: i64, t: IntType) -> bool {
    let bits = int_bits(t);
    if bits == 64 {
        return true;
    }
    if int_signed(t) {
        let half = 1i64 << (bits - 1);
        (-half..half).contains(&value)
    } else {
        (0..(1i64 << bits)).contains(&value)
    }
}

/// Writes an integer constant of type `t`: unsigned types print the bit pattern as unsigned.
pub fn int_value(value: i64, t: IntType) -> String {
    if int_signed(t) {
        value.to_string()
    } else {
        (value as u64).to_string()
    }
}

/// Known DLPack device types by name.
pub const DEVICE_NAMES: &[(&str, i32)] = &[
    ("cpu", device_type::CPU),
    ("cuda", device_type::CUDA),
    ("cuda_host", device_type::CUDA_HOST),
    ("opencl", device_type::OPENCL),
    ("vulkan", device_type::VULKAN),
    ("metal", device_type::METAL),
    ("vpi", device_type::VPI),
    ("rocm", device_type::ROCM),
    ("rocm_host", device_type::ROCM_HOST),
    ("ext_dev", device_type::EXT_DEV),
    ("cuda_managed", device_type::CUDA_MANAGED),
    ("oneapi", device_type::ONE_API),
    ("webgpu", device_type::WEBGPU),
    ("hexagon", device_type::HEXAGON),
    ("maia", device_type::MAIA),
    ("trn", device_type::TRN),
];

/// The name of a device type code, if it has one.
pub fn device_name(code: i32) -> Option<&'static str> {
    DEVICE_NAMES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(n, _)| *n)
}

/// The code of a device type name.
pub fn parse_device_name(s: &str) -> Option<i32> {
    DEVICE_NAMES.iter().find(|(n, _)| *n == s).map(|(_, c)| *c)
}

/// Whether a dtype has a name that parses back to it (`float32`), so it prints by name.
pub fn dtype_name(d: DLDataType) -> Option<String> {
    let name = dtype::format(d).ok()?;
    (!name.is_empty() && dtype::parse(&name).ok() == Some(d)).then_some(name)
}

/// Writes a dtype: its name, or `dtype(code, bits, lanes)` when it has none.
pub fn dtype(d: DLDataType) -> String {
    dtype_name(d).unwrap_or_else(|| format!("dtype({}, {}, {})", d.code, d.bits, d.lanes))
}

/// Bits of the canonical quiet NaN printed as `nan`.
pub const CANONICAL_NAN_F64: u64 = 0x7ff8_0000_0000_0000;
/// Bits of the canonical `f32` quiet NaN printed as `nan_f32`.
pub const CANONICAL_NAN_F32: u32 = 0x7fc0_0000;

/// The `f32` bits of an `f64` (given by its bits) when the value is exactly representable as
/// an `f32`, NaN payloads included.
pub fn f64_bits_to_f32_exact(bits: u64) -> Option<u32> {
    let v = f64::from_bits(bits);
    if v.is_nan() {
        let mantissa = bits & ((1u64 << 52) - 1);
        if mantissa & ((1u64 << 29) - 1) != 0 {
            return None;
        }
        let sign = ((bits >> 63) as u32) << 31;
        return Some(sign | (0xff << 23) | (mantissa >> 29) as u32);
    }
    let narrowed = v as f32;
    (f64::from(narrowed).to_bits() == bits).then(|| narrowed.to_bits())
}

/// Widens `f32` bits to the bits of the same `f64` value, NaN payloads included.
pub fn f32_bits_to_f64(bits: u32) -> u64 {
    let v = f32::from_bits(bits);
    if v.is_nan() {
        let sign = u64::from(bits >> 31) << 63;
        let mantissa = u64::from(bits & ((1 << 23) - 1));
        return sign | (0x7ffu64 << 52) | (mantissa << 29);
    }
    f64::from(v).to_bits()
}

/// Writes an `f64` constant (given by its bits) so that it parses back bit for bit:
/// `1.5`, `-0.0`, `1e300`, `inf`, `-inf`, `nan`, or `f64bits(0x...)` for other NaNs.
pub fn f64_literal(bits: u64) -> String {
    let v = f64::from_bits(bits);
    if v.is_nan() {
        if bits == CANONICAL_NAN_F64 {
            "nan".to_owned()
        } else {
            format!("f64bits({bits:#018x})")
        }
    } else {
        // `{:?}` is the shortest text that parses back exactly, and always has `.`, `e` or is `inf`.
        format!("{v:?}")
    }
}

/// Writes an `f32` constant stored as `f64` bits: `1.5f32`, `inf_f32`, `nan_f32`,
/// `f32bits(0x...)` for other NaNs, `f64bits_f32(0x...)` for values no `f32` holds.
pub fn f32_literal(bits: u64) -> String {
    match f64_bits_to_f32_exact(bits) {
        Some(b32) => {
            let v = f32::from_bits(b32);
            if v.is_nan() {
                if b32 == CANONICAL_NAN_F32 {
                    "nan_f32".to_owned()
                } else {
                    format!("f32bits({b32:#010x})")
                }
            } else if v.is_infinite() {
                if v > 0.0 {
                    "inf_f32".to_owned()
                } else {
                    "-inf_f32".to_owned()
                }
            } else {
                format!("{v:?}f32")
            }
        }
        None => format!("f64bits_f32({bits:#018x})"),
    }
}

/// Writes an `f16` or `bf16` constant stored as `f64` bits: `1.5f16`, `inf_bf16`,
/// `nan_f16`, `f16bits(0x...)` for other NaNs, `f64bits_f16(0x...)` for values the type does
/// not hold. A finite value is written as its shortest `f64` text, which reads back as exactly
/// that value.
pub fn half_literal(bits: u64, ty: FloatType) -> String {
    let Some(h) = super::half::f64_bits_to_half_exact(bits, ty) else {
        let word = ty
            .wide_bits_word()
            .expect("a half type has a wide-bits word");
        return format!("{word}({bits:#018x})");
    };
    let v = f64::from_bits(bits);
    let canonical_nan = super::half::round_f64_bits(CANONICAL_NAN_F64, ty);
    if v.is_nan() {
        if h == canonical_nan {
            ty.nan_word().to_owned()
        } else {
            format!("{}({h:#06x})", ty.bits_word())
        }
    } else if v.is_infinite() {
        let sign = if v > 0.0 { "" } else { "-" };
        format!("{sign}{}", ty.inf_word())
    } else {
        format!("{v:?}{}", ty.keyword())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_words_are_sorted_and_each_is_found() {
        assert!(
            RESERVED.windows(2).all(|w| w[0] < w[1]),
            "RESERVED must stay sorted and without repeats: is_reserved searches it by halves"
        );
        for word in RESERVED {
            assert!(is_reserved(word), "{word}");
            assert!(!is_bare_name(word), "{word}");
        }
        for name in ["", "a", "zz", "steps", "Any", "modul"] {
            assert!(!is_reserved(name), "{name}");
        }
    }

    #[test]
    fn f32_nan_payloads_widen_and_narrow_exactly() {
        for b in [
            0x7fc0_0000u32,
            0x7fc0_0001,
            0xffc0_1234,
            0x7f80_0001,
            0x0000_0001,
            0x8000_0000,
        ] {
            let wide = f32_bits_to_f64(b);
            assert_eq!(f64_bits_to_f32_exact(wide), Some(b), "{b:#x}");
        }
        assert_eq!(f64_bits_to_f32_exact(0x7ff8_0000_0000_0001), None);
        assert_eq!(f64_bits_to_f32_exact(0.1f64.to_bits()), None);
    }

    #[test]
    fn int_ranges() {
        assert!(int_fits(255, IntType::U8));
        assert!(!int_fits(256, IntType::U8));
        assert!(!int_fits(-1, IntType::U8));
        assert!(int_fits(-128, IntType::I8));
        assert!(!int_fits(128, IntType::I8));
        assert!(int_fits(-1, IntType::U64));
        assert_eq!(int_value(-1, IntType::U64), "18446744073709551615");
    }

    #[test]
    fn int_type_helpers_follow_the_spelling() {
        for name in ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"] {
            let t = parse_int_type(name).unwrap();
            assert_eq!(t.is_signed(), name.starts_with('i'), "{name}");
            assert_eq!(t.bits().to_string(), name[1..], "{name}");
            assert_eq!(ScalarType::Int(t).is_signed(), t.is_signed(), "{name}");
        }
        for t in [
            ScalarType::Bool,
            ScalarType::Ptr,
            ScalarType::Float(FloatType::F64),
        ] {
            assert!(!t.is_signed(), "{t:?}");
        }
    }

    #[test]
    fn names_quote_reserved_words_and_odd_text() {
        assert_eq!(name("n"), "n");
        assert_eq!(name("step"), "`step`");
        assert_eq!(name("a b`c"), "`a b\\`c`");
        assert_eq!(name(""), "``");
    }
}
