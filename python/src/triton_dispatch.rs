//! `TritonDispatch`: the hot path of `safecall.triton.jit` (Python's `_triton_dispatch`, whose
//! module docs define the key). One call binds the arguments to the kernel's parameters,
//! computes the specialization key (as words: `triton_key`), looks the compiled kernel up in
//! the table, evaluates the grid and calls the kernel's launcher with Triton's launch protocol.
//! With a launch hook registered, the launch carries Triton's launch metadata and the hooks,
//! as Triton's `run` passes them. Anything else (a key not in the table, pre-run hooks, an
//! argument kind not modelled, a changed global) goes to the Python side's
//! `slow(reason, args, kwargs, grid, warmup, key)`, which runs Triton's own `JITFunction.run`
//! and, for a missed key, `record`s the kernel it chose.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use smallvec::SmallVec;

use crate::recursion::RecursionGuard;
use crate::triton_active::{current_device, current_stream};
use crate::triton_amd_range::{AmdMode, AmdRange, AmdRangeSpec};
use crate::triton_binding::{INLINE_ARGUMENTS, Values, bind_arguments, without_run_keywords};
use crate::triton_bound::{BoundDispatch, Target};
use crate::triton_grid::GridTraces;
use crate::triton_key::{Interner, Key, Param, Space, Unhashable, append, int_key};
use crate::triton_knobs::{KnobGroups, KnobRead, KnobsVersion, hooked};
use crate::triton_memo::PositionMemo;
use crate::triton_overridden::RunOverride;
use crate::triton_table::{Entry, Table};
use crate::triton_values::Address;

mod kinds;
mod tuple_key;
use tuple_key::TupleKey;

/// How a non-constexpr argument enters the key: the kinds Python's `_triton_dispatch` numbers.
const NONE: u8 = 0;
const BOOL: u8 = 1;
// 2 is an `int`, which enters the key by its `int_key` (16 to 31) instead.
const FLOAT: u8 = 3;
const TENSOR: u8 = 4;
const OTHER: u8 = 5;
/// A host `triton.tools.tensor_descriptor.TensorDescriptor` (6 starts the options).
const DESCRIPTOR: u8 = 7;
/// A tuple (or a subclass of `tuple`): its elements' words follow (`tuple_key`).
const TUPLE: u8 = 8;
/// A Gluon host tensor descriptor (tiled or im2col), which carries a shared-memory layout.
const GLUON_DESCRIPTOR: u8 = 9;

/// The key's one word for an argument Triton specializes by its Python type alone (`None`,
/// `bool`, `float`: the kind) or by its value (an exact `int`: its `int_key`); `None` for any
/// other argument. The same for a parameter's value and a tuple's element (inlined always:
/// called for every argument of every call).
#[inline(always)]
fn scalar_word(value: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    Ok(Some(if value.is_none() {
        NONE.into()
    } else if value.is_exact_instance_of::<PyBool>() {
        BOOL.into()
    } else if value.is_exact_instance_of::<PyInt>() {
        int_key(value)?.into()
    } else if value.is_exact_instance_of::<PyFloat>() {
        FLOAT.into()
    } else {
        return Ok(None);
    }))
}

/// A word that starts the keyword options' part of a key (no argument's first word is 6).
const OPTIONS: u64 = 6;

/// Python's recursion levels a dispatched call counts for (see `recursion`): Triton's path
/// runs two Python frames there, in about 2.2 KiB of C stack per re-entry; the dispatch takes
/// about 2.75 KiB (the key's inline buffers), so it counts one level more, which keeps it
/// within the stack wherever Triton is.
const RECURSION_LEVELS: usize = 3;

/// How many argument types the kind cache holds before it starts over.
const KIND_CAPACITY: usize = 1024;

/// Type address -> (the type, kept alive so the address is not reused; its kind; its code).
type KindCache = HashMap<usize, (Py<PyAny>, u8, u64), rustc_hash::FxBuildHasher>;

/// A key that missed, handed to the Python side, which passes it back to
/// [`TritonDispatch::record`] with the kernel Triton chose.
#[pyclass(frozen)]
pub struct DispatchKey(Key);

/// The dispatcher of one kernel (see the module docs).
#[pyclass(frozen)]
pub struct TritonDispatch {
    /// Parameter names, in declaration order.
    names: Vec<Py<PyString>>,
    /// Name -> position.
    index: Py<PyDict>,
    /// Each parameter's default, `None` where it has none.
    defaults: Vec<Option<Py<PyAny>>>,
    /// How Triton specializes each parameter.
    params: Vec<Param>,
    /// Key -> what Triton chose, filled through [`TritonDispatch::record`].
    table: Mutex<Table>,
    /// Codes for the key's objects.
    interner: Interner,
    /// The kinds of the argument types seen.
    kinds: Mutex<KindCache>,
    /// The type and dtype last seen at each position, with their codes.
    memo: PositionMemo,
    /// The `JITFunction` (its `pre_run_hooks`, `debug` and `used_global_vals`).
    function: Py<PyAny>,
    /// Its instance dictionary, where those three are plain instance attributes (read there
    /// directly, without Python's attribute protocol).
    function_state: Option<Py<PyDict>>,
    /// The groups of `triton.knobs` read: `knobs.runtime` first (its launch hooks, its stages
    /// inspection hook), then those of `knob_reads` and `amd`.
    groups: KnobGroups,
    /// Triton's `HookChain` class (a launch hook of exactly that class does nothing while it
    /// holds no calls).
    hook_chain: Py<PyAny>,
    /// The knobs Triton folds into the options on every call, each with its group's index.
    knob_reads: Vec<(usize, KnobRead)>,
    /// `triton.runtime.driver` (its `active` driver gives the device and stream).
    driver: Py<PyAny>,
    /// Its instance dictionary, where its `active` is Triton's property as shipped (which
    /// returns `_active` when that is set): read directly, without the property's frame.
    driver_state: Option<Py<PyDict>>,
    /// `triton.tools.tensor_descriptor.TensorDescriptor` (`None` where this Triton has none):
    /// arguments of exactly this type enter the key as Triton specializes them.
    descriptor_type: Py<PyAny>,
    /// Gluon's host descriptor types keyed here (tiled, im2col; empty where not served).
    gluon_types: Vec<Py<PyAny>>,
    /// Grid functions traced to what they compute.
    grids: GridTraces,
    /// AMD's pointer-range part of a tensor's key, where Triton has an AMD backend.
    amd: Option<AmdRange>,
    /// `constexpr_key(value)` for tuples; `globals_changed()`; `slow(...)`.
    constexpr_key: Py<PyAny>,
    globals_changed: Py<PyAny>,
    slow: Py<PyAny>,
    hits: AtomicU64,
    overridden: RunOverride,
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
    /// `TritonDispatch(names, defaults, empty, params, function, function_state, knobs,
    /// knobs_version, hook_chain, knob_reads, driver, driver_state, descriptor_type, trace_grid, constexpr_key,
    /// globals_changed, slow, amd)`; `function_state` `vars(function)` where its `pre_run_hooks`,
    /// `debug` and `used_global_vals` are plain instance attributes, else `None`;
    /// `driver_state` `vars(driver)` where `driver.active` is Triton's property as shipped,
    /// else `None`;
    /// `trace_grid(grid, names)` Python's `_triton_grid.trace_grid`; `defaults[i]` is
    /// `empty` (any object, compared by identity) where parameter `i` has no default;
    /// `params[i]` how Triton specializes it (see [`Param::parse`]);
    /// `knobs` the `triton.knobs` module, `knobs_version` its assignments' count where
    /// safecall watches it (see [`KnobGroups`]), else `None`;
    /// `knob_reads` `(group name, attribute, variable)`, `variable` the environment variable of a
    /// knob that is Triton's `env_bool` as shipped (else `None`); `amd` what
    /// [`AmdRange::new`] takes, `None` where Triton has no AMD backend.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        names: Vec<Py<PyString>>,
        defaults: Vec<Py<PyAny>>,
        empty: Py<PyAny>,
        params: Vec<String>,
        function: Py<PyAny>,
        function_state: Option<Py<PyDict>>,
        knobs: Py<PyAny>,
        knobs_version: Option<Py<KnobsVersion>>,
        hook_chain: Py<PyAny>,
        knob_reads: Vec<(String, Py<PyString>, Option<String>)>,
        driver: Py<PyAny>,
        driver_state: Option<Py<PyDict>>,
        descriptor_type: Py<PyAny>,
        gluon_types: Vec<Py<PyAny>>,
        trace_grid: Py<PyAny>,
        constexpr_key: Py<PyAny>,
        globals_changed: Py<PyAny>,
        slow: Py<PyAny>,
        amd: Option<AmdRangeSpec>,
    ) -> PyResult<Self> {
        let index = name_index(py, &names)?;
        let positions = names.len();
        let knobs = knobs.bind(py);
        let mut groups = KnobGroups::new(py, knobs, knobs_version)?;
        groups.add(py, "runtime")?;
        let mut reads = Vec::with_capacity(knob_reads.len());
        for (group, name, variable) in knob_reads {
            let at = groups.add(py, &group)?;
            reads.push((at, KnobRead::new(py, groups.held(py, at), name, variable)?));
        }
        let knob_reads = reads;
        let amd = amd
            .map(|spec| AmdRange::new(py, &mut groups, spec))
            .transpose()?;
        let defaults = defaults
            .into_iter()
            .map(|d| (!d.is(&empty)).then_some(d))
            .collect();
        Ok(TritonDispatch {
            names,
            index,
            defaults,
            params: params
                .iter()
                .map(|p| Param::parse(p))
                .collect::<PyResult<_>>()?,
            table: Mutex::new(Table::default()),
            interner: Interner::new(py),
            kinds: Mutex::new(HashMap::default()),
            memo: PositionMemo::new(positions),
            function,
            function_state,
            groups,
            hook_chain,
            knob_reads,
            driver,
            driver_state,
            descriptor_type,
            gluon_types,
            grids: GridTraces::new(py, trace_grid)?,
            amd,
            constexpr_key,
            globals_changed,
            slow,
            hits: AtomicU64::new(0),
            overridden: RunOverride::default(),
        })
    }

    /// `d[grid]`: the callable that launches with `grid`.
    fn bind(slf: Py<Self>, grid: &Bound<'_, PyAny>) -> PyResult<Py<BoundDispatch>> {
        BoundDispatch::bound(Target::Kernel(slf), grid)
    }

    /// `run(*args, grid, warmup, **kwargs)`, `JITFunction.run`'s protocol, as a builtin
    /// (`triton_run`; without `grid` or `warmup`, Triton's own `run` raises its error).
    #[getter]
    fn run<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::triton_run::function(slf.as_any())
    }

    /// Records `kernel` (a `CompiledKernel`) as Triton's choice for the missed `key`.
    fn record(&self, key: &DispatchKey, kernel: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = kernel.py();
        // Not where the knobs or the kernel's `debug` changed since the key was computed (by
        // another thread, or by Python code the call ran): Triton chose for the new values.
        let replaced = self.groups.replaced(py)?;
        let mut now = Key::new();
        match self.knob_words(py, &replaced, &mut now)? {
            Ok(()) if key.0.starts_with(&now) => {}
            _ => return Ok(()),
        }
        let launcher = kernel.getattr(intern!(py, "run"))?;
        let entry = Entry {
            kernel: kernel.clone().unbind(),
            native: crate::triton_fast_call::native(&launcher).map(Bound::unbind),
            launcher: launcher.unbind(),
            function: kernel.getattr(intern!(py, "function"))?.unbind(),
            packed_metadata: kernel.getattr(intern!(py, "packed_metadata"))?.unbind(),
        };
        // Replaced entries are released after the lock (see `Table::insert`).
        let replaced = self.table().insert(key.0.clone(), entry);
        drop(replaced);
        Ok(())
    }

    /// Forgets every recorded kernel.
    fn clear(&self) {
        // Released after the lock (see `Table::insert`).
        let entries = self.table().clear();
        drop(entries);
    }

    /// Keys recorded.
    #[getter]
    fn recorded(&self) -> usize {
        self.table().len()
    }

    /// Whether calls other than `run`'s go through the function's own `run` (`triton_overridden`).
    fn set_run_overridden(&self, overridden: bool) {
        self.overridden.set(overridden);
    }

    /// Launches served from the table so far.
    #[getter]
    fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

/// Why a call goes to the Python side, or the key it missed with.
enum Slow {
    Fallback(String),
    Miss(Key),
}

impl From<Unhashable> for Slow {
    fn from(_: Unhashable) -> Self {
        Slow::Fallback("unhashable value".into())
    }
}

/// `?` for the steps of the key: a Python error propagates, a reason to go slow returns it.
macro_rules! slow_on {
    ($e:expr) => {
        match $e? {
            Ok(v) => v,
            Err(slow) => return Ok(Err(Slow::from(slow))),
        }
    };
}

impl TritonDispatch {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // The table stays consistent whatever panicked while it was held (one insert or clear).
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key's first words: the knobs Triton folds into the options and the kernel's own
    /// `debug` (an attribute callers may set), read as Triton's `run` reads them first; the
    /// knob groups as `KnobGroups::replaced` found them.
    #[inline]
    fn knob_words<'py>(
        &self,
        py: Python<'py>,
        replaced: &Option<SmallVec<[Bound<'py, PyAny>; 4]>>,
        key: &mut Key,
    ) -> PyResult<Result<(), Unhashable>> {
        let tuple_key = self.constexpr_key.bind(py);
        for (at, read) in &self.knob_reads {
            let knob = read.read(self.groups.now(py, replaced, *at))?;
            if let Err(unhashable) = self.interner.constant(&knob, tuple_key, key)? {
                return Ok(Err(unhashable));
            }
        }
        let debug = self.function_attr(intern!(py, "debug"))?;
        self.interner.constant(&debug, tuple_key, key)
    }

    /// The Python side's `slow(reason, args, kwargs, grid, warmup, key=None)`.
    pub(crate) fn slow_function<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.slow.bind(py)
    }

    pub(crate) fn call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.overridden
            .route(&self.slow, args, kwargs, (grid, warmup), || {
                self.call_with(args, kwargs, false, grid, warmup)
            })
    }

    /// A call; with `run_keywords`, `kwargs` is the caller's dictionary of `run(*args, grid=,
    /// warmup=, **kwargs)` as given (`triton_run`), `grid` and `warmup` among them, which are
    /// not the kernel's.
    pub(crate) fn call_with<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        run_keywords: bool,
        grid: &Bound<'py, PyAny>,
        warmup: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        // Counted as the Python frames of Triton's path it replaces (`JITFunction.run` and its
        // binder), while a `data_ptr()`, the grid or a hook may call the kernel again.
        let _depth =
            RecursionGuard::enter(py, RECURSION_LEVELS, c" while dispatching a Triton kernel")?;
        // Any object, as Triton's `if not warmup` reads it.
        let outcome = if warmup.is_truthy()? {
            Err(Slow::Fallback("warmup".into()))
        } else {
            self.fast(args, kwargs, run_keywords, grid)?
        };
        match outcome {
            Ok(kernel) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(kernel)
            }
            Err(slow) => {
                let (reason, key) = match slow {
                    Slow::Fallback(reason) => (Some(reason), None),
                    Slow::Miss(key) => (None, Some(DispatchKey(key))),
                };
                let kwargs = match kwargs {
                    // A copy without them (the caller's is left as it was).
                    Some(k) if run_keywords => without_run_keywords(k)?,
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
    fn fast<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        run_keywords: bool,
        grid: &Bound<'py, PyAny>,
    ) -> PyResult<Result<Bound<'py, PyAny>, Slow>> {
        let py = args.py();
        // As Triton's `run`: the knobs and the kernel's own `debug` (an attribute callers may
        // set) first, before the pre-run hooks and the arguments' `data_ptr()` run any Python.
        let replaced = self.groups.replaced(py)?;
        let group = |at: usize| self.groups.now(py, &replaced, at);
        let tuple_key = self.constexpr_key.bind(py);
        // Each parameter's words delimit themselves (a constant is always two; an argument
        // starts with its kind, and only a tensor's and a tuple's have more), so two keys are
        // equal only when every part is.
        // Room for the usual key (two words per knob, the kernel's debug flag and the device,
        // at most four words per argument, a few options); a descriptor's block shape, a
        // tuple or many options grow it.
        let mut key = Key::with_capacity(2 * self.knob_reads.len() + 4 * self.names.len() + 16);
        slow_on!(self.knob_words(py, &replaced, &mut key));
        if self
            .function_attr(intern!(py, "pre_run_hooks"))?
            .is_truthy()?
        {
            return Ok(Err(Slow::Fallback("pre-run hooks".into())));
        }
        let runtime = group(0);
        let mut values = Values::new();
        let mut options = Vec::new();
        let parameters = (&self.names[..], self.index.bind(py), &self.defaults[..]);
        if !bind_arguments(
            parameters,
            args,
            kwargs,
            run_keywords,
            &mut values,
            &mut options,
        )? {
            return Ok(Err(Slow::Fallback("binding".into())));
        }
        let active = self.active_driver(py)?;
        let device = current_device(&active)?;
        // On AMD, each tensor's part also says whether it is within 2 GiB (see `AmdRange`);
        // `native`: the target's specializer is Triton's native one (not AMD's, in Python).
        let (ranged, native) = match &self.amd {
            Some(amd) => match amd.mode(&active, group(amd.group()))? {
                AmdMode::NotAmd => (None, true),
                AmdMode::Unranged => (None, false),
                AmdMode::Ranged => (Some(amd), false),
                AmdMode::Unmodelled => {
                    return Ok(Err(Slow::Fallback(
                        "an AMD backend specializing pointers unlike Triton 3.6-3.9".into(),
                    )));
                }
            },
            None => (None, true),
        };
        // Each tensor's `data_ptr()`, read once for the key and the launch.
        let mut addresses: SmallVec<[Option<Address<'py>>; INLINE_ARGUMENTS]> = SmallVec::new();
        slow_on!(self.interner.constant(&device, tuple_key, &mut key));
        for (i, (value, &param)) in values.iter().zip(&self.params).enumerate() {
            if param == Param::Constexpr {
                slow_on!(self.interner.constant(value, tuple_key, &mut key));
                continue;
            }
            if let Some(word) = scalar_word(value)? {
                key.push(word);
            } else {
                let (kind, type_code) = match self.memo.kind(i, value.get_type_ptr()) {
                    Some(known) => known,
                    None => {
                        let (kind, code) = slow_on!(self.kind(value));
                        self.memo
                            .remember_kind(i, value.get_type().as_any(), kind, code);
                        (kind, code)
                    }
                };
                if kind == TUPLE {
                    if !native {
                        // AMD's specializer, in Python, keys tuples its own way.
                        return Ok(Err(Slow::Fallback("a tuple on AMD".into())));
                    }
                    let tuple = value.cast::<PyTuple>()?;
                    match slow_on!(self.tuple_key(tuple, type_code, native, 0, &mut key)) {
                        TupleKey::Keyed => continue,
                        TupleKey::Unmodelled(what) => return Ok(Err(Slow::Fallback(what))),
                    }
                }
                if kind == DESCRIPTOR || kind == GLUON_DESCRIPTOR {
                    if !slow_on!(self.descriptor_key(value, kind, type_code, tuple_key, &mut key)) {
                        return Ok(Err(Slow::Fallback(
                            "a TensorDescriptor's block_shape".into(),
                        )));
                    }
                    continue;
                }
                if kind != TENSOR {
                    let name = value.get_type().name()?;
                    return Ok(Err(Slow::Fallback(format!("argument type {name}"))));
                }
                let dtype = value.getattr(intern!(py, "dtype"))?;
                let dtype_code = match self.memo.dtype(i, &dtype) {
                    Some(code) => code,
                    None => {
                        let code = slow_on!(self.interner.dtype(&dtype));
                        self.memo.remember_dtype(i, &dtype, code);
                        code
                    }
                };
                if param == Param::TypeOnly {
                    // The launcher reads its `data_ptr()`, as Triton's does.
                    append(&mut key, &[TENSOR.into(), type_code, dtype_code, 0]);
                    continue;
                }
                let address = Address::new(crate::method_call::call_method0(
                    value,
                    intern!(py, "data_ptr"),
                )?);
                let aligned = address.aligned_16(native)?;
                let within_2gb = match ranged {
                    Some(amd) => amd.within_2gb(i, value)?,
                    None => false,
                };
                let flags = u64::from(aligned) | u64::from(within_2gb) << 1;
                append(&mut key, &[TENSOR.into(), type_code, dtype_code, flags]);
                if addresses.is_empty() {
                    addresses.resize_with(values.len(), || None);
                }
                addresses[i] = Some(address);
            }
        }
        // After the binder, as Triton's `run` checks it.
        if let Ok(h) = runtime.getattr(intern!(py, "add_stages_inspection_hook"))
            && !h.is_none()
        {
            return Ok(Err(Slow::Fallback("stages inspection hook".into())));
        }
        if !options.is_empty() {
            let mut sorted = options;
            // Strings always compare.
            sorted.sort_by(|a, b| a.0.compare(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            append(&mut key, &[OPTIONS, sorted.len() as u64]);
            for (name, value) in sorted {
                let code = slow_on!(self.interner.code(Space::Option, &name, true, || Ok(vec![
                    name.clone().into_any()
                ])));
                key.push(code);
                slow_on!(self.interner.constant(&value, tuple_key, &mut key));
            }
        }
        let Some(hit) = self.table().get(key.as_slice()) else {
            return Ok(Err(Slow::Miss(key)));
        };
        if self
            .function_attr(intern!(py, "used_global_vals"))?
            .is_truthy()?
            && self.globals_changed.bind(py).call0()?.is_truthy()?
        {
            return Ok(Err(Slow::Fallback("globals changed".into())));
        }
        if grid.is_none() {
            // Triton 3.6 and 3.7 assert it is not None (an AssertionError, unless Python runs
            // with -O), 3.8+ take its length (a TypeError): its own `run` says which.
            return Ok(Err(Slow::Fallback("a None grid".into())));
        }
        let grid = if grid.is_callable() {
            match self.grids.evaluate(grid, &self.names, &values)? {
                Some(traced) => traced,
                None => {
                    let meta = PyDict::new(py);
                    for (name, value) in self.names.iter().zip(&values) {
                        meta.set_item(name.bind(py), value)?;
                    }
                    let computed = grid.call1((&meta,))?;
                    // Triton's `run` launches with the dictionary's values after the grid
                    // function had it (`grid(bound_args)`, then `*bound_args.values()`), which
                    // may have changed them: so does the launch here (each `data_ptr()` then
                    // read by the launcher, as in Triton).
                    let same = meta.len() == values.len()
                        && meta.iter().zip(&values).all(|((_, m), v)| m.is(v));
                    if !same {
                        values = meta.values().iter().collect();
                        addresses.clear();
                    }
                    computed
                }
            }
        } else {
            grid.clone()
        };
        let size = grid.len()?;
        let one = 1i64.into_pyobject(py)?.into_any();
        let axes = [
            grid.get_item(0)?,
            if size > 1 {
                grid.get_item(1)?
            } else {
                one.clone()
            },
            if size > 2 { grid.get_item(2)? } else { one },
        ];
        let stream = current_stream(&active, &device)?;
        // The launch hooks, read where Triton's `run` reads them, after the grid. With one
        // registered (a profiler's), the launch carries what `run` passes:
        // `kernel.launch_metadata(grid, stream, *bound_args.values())`, then the hooks as read
        // again for the launcher's call.
        let (enter, leave) = (
            intern!(py, "launch_enter_hook"),
            intern!(py, "launch_exit_hook"),
        );
        let none = || py.None().into_bound(py);
        let chain = self.hook_chain.bind(py);
        let (metadata, enter, leave) = if hooked(&runtime.getattr(enter)?, chain)?
            || hooked(&runtime.getattr(leave)?, chain)?
        {
            let mut call = vec![grid.clone(), stream.clone()];
            call.extend(values.iter().cloned());
            let metadata = hit
                .kernel
                .bind(py)
                .call_method1(intern!(py, "launch_metadata"), PyTuple::new(py, call)?)?;
            (metadata, runtime.getattr(enter)?, runtime.getattr(leave)?)
        } else {
            // Both empty: the launcher need not look at them again.
            (none(), none(), none())
        };
        let [x, y, z] = axes;
        let fixed = [
            x,
            y,
            z,
            stream,
            hit.function.bind(py).clone(),
            hit.packed_metadata.bind(py).clone(),
            metadata,
            enter,
            leave,
        ];
        // safecall's own launcher is called directly; any other (Triton's) through Python.
        if let Some(native) = &hit.native {
            native.get().launch(&fixed, &values, &addresses)?;
        } else {
            let mut call = fixed.to_vec();
            call.extend(values);
            hit.launcher.bind(py).call1(PyTuple::new(py, call)?)?;
        }
        Ok(Ok(hit.kernel.bind(py).clone()))
    }

    /// The kernel's attribute `name`: from its instance dictionary where that is exact (see
    /// `function_state`), else through Python's attribute lookup.
    fn function_attr<'py>(&self, name: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
        let py = name.py();
        if let Some(state) = &self.function_state
            && let Some(value) = state.bind(py).get_item(name)?
        {
            return Ok(value);
        }
        self.function.bind(py).getattr(name)
    }

    /// `triton.runtime.driver.active`: its `_active` when set and the property is Triton's
    /// (what the property returns then), else the property.
    fn active_driver<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(state) = &self.driver_state
            && let Some(active) = state.bind(py).get_item(intern!(py, "_active"))?
            && !active.is_none()
        {
            return Ok(active);
        }
        self.driver.bind(py).getattr(intern!(py, "active"))
    }
}
