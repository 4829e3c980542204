//! The active driver's two queries the dispatcher makes on every call (`get_current_device()`,
//! `get_current_stream(device)`), answered natively when the driver is safecall's (its
//! attributes are then `cuda_context`'s native callables), through Python otherwise.

use pyo3::intern;
use pyo3::prelude::*;

use crate::cuda_context::{CudaCurrentDevice, CudaDefaultStream};

/// The active driver's `get_current_device()`, called natively when it is safecall's.
pub(crate) fn current_device<'py>(active: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = active.py();
    let get = active.getattr(intern!(py, "get_current_device"))?;
    match get.cast::<CudaCurrentDevice>() {
        Ok(native) => Ok(native.get().device()?.into_pyobject(py)?.into_any()),
        Err(_) => get.call0(),
    }
}

/// The active driver's `get_current_stream(device)`, called natively when it is safecall's.
pub(crate) fn current_stream<'py>(
    active: &Bound<'py, PyAny>,
    device: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = active.py();
    let get = active.getattr(intern!(py, "get_current_stream"))?;
    match get.cast::<CudaDefaultStream>() {
        Ok(native) => Ok(native
            .get()
            .stream(device.extract()?)?
            .into_pyobject(py)?
            .into_any()),
        Err(_) => get.call1((device,)),
    }
}
