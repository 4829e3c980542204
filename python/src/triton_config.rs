//! The keyword arguments of a tuned `triton.Config` (`config.all_kwargs()`), remembered with
//! what they were computed from.
//!
//! Triton's `Autotuner.run` calls `config.all_kwargs()` on every call: a Python method that
//! builds a dict from `config.kwargs` and the config's launch options (two Python frames, about
//! 2500 instructions). Its result depends only on the config's instance attributes and on its
//! `kwargs` dict, so for a config of exactly `triton.Config`, whose `all_kwargs` is still the
//! one Triton shipped, the result is kept with the attributes' and the kwargs' items (held, so
//! compared by identity), and reused while every one of them is the same object.

use std::sync::Mutex;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Configs remembered at most (an autotuner has a handful; more means configs made per call).
const CAPACITY: usize = 16;

/// One config's `all_kwargs()` and what it was computed from.
struct Remembered {
    config: Py<PyAny>,
    /// The items [`for_each_state_item`] gave, in order.
    state: Vec<Py<PyAny>>,
    result: Py<PyDict>,
}

/// `all_kwargs()` of the configs of one autotuner (see the module docs).
pub(crate) struct ConfigKwargs {
    /// `triton.Config` and its `all_kwargs` as shipped (`None`: nothing is remembered).
    config_type: Py<PyAny>,
    method: Option<Py<PyAny>>,
    remembered: Mutex<Vec<Remembered>>,
}

impl ConfigKwargs {
    pub(crate) fn new(config_type: Py<PyAny>, method: Option<Py<PyAny>>) -> Self {
        ConfigKwargs {
            config_type,
            method,
            remembered: Mutex::new(Vec::new()),
        }
    }

    /// `config.all_kwargs()`, as a dict the caller only reads.
    pub(crate) fn get<'py>(&self, config: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let py = config.py();
        let ty = config.get_type();
        let plain = match &self.method {
            Some(method) => {
                ty.is(self.config_type.bind(py))
                    && ty.getattr(intern!(py, "all_kwargs"))?.is(method.bind(py))
            }
            None => false,
        };
        let call = || -> PyResult<Bound<'py, PyDict>> {
            Ok(config
                .call_method0(intern!(py, "all_kwargs"))?
                .cast_into()?)
        };
        if !plain {
            return call();
        }
        // The remembered state and result, taken out of the lock (comparing reads the
        // config's attributes, which is Python).
        let found = {
            let remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
            remembered
                .iter()
                .find(|r| r.config.bind(py).is(config))
                .map(|r| {
                    let state: Vec<Py<PyAny>> = r.state.iter().map(|h| h.clone_ref(py)).collect();
                    (state, r.result.clone_ref(py))
                })
        };
        if let Some((held, result)) = found {
            let mut held = held.iter();
            let mut same = true;
            for_each_state_item(config, |item| {
                same = same && held.next().is_some_and(|h| h.bind(py).is(item));
            })?;
            if same && held.next().is_none() {
                return Ok(result.into_bound(py));
            }
        }
        let mut state = Vec::new();
        if !for_each_state_item(config, |item| state.push(item.clone().unbind()))? {
            return call();
        }
        let result = call()?;
        // What is forgotten is released after the lock (a release may run Python code).
        let forgotten = {
            let mut remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
            let (gone, mut kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *remembered)
                .into_iter()
                .partition(|r| r.config.bind(py).is(config));
            let full = if kept.len() >= CAPACITY {
                std::mem::take(&mut kept)
            } else {
                Vec::new()
            };
            kept.push(Remembered {
                config: config.clone().unbind(),
                state,
                result: result.clone().unbind(),
            });
            *remembered = kept;
            (gone, full)
        };
        drop(forgotten);
        Ok(result)
    }
}

/// Calls `f` with the config's `__dict__` items (each key, then its value), then its `kwargs`
/// dict's items; `false` when `kwargs` is not exactly a dict (its items could change unseen:
/// nothing is remembered then).
fn for_each_state_item<'py>(
    config: &Bound<'py, PyAny>,
    mut f: impl FnMut(&Bound<'py, PyAny>),
) -> PyResult<bool> {
    let py = config.py();
    let attributes = config
        .getattr(intern!(py, "__dict__"))?
        .cast_into::<PyDict>()?;
    for (name, value) in attributes.iter() {
        f(&name);
        f(&value);
    }
    if let Some(kwargs) = attributes.get_item(intern!(py, "kwargs"))? {
        let Ok(kwargs) = kwargs.cast_exact::<PyDict>() else {
            return Ok(false);
        };
        for (name, value) in kwargs.iter() {
            f(&name);
            f(&value);
        }
    }
    Ok(true)
}
