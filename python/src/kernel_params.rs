//! `kernel_params(format, data, kernel)`: what the verifier reads of a device binary for one
//! kernel, as a hashable Python object, so that Python can key compiled host functions by it:
//! two binaries of one format whose tables for a kernel are equal verify the same launches of
//! it alike (`safecall::ir::verify::kernel_params::kernel_tables`). The Triton driver shares a launcher's host
//! function between the specializations of a kernel this way (`_triton_host_function._FORMS`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use safecall::gpu_binary::{KernelParam, Lookup};
use safecall::ir::BinaryFormat;

/// A kernel's parameter table as its binary declares it: equal to another exactly when the
/// two tables are, hashable, immutable.
#[pyclass(module = "safecall._native", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct KernelParams(Vec<KernelParam>);

#[pymethods]
impl KernelParams {
    /// How many parameters the kernel has.
    fn __len__(&self) -> usize {
        self.0.len()
    }

    /// `KernelParams(8-byte, 8-byte, 4-byte)`: each parameter as messages show it.
    fn __repr__(&self) -> String {
        let params: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        format!("KernelParams({})", params.join(", "))
    }
}

/// The parameter table of `kernel` in the device binary `data` of `format` (`"cubin"`,
/// `"fatbin"`, `"ptx"`, `"hsaco"`, `"hipfb"`); `None` when the table is unknown (an unreadable
/// image, a kernel it does not list or whose members disagree) or the image is empty. An
/// unknown `format` is a `ValueError`.
#[pyfunction]
fn kernel_params(format: &str, data: &[u8], kernel: &str) -> PyResult<Option<KernelParams>> {
    let format = binary_format(format)?;
    if data.is_empty() {
        return Ok(None);
    }
    let Ok(tables) = safecall::ir::verify::kernel_params::kernel_tables(format, data) else {
        return Ok(None);
    };
    Ok(match tables.lookup(kernel) {
        Lookup::Known(params) => Some(KernelParams(params.to_vec())),
        Lookup::Unknown(_) | Lookup::Absent => None,
    })
}

/// The device binary format named `word` (`"cubin"`, ...); another word is a `ValueError`
/// listing the formats.
pub(crate) fn binary_format(word: &str) -> PyResult<BinaryFormat> {
    BinaryFormat::from_keyword(word).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown device binary format '{word}' (expected one of {})",
            BinaryFormat::KEYWORDS.join(", ")
        ))
    })
}

/// Adds [`kernel_params`] and [`KernelParams`] to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KernelParams>()?;
    m.add_function(wrap_pyfunction!(kernel_params, m)?)
}
