//! The exported C API: every function of `tvm/ffi/c_api.h` and `tvm/ffi/extra/c_env_api.h`
//! this runtime implements, unmangled, each catching panics at the boundary.
//!
//! Functions returning a status return 0, or -1 with the error raised (a panic becomes an
//! `InternalError`). Functions the real runtime treats as fatal on failure (they return a
//! value, not a status) print the error and exit the process, as the real one does.

use core::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use crate::abi::symbols::error_kind::INTERNAL_ERROR;
use crate::rust_api::Error;

mod env;
mod error;
mod function;
mod object;
mod registry;
mod string;
mod tensor;

pub use env::*;
pub use error::*;
pub use function::*;
pub use object::*;
pub use registry::*;
pub use string::*;
pub use tensor::*;

/// The text of a panic payload (a `&str` or `String`; a placeholder for any other).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> std::string::String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<std::string::String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Raises an error of `kind` describing a caught panic.
pub(crate) fn raise_panic(kind: &str, context: &str, payload: &(dyn std::any::Any + Send)) {
    crate::error::set_raised_from_str(kind, &format!("{context}: {}", panic_text(payload)));
}

/// Runs a status-returning entry point: 0 on success, -1 with the error raised on failure
/// or panic.
pub(crate) fn safe(f: impl FnOnce() -> Result<(), Error>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(error)) => {
            error.set_raised();
            -1
        }
        Err(payload) => {
            raise_panic(
                INTERNAL_ERROR,
                "panic in safecall-runtime",
                payload.as_ref(),
            );
            -1
        }
    }
}

/// Runs an entry point that cannot report errors: failures and panics end the process
/// (as the real runtime does for these functions).
pub(crate) fn fatal_on_error<T>(name: &str, f: impl FnOnce() -> Result<T, Error>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            eprintln!("Exception caught during {name}:\n{error}");
            std::process::exit(-1);
        }
        Err(payload) => {
            eprintln!("panic during {name}: {}", panic_text(payload.as_ref()));
            std::process::exit(-1);
        }
    }
}

/// Runs an entry point that returns nothing; a panic aborts (it must not unwind into C).
pub(crate) fn no_unwind<T>(name: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            eprintln!("panic during {name}: {}", panic_text(payload.as_ref()));
            std::process::abort();
        }
    }
}

/// The name and address of one exported C API function.
#[derive(Clone, Copy, Debug)]
pub struct CApiSymbol {
    /// The C name, e.g. `TVMFFIFunctionCall`.
    pub name: &'static str,
    /// The function's address.
    pub address: *const u8,
}

// SAFETY: function addresses are immutable and valid from any thread.
unsafe impl Send for CApiSymbol {}
// SAFETY: as above.
unsafe impl Sync for CApiSymbol {}

macro_rules! symbol_table {
    ($($name:ident),* $(,)?) => {
        /// Every exported C API function with its address, for binding JIT-compiled code to
        /// this runtime without `dlopen` (e.g. `cranelift_jit::JITBuilder::symbol`).
        pub fn c_api_symbols() -> &'static [CApiSymbol] {
            static TABLE: OnceLock<Vec<CApiSymbol>> = OnceLock::new();
            TABLE.get_or_init(|| vec![
                $(CApiSymbol { name: stringify!($name), address: $name as *const u8 },)*
            ])
        }
    };
}

symbol_table!(
    TVMFFIGetVersion,
    TVMFFIObjectIncRef,
    TVMFFIObjectDecRef,
    TVMFFIObjectCreateOpaque,
    TVMFFIGetCustomAllocator,
    TVMFFISetCustomAllocator,
    TVMFFITypeKeyToIndex,
    TVMFFIFunctionCreate,
    TVMFFIFunctionGetGlobal,
    TVMFFIAnyViewToOwnedAny,
    TVMFFIFunctionCall,
    TVMFFIErrorMoveFromRaised,
    TVMFFIErrorSetRaised,
    TVMFFIErrorSetRaisedFromCStr,
    TVMFFIErrorSetRaisedFromCStrParts,
    TVMFFIErrorCreate,
    TVMFFIErrorCreateWithCauseAndExtraContext,
    TVMFFITensorFromDLPack,
    TVMFFITensorToDLPack,
    TVMFFITensorFromDLPackVersioned,
    TVMFFITensorToDLPackVersioned,
    TVMFFITensorCreateUnsafeView,
    TVMFFIStringFromByteArray,
    TVMFFIBytesFromByteArray,
    TVMFFIDataTypeFromString,
    TVMFFIDataTypeToString,
    TVMFFIFunctionSetGlobal,
    TVMFFIFunctionSetGlobalFromMethodInfo,
    TVMFFITypeRegisterField,
    TVMFFITypeRegisterMethod,
    TVMFFITypeRegisterMetadata,
    TVMFFITypeRegisterAttr,
    TVMFFIGetTypeAttrColumn,
    TVMFFIBacktrace,
    TVMFFITypeGetOrAllocIndex,
    TVMFFIGetTypeInfo,
    TVMFFIHandleInitOnce,
    TVMFFIHandleDeinitOnce,
    TVMFFIEnvSetStream,
    TVMFFIEnvGetStream,
    TVMFFIEnvSetDLPackManagedTensorAllocator,
    TVMFFIEnvGetDLPackManagedTensorAllocator,
    TVMFFIEnvTensorAlloc,
    TVMFFIEnvCheckSignals,
    TVMFFIEnvRegisterCAPI,
    TVMFFIEnvModLookupFromImports,
    TVMFFIEnvModRegisterContextSymbol,
    TVMFFIEnvModRegisterSystemLibSymbol,
    TVMFFIBigIntFromByteArray,
    TVMFFIBigIntGetContentByteArray,
);

/// The address of an exported C API function by name.
pub fn c_api_symbol(name: &str) -> Option<*const u8> {
    c_api_symbols()
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.address)
}

#[cfg(test)]
mod symbol_name_tests {
    use crate::abi::symbols::c_api;

    #[test]
    fn every_c_api_name_generated_code_uses_is_exported() {
        for name in c_api::ALL {
            assert!(name.starts_with(c_api::PREFIX), "{name}");
            assert!(
                super::c_api_symbol(name).is_some(),
                "{name} is not exported"
            );
        }
    }
}
