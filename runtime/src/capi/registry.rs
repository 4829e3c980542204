//! The type registry and reflection.

use core::ffi::c_int;

use super::error::array_bytes;
use super::{fatal_on_error, safe};
use crate::abi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIFieldInfo, TVMFFIMethodInfo, TVMFFITypeAttrColumn,
    TVMFFITypeInfo, TVMFFITypeMetadata,
};
use crate::registry;

/// `TVMFFITypeKeyToIndex`.
///
/// # Safety
/// `type_key` must be a valid byte array; `out_tindex` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeKeyToIndex(
    type_key: *const TVMFFIByteArray,
    out_tindex: *mut i32,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        let index = registry::type_key_to_index(unsafe { array_bytes(type_key) })?;
        // SAFETY: guaranteed by the caller.
        unsafe { out_tindex.write(index) };
        Ok(())
    })
}

/// `TVMFFITypeGetOrAllocIndex` (fatal on inconsistent arguments, as in the real runtime).
///
/// # Safety
/// `type_key` must be a valid byte array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeGetOrAllocIndex(
    type_key: *const TVMFFIByteArray,
    static_type_index: i32,
    type_depth: i32,
    num_child_slots: i32,
    child_slots_can_overflow: i32,
    parent_type_index: i32,
) -> i32 {
    fatal_on_error("TVMFFITypeGetOrAllocIndex", || {
        registry::get_or_alloc_index(
            // SAFETY: guaranteed by the caller.
            unsafe { array_bytes(type_key) },
            static_type_index,
            type_depth,
            num_child_slots,
            child_slots_can_overflow != 0,
            parent_type_index,
        )
    })
}

/// `TVMFFIGetTypeInfo` (fatal for an unregistered index, as in the real runtime).
#[unsafe(no_mangle)]
pub extern "C" fn TVMFFIGetTypeInfo(type_index: i32) -> *const TVMFFITypeInfo {
    fatal_on_error("TVMFFIGetTypeInfo", || {
        registry::type_info(type_index).map(|i| i as *const _)
    })
}

/// `TVMFFITypeRegisterField`: name, doc and metadata are copied; a default value is kept.
///
/// # Safety
/// `info` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeRegisterField(
    type_index: i32,
    info: *const TVMFFIFieldInfo,
) -> c_int {
    safe(|| {
        // The type is looked up first, as in the real runtime (which then reads the info).
        registry::type_info(type_index)?;
        // SAFETY: guaranteed by the caller.
        registry::register_field(type_index, unsafe { &*info })
    })
}

/// `TVMFFITypeRegisterMethod`: strings are copied; the method value is kept.
///
/// # Safety
/// `info` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeRegisterMethod(
    type_index: i32,
    info: *const TVMFFIMethodInfo,
) -> c_int {
    safe(|| {
        // The type is looked up first, as in the real runtime (which then reads the info).
        registry::type_info(type_index)?;
        // SAFETY: guaranteed by the caller.
        registry::register_method(type_index, unsafe { &*info })
    })
}

/// `TVMFFITypeRegisterMetadata` (once per type).
///
/// # Safety
/// `metadata` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeRegisterMetadata(
    type_index: i32,
    metadata: *const TVMFFITypeMetadata,
) -> c_int {
    safe(|| {
        // The type is looked up first, as in the real runtime (which then reads the info).
        registry::type_info(type_index)?;
        // SAFETY: guaranteed by the caller.
        registry::register_metadata(type_index, unsafe { &*metadata })
    })
}

/// `TVMFFITypeRegisterAttr` (type index 0 only creates the column).
///
/// # Safety
/// `attr_name` and `attr_value` must be valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITypeRegisterAttr(
    type_index: i32,
    attr_name: *const TVMFFIByteArray,
    attr_value: *const TVMFFIAny,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        let (name, value) = unsafe { (array_bytes(attr_name), &*attr_value) };
        registry::register_attr(type_index, name, value)
    })
}

/// `TVMFFIGetTypeAttrColumn`: NULL when no such attribute was registered.
///
/// # Safety
/// `attr_name` must be a valid byte array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIGetTypeAttrColumn(
    attr_name: *const TVMFFIByteArray,
) -> *const TVMFFITypeAttrColumn {
    fatal_on_error("TVMFFIGetTypeAttrColumn", || {
        // SAFETY: guaranteed by the caller.
        Ok(registry::attr_column(unsafe { array_bytes(attr_name) })
            .map_or(core::ptr::null(), |c| c as *const _))
    })
}
