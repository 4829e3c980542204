//! The two driver queries Triton's JIT makes on every launch when torch is not imported
//! (`driver.get_current_device()`, `driver.get_current_stream(device)`), served natively for
//! safecall's Triton driver: through ctypes each cost about a microsecond. Same semantics and
//! errors as Triton 3.9's `driver.c` (`getCurrentDevice`, `getDefaultStream`).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

type CuResult = c_int;

/// The entry points, resolved once from the library the caller names.
pub(crate) struct Driver {
    // Keeps the resolved functions valid.
    _lib: libloading::Library,
    ctx_get_current: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    ctx_get_device: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    get_error_string: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, u64) -> CuResult,
    /// What `cuInit(0)` returned when the library was loaded.
    init: CuResult,
}

static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();

/// Loads `path` and resolves the entry points.
fn load(path: &str) -> Result<Driver, String> {
    // SAFETY: loading the CUDA driver runs its initialisers, which expect nothing of us.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load `{path}`: {e}"))?;
    /// Resolves one symbol as a function pointer of type `T`.
    fn symbol<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, String> {
        // SAFETY: each name below is a driver API function of the signature its field declares
        // (cuda.h); the pointer stays valid while `lib` is loaded, which `Driver` ensures.
        unsafe { lib.get::<T>(name) }
            .map(|s| *s)
            .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(name)))
    }
    let init: unsafe extern "C" fn(u32) -> CuResult = symbol(&lib, b"cuInit\0")?;
    // SAFETY: `cuInit` takes flags (0) and may be called any number of times.
    let init = unsafe { init(0) };
    Ok(Driver {
        init,
        ctx_get_current: symbol(&lib, b"cuCtxGetCurrent\0")?,
        ctx_set_current: symbol(&lib, b"cuCtxSetCurrent\0")?,
        ctx_get_device: symbol(&lib, b"cuCtxGetDevice\0")?,
        device_get: symbol(&lib, b"cuDeviceGet\0")?,
        primary_ctx_retain: symbol(&lib, b"cuDevicePrimaryCtxRetain\0")?,
        get_error_string: symbol(&lib, b"cuGetErrorString\0")?,
        pointer_get_attribute: symbol(&lib, b"cuPointerGetAttribute\0")?,
        _lib: lib,
    })
}

/// The driver loaded from `path` (the first caller's path: one driver per process), with
/// Triton's error when it cannot be loaded or `cuInit` failed.
#[inline]
pub(crate) fn driver(path: &str) -> PyResult<&'static Driver> {
    let d = DRIVER
        .get_or_init(|| load(path))
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("safecall's Triton driver: {e}")))?;
    d.check(d.init)?;
    Ok(d)
}

impl Driver {
    /// `Ok` for `CUDA_SUCCESS`, else Triton's `RuntimeError("Triton Error [CUDA]: ...")`.
    #[inline]
    fn check(&self, code: CuResult) -> PyResult<()> {
        if code == 0 {
            return Ok(());
        }
        Err(self.error(code))
    }

    /// Triton's `RuntimeError` for a failed driver call.
    #[cold]
    fn error(&self, code: CuResult) -> PyErr {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: an output pointer; the driver writes a static string or leaves it NULL.
        unsafe { (self.get_error_string)(code, &mut text) };
        let text = if text.is_null() {
            String::new()
        } else {
            // SAFETY: the driver's error strings are NUL-terminated and static.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        PyRuntimeError::new_err(format!("Triton Error [CUDA]: {text}"))
    }

    /// Makes `device`'s primary context current.
    fn set_primary(&self, device: c_int) -> PyResult<()> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: driver calls with valid output pointers.
        self.check(unsafe { (self.primary_ctx_retain)(&mut ctx, device) })?;
        // SAFETY: `ctx` came from the driver.
        self.check(unsafe { (self.ctx_set_current)(ctx) })
    }
}

/// A pointer argument as Triton's `extractPointer` checks it: `cuPointerGetAttribute(
/// CU_POINTER_ATTRIBUTE_DEVICE_POINTER)`, whose value replaces the address;
/// `CUDA_ERROR_INVALID_VALUE` (host memory) is Triton's `ValueError`, any other failure its
/// `RuntimeError`.
pub(crate) fn device_pointer(libcuda: &str, address: u64) -> PyResult<u64> {
    device_pointer_in(driver(libcuda)?, address)
}

/// [`device_pointer`] with the driver already loaded.
#[inline]
pub(crate) fn device_pointer_in(d: &Driver, address: u64) -> PyResult<u64> {
    let mut out: u64 = 0;
    let attribute =
        cudarc::driver::sys::CUpointer_attribute_enum::CU_POINTER_ATTRIBUTE_DEVICE_POINTER as c_int;
    // SAFETY: an output pointer to 8 bytes, the size of the attribute's value (a CUdeviceptr).
    let code =
        unsafe { (d.pointer_get_attribute)((&mut out as *mut u64).cast(), attribute, address) };
    const INVALID_VALUE: CuResult = 1;
    if code == INVALID_VALUE {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "Pointer argument cannot be accessed from Triton (cpu tensor?)",
        ));
    }
    d.check(code)?;
    Ok(out)
}

/// `cuda_device_pointer(libcuda, address)`: [`device_pointer`], for the Python launcher
/// (`safecall._triton_launcher`).
#[pyfunction]
fn cuda_device_pointer(libcuda: &str, address: u64) -> PyResult<u64> {
    device_pointer(libcuda, address)
}

/// `cuda_current_device(libcuda)`: the current context's device, device 0's primary context
/// made current first when none is.
#[pyfunction]
fn cuda_current_device(libcuda: &str) -> PyResult<i32> {
    let d = driver(libcuda)?;
    // The GIL stays held, as in driver.c: releasing it would cost more than the calls.
    (|| {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: an output pointer.
        d.check(unsafe { (d.ctx_get_current)(&mut ctx) })?;
        if ctx.is_null() {
            let mut device = 0;
            // SAFETY: an output pointer.
            d.check(unsafe { (d.device_get)(&mut device, 0) })?;
            d.set_primary(device)?;
        }
        let mut device = 0;
        // SAFETY: an output pointer.
        d.check(unsafe { (d.ctx_get_device)(&mut device) })?;
        Ok(device)
    })()
}

/// `cuda_default_stream(libcuda, device)`: makes `device`'s primary context current and
/// returns 0, the default stream.
#[pyfunction]
fn cuda_default_stream(libcuda: &str, device: i32) -> PyResult<u64> {
    // The GIL stays held: two quick driver calls cost less than releasing it.
    driver(libcuda)?.set_primary(device)?;
    Ok(0)
}

/// `CudaCurrentDevice(libcuda)()`: [`cuda_current_device`] as the driver's
/// `get_current_device`, a callable the dispatcher (`triton_dispatch`) recognises and calls
/// without going through Python.
#[pyclass(frozen)]
pub struct CudaCurrentDevice {
    libcuda: String,
}

#[pymethods]
impl CudaCurrentDevice {
    #[new]
    fn new(libcuda: String) -> Self {
        CudaCurrentDevice { libcuda }
    }

    fn __call__(&self) -> PyResult<i32> {
        self.device()
    }
}

impl CudaCurrentDevice {
    /// The current device (see [`cuda_current_device`]).
    pub(crate) fn device(&self) -> PyResult<i32> {
        cuda_current_device(&self.libcuda)
    }
}

/// `CudaDefaultStream(libcuda)(device)`: [`cuda_default_stream`] as the driver's
/// `get_current_stream`, recognised by the dispatcher as [`CudaCurrentDevice`] is.
#[pyclass(frozen)]
pub struct CudaDefaultStream {
    libcuda: String,
}

#[pymethods]
impl CudaDefaultStream {
    #[new]
    fn new(libcuda: String) -> Self {
        CudaDefaultStream { libcuda }
    }

    fn __call__(&self, device: i32) -> PyResult<u64> {
        self.stream(device)
    }
}

impl CudaDefaultStream {
    /// `device`'s default stream (see [`cuda_default_stream`]).
    pub(crate) fn stream(&self, device: i32) -> PyResult<u64> {
        cuda_default_stream(&self.libcuda, device)
    }
}

/// Adds the functions and classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaCurrentDevice>()?;
    m.add_class::<CudaDefaultStream>()?;
    m.add_function(wrap_pyfunction!(cuda_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_pointer, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_default_stream, m)?)
}
