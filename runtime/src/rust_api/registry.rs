//! Registry helpers: type keys and indices, type information, global functions, streams.

use crate::abi::{TVMFFIStreamHandle, TVMFFITypeInfo};
use crate::rust_api::Error;

/// The type index of `key` (e.g. `ffi.Tensor` -> 70).
pub fn type_key_to_index(key: &str) -> Result<i32, Error> {
    crate::registry::type_key_to_index(key.as_bytes())
}

/// The type key of a registered type index.
pub fn type_key(index: i32) -> Result<std::string::String, Error> {
    let info = type_info(index)?;
    // SAFETY: type keys are our own copies, alive for the process.
    Ok(
        std::string::String::from_utf8_lossy(unsafe { crate::error::bytes_of(&info.type_key) })
            .into_owned(),
    )
}

/// The type information of a registered type index.
pub fn type_info(index: i32) -> Result<&'static TVMFFITypeInfo, Error> {
    crate::registry::type_info(index)
}

/// Registers (or finds) an object type `key` deriving from `parent_index`, with
/// `num_child_slots` indices reserved for its children; returns its (dynamic) index.
pub fn register_object_type(
    key: &str,
    parent_index: i32,
    num_child_slots: i32,
) -> Result<i32, Error> {
    let parent = type_info(parent_index)?;
    crate::registry::get_or_alloc_index(
        key.as_bytes(),
        -1,
        parent.type_depth + 1,
        num_child_slots,
        true,
        parent_index,
    )
}

/// The names of every registered global function.
pub fn global_function_names() -> Vec<std::string::String> {
    crate::module::builtins::ensure();
    crate::function::global_names()
        .into_iter()
        .map(|n| std::string::String::from_utf8_lossy(&n).into_owned())
        .collect()
}

/// Sets the calling thread's stream for a device (`TVMFFIEnvSetStream`); returns the previous one.
pub fn set_stream(
    device_type: i32,
    device_id: i32,
    stream: TVMFFIStreamHandle,
) -> TVMFFIStreamHandle {
    crate::env::set_stream(device_type, device_id, stream)
}

/// The calling thread's stream for a device (`TVMFFIEnvGetStream`).
pub fn get_stream(device_type: i32, device_id: i32) -> TVMFFIStreamHandle {
    crate::env::get_stream(device_type, device_id)
}

/// The system-library symbol registered under `name`, if any.
pub fn system_lib_symbol(name: &str) -> Option<*mut core::ffi::c_void> {
    crate::env::system_lib_symbol(name.as_bytes())
}

/// The context symbols registered so far, in order (name, value).
pub fn context_symbols() -> Vec<(std::string::String, *mut core::ffi::c_void)> {
    crate::env::context_symbol_list()
        .into_iter()
        .map(|(n, v)| (std::string::String::from_utf8_lossy(&n).into_owned(), v))
        .collect()
}
