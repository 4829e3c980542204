//! `AutotuneDispatch`: the hot path of `safecall.triton.jit` for a `@triton.autotune` kernel
//! over a `@triton.jit` function, once tuned. It does what Triton's `Autotuner.run` does on a
//! tuned key, natively: the autotune key (the key arguments' values, then `str(dtype)` of each
//! argument that has a `dtype`, in the order Triton builds it), the best config from the
//! autotuner's own `cache`, `best_config` set, the config's keyword arguments added, and the
//! call handed to the kernel's `TritonDispatch`; `nargs` left as Triton's leaves it. A key not
//! tuned yet, a config with a `pre_hook`, warm-up, a keyword given twice and a caller's keyword
//! `grid` or `warmup` go to the Python side's `slow(reason, args, kwargs, grid, warmup)`,
//! which runs Triton's own `Autotuner.run`.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use smallvec::SmallVec;

use crate::triton_config::ConfigKwargs;

use crate::triton_bound::{BoundDispatch, Target};
use crate::triton_dispatch::{TritonDispatch, name_index};
use crate::triton_overridden::RunOverride;

/// The dispatcher of one autotuned kernel (see the module docs).
#[pyclass(frozen)]
pub struct AutotuneDispatch {
    /// The `Autotuner`.
    tuner: Py<PyAny>,
    /// `tuner.arg_names`, and each name's position.
    arg_names: Vec<Py<PyString>>,
    index: Py<PyDict>,
    /// The position in `arg_names` of each of `tuner.keys` (`None`: not an argument name).
    keys: Vec<Option<usize>>,
    /// The tuned configs' `all_kwargs()`.
    config_kwargs: ConfigKwargs,
    /// The dispatcher of `tuner.fn`.
    inner: Py<TritonDispatch>,
    slow: Py<PyAny>,
    /// `vars(tuner)` where `nargs` is a plain instance attribute (read and written there),
    /// else `None`. Triton's `Autotuner.run` sets `nargs` to the positional arguments by name,
    /// then to `None` once the launch returned, so after a call it is `None`, or that
    /// dictionary where the call raised; a call served here leaves it so too, writing it only
    /// where it is something else.
    tuner_state: Option<Py<PyDict>>,
    overridden: RunOverride,
}

#[pymethods]
impl AutotuneDispatch {
    /// `AutotuneDispatch(tuner, arg_names, keys, inner, slow, config_type, all_kwargs,
    /// tuner_state)`: `config_type` `triton.Config`, `all_kwargs` its method as Triton shipped
    /// it (`None` where it is not: each config's `all_kwargs()` is then called on every call);
    /// `tuner_state` `vars(tuner)` where `nargs` is a plain instance attribute, else `None`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tuner: Py<PyAny>,
        arg_names: Vec<Py<PyString>>,
        keys: Vec<Py<PyString>>,
        inner: Py<TritonDispatch>,
        slow: Py<PyAny>,
        config_type: Py<PyAny>,
        all_kwargs: Option<Py<PyAny>>,
        tuner_state: Option<Py<PyDict>>,
    ) -> PyResult<Self> {
        let index = name_index(py, &arg_names)?;
        let keys = keys
            .iter()
            .map(|k| {
                index
                    .bind(py)
                    .get_item(k.bind(py))?
                    .map(|i| i.extract::<usize>())
                    .transpose()
            })
            .collect::<PyResult<_>>()?;
        Ok(AutotuneDispatch {
            tuner,
            arg_names,
            index,
            keys,
            config_kwargs: ConfigKwargs::new(config_type, all_kwargs),
            inner,
            slow,
            tuner_state,
            overridden: RunOverride::default(),
        })
    }

    /// `d[grid]`: the callable that launches with `grid`.
    fn bind(slf: Py<Self>, grid: &Bound<'_, PyAny>) -> PyResult<Py<BoundDispatch>> {
        BoundDispatch::bound(Target::Autotuned(slf), grid)
    }

    /// `Autotuner.run`'s protocol as `kernel[grid]` calls it, `run(*args, grid=..., warmup=...,
    /// **kwargs)`, as a builtin (`triton_run`); without either keyword, Triton's own
    /// `Autotuner.run` (which raises where its inner `JITFunction.run` does, after setting
    /// `nargs`).
    #[getter]
    fn run<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::triton_run::function(slf.as_any())
    }

    /// Whether calls other than `run`'s go through the object's own `run` (`triton_overridden`).
    fn set_run_overridden(&self, overridden: bool) {
        self.overridden.set(overridden);
    }
}

impl AutotuneDispatch {
    /// The Python side's `slow(reason, args, kwargs, grid, warmup)`.
    pub(crate) fn slow_function<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.slow.bind(py)
    }

    /// A call as `kernel[grid](...)` or the layer above makes it (`self.run(...)` in Triton).
    pub(crate) fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.overridden
            .route(&self.slow, args, kwargs, (grid, warmup), || {
                self.serve(args, kwargs, grid, warmup)
            })
    }

    /// A call of the dispatcher's own `run`.
    pub(crate) fn serve<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let kwargs = match kwargs {
            Some(k) => k.clone(),
            None => PyDict::new(py),
        };
        let (grid_word, warmup_word) = (intern!(py, "grid"), intern!(py, "warmup"));
        let reason = if warmup.is_truthy()? {
            Some("warmup")
        } else if !kwargs.is_empty()
            && (kwargs.contains(grid_word)? || kwargs.contains(warmup_word)?)
        {
            // Triton's `Autotuner.run` raises at its call, before it sets anything.
            Some("keyword grid or warmup")
        } else {
            let served = match self.merged(args, &kwargs) {
                Ok(Ok(merged)) => self
                    .inner
                    .get()
                    .call(args, Some(&merged), grid, warmup)
                    .map(Ok),
                Ok(Err(reason)) => Ok(Err(reason)),
                Err(e) => Err(e),
            };
            match served {
                Ok(Ok(launched)) => {
                    self.set_nargs(py, None)?;
                    return Ok(launched);
                }
                Ok(Err(reason)) => Some(reason),
                Err(e) => {
                    let nargs = PyDict::new(py);
                    for (name, value) in self.arg_names.iter().zip(args.iter()) {
                        nargs.set_item(name.bind(py), value)?;
                    }
                    self.set_nargs(py, Some(nargs))?;
                    return Err(e);
                }
            }
        };
        self.slow
            .bind(py)
            .call1((reason, args, kwargs, grid, warmup))
    }

    /// `tuner.nargs` as Triton's `Autotuner.run` leaves it: `None` after a launch (written
    /// only where it is something else or unset), the arguments by name after an error.
    fn set_nargs(&self, py: Python<'_>, nargs: Option<Bound<'_, PyDict>>) -> PyResult<()> {
        let name = intern!(py, "nargs");
        let tuner = self.tuner.bind(py);
        match (nargs, &self.tuner_state) {
            (Some(nargs), Some(state)) => state.bind(py).set_item(name, nargs),
            (Some(nargs), None) => tuner.setattr(name, nargs),
            (None, Some(state)) => {
                let state = state.bind(py);
                match state.get_item(name)? {
                    Some(v) if v.is_none() => Ok(()),
                    _ => state.set_item(name, py.None()),
                }
            }
            (None, None) => match tuner.getattr_opt(name)? {
                Some(v) if v.is_none() => Ok(()),
                _ => tuner.setattr(name, py.None()),
            },
        }
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
        let extra = self.config_kwargs.get(&config)?;
        for (name, value) in extra.iter() {
            if kwargs.contains(&name)? {
                return Ok(Err("keyword given twice"));
            }
            merged.set_item(name, value)?;
        }
        Ok(Ok(merged))
    }

    /// Triton's autotune key: the values of the key arguments present, then `str(dtype)` of
    /// every argument that has one, in the order of Triton's `_args` dict (the positional
    /// arguments, then the keyword ones not among them, as the caller gave them).
    fn key<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = args.py();
        let names = self.arg_names.len();
        let mut values: SmallVec<[Option<Bound<'py, PyAny>>; 16]> =
            SmallVec::from_elem(None, names);
        let mut order: SmallVec<[usize; 16]> = SmallVec::new();
        for (i, value) in args.iter().take(names).enumerate() {
            values[i] = Some(value);
            order.push(i);
        }
        let index = self.index.bind(py);
        for (name, value) in kwargs.iter() {
            if let Some(i) = index.get_item(&name)? {
                let i: usize = i.extract()?;
                if values[i].is_none() {
                    order.push(i);
                }
                values[i] = Some(value);
            }
        }
        let mut key: Vec<Bound<'py, PyAny>> = Vec::with_capacity(self.keys.len() + order.len());
        for &i in self.keys.iter().flatten() {
            if let Some(value) = &values[i] {
                key.push(value.clone());
            }
        }
        let dtype = intern!(py, "dtype");
        for &i in &order {
            let Some(value) = &values[i] else { continue };
            // Python's own scalars have no `dtype` (nor can be given one): not asked, which
            // would build an AttributeError for each.
            if value.is_none()
                || value.is_exact_instance_of::<PyInt>()
                || value.is_exact_instance_of::<PyFloat>()
                || value.is_exact_instance_of::<PyBool>()
            {
                continue;
            }
            if let Some(d) = value.getattr_opt(dtype)? {
                key.push(d.str()?.into_any());
            }
        }
        PyTuple::new(py, key)
    }
}
