//! `TritonDispatch`: the hot path of `safecall.triton.jit` (Python's `_triton_dispatch`, whose
//! module docs define the key). One call binds the arguments to the kernel's parameters,
//! computes the specialization key, looks the compiled kernel up in a table the Python side
//! fills, evaluates the grid and calls the kernel's launcher with Triton's launch protocol.
//! Anything else (a key not in the table, hooks, an argument kind not modelled, a changed
//! global) goes to the Python side's `slow(reason, args, kwargs, grid, warmup, key)`, which
//! runs Triton's own `JITFunction.run`.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};

use crate::triton_autotune::AutotuneDispatch;
use crate::triton_launch::TritonLaunch;

/// How a non-constexpr argument enters the key: the kinds Python's `_triton_dispatch` numbers.
const NONE: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT: u8 = 3;
const TENSOR: u8 = 4;
const OTHER: u8 = 5;

/// The dispatcher of one kernel (see the module docs).
#[pyclass(frozen)]
pub struct TritonDispatch {
    /// Parameter names, in declaration order.
    names: Vec<Py<PyString>>,
    /// Name -> position.
    index: Py<PyDict>,
    /// Each parameter's default, `None` where it has none.
    defaults: Vec<Option<Py<PyAny>>>,
    constexpr: Vec<bool>,
    /// Key -> `(kernel, launcher, function, packed_metadata)`, filled by the Python side.
    table: Py<PyDict>,
    /// Type -> kind, for the types not told apart by identity.
    kinds: Py<PyDict>,
    /// The `JITFunction` (its `pre_run_hooks` and `used_global_vals`).
    function: Py<PyAny>,
    /// `triton.knobs.runtime`.
    runtime: Py<PyAny>,
    /// `(knob group, attribute)`: the knobs Triton folds into the options on every call.
    knob_reads: Vec<(Py<PyAny>, Py<PyString>)>,
    /// `triton.runtime.driver` (its `active` driver gives the device and stream).
    driver: Py<PyAny>,
    /// `constexpr_key(value)` for floats and tuples; `globals_changed()`; `slow(...)`.
    constexpr_key: Py<PyAny>,
    globals_changed: Py<PyAny>,
    slow: Py<PyAny>,
    hits: AtomicU64,
}

/// A dispatcher with its grid: `kernel[grid]`, for a kernel or an autotuned kernel.
#[pyclass(frozen)]
pub struct BoundDispatch {
    target: Target,
    grid: Py<PyAny>,
}

/// What a [`BoundDispatch`] calls.
enum Target {
    Kernel(Py<TritonDispatch>),
    Autotuned(Py<AutotuneDispatch>),
}

impl BoundDispatch {
    /// `kernel[grid]` of an autotuned kernel's dispatcher.
    pub(crate) fn autotuned(dispatch: Py<AutotuneDispatch>, grid: Py<PyAny>) -> Self {
        BoundDispatch {
            target: Target::Autotuned(dispatch),
            grid,
        }
    }
}

#[pymethods]
impl BoundDispatch {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let grid = self.grid.bind(args.py());
        match &self.target {
            Target::Kernel(d) => d.get().call(args, kwargs, grid, false),
            Target::Autotuned(d) => d.get().call(args, kwargs, grid, false),
        }
    }
}

/// Parameter name -> position, for binding keyword arguments.
pub(crate) fn name_index(py: Python<'_>, names: &[Py<PyString>]) -> PyResult<Py<PyDict>> {
    let index = PyDict::new(py);
    for (i, name) in names.iter().enumerate() {
        index.set_item(name.bind(py), i)?;
    }
    Ok(index.unbind())
}

#[pymethods]
impl TritonDispatch {
    /// `TritonDispatch(names, defaults, constexpr, table, function, runtime, knob_reads,
    /// driver, constexpr_key, globals_changed, slow)`; `defaults[i]` is `empty` (any
    /// object, compared by identity) where parameter `i` has no default.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        names: Vec<Py<PyString>>,
        defaults: Vec<Py<PyAny>>,
        empty: Py<PyAny>,
        constexpr: Vec<bool>,
        table: Py<PyDict>,
        function: Py<PyAny>,
        runtime: Py<PyAny>,
        knob_reads: Vec<(Py<PyAny>, Py<PyString>)>,
        driver: Py<PyAny>,
        constexpr_key: Py<PyAny>,
        globals_changed: Py<PyAny>,
        slow: Py<PyAny>,
    ) -> PyResult<Self> {
        let index = name_index(py, &names)?;
        let defaults = defaults
            .into_iter()
            .map(|d| (!d.is(&empty)).then_some(d))
            .collect();
        Ok(TritonDispatch {
            names,
            index,
            defaults,
            constexpr,
            table,
            kinds: PyDict::new(py).unbind(),
            function,
            runtime,
            knob_reads,
            driver,
            constexpr_key,
            globals_changed,
            slow,
            hits: AtomicU64::new(0),
        })
    }

    /// `d[grid]`: the callable that launches with `grid`.
    fn bind(slf: Py<Self>, grid: Py<PyAny>) -> BoundDispatch {
        BoundDispatch {
            target: Target::Kernel(slf),
            grid,
        }
    }

    /// `JITFunction.run`'s protocol: `run(*args, grid, warmup=False, **kwargs)`.
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

    /// Launches served from the table so far.
    #[getter]
    fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

/// Why a call goes to the Python side, or the key it missed with.
enum Slow<'py> {
    Fallback(String),
    Miss(Bound<'py, PyTuple>),
}

impl TritonDispatch {
    pub(crate) fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let outcome = if warmup {
            Err(Slow::Fallback("warmup".into()))
        } else {
            self.fast(args, kwargs, grid)?
        };
        match outcome {
            Ok(kernel) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(kernel)
            }
            Err(slow) => {
                let (reason, key) = match slow {
                    Slow::Fallback(reason) => (Some(reason), None),
                    Slow::Miss(key) => (None, Some(key)),
                };
                let kwargs = match kwargs {
                    Some(k) => k.clone(),
                    None => PyDict::new(py),
                };
                self.slow
                    .bind(py)
                    .call1((reason, args, kwargs, grid, warmup, key))
            }
        }
    }

    /// The launch from the table, or why it cannot be.
    #[allow(clippy::type_complexity)]
    fn fast<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
    ) -> PyResult<Result<Bound<'py, PyAny>, Slow<'py>>> {
        let py = args.py();
        let function = self.function.bind(py);
        if function
            .getattr(intern!(py, "pre_run_hooks"))?
            .is_truthy()?
        {
            return Ok(Err(Slow::Fallback("pre-run hooks".into())));
        }
        let runtime = self.runtime.bind(py);
        let enter = runtime.getattr(intern!(py, "launch_enter_hook"))?;
        let leave = runtime.getattr(intern!(py, "launch_exit_hook"))?;
        if hooked(&enter)? || hooked(&leave)? {
            return Ok(Err(Slow::Fallback("launch hooks".into())));
        }
        if let Ok(h) = runtime.getattr(intern!(py, "add_stages_inspection_hook"))
            && !h.is_none()
        {
            return Ok(Err(Slow::Fallback("stages inspection hook".into())));
        }
        let Some((values, options)) = self.bind_arguments(args, kwargs)? else {
            return Ok(Err(Slow::Fallback("binding".into())));
        };
        let active = self.driver.bind(py).getattr(intern!(py, "active"))?;
        let device = active.call_method0(intern!(py, "get_current_device"))?;
        // One flat tuple (no nested ones to allocate and hash): each parameter's items
        // delimit themselves (a constexpr is always two; an argument starts with its kind,
        // and only a tensor's has more), so two keys are equal only when every part is.
        let mut key: Vec<Bound<'py, PyAny>> = Vec::with_capacity(2 * values.len() + 6);
        key.push(device.clone());
        for (value, &constexpr) in values.iter().zip(&self.constexpr) {
            if constexpr {
                self.constant(value, &mut key)?;
                continue;
            }
            match self.kind(value)? {
                TENSOR => {
                    let dtype = value.getattr(intern!(py, "dtype"))?;
                    let address = value.call_method0(intern!(py, "data_ptr"))?;
                    let aligned = match address.extract::<u64>() {
                        Ok(a) => a % 16 == 0,
                        Err(_) => address.rem(16)?.extract::<i64>()? == 0,
                    };
                    key.push(TENSOR.into_pyobject(py)?.into_any());
                    key.push(value.get_type().into_any());
                    key.push(dtype);
                    key.push(PyBool::new(py, aligned).to_owned().into_any());
                }
                INT => key.push(int_key(value)?.into_pyobject(py)?.into_any()),
                OTHER => {
                    let name = value.get_type().name()?;
                    return Ok(Err(Slow::Fallback(format!("argument type {name}"))));
                }
                kind => key.push(kind.into_pyobject(py)?.into_any()),
            }
        }
        if !options.is_empty() {
            let mut sorted = options;
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let items = sorted
                .into_iter()
                .map(|(name, value)| {
                    let mut item = vec![name.into_pyobject(py)?.into_any()];
                    self.constant(&value, &mut item)?;
                    PyTuple::new(py, item)
                })
                .collect::<PyResult<Vec<_>>>()?;
            key.push(PyTuple::new(py, items)?.into_any());
        }
        for (group, name) in &self.knob_reads {
            key.push(group.bind(py).getattr(name.bind(py))?);
        }
        // The kernel's own `debug` (an attribute callers may set), which Triton folds into the
        // options with the knob.
        key.push(function.getattr(intern!(py, "debug"))?);
        let key = PyTuple::new(py, key)?;
        let hit = match self.table.bind(py).get_item(&key) {
            Ok(hit) => hit,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                return Ok(Err(Slow::Fallback("unhashable value".into())));
            }
            Err(e) => return Err(e),
        };
        let Some(hit) = hit else {
            return Ok(Err(Slow::Miss(key)));
        };
        if function
            .getattr(intern!(py, "used_global_vals"))?
            .is_truthy()?
            && self.globals_changed.bind(py).call0()?.is_truthy()?
        {
            return Ok(Err(Slow::Fallback("globals changed".into())));
        }
        let kernel = hit.get_item(0)?;
        let launcher = hit.get_item(1)?;
        let grid = if grid.is_callable() {
            let meta = PyDict::new(py);
            for (name, value) in self.names.iter().zip(&values) {
                meta.set_item(name.bind(py), value)?;
            }
            grid.call1((meta,))?
        } else {
            grid.clone()
        };
        let size = grid.len()?;
        let one = 1i64.into_pyobject(py)?.into_any();
        let stream = active.call_method1(intern!(py, "get_current_stream"), (&device,))?;
        let fixed = [
            grid.get_item(0)?,
            if size > 1 {
                grid.get_item(1)?
            } else {
                one.clone()
            },
            if size > 2 { grid.get_item(2)? } else { one },
            stream,
            hit.get_item(2)?,
            hit.get_item(3)?,
            py.None().into_bound(py),
            enter,
            leave,
        ];
        // safecall's own launcher is called directly; any other (Triton's) through Python.
        if let Ok(native) = launcher.cast::<TritonLaunch>() {
            native.get().launch(&fixed, &values)?;
        } else {
            let mut call = fixed.to_vec();
            call.extend(values);
            launcher.call1(PyTuple::new(py, call)?)?;
        }
        Ok(Ok(kernel))
    }

    /// The parameters' values in declaration order and the keyword options, or `None` where
    /// Triton's binder would raise (too many, repeated or missing arguments).
    #[allow(clippy::type_complexity)]
    fn bind_arguments<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<(Vec<Bound<'py, PyAny>>, Vec<(String, Bound<'py, PyAny>)>)>> {
        let py = args.py();
        let given = args.len();
        if given > self.names.len() {
            return Ok(None);
        }
        let mut values: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
        values.extend(
            self.defaults[given..]
                .iter()
                .map(|d| d.as_ref().map(|d| d.bind(py).clone())),
        );
        let mut options = Vec::new();
        if let Some(kwargs) = kwargs {
            let index = self.index.bind(py);
            for (name, value) in kwargs.iter() {
                match index.get_item(&name)? {
                    None => options.push((name.extract::<String>()?, value)),
                    Some(i) => {
                        let i: usize = i.extract()?;
                        if i < given {
                            return Ok(None);
                        }
                        values[i] = Some(value);
                    }
                }
            }
        }
        Ok(values
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .map(|values| (values, options)))
    }

    /// A constexpr's (or an option's) part of the key, two items: its type and its value
    /// (floats and tuples: the Python side's `constexpr_key` of it).
    fn constant<'py>(
        &self,
        value: &Bound<'py, PyAny>,
        key: &mut Vec<Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        let py = value.py();
        key.push(value.get_type().into_any());
        if value.is_exact_instance_of::<PyFloat>() || value.is_instance_of::<PyTuple>() {
            key.push(self.constexpr_key.bind(py).call1((value,))?);
        } else {
            key.push(value.clone());
        }
        Ok(())
    }

    /// The kind of a non-constexpr argument (Python's `_kind_of`).
    fn kind(&self, value: &Bound<'_, PyAny>) -> PyResult<u8> {
        if value.is_none() {
            return Ok(NONE);
        }
        if value.is_exact_instance_of::<PyBool>() {
            return Ok(BOOL);
        }
        if value.is_exact_instance_of::<PyInt>() {
            return Ok(INT);
        }
        if value.is_exact_instance_of::<PyFloat>() {
            return Ok(FLOAT);
        }
        let py = value.py();
        let ty = value.get_type();
        let kinds = self.kinds.bind(py);
        if let Some(kind) = kinds.get_item(&ty)? {
            return kind.extract();
        }
        let kind = if ty.hasattr(intern!(py, "data_ptr"))? && !value.is_instance_of::<PyTuple>() {
            TENSOR
        } else {
            OTHER
        };
        kinds.set_item(&ty, kind)?;
        Ok(kind)
    }
}

/// Whether a launch hook does anything: a `HookChain` with calls, or any other non-`None`.
fn hooked(hook: &Bound<'_, PyAny>) -> PyResult<bool> {
    if hook.is_none() {
        return Ok(false);
    }
    match hook.getattr(intern!(hook.py(), "calls")) {
        Ok(calls) => calls.is_truthy(),
        Err(_) => Ok(true),
    }
}

/// An `int`'s part of the key, one item: `16 + (== 1) + 2 * (divisible by 16) + 4 * width`,
/// the width 0 for i32, 1 for i64, 2 for u64 and 3 beyond (16 to 31: no other kind's code).
fn int_key(value: &Bound<'_, PyAny>) -> PyResult<u8> {
    let (one, divisible, width) = match value.extract::<i64>() {
        Ok(v) => (
            v == 1,
            v % 16 == 0,
            if i32::try_from(v).is_ok() { 0u8 } else { 1 },
        ),
        Err(_) => match value.extract::<u64>() {
            Ok(v) => (false, v % 16 == 0, 2),
            Err(_) => (false, value.rem(16)?.extract::<i64>()? == 0, 3),
        },
    };
    Ok(16 + u8::from(one) + 2 * u8::from(divisible) + 4 * width)
}
