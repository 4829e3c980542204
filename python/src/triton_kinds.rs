//! How [`TritonLaunch`](crate::triton_launch::TritonLaunch) passes each of the JIT's
//! positional kernel arguments: the kind codes `safecall._triton_launcher` spells.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// How one of the JIT's positional kernel arguments is passed (Python's `_triton_launcher`
/// spells the same codes).
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A constexpr: dropped.
    Skip,
    /// A pointer: `None`, an `int`, or anything with `data_ptr()`.
    Pointer,
    /// An integer whose `i64` values in `[lo, hi]` pass as they are (the host function
    /// truncates to the kernel's width); any other value goes through Python's
    /// `_integer_slow(rule, value)`, which applies the rule of Triton's extractor (code `rule`)
    /// exactly: its bits, or its error.
    Integer { rule: u8, lo: i64, hi: i64 },
    /// `fp32`/`fp64`.
    Float,
    /// `fp16`: the nearest half's bits (an `OverflowError` beyond its range, as `PyFloat_Pack2`).
    Half,
    /// `bf16`: the upper half of the float32 (truncated, as Triton does).
    BFloat16,
    /// A host `TensorDescriptor` (TMA): the launcher's `descriptors[index]`.
    Descriptor { index: usize },
}

/// The kind code of a host descriptor argument.
pub(crate) const DESCRIPTOR_CODE: u8 = 2;

impl Kind {
    pub(crate) fn from_code(code: u8) -> PyResult<Kind> {
        Ok(match code {
            0 => Kind::Skip,
            1 => Kind::Pointer,
            4 => Kind::Float,
            5 => Kind::Half,
            6 => Kind::BFloat16,
            rule @ 10..=18 => {
                let (lo, hi) = match rule {
                    12 | 13 => (0, i64::MAX),
                    14 => (0, 255),
                    15 => (i16::MIN as i64, i16::MAX as i64),
                    16 => (i32::MIN as i64, i32::MAX as i64),
                    _ => (i64::MIN, i64::MAX),
                };
                Kind::Integer { rule, lo, hi }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown argument kind {other}"
                )));
            }
        })
    }
}
