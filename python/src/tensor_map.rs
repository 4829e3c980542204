//! `PyCUtensorMap`: the object safecall's Triton driver returns from
//! `fill_tma_descriptor_tiled`/`_im2col`, laid out as Triton's own (`driver.c`'s
//! `PyCUtensorMapObject`: the object header, then the 128-byte `CUtensorMap` at offset 128,
//! aligned to 128, the object allocated 128-byte aligned), so that code reading Triton's objects
//! in C (PyTorch Inductor's static launcher) reads these alike. `tma_desc_cpu_ptr()` gives the
//! descriptor's address. A heap type made with `PyType_FromSpec` (the stable ABI) with its own
//! allocator: PyO3's classes cannot promise the 128-byte alignment.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Where the descriptor sits in the object, and the object's size.
const MAP_OFFSET: usize = 128;
const MAP_SIZE: usize = 128;
const OBJECT_SIZE: usize = MAP_OFFSET + MAP_SIZE;

/// `tp_alloc`: zeroed, 128-byte aligned memory for one object, initialised as `ty`.
unsafe extern "C" fn alloc(
    ty: *mut ffi::PyTypeObject,
    _items: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    let mut mem: *mut c_void = std::ptr::null_mut();
    // SAFETY: an output pointer; the alignment is a power of two and a multiple of the
    // pointer size.
    if unsafe { libc::posix_memalign(&mut mem, MAP_OFFSET, OBJECT_SIZE) } != 0 {
        // SAFETY: called with the GIL held (tp_alloc runs under it).
        return unsafe { ffi::PyErr_NoMemory() };
    }
    // SAFETY: `mem` has OBJECT_SIZE writable bytes; `ty` is this heap type, which
    // `PyObject_Init` references for the object's life.
    unsafe {
        std::ptr::write_bytes(mem.cast::<u8>(), 0, OBJECT_SIZE);
        ffi::PyObject_Init(mem.cast(), ty)
    }
}

/// `tp_free`: the memory of [`alloc`].
unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: `p` came from `posix_memalign` in `alloc`.
    unsafe { libc::free(p) }
}

/// `tma_desc_cpu_ptr()`: the descriptor's address.
unsafe extern "C" fn tma_desc_cpu_ptr(
    slf: *mut ffi::PyObject,
    _args: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: called with the GIL held on an object of this type.
    unsafe { ffi::PyLong_FromUnsignedLongLong(slf as u64 + MAP_OFFSET as u64) }
}

/// The type, made once.
static TYPE: OnceLock<Py<PyAny>> = OnceLock::new();

fn make_type(py: Python<'_>) -> PyResult<Py<PyAny>> {
    // The spec, its slots and methods must outlive the type: leaked once per process.
    let methods = Box::leak(Box::new([
        ffi::PyMethodDef {
            ml_name: c"tma_desc_cpu_ptr".as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                PyCFunction: tma_desc_cpu_ptr,
            },
            ml_flags: ffi::METH_NOARGS,
            ml_doc: c"The address of the 128-byte CUtensorMap (object + 128).".as_ptr(),
        },
        ffi::PyMethodDef::zeroed(),
    ]));
    let slots = Box::leak(Box::new([
        ffi::PyType_Slot {
            slot: ffi::Py_tp_alloc,
            pfunc: alloc as *mut c_void,
        },
        ffi::PyType_Slot {
            slot: ffi::Py_tp_free,
            pfunc: free as *mut c_void,
        },
        ffi::PyType_Slot {
            slot: ffi::Py_tp_methods,
            pfunc: methods.as_mut_ptr().cast(),
        },
        ffi::PyType_Slot {
            slot: ffi::Py_tp_doc,
            pfunc: c"A CUtensorMap laid out as Triton's PyCUtensorMap (the map at offset 128)."
                .as_ptr() as *mut c_void,
        },
        ffi::PyType_Slot {
            slot: 0,
            pfunc: std::ptr::null_mut(),
        },
    ]));
    let spec = Box::leak(Box::new(ffi::PyType_Spec {
        name: c"safecall._native.PyCUtensorMap".as_ptr(),
        basicsize: OBJECT_SIZE as c_int,
        itemsize: 0,
        flags: ffi::Py_TPFLAGS_DEFAULT as _,
        slots: slots.as_mut_ptr(),
    }));
    // SAFETY: a complete spec that lives for the process; the GIL is held.
    let ty = unsafe { ffi::PyType_FromSpec(spec) };
    // SAFETY: a new reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, ty) }.map(Bound::unbind)
}

/// `new_tensor_map()`: a zeroed `PyCUtensorMap`.
#[pyfunction]
fn new_tensor_map(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let ty = match TYPE.get() {
        Some(t) => t,
        None => {
            let made = make_type(py)?;
            TYPE.get_or_init(|| made)
        }
    };
    let obj = ty.call0(py)?;
    if !(obj.as_ptr() as usize).is_multiple_of(MAP_OFFSET) {
        return Err(PyRuntimeError::new_err(
            "PyCUtensorMap: the object is not 128-byte aligned",
        ));
    }
    Ok(obj)
}

/// Adds the function to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(new_tensor_map, m)?)
}
