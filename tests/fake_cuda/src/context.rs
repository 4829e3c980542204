//! `cuDevicePrimaryCtxGetState`: whether a device's primary context is active (retained on
//! this thread), as launch code asks before it retains a primary context it did not make
//! current itself.

use std::ffi::{c_int, c_uint};

use serde_json::json;

use super::{
    CUresult, DEVICES, INVALID_DEVICE, INVALID_VALUE, SUCCESS, THREAD, device_base, record, write,
};

/// `cuDevicePrimaryCtxGetState`: flags 0; active once retained on this thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    device: c_int,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    if let Some(code) = record("cuDevicePrimaryCtxGetState", || json!({ "device": device })) {
        return code;
    }
    let ordinal = device - device_base();
    if !(0..DEVICES).contains(&ordinal) {
        return INVALID_DEVICE;
    }
    let on = THREAD.with(|t| t.borrow().active_primaries.contains(&ordinal));
    // SAFETY: output pointers from the caller.
    unsafe {
        if write(flags, 0) != SUCCESS {
            return INVALID_VALUE;
        }
        write(active, c_int::from(on))
    }
}
