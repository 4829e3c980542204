//! The HIP runtime calls safecall's Triton driver for AMD makes on every launch: the pointer
//! check of Triton 3.9's AMD `driver.c` (`extractPointer`) and the current device, served
//! natively (through ctypes each costs about a microsecond), with `_native.HIP`: the HIP facts
//! the Python side's ctypes calls pass (`safecall::lower::hip_api`, the one place they live).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use safecall::lower::hip_api as api;

type HipError = c_int;

/// The entry points, resolved once from the library the caller names.
pub(crate) struct Runtime {
    // Keeps the resolved functions valid.
    _lib: libloading::Library,
    get_device: unsafe extern "C" fn(*mut c_int) -> HipError,
    get_last_error: unsafe extern "C" fn() -> HipError,
    get_error_string: unsafe extern "C" fn(HipError) -> *const std::ffi::c_char,
    pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, u64) -> HipError,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// Loads `path` (a path or a name `dlopen` searches) and resolves the entry points.
fn load(path: &str) -> Result<Runtime, String> {
    // SAFETY: loading the HIP runtime runs its initialisers, which expect nothing of us.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load the HIP runtime `{path}`: {e}"))?;
    /// Resolves one symbol as a function pointer of type `T`.
    fn symbol<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, String> {
        // SAFETY: each name below is a HIP runtime function of the signature its field
        // declares (hip_runtime_api.h 7.1); the pointer stays valid while `lib` is loaded,
        // which `Runtime` ensures.
        unsafe { lib.get::<T>(name) }
            .map(|s| *s)
            .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(name)))
    }
    Ok(Runtime {
        get_device: symbol(&lib, b"hipGetDevice\0")?,
        get_last_error: symbol(&lib, b"hipGetLastError\0")?,
        get_error_string: symbol(&lib, b"hipGetErrorString\0")?,
        pointer_get_attribute: symbol(&lib, b"hipPointerGetAttribute\0")?,
        _lib: lib,
    })
}

/// The runtime loaded from `path` (the first caller's: one per process).
#[inline]
pub(crate) fn runtime(path: &str) -> PyResult<&'static Runtime> {
    RUNTIME
        .get_or_init(|| load(path))
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("safecall's Triton driver: {e}")))
}

/// A pointer argument as Triton 3.9's AMD `extractPointer` checks it: `hipPointerGetAttribute(
/// HIP_POINTER_ATTRIBUTE_DEVICE_POINTER)`, whose value replaces the address;
/// `hipErrorInvalidValue` (host memory) is Triton's `ValueError` (the sticky error cleared
/// with `hipGetLastError`, as Triton does); any other status is ignored, as Triton ignores it.
pub(crate) fn device_pointer(libhip: &str, address: u64) -> PyResult<u64> {
    device_pointer_in(runtime(libhip)?, address)
}

/// [`device_pointer`] with the runtime already loaded.
#[inline]
pub(crate) fn device_pointer_in(rt: &Runtime, address: u64) -> PyResult<u64> {
    let mut out = address;
    // SAFETY: an output pointer to 8 bytes, the size of the attribute's value (a device
    // pointer); the runtime leaves it as it is on failure.
    let code = unsafe {
        (rt.pointer_get_attribute)(
            (&mut out as *mut u64).cast(),
            api::POINTER_ATTRIBUTE_DEVICE_POINTER as c_int,
            address,
        )
    };
    if i64::from(code) == api::ERROR_INVALID_VALUE {
        // SAFETY: no arguments; clears the runtime's last error.
        unsafe { (rt.get_last_error)() };
        return Err(PyValueError::new_err(
            "Pointer argument cannot be accessed from Triton (cpu tensor?)",
        ));
    }
    Ok(out)
}

/// `hip_device_pointer(libhip, address)`: [`device_pointer`], for the Python launcher
/// (`safecall._triton_launcher`).
#[pyfunction]
fn hip_device_pointer(libhip: &str, address: u64) -> PyResult<u64> {
    device_pointer(libhip, address)
}

/// `HipCurrentDevice(libhip)()`: `hipGetDevice`, as the driver's `get_current_device` (a
/// failure is Triton's `RuntimeError` with HIP's error string).
#[pyclass(frozen)]
pub struct HipCurrentDevice {
    libhip: String,
}

#[pymethods]
impl HipCurrentDevice {
    #[new]
    fn new(libhip: String) -> Self {
        HipCurrentDevice { libhip }
    }

    fn __call__(&self) -> PyResult<i32> {
        current_device(&self.libhip)
    }
}

/// `hipGetDevice` (see [`HipCurrentDevice`]).
fn current_device(libhip: &str) -> PyResult<i32> {
    let rt = runtime(libhip)?;
    let mut device = 0;
    // SAFETY: an output pointer.
    let code = unsafe { (rt.get_device)(&mut device) };
    if code != 0 {
        // SAFETY: the runtime returns a static NUL-terminated string (or NULL).
        let text = unsafe { (rt.get_error_string)(code) };
        let text = if text.is_null() {
            String::new()
        } else {
            // SAFETY: see above.
            unsafe { std::ffi::CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(PyRuntimeError::new_err(format!(
            "Triton Error [HIP]:  Code: {code}, Messsage: {text}"
        )));
    }
    Ok(device)
}

/// Adds the functions and the `HIP` dict (name -> value; `PROP_FIELDS` a tuple of
/// `(name, offset, C type)`; `LIBRARIES` the names searched; `PATH_ENV` the variable naming
/// the runtime) to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let d = PyDict::new(m.py());
    for (name, value) in [
        ("SUCCESS", api::SUCCESS),
        ("ERROR_INVALID_VALUE", api::ERROR_INVALID_VALUE),
        (
            "POINTER_ATTRIBUTE_DEVICE_POINTER",
            api::POINTER_ATTRIBUTE_DEVICE_POINTER,
        ),
        (
            "FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
            api::FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        ),
        (
            "FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
            api::FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
        ),
        ("FUNC_ATTRIBUTE_NUM_REGS", api::FUNC_ATTRIBUTE_NUM_REGS),
        ("DEVICE_PROP_SIZE", api::DEVICE_PROP_SIZE as i64),
    ] {
        d.set_item(name, value)?;
    }
    d.set_item("PROP_FIELDS", api::DEVICE_PROP_FIELDS.to_vec())?;
    d.set_item("LIBRARIES", api::LIBAMDHIP64.to_vec())?;
    d.set_item("PATH_ENV", api::LIBAMDHIP64_PATH_ENV)?;
    m.add("HIP", d)?;
    m.add_class::<HipCurrentDevice>()?;
    m.add_function(wrap_pyfunction!(hip_device_pointer, m)?)
}
