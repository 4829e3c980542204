//! Python values as the words of a launch: exact `int`s read without raising, the `i64` and
//! `u64` conversions with `extract`'s errors, and the `TVMFFIAny` words of ints, floats and
//! halves (for [`TritonLaunch`](crate::triton_launch::TritonLaunch) and the dispatcher).

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt};

use safecall::ir::model::FloatType;
use safecall_runtime::abi::{TVMFFIAny, TVMFFIValue, type_index};

// `exact_i64` reads a C `long` as an `i64` (LP64: every target the extension is built for).
const _: () = assert!(std::mem::size_of::<std::ffi::c_long>() == 8);

/// An exact `int`'s value when it fits an `i64`, read with `PyLong_AsLongAndOverflow` (which
/// reports a value out of range without raising); `None` for a value out of range or any other
/// object.
#[inline]
pub(crate) fn exact_i64(value: &Bound<'_, PyAny>) -> Option<i64> {
    if !value.is_exact_instance_of::<PyInt>() {
        return None;
    }
    let mut overflow = 0;
    // SAFETY: the interpreter lock is held (`value` is bound to it); `value` is an exact `int`,
    // which this function reads without calling Python code or raising; an output pointer.
    let v = unsafe { pyo3::ffi::PyLong_AsLongAndOverflow(value.as_ptr(), &mut overflow) };
    (overflow == 0).then_some(v)
}

/// An `int` as an `i64`: the value and the errors of `extract::<i64>()`.
#[inline]
pub(crate) fn to_i64(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match exact_i64(value) {
        Some(v) => Ok(v),
        None => value.extract::<i64>(),
    }
}

/// A grid dimension as every Triton release's launcher parses it (`PyArg_ParseTuple`'s `i`):
/// read as [`to_i64`] reads it, then an `OverflowError` beyond a C `int`, with CPython's
/// messages.
#[inline]
pub(crate) fn grid_dim(value: &Bound<'_, PyAny>) -> PyResult<i32> {
    let v = to_i64(value)?;
    i32::try_from(v).map_err(|_| {
        pyo3::exceptions::PyOverflowError::new_err(if v > 0 {
            "signed integer is greater than maximum"
        } else {
            "signed integer is less than minimum"
        })
    })
}

/// An `int` as a `u64`: the value and the errors of `extract::<u64>()`, with the values below
/// 2^63 read as an `i64` (CPython's unsigned conversion goes through a byte array for any
/// value of two digits or more: every device address).
#[inline]
pub(crate) fn to_u64(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    match exact_i64(value) {
        Some(v) if v >= 0 => Ok(v as u64),
        _ => value.extract::<u64>(),
    }
}

pub(crate) fn int(v: i64) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::INT,
        small_str_len: 0,
        value: TVMFFIValue { v_int64: v },
    }
}

pub(crate) fn float(v: f64) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::FLOAT,
        small_str_len: 0,
        value: TVMFFIValue { v_float64: v },
    }
}

/// The bits of the half nearest `v` (ties to even), as `PyFloat_Pack2` packs it: an
/// `OverflowError` for a finite value that rounds beyond the largest half. A NaN's bits are
/// the running CPython's choice (3.11-3.13 drop the payload and keep the sign), asked of
/// `struct`, which packs with `PyFloat_Pack2` (not in the stable ABI of 3.9).
pub(crate) fn half_bits(py: Python<'_>, v: f64) -> PyResult<u16> {
    if v.is_nan() {
        let packed = py
            .import(pyo3::intern!(py, "struct"))?
            .call_method1(pyo3::intern!(py, "pack"), ("<e", v))?;
        let bytes: [u8; 2] = packed
            .cast::<PyBytes>()?
            .as_bytes()
            .try_into()
            .map_err(|_| PyValueError::new_err("struct.pack('<e') did not give 2 bytes"))?;
        return Ok(u16::from_le_bytes(bytes));
    }
    // Rounded once from the `f64` (the `half` crate's `from_f64` rounds some values just above
    // a tie twice, where `PyFloat_Pack2` does not).
    let h = safecall::ir::half::round_f64_bits(v.to_bits(), FloatType::F16);
    if h & 0x7fff == 0x7c00 && v.is_finite() {
        return Err(PyOverflowError::new_err(
            "float too large to pack with e format",
        ));
    }
    Ok(h)
}

/// A pointer argument's `data_ptr()` the dispatcher already read (see
/// [`TritonLaunch::launch`](crate::triton_launch::TritonLaunch::launch)).
pub(crate) enum Address<'py> {
    /// An exact `int` in `[0, 2^64)`: its value.
    Int(u64),
    /// Anything else it returned, converted here as when read here.
    Object(Bound<'py, PyAny>),
}

impl<'py> Address<'py> {
    /// What `data_ptr()` returned, its value taken once where it is an exact `int` that
    /// [`to_u64`] reads.
    #[inline]
    pub(crate) fn new(address: Bound<'py, PyAny>) -> Self {
        if address.is_exact_instance_of::<PyInt>()
            && let Ok(a) = to_u64(&address)
        {
            return Address::Int(a);
        }
        Address::Object(address)
    }

    /// Whether the address is 16-byte aligned, as Triton's specializer decides it. With
    /// `native` (the CUDA backend's specializer, C++), what is no `int` is its TypeError (it
    /// reads the address with `PyLong_AsUnsignedLongLong`); otherwise (the AMD backend's, in
    /// Python) it is `address % 16 == 0` in Python, with Python's errors.
    pub(crate) fn aligned_16(&self, native: bool) -> PyResult<bool> {
        Ok(match self {
            Address::Int(a) => a % 16 == 0,
            Address::Object(a) if !a.is_instance_of::<PyInt>() => {
                if native {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "an integer is required",
                    ));
                }
                a.rem(16)?.eq(0)?
            }
            Address::Object(a) => match to_u64(a) {
                Ok(a) => a % 16 == 0,
                // An int outside 0 to 2^64 - 1: the native specializer's OverflowError.
                Err(e) if native => return Err(e),
                // `data_ptr() % 16 == 0` in Python (`BaseBackend.get_tensor_specialization`).
                Err(_) => a.rem(16)?.eq(0)?,
            },
        })
    }
}
