//! Host `TensorDescriptor` arguments of [`TritonLaunch`](crate::triton_launch::TritonLaunch):
//! each one read from its Python object on every launch (the base tensor's address, the shape,
//! the strides, the padding and `round_f32_to_tf32`) into a `DLTensor` on the launcher's
//! stack, which the generated host function takes as a `DLTensor*` argument and builds the
//! `CUtensorMap` (or on AMD the TDM descriptor) from (`safecall._triton_args.descriptor_argument`).
//! No Python object is made per launch.

use std::ffi::c_void;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyTuple};

use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIValue, type_index};

use crate::triton_values::{exact_i64, to_u64};

/// The largest rank of a `TensorDescriptor` (Triton asserts `rank <= 5`).
const MAX_RANK: usize = 5;

/// Bit of a descriptor's launch flags: `padding == "nan"`.
const NAN_PADDING: u64 = 1;
/// Bit of a descriptor's launch flags: `round_f32_to_tf32` (Triton 3.7+).
const ROUND_TF32: u64 = 2;
/// Bits per descriptor in a launch's flags word.
pub(crate) const FLAG_BITS: u32 = 2;

/// What the compiled kernel fixes of one descriptor parameter.
#[derive(Clone, Copy)]
pub(crate) struct DescriptorSpec {
    /// The element type (DLPack), as the host function's tensor parameter expects it.
    pub dtype: DLDataType,
    /// The DLPack device type of the view: CUDA, or ROCm for an AMD kernel's TDM descriptor.
    pub device_type: i32,
    /// Whether the launch reads `padding` and `round_f32_to_tf32` (CUDA's TMA descriptors:
    /// Triton's AMD launcher reads neither, a TDM descriptor having no field for them).
    pub reads_fields: bool,
}

/// One descriptor's `DLTensor` with the storage its shape and strides point into.
pub(crate) struct DescriptorSlot {
    shape: [i64; MAX_RANK],
    strides: [i64; MAX_RANK],
    tensor: DLTensor,
}

impl DescriptorSlot {
    /// Reads `desc` (a `TensorDescriptor`) for the parameter `spec`: the slot and the
    /// descriptor's launch flags (`padding == "nan"` as Triton's `make_tensordesc_arg` reads
    /// it; `round_f32_to_tf32` where `tf32` says this Triton honours it).
    pub(crate) fn read(
        spec: &DescriptorSpec,
        desc: &Bound<'_, PyAny>,
        tf32: bool,
    ) -> PyResult<(DescriptorSlot, u64)> {
        let py = desc.py();
        let address = base_address(&desc.getattr(intern!(py, "base"))?)?;
        let mut slot = DescriptorSlot {
            shape: [0; MAX_RANK],
            strides: [0; MAX_RANK],
            tensor: DLTensor {
                data: address as usize as *mut c_void,
                // Device 0, as the launcher's Python path describes it: the launch device is
                // the one the kernel was loaded on, which the host function names itself.
                device: DLDevice {
                    device_type: spec.device_type,
                    device_id: 0,
                },
                ndim: 0,
                dtype: spec.dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        };
        let rank = fill(
            &mut slot.shape,
            &desc.getattr(intern!(py, "shape"))?,
            "shape",
        )?;
        let strides = fill(
            &mut slot.strides,
            &desc.getattr(intern!(py, "strides"))?,
            "strides",
        )?;
        if strides != rank {
            return Err(PyValueError::new_err(format!(
                "a TensorDescriptor's shape has {rank} dimensions but its strides {strides}"
            )));
        }
        slot.tensor.ndim = rank as i32;
        let mut flags = 0;
        if !spec.reads_fields {
            return Ok((slot, flags));
        }
        if desc
            .getattr(intern!(py, "padding"))?
            .eq(intern!(py, "nan"))?
        {
            flags |= NAN_PADDING;
        }
        if tf32
            && let Ok(round) = desc.getattr(intern!(py, "round_f32_to_tf32"))
            && round.is_truthy()?
        {
            flags |= ROUND_TF32;
        }
        Ok((slot, flags))
    }

    /// The argument: a `DLTensor*` to this slot's tensor, its shape and strides pointed at.
    /// The slot must not move while the argument is in use.
    pub(crate) fn argument(&mut self) -> TVMFFIAny {
        self.tensor.shape = self.shape.as_mut_ptr();
        self.tensor.strides = self.strides.as_mut_ptr();
        TVMFFIAny {
            type_index: type_index::DL_TENSOR_PTR,
            small_str_len: 0,
            value: TVMFFIValue {
                v_ptr: (&mut self.tensor as *mut DLTensor).cast(),
            },
        }
    }
}

/// A launch's descriptor flags as the Python builder's key: per descriptor
/// `(padding, round_f32_to_tf32)`.
pub(crate) fn flags_key(flags: u64, count: usize) -> Vec<(&'static str, bool)> {
    (0..count)
        .map(|i| {
            let f = flags >> (FLAG_BITS * i as u32);
            (
                if f & NAN_PADDING != 0 { "nan" } else { "zero" },
                f & ROUND_TF32 != 0,
            )
        })
        .collect()
}

/// `values` (an iterable of `int`s, at most [`MAX_RANK`]) into `out`; their number. A `list`
/// or `tuple`, and a tuple subclass that iterates as a tuple (a `torch.Size`, what
/// `TensorDescriptor.from_tensor` takes as the shape), is read item by item (no iterator
/// object: a third of a TDM launch's host time went to iterating before); anything else
/// through the iterator protocol, as Triton reads it.
fn fill(out: &mut [i64; MAX_RANK], values: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    let mut n = 0;
    let mut push = |v: &Bound<'_, PyAny>| -> PyResult<()> {
        if n == MAX_RANK {
            return Err(PyValueError::new_err(format!(
                "a TensorDescriptor's {what} has more than {MAX_RANK} dimensions"
            )));
        }
        out[n] = match exact_i64(v) {
            Some(x) => x,
            None => v.extract::<i64>()?,
        };
        n += 1;
        Ok(())
    };
    if let Ok(list) = values.cast_exact::<PyList>() {
        for v in list.iter() {
            push(&v)?;
        }
    } else if let Ok(tuple) = values.cast::<PyTuple>()
        && iterates_as_tuple(tuple)
    {
        for v in tuple.iter() {
            push(&v)?;
        }
    } else {
        for v in values.try_iter()? {
            push(&v?)?;
        }
    }
    Ok(n)
}

/// Whether iterating `tuple` (a tuple or an instance of a subclass) yields its items in order,
/// as reading them does: its type's `tp_iter` is the tuple's own (a subclass defining
/// `__iter__` has another). Asked through `PyType_GetSlot`, which takes static types (such as
/// `torch.Size`) from Python 3.10 on; on 3.9 only an exact tuple is read directly.
fn iterates_as_tuple(tuple: &Bound<'_, PyTuple>) -> bool {
    let ty = tuple.get_type_ptr();
    let tuple_type = std::ptr::addr_of_mut!(pyo3::ffi::PyTuple_Type);
    if ty == tuple_type {
        return true;
    }
    let Some(&tuple_iter) = tuple_iter(tuple.py()) else {
        return false;
    };
    // SAFETY: a live type object (the interpreter lock is held) on Python 3.10+, where
    // `PyType_GetSlot` reads any type's slot without raising.
    let iter = unsafe { pyo3::ffi::PyType_GetSlot(ty, pyo3::ffi::Py_tp_iter) };
    iter as usize == tuple_iter
}

/// The tuple type's `tp_iter` on Python 3.10+ (as an address); `None` on 3.9.
fn tuple_iter(py: Python<'_>) -> Option<&'static usize> {
    static TUPLE_ITER: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    TUPLE_ITER
        .get_or_init(|| {
            (py.version_info() >= (3, 10)).then(|| {
                let ty = std::ptr::addr_of_mut!(pyo3::ffi::PyTuple_Type);
                // SAFETY: the interpreter's static tuple type, read on 3.10+ (see
                // `iterates_as_tuple`).
                unsafe { pyo3::ffi::PyType_GetSlot(ty, pyo3::ffi::Py_tp_iter) as usize }
            })
        })
        .as_ref()
}

/// The base tensor's address as Triton's `make_tensordesc_arg` reads it: `base.data_ptr()`,
/// with no device check (Triton's launcher makes none for a descriptor's base), which must be
/// an `int` (or an instance of a subclass, as the encoder's `PyArg_ParseTuple` takes) of 0 to
/// 2^64 - 1 (the encoder would wrap others).
fn base_address(base: &Bound<'_, PyAny>) -> PyResult<u64> {
    let address = crate::method_call::call_method0(base, intern!(base.py(), "data_ptr"))?;
    if !address.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(
            "data_ptr method of a TensorDescriptor's base must return 64-bit int",
        ));
    }
    to_u64(&address)
}
