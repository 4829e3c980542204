//! The parts of the safe-call contract a call through `Function::call` cannot see: the return
//! code is exactly 0 or -1, a failure leaves `result` untouched and has an error raised, and a
//! POD result has its padding zeroed (DESIGN.md §3).

use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType, type_index as ti};
use safecall_runtime::{Any, Error};

use super::args::Args;

/// Calls the raw entry point with `result` arriving as None and checks the contract; the
/// result or error is released.
pub fn check_raw_call(entry: TVMFFISafeCallType, args: &Args) -> Result<(), String> {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a safe-call entry point; the arguments are valid and alive; NULL is the handle
    // Python passes.
    let rc = unsafe {
        entry(
            std::ptr::null_mut(),
            args.raw.as_ptr(),
            args.raw.len() as i32,
            &mut result,
        )
    };
    // SAFETY: every bit pattern of the value union is a valid u64.
    let bits = unsafe { result.value.v_uint64 };
    match rc {
        0 => {
            let pod = result.type_index < ti::STATIC_OBJECT_BEGIN
                && !matches!(result.type_index, ti::SMALL_STR | ti::SMALL_BYTES);
            let checked = if pod && result.small_str_len != 0 {
                Err(format!(
                    "a POD result (type index {}) has non-zero padding {:#x}",
                    result.type_index, result.small_str_len
                ))
            } else if result.type_index == ti::DATA_TYPE && bits >> 32 != 0 {
                Err(format!(
                    "a DataType result has non-zero upper bytes: {bits:#x}"
                ))
            } else if result.type_index == ti::BOOL && bits > 1 {
                Err(format!("a bool result is {bits:#x}, not 0 or 1"))
            } else {
                Ok(())
            };
            // SAFETY: on success the callee wrote an owned value.
            drop(unsafe { Any::from_raw_owned_unchecked(result) });
            checked
        }
        -1 => {
            let raised = Error::take_raised();
            if result.type_index != ti::NONE || result.small_str_len != 0 || bits != 0 {
                return Err(format!(
                    "the call failed but wrote result {}",
                    super::compare::show(&result)
                ));
            }
            match raised {
                Some(_) => Ok(()),
                None => Err("the call returned -1 without raising an error".to_owned()),
            }
        }
        other => Err(format!("the call returned {other}, neither 0 nor -1")),
    }
}
