//! The Triton knobs the dispatcher folds into its key on every call, read as Triton reads
//! them (`getattr(knobs.<group>, name)`), with one shortcut: a knob that is Triton's
//! environment-backed boolean (`triton.knobs.env_bool`, as shipped; the Python side checks)
//! is worth the instance's override when one is set, else `getenv_bool(VAR, default)`, a pure
//! function of the variable's text. Its value is therefore remembered with the text it was
//! read for, and a call whose `getenv(VAR)` finds the same text reuses it: a C `getenv` and a
//! dictionary lookup instead of a Python descriptor call (about 2300 instructions per read).
//! The groups themselves (`knobs.runtime`, `knobs.compilation`, ...) are the module's at each
//! call ([`KnobGroups`]), as Triton's `knobs.runtime` is: Triton's test helper `fresh_knobs`
//! puts fresh copies in their place, whose settings then count (the shortcut serves the group
//! object it was made for only).
//! Also [`hooked`]: whether one of `knobs.runtime`'s launch hooks does anything.

use std::ffi::{CStr, CString};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use smallvec::SmallVec;

/// An `env_bool` knob's value last read, with its variable's text then (`None`: unset).
type LastRead = Mutex<Option<(Option<Vec<u8>>, Py<PyAny>)>>;

/// An `env_bool` knob's shortcut: its variable, the group object it serves, that group's
/// instance dictionary (where an override would be; an instance's dictionary is the same
/// object for its life) and the value last read.
struct EnvKnob {
    variable: CString,
    group: Py<PyAny>,
    overrides: Py<PyDict>,
    last: LastRead,
}

/// How many times attributes of `triton.knobs` were assigned or deleted, counted by the
/// module's class while safecall watches it (Python's `_triton_dispatch._WatchedKnobs`).
#[pyclass(frozen)]
pub struct KnobsVersion(AtomicU64);

#[pymethods]
impl KnobsVersion {
    #[new]
    fn new() -> Self {
        KnobsVersion(AtomicU64::new(0))
    }

    /// Counts one assignment or deletion.
    fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// The count so far.
    #[getter]
    fn value(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The groups of `triton.knobs` a dispatcher reads (`knobs.runtime`, ...), as Triton's
/// `knobs.<group>` finds them on each call. Each group's object when the dispatcher was made is
/// held; while the module's attributes were not assigned since they were last found in place
/// (the [`KnobsVersion`] count), those are the groups; otherwise each is looked up in the
/// module's dictionary (one lookup each), and the held ones serve again once found in place.
/// Without the count (a module whose class safecall does not watch), every call looks them up.
pub(crate) struct KnobGroups {
    module: Py<PyAny>,
    namespace: Py<PyDict>,
    names: Vec<Py<PyString>>,
    held: Vec<Py<PyAny>>,
    /// The count, with the module's class that keeps it (another class put in its place
    /// since, by whatever means, keeps no count: the groups are then looked up every call).
    version: Option<(Py<KnobsVersion>, Py<PyAny>)>,
    /// The count when `held` were last found in place.
    seen: AtomicU64,
}

impl KnobGroups {
    /// `module` is `triton.knobs`; `version` its count, where safecall watches it.
    pub(crate) fn new(
        py: Python<'_>,
        module: &Bound<'_, PyAny>,
        version: Option<Py<KnobsVersion>>,
    ) -> PyResult<Self> {
        let namespace = module
            .getattr(intern!(py, "__dict__"))?
            .cast_into::<PyDict>()
            .map_err(|_| PyValueError::new_err("the knobs module's __dict__ is no dict"))?;
        let seen = version.as_ref().map_or(0, |v| v.get().value());
        let version = version.map(|v| (v, module.get_type().into_any().unbind()));
        Ok(KnobGroups {
            module: module.clone().unbind(),
            namespace: namespace.unbind(),
            names: Vec::new(),
            held: Vec::new(),
            version,
            seen: AtomicU64::new(seen),
        })
    }

    /// The index of group `name`, added if new.
    pub(crate) fn add(&mut self, py: Python<'_>, name: &str) -> PyResult<usize> {
        if let Some(at) = self.names.iter().position(|n| {
            n.bind(py)
                .compare(name)
                .is_ok_and(|o| o == std::cmp::Ordering::Equal)
        }) {
            return Ok(at);
        }
        // Interned, as the module's own keys are: a lookup compares identities.
        let name = PyString::intern(py, name);
        let group = self.look_up(py, &name)?;
        self.names.push(name.unbind());
        self.held.push(group.unbind());
        Ok(self.names.len() - 1)
    }

    /// Group `at` as held (what [`KnobRead::new`] serves).
    #[inline]
    pub(crate) fn held<'a, 'py>(&'a self, py: Python<'py>, at: usize) -> &'a Bound<'py, PyAny> {
        self.held[at].bind(py)
    }

    /// Group `at` now, from what [`Self::replaced`] returned for this call.
    #[inline]
    pub(crate) fn now<'a, 'py>(
        &'a self,
        py: Python<'py>,
        replaced: &'a Option<SmallVec<[Bound<'py, PyAny>; 4]>>,
        at: usize,
    ) -> &'a Bound<'py, PyAny> {
        match replaced {
            Some(found) => &found[at],
            None => self.held(py, at),
        }
    }

    /// `None` where the held groups are the module's now; else each group as looked up now.
    #[inline]
    pub(crate) fn replaced<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<SmallVec<[Bound<'py, PyAny>; 4]>>> {
        if let Some((v, class)) = &self.version
            && v.get().value() == self.seen.load(Ordering::Acquire)
            && self.module.bind(py).get_type().is(class)
        {
            return Ok(None);
        }
        self.look_up_all(py)
    }

    /// [`Self::replaced`] where the count moved (or there is none): each group looked up.
    #[cold]
    fn look_up_all<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<SmallVec<[Bound<'py, PyAny>; 4]>>> {
        // Read before the lookups: an assignment since is seen on the next call.
        let now = match &self.version {
            Some((v, class)) if self.module.bind(py).get_type().is(class) => Some(v.get().value()),
            _ => None,
        };
        let mut found: SmallVec<[Bound<'py, PyAny>; 4]> = SmallVec::new();
        for name in &self.names {
            found.push(self.look_up(py, name.bind(py))?);
        }
        if found.iter().zip(&self.held).all(|(f, h)| f.is(h)) {
            if let Some(now) = now {
                self.seen.store(now, Ordering::Release);
            }
            return Ok(None);
        }
        Ok(Some(found))
    }

    /// `module.<name>`: from the module's dictionary, else through the module's attribute
    /// protocol (a module `__getattr__`, or Python's `AttributeError`).
    fn look_up<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.namespace.bind(py).get_item(name)? {
            Some(group) => Ok(group),
            None => self.module.bind(py).getattr(name),
        }
    }
}

/// One knob read, of a group the caller finds (see [`KnobGroups`]).
pub(crate) struct KnobRead {
    name: Py<PyString>,
    /// For an `env_bool` knob whose group's `__dict__` is a dict: the shortcut, for the group
    /// object there when it was made.
    env: Option<EnvKnob>,
}

impl KnobRead {
    /// `group.name`; `variable` the environment variable of an `env_bool` knob, else `None`.
    pub(crate) fn new(
        py: Python<'_>,
        group: &Bound<'_, PyAny>,
        name: Py<PyString>,
        variable: Option<String>,
    ) -> PyResult<Self> {
        let env = match variable {
            None => None,
            Some(v) => {
                let variable = CString::new(v)
                    .map_err(|_| PyValueError::new_err("a knob's variable holds a NUL byte"))?;
                group
                    .getattr(intern!(py, "__dict__"))
                    .ok()
                    .and_then(|d| d.cast_into::<PyDict>().ok())
                    .map(|overrides| EnvKnob {
                        variable,
                        group: group.clone().unbind(),
                        overrides: overrides.unbind(),
                        last: Mutex::new(None),
                    })
            }
        };
        Ok(KnobRead { name, env })
    }

    /// The knob's value now, `group` its group as looked up for this call.
    pub(crate) fn read<'py>(&self, group: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = group.py();
        let name = self.name.bind(py);
        let env = match &self.env {
            Some(env) if group.is(&env.group) => env,
            _ => return group.getattr(name),
        };
        let EnvKnob {
            variable,
            overrides,
            last,
            ..
        } = env;
        // `env_base.__get__`: the instance's override first (`transform` is the identity for
        // `env_bool`).
        if let Some(value) = overrides.bind(py).get_item(name)? {
            return Ok(value);
        }
        // SAFETY: a NUL-terminated name; the environment changes only through Python's
        // `os.environ` (`putenv` under the interpreter lock, which this call holds) or through
        // code that would race Triton's own `getenv` alike. The text is compared, then copied,
        // before any Python code runs.
        let text = unsafe {
            let p = libc::getenv(variable.as_ptr());
            (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
        };
        {
            let last = last.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((seen, value)) = &*last
                && seen.as_deref() == text
            {
                return Ok(value.bind(py).clone());
            }
        }
        // Copied before any Python runs (which may change the environment).
        let text = text.map(<[u8]>::to_vec);
        // No lock while Python runs (the descriptor may switch threads, and another thread
        // reading this knob would then wait on the lock holding the interpreter's).
        let value = group.getattr(name)?;
        // Remembered only if the variable still holds the text read: another thread may have
        // changed it while the descriptor ran, and the value may be the new text's.
        // SAFETY: as above.
        let now = unsafe {
            let p = libc::getenv(variable.as_ptr());
            (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
        };
        if now == text.as_deref() {
            let replaced = last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .replace((text, value.clone().unbind()));
            drop(replaced);
        }
        Ok(value)
    }
}

/// Whether a launch hook does anything, as Triton's launchers call it: anything but `None`,
/// except a hook of exactly Triton's `HookChain` class (`chain_type`) holding no calls (any
/// other object, a `HookChain` subclass among them, is called whatever its `calls`).
///
/// A `HookChain`'s `calls` is an instance attribute (`HookChain.__init__` sets it, `add` and
/// `remove` change the list in place), read here from the instance's dictionary: about 150
/// instructions less per hook than `getattr`, which looks through the class first; where the
/// dictionary has no `calls`, by `getattr` as before.
pub(crate) fn hooked(hook: &Bound<'_, PyAny>, chain_type: &Bound<'_, PyAny>) -> PyResult<bool> {
    if hook.is_none() {
        return Ok(false);
    }
    if !hook.get_type().is(chain_type) {
        return Ok(true);
    }
    if let Some(calls) = instance_attribute(hook, intern!(hook.py(), "calls"))? {
        return calls.is_truthy();
    }
    match hook.getattr(intern!(hook.py(), "calls")) {
        Ok(calls) => calls.is_truthy(),
        Err(_) => Ok(true),
    }
}

unsafe extern "C" {
    /// `PyObject_GenericGetDict(object, context)`: `object.__dict__` as `object.__dict__` reads
    /// it for a class that does not replace it (a new reference, or NULL with an exception
    /// set). Exported with this signature by every CPython since 3.3 (`Include/object.h`),
    /// in the stable ABI from 3.10; declared here for the 3.9 the wheel also serves.
    fn PyObject_GenericGetDict(
        object: *mut pyo3::ffi::PyObject,
        context: *mut std::ffi::c_void,
    ) -> *mut pyo3::ffi::PyObject;
}

/// `name` in `object`'s instance dictionary (`None`: no such entry, or no dictionary).
fn instance_attribute<'py>(
    object: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = object.py();
    // SAFETY: the interpreter lock is held (`py`); `object` is a live object.
    // `PyObject_GenericGetDict` returns a new reference to its instance dictionary (made on
    // first request), or NULL with an exception set (no dictionary), which is cleared.
    let dict = unsafe { PyObject_GenericGetDict(object.as_ptr(), std::ptr::null_mut()) };
    let Ok(dict) = (unsafe { Bound::from_owned_ptr_or_err(py, dict) }) else {
        return Ok(None);
    };
    let Ok(dict) = dict.cast_into::<PyDict>() else {
        return Ok(None);
    };
    dict.get_item(name)
}
