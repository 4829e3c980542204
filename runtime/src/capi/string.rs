//! Strings, bytes, owned copies of views and data-type strings.

use core::ffi::c_int;

use super::error::array_bytes;
use super::safe;
use crate::abi::symbols::error_kind::VALUE_ERROR;
use crate::abi::{DLDataType, TVMFFIAny, TVMFFIByteArray};
use crate::rust_api::{Any, AnyView, Error};

/// `TVMFFIStringFromByteArray`: SmallStr up to 7 bytes, a String object beyond.
///
/// # Safety
/// `input` must be a valid byte array; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIStringFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(crate::string::string_to_any(array_bytes(input))) };
        Ok(())
    })
}

/// `TVMFFIBytesFromByteArray`: SmallBytes up to 7 bytes, a Bytes object beyond.
///
/// # Safety
/// `input` must be a valid byte array; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIBytesFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(crate::string::bytes_to_any(array_bytes(input))) };
        Ok(())
    })
}

/// `TVMFFIAnyViewToOwnedAny`.
///
/// # Safety
/// `any_view` must be a valid value; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIAnyViewToOwnedAny(
    any_view: *const TVMFFIAny,
    out: *mut TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        let owned = Any::from_view(unsafe { AnyView::from_raw_ref(&*any_view) })?;
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(owned.into_raw()) };
        Ok(())
    })
}

/// Resolves `custom[name]` through the global function `dtype.get_custom_type_code`
/// (called with a raw C string, as the C++ runtime does).
fn custom_code(name: &str) -> Result<u8, crate::dtype::DTypeParseError> {
    let c_name = std::ffi::CString::new(name).map_err(|_| {
        crate::dtype::DTypeParseError(format!("custom type name {name:?} contains NUL"))
    })?;
    call_custom_hook(
        "dtype.get_custom_type_code",
        AnyView::from(c_name.as_c_str()),
    )
    .and_then(|v| v.cast::<i64>().map(|code| code as u8))
    .map_err(|e| crate::dtype::DTypeParseError(e.message().into_owned()))
}

/// Names custom type codes through the global function `dtype.get_custom_type_name`.
fn custom_name(code: u8) -> Result<std::string::String, crate::dtype::DTypeParseError> {
    call_custom_hook("dtype.get_custom_type_name", AnyView::from(i64::from(code)))
        .and_then(|v| v.cast::<std::string::String>())
        .map_err(|e| crate::dtype::DTypeParseError(e.message().into_owned()))
}

fn call_custom_hook(name: &str, arg: AnyView<'_>) -> Result<Any, Error> {
    let func = crate::rust_api::Function::get_global(name)
        .ok_or_else(|| Error::new(VALUE_ERROR, &format!("Function {name} not found")))?;
    func.call(&[arg])
}

/// `TVMFFIDataTypeFromString`.
///
/// # Safety
/// `s` must be a valid byte array; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIDataTypeFromString(
    s: *const TVMFFIByteArray,
    out: *mut DLDataType,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        let bytes = unsafe { array_bytes(s) };
        let dtype = crate::dtype::parse_bytes_with(bytes, &custom_code)
            .map_err(|e| Error::new(VALUE_ERROR, &e.0))?;
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(dtype) };
        Ok(())
    })
}

/// `TVMFFIDataTypeToString`: always a String object (as the real runtime returns).
///
/// # Safety
/// `dtype` must be readable; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIDataTypeToString(
    dtype: *const DLDataType,
    out: *mut TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        let text = crate::dtype::format_with(unsafe { *dtype }, &custom_name)
            .map_err(|e| Error::new(VALUE_ERROR, &e.0))?;
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(crate::string::string_object_any(text.as_bytes())) };
        Ok(())
    })
}

/// `TVMFFIBigIntFromByteArray`: whole native-endian 64-bit words, least significant first;
/// normalized (an `Int` whenever the value fits in 64 bits).
///
/// # Safety
/// `input` must be a valid byte array; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIBigIntFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(TVMFFIAny::NONE) };
        // SAFETY: guaranteed by the caller.
        let bytes = unsafe { array_bytes(input) };
        if bytes.len() % 8 != 0 {
            return Err(Error::new(
                VALUE_ERROR,
                "BigInt content must contain whole 64-bit words",
            ));
        }
        let words: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|w| i64::from_ne_bytes(w.try_into().expect("8 bytes")))
            .collect();
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(crate::big_int::from_words(&words)) };
        Ok(())
    })
}

/// `TVMFFIBigIntGetContentByteArray`: the words of an `Int` or BigInt value, borrowed from it.
///
/// # Safety
/// `value` must be a valid Int or BigInt value that outlives the returned view.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIBigIntGetContentByteArray(
    value: *const TVMFFIAny,
) -> TVMFFIByteArray {
    super::no_unwind("TVMFFIBigIntGetContentByteArray", || {
        // SAFETY: guaranteed by the caller.
        let words = unsafe { crate::big_int::words(&*value) };
        TVMFFIByteArray {
            data: words.as_ptr().cast(),
            size: size_of_val(words),
        }
    })
}
