//! The module API: loading a code object on the current device, its functions and their
//! attributes, and `hipPointerGetAttribute`.
//!
//! **Modules are per device**, as in HIP (clr's `hip::DynCO` keeps the device a module was
//! loaded on): a module belongs to the thread's current device when it is loaded, and a
//! function to its module's device. Asking a module for a function while another device is
//! current is `hipErrorInvalidDevice` here; HIP itself stops the process there
//! (`DynCO::CheckDeviceIdMatch`, "Device mismatch from where this module is loaded"). Launching
//! a function on another device is `hipErrorInvalidDevice` in both (`launch.rs`).

use std::ffi::{c_char, c_int, c_uint, c_void};

use serde_json::{Value, json};

use super::abi::{self, HipError, hipErrorInvalidHandle, hipErrorInvalidValue, hipSuccess};
use super::{
    FUNCTION_BASE, Kernel, MODULE_BASE, Module, call, current_device, image, registry, text, write,
};

/// The index of a loaded module's handle.
fn module_index(module: usize) -> Option<usize> {
    let i = module.checked_sub(MODULE_BASE)?;
    registry(|r| r.modules.get(i).is_some_and(|m| m.loaded).then_some(i))
}

/// The kernel id of a function handle (of a loaded module or not).
pub(crate) fn kernel_id(function: usize) -> Option<usize> {
    let id = function.checked_sub(FUNCTION_BASE)?;
    registry(|r| (id < r.kernels.len()).then_some(id))
}

/// The name of a function handle's kernel, for records.
pub(crate) fn kernel_name(function: usize) -> Value {
    kernel_id(function).map_or(Value::Null, |id| registry(|r| json!(r.kernels[id].name)))
}

/// Loads an image on the current device (shared by both load entries).
unsafe fn load(name: &str, module: *mut usize, image: *const c_void, options: Value) -> HipError {
    // SAFETY: the caller passes a complete image (or null).
    let image = unsafe { image::read(image.cast()) };
    let device = current_device();
    let fields = || json!({ "device": device, "image": image.kind, "image_len": image.len, "options": options });
    call(name, fields, || {
        if module.is_null() {
            return hipErrorInvalidValue;
        }
        let kernels = match image.kernels {
            Ok(kernels) => kernels,
            Err(code) => return code,
        };
        let handle = registry(|r| {
            let index = r.modules.len();
            let ids = kernels.into_iter().map(|k| {
                r.kernels.push(Kernel {
                    name: k.name,
                    params: k.params,
                    info: k.info,
                    module: index,
                });
                r.kernels.len() - 1
            });
            let kernels = ids.collect();
            r.modules.push(Module {
                device,
                kernels,
                loaded: true,
            });
            MODULE_BASE + index
        });
        // SAFETY: output pointer from the caller.
        unsafe { write(module, handle) }
    })
}

/// `hipModuleLoadData`: loads a code object or offload bundle on the current device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadData(module: *mut usize, image: *const c_void) -> HipError {
    // SAFETY: the caller's arguments, as HIP takes them.
    unsafe { load("hipModuleLoadData", module, image, Value::Null) }
}

/// `hipModuleLoadDataEx`: `hipModuleLoadData`; the options are counted, not read (as in HIP,
/// which ignores them).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadDataEx(
    module: *mut usize,
    image: *const c_void,
    num_options: c_uint,
    _options: *mut c_int,
    _option_values: *mut *mut c_void,
) -> HipError {
    // SAFETY: the caller's arguments, as HIP takes them.
    unsafe { load("hipModuleLoadDataEx", module, image, json!(num_options)) }
}

/// `hipModuleUnload`: its functions can no longer be launched.
#[unsafe(no_mangle)]
pub extern "C" fn hipModuleUnload(module: usize) -> HipError {
    call(
        "hipModuleUnload",
        || json!({ "module": module }),
        || {
            match module_index(module) {
                Some(i) => registry(|r| r.modules[i].loaded = false),
                None => return hipErrorInvalidHandle,
            }
            hipSuccess
        },
    )
}

/// `hipModuleGetFunction`: the kernel `name` of a module loaded on the current device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleGetFunction(
    function: *mut usize,
    module: usize,
    name: *const c_char,
) -> HipError {
    // SAFETY: a NUL-terminated name (or null).
    let name = unsafe { text(name) };
    let device = current_device();
    let fields = || json!({ "name": name, "module": module, "device": device });
    call("hipModuleGetFunction", fields, || {
        let Some(name) = name
            .as_deref()
            .filter(|n| !n.is_empty() && !function.is_null())
        else {
            return hipErrorInvalidValue;
        };
        let Some(index) = module_index(module) else {
            return hipErrorInvalidHandle;
        };
        let (owner, found) = registry(|r| {
            let m = &r.modules[index];
            let found = m
                .kernels
                .iter()
                .copied()
                .find(|&id| r.kernels[id].name == name);
            (m.device, found)
        });
        if owner != device {
            return abi::hipErrorInvalidDevice;
        }
        match found {
            // SAFETY: output pointer from the caller.
            Some(id) => unsafe { write(function, FUNCTION_BASE + id) },
            None => abi::hipErrorNotFound,
        }
    })
}

/// `hipFuncGetAttribute`: a kernel's registers, scratch, largest block and static LDS, from its
/// metadata; other attributes are `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFuncGetAttribute(
    value: *mut c_int,
    attr: c_int,
    function: usize,
) -> HipError {
    let fields = || json!({ "attr": attr, "kernel": kernel_name(function) });
    call("hipFuncGetAttribute", fields, || {
        if value.is_null() {
            return hipErrorInvalidValue;
        }
        let Some(id) = kernel_id(function) else {
            return hipErrorInvalidHandle;
        };
        let info = registry(|r| r.kernels[id].info);
        let answer = match attr {
            abi::HIP_FUNC_ATTRIBUTE_NUM_REGS => info.vgprs,
            abi::HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => info.private_size,
            abi::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => info.max_threads,
            abi::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => info.static_lds,
            _ => return hipErrorInvalidValue,
        };
        // SAFETY: output pointer from the caller.
        unsafe { write(value, answer as c_int) }
    })
}

/// `hipPointerGetAttribute`: every non-null pointer is device memory, its own device pointer
/// (`HIP_POINTER_ATTRIBUTE_DEVICE_POINTER`, the attribute Triton asks for); null, or any other
/// attribute, is `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipPointerGetAttribute(
    data: *mut c_void,
    attr: c_int,
    ptr: usize,
) -> HipError {
    call(
        "hipPointerGetAttribute",
        || json!({ "attr": attr, "ptr": ptr }),
        || {
            if ptr == 0 || attr != abi::HIP_POINTER_ATTRIBUTE_DEVICE_POINTER {
                return hipErrorInvalidValue;
            }
            // SAFETY: for this attribute `data` points at a `void*`.
            unsafe { write(data.cast::<usize>(), ptr) }
        },
    )
}
