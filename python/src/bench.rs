//! A benchmark helper: the Rust JIT's own compile time for IR text, with no Python in the loop,
//! so `benches/python_jit.py` can put the Python path next to it in one process.

use std::collections::HashMap;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use safecall::Backend;
use safecall::jit::{JitOptions, SymbolAddress, SymbolBinding};

/// Nanoseconds of each of `iterations` runs of `ir::parse` + `jit::compile` of `text` (the
/// compiled module is dropped outside the timed part), with the options `jit()` uses.
#[pyfunction]
#[pyo3(signature = (text, symbols = None, iterations = 100, backend = "cranelift"))]
fn rust_jit_times(
    py: Python<'_>,
    text: &str,
    symbols: Option<HashMap<String, usize>>,
    iterations: usize,
    backend: &str,
) -> PyResult<Vec<u64>> {
    let backend = Backend::from_name(backend)
        .ok_or_else(|| PyValueError::new_err(format!("backend={backend:?}")))?;
    let options = JitOptions {
        binding: SymbolBinding::Process,
        symbols: symbols
            .unwrap_or_default()
            .into_iter()
            // SAFETY: the Python API documents (docs/python.md) that `symbols` are addresses of
            // functions with the C signatures the IR declares, alive while the module is, as with
            // ctypes: the caller vouches for them.
            .map(|(name, address)| (name, unsafe { SymbolAddress::new(address as *const u8) }))
            .collect(),
        backend,
        ..JitOptions::default()
    };
    py.detach(|| {
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let start = Instant::now();
            let module = safecall::ir::parse::parse(text).map_err(|e| e.message)?;
            // SAFETY: as for `jit` in compile.rs: the caller vouches for the IR and its symbols.
            let compiled =
                unsafe { safecall::jit::compile(&module, &options) }.map_err(|e| e.to_string())?;
            times.push(start.elapsed().as_nanos() as u64);
            drop(compiled);
        }
        Ok(times)
    })
    .map_err(|e: String| PyValueError::new_err(e))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rust_jit_times, m)?)
}
