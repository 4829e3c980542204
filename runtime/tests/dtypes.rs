//! Data types: every printable dtype round-trips through its string, aliases resolve to the
//! canonical spelling, and the C API agrees with `safecall_runtime::dtype`.

use safecall_runtime::abi::{DLDataType, TVMFFIAny, TVMFFIByteArray, dtype_code};
use safecall_runtime::capi::{TVMFFIDataTypeFromString, TVMFFIDataTypeToString};
use safecall_runtime::{Any, Error, dtype};

#[test]
fn every_dtype_string_round_trips() {
    let mut checked = 0;
    for code in 0..=255u8 {
        if dtype::code_name(code).is_none() || code >= dtype::CUSTOM_BEGIN {
            continue;
        }
        for bits in [1u8, 4, 6, 8, 16, 32, 64, 128] {
            for lanes in [1u16, 2, 4, 16, 4u16.wrapping_neg()] {
                let dt = DLDataType { code, bits, lanes };
                let text = dtype::format(dt).unwrap();
                if code >= dtype_code::FLOAT8_E3M4 && (lanes as i16) < 0 {
                    // As in the real runtime, float8/6/4 print scalable lanes they cannot parse.
                    assert!(dtype::parse(&text).is_err(), "{text}");
                    continue;
                }
                let back = dtype::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
                // Fixed-width float codes and handles do not print their bits.
                let canonical = dtype::format(back).unwrap();
                assert_eq!(canonical, text, "{dt:?}");
                if code < dtype_code::FLOAT8_E3M4 && code != dtype_code::OPAQUE_HANDLE {
                    assert_eq!(back, dt, "{text}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 500);
}

#[test]
fn aliases_parse_to_canonical_names() {
    for (alias, canonical) in [
        ("i8", "int8"),
        ("u16x4", "uint16x4"),
        ("f32", "float32"),
        ("bf16", "bfloat16"),
        ("fp8_e4m3fn", "float8_e4m3fn"),
        ("f8_e5m2x2", "float8_e5m2x2"),
        ("fp4_e2m1fn_x2", "float4_e2m1fnx2"),
        ("int", "int32"),
        ("float", "float32"),
        ("uint", "uint32"),
        ("int32xvscalex4", "int32xvscalex4"),
    ] {
        assert_eq!(
            dtype::format(dtype::parse(alias).unwrap()).unwrap(),
            canonical,
            "{alias}"
        );
    }
}

fn c_from_string(s: &str) -> Result<DLDataType, Error> {
    let input = TVMFFIByteArray {
        data: s.as_ptr().cast(),
        size: s.len(),
    };
    let mut out = DLDataType::default();
    // SAFETY: valid input and output.
    match unsafe { TVMFFIDataTypeFromString(&input, &mut out) } {
        0 => Ok(out),
        code => Err(Error::take_raised_after_failure(code)),
    }
}

#[test]
fn c_api_matches_the_rust_parser() {
    for s in [
        "float16",
        "int8x4",
        "bool",
        "handle",
        "",
        "float8_e8m0fnu",
        "int256",
        "Int32",
        "i8x0",
    ] {
        match (dtype::parse(s), c_from_string(s)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{s}"),
            (Err(a), Err(b)) => {
                assert_eq!(b.kind(), "ValueError");
                assert_eq!(b.message(), a.0);
            }
            (a, b) => panic!("{s}: {a:?} vs {b:?}"),
        }
    }
    let dt = DLDataType {
        code: dtype_code::FLOAT,
        bits: 16,
        lanes: 8,
    };
    let mut out = TVMFFIAny::NONE;
    // SAFETY: valid input and output.
    assert_eq!(unsafe { TVMFFIDataTypeToString(&dt, &mut out) }, 0);
    // SAFETY: owned result.
    let text = unsafe { Any::from_raw_owned_unchecked(out) };
    assert_eq!(text.cast::<std::string::String>().unwrap(), "float16x8");
}

#[test]
fn custom_types_use_the_global_hooks() {
    use safecall_runtime::Function;
    Function::from_closure(|args| {
        let name: std::string::String = args[0].cast()?;
        Ok(Any::from(if name == "posit" { 150i64 } else { 151 }))
    })
    .set_global("dtype.get_custom_type_code", true)
    .unwrap();
    Function::from_closure(|args| {
        let code: i64 = args[0].cast()?;
        Ok(Any::from(if code == 150 { "posit" } else { "other" }))
    })
    .set_global("dtype.get_custom_type_name", true)
    .unwrap();
    let dt = c_from_string("custom[posit]16x2").unwrap();
    assert_eq!(
        dt,
        DLDataType {
            code: 150,
            bits: 16,
            lanes: 2
        }
    );
    let mut out = TVMFFIAny::NONE;
    // SAFETY: valid input and output.
    assert_eq!(unsafe { TVMFFIDataTypeToString(&dt, &mut out) }, 0);
    // SAFETY: owned result.
    let text = unsafe { Any::from_raw_owned_unchecked(out) };
    assert_eq!(
        text.cast::<std::string::String>().unwrap(),
        "custom[posit]x2"
    );
}
