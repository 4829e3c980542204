//! `AutotuneDispatch`: the hot path of `safecall.triton.jit` for a `@triton.autotune` kernel
//! over a `@triton.jit` function, once tuned. It does what Triton's `Autotuner.run` does on a
//! tuned key, natively: the autotune key (the key arguments' values, then `str(dtype)` of each
//! argument that has a `dtype`, in the order Triton builds it), the best config from the
//! autotuner's own `cache`, `best_config` set, the config's keyword arguments added, and the
//! call handed to the kernel's `TritonDispatch`. A key not tuned yet, a config with a
//! `pre_hook`, warm-up and a keyword given twice go to the Python side's `slow(reason, args,
//! kwargs, grid, warmup)`, which runs Triton's own `Autotuner.run`.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::triton_dispatch::{BoundDispatch, TritonDispatch, name_index};

/// The dispatcher of one autotuned kernel (see the module docs).
#[pyclass(frozen)]
pub struct AutotuneDispatch {
    /// The `Autotuner`.
    tuner: Py<PyAny>,
    /// `tuner.arg_names`, and each name's position.
    arg_names: Vec<Py<PyString>>,
    index: Py<PyDict>,
    /// `tuner.keys`.
    keys: Vec<Py<PyString>>,
    /// The dispatcher of `tuner.fn`.
    inner: Py<TritonDispatch>,
    slow: Py<PyAny>,
}

#[pymethods]
impl AutotuneDispatch {
    /// `AutotuneDispatch(tuner, arg_names, keys, inner, slow)`.
    #[new]
    fn new(
        py: Python<'_>,
        tuner: Py<PyAny>,
        arg_names: Vec<Py<PyString>>,
        keys: Vec<Py<PyString>>,
        inner: Py<TritonDispatch>,
        slow: Py<PyAny>,
    ) -> PyResult<Self> {
        let index = name_index(py, &arg_names)?;
        Ok(AutotuneDispatch {
            tuner,
            arg_names,
            index,
            keys,
            inner,
            slow,
        })
    }

    /// `d[grid]`: the callable that launches with `grid`.
    fn bind(slf: Py<Self>, grid: Py<PyAny>) -> BoundDispatch {
        BoundDispatch::autotuned(slf, grid)
    }

    /// `Autotuner.run`'s protocol: `run(*args, grid, warmup=False, **kwargs)`.
    #[pyo3(signature = (*args, grid, warmup = false, **kwargs))]
    fn run<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        grid: &Bound<'py, PyAny>,
        warmup: bool,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.call(args, kwargs, grid, warmup)
    }
}

impl AutotuneDispatch {
    pub(crate) fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let kwargs = match kwargs {
            Some(k) => k.clone(),
            None => PyDict::new(py),
        };
        let reason = if warmup {
            Some("warmup")
        } else {
            match self.merged(args, &kwargs)? {
                Ok(merged) => {
                    return self.inner.get().call(args, Some(&merged), grid, false);
                }
                Err(reason) => Some(reason),
            }
        };
        self.slow
            .bind(py)
            .call1((reason, args, kwargs, grid, warmup))
    }

    /// The keyword arguments with the tuned config's, or why the call is not served here.
    fn merged<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<Result<Bound<'py, PyDict>, &'static str>> {
        let py = args.py();
        let tuner = self.tuner.bind(py);
        let configs = tuner.getattr(intern!(py, "configs"))?;
        let config = if configs.len()? > 1 {
            let key = self.key(args, kwargs)?;
            let cache = tuner.getattr(intern!(py, "cache"))?;
            match cache.cast::<PyDict>() {
                Ok(cache) => match cache.get_item(&key) {
                    Ok(Some(config)) => config,
                    Ok(None) => return Ok(Err("not tuned")),
                    Err(_) => return Ok(Err("unhashable key")),
                },
                Err(_) => return Ok(Err("cache")),
            }
        } else {
            configs.get_item(0)?
        };
        if !config.getattr(intern!(py, "pre_hook"))?.is_none() {
            return Ok(Err("config pre_hook"));
        }
        tuner.setattr(intern!(py, "best_config"), &config)?;
        let merged = kwargs.copy()?;
        let extra = config.call_method0(intern!(py, "all_kwargs"))?;
        for (name, value) in extra.cast::<PyDict>()?.iter() {
            if kwargs.contains(&name)? {
                return Ok(Err("keyword given twice"));
            }
            merged.set_item(name, value)?;
        }
        Ok(Ok(merged))
    }

    /// Triton's autotune key: the values of the key arguments present, then `str(dtype)` of
    /// every argument (positional, then keyword, as Triton's dict orders them) that has one.
    fn key<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = args.py();
        // `{**dict(zip(arg_names, args)), **kwargs}` restricted to the argument names.
        let named = PyDict::new(py);
        for (name, value) in self.arg_names.iter().zip(args.iter()) {
            named.set_item(name.bind(py), value)?;
        }
        let index = self.index.bind(py);
        for (name, value) in kwargs.iter() {
            if index.contains(&name)? {
                named.set_item(name, value)?;
            }
        }
        let mut key: Vec<Bound<'py, PyAny>> = Vec::with_capacity(self.keys.len() + named.len());
        for name in &self.keys {
            if let Some(value) = named.get_item(name.bind(py))? {
                key.push(value);
            }
        }
        let dtype = intern!(py, "dtype");
        for (_, value) in named.iter() {
            if value.hasattr(dtype)? {
                key.push(value.getattr(dtype)?.str()?.into_any());
            }
        }
        PyTuple::new(py, key)
    }
}
