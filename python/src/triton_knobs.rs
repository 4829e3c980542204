//! The Triton knobs the dispatcher folds into its key on every call, read as Triton reads
//! them (`getattr(knobs.<group>, name)`), with one shortcut: a knob that is Triton's
//! environment-backed boolean (`triton.knobs.env_bool`, as shipped; the Python side checks)
//! is worth the instance's override when one is set, else `getenv_bool(VAR, default)`, a pure
//! function of the variable's text. Its value is therefore remembered with the text it was
//! read for, and a call whose `getenv(VAR)` finds the same text reuses it: a C `getenv` and a
//! dictionary lookup instead of a Python descriptor call (about 2300 instructions per read).
//! The groups themselves (`knobs.runtime`, `knobs.compilation`, ...) are looked up in the
//! module on every call ([`KnobGroup`]), as Triton's `knobs.runtime` is: Triton's test helper
//! `fresh_knobs` puts fresh copies in their place, whose settings then count (the shortcut
//! serves the group it was made for only).
//! Also [`hooked`]: whether one of `knobs.runtime`'s launch hooks does anything.

use std::ffi::{CStr, CString};
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// An `env_bool` knob's value last read, with its variable's text then (`None`: unset).
type LastRead = Mutex<Option<(Option<Vec<u8>>, Py<PyAny>)>>;

/// An `env_bool` knob's shortcut: its variable, the group object it serves, that group's
/// instance dictionary (where an override would be; an instance's dictionary is the same
/// object for its life), the group's class dictionary (a `mappingproxy`) and the descriptor
/// found there (the shortcut holds while it is still there), and the value last read.
struct EnvKnob {
    variable: CString,
    group: Py<PyAny>,
    overrides: Py<PyDict>,
    class_namespace: Py<PyAny>,
    descriptor: Py<PyAny>,
    last: LastRead,
}

impl EnvKnob {
    /// Whether the shortcut serves `group.name` now: the same group object, the same
    /// descriptor on its class.
    fn serves(&self, group: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<bool> {
        if !group.is(&self.group) {
            return Ok(false);
        }
        let py = group.py();
        Ok(match self.class_namespace.bind(py).get_item(name) {
            Ok(found) => found.is(&self.descriptor),
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(py) => false,
            Err(e) => return Err(e),
        })
    }
}

/// A group of `triton.knobs` (`knobs.runtime`, ...), by name: looked up in the module's
/// dictionary on each read (one lookup), as Triton's `knobs.<group>` is.
pub(crate) struct KnobGroup {
    module: Py<PyAny>,
    namespace: Py<PyDict>,
    name: Py<PyString>,
}

impl KnobGroup {
    /// `module.<name>` (`module` is `triton.knobs`).
    pub(crate) fn new(
        py: Python<'_>,
        module: &Bound<'_, PyAny>,
        name: Py<PyString>,
    ) -> PyResult<Self> {
        let namespace = module
            .getattr(intern!(py, "__dict__"))?
            .cast_into::<PyDict>()
            .map_err(|_| PyValueError::new_err("the knobs module's __dict__ is no dict"))?;
        Ok(KnobGroup {
            module: module.clone().unbind(),
            namespace: namespace.unbind(),
            name,
        })
    }

    /// The group now: from the module's dictionary, else through the module's attribute
    /// protocol (a module `__getattr__`, or Python's `AttributeError`).
    pub(crate) fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let name = self.name.bind(py);
        match self.namespace.bind(py).get_item(name)? {
            Some(group) => Ok(group),
            None => self.module.bind(py).getattr(name),
        }
    }
}

/// One knob read.
pub(crate) struct KnobRead {
    group: KnobGroup,
    name: Py<PyString>,
    /// For an `env_bool` knob whose group's `__dict__` is a dict: the shortcut, for the group
    /// object there when it was made.
    env: Option<EnvKnob>,
}

impl KnobRead {
    /// `group.name`; `variable` the environment variable of an `env_bool` knob, else `None`.
    pub(crate) fn new(
        py: Python<'_>,
        group: KnobGroup,
        name: Py<PyString>,
        variable: Option<String>,
    ) -> PyResult<Self> {
        let env = match variable {
            None => None,
            Some(v) => {
                let variable = CString::new(v)
                    .map_err(|_| PyValueError::new_err("a knob's variable holds a NUL byte"))?;
                let owner = group.get(py)?;
                let class_namespace = owner.get_type().getattr(intern!(py, "__dict__"))?;
                let descriptor = class_namespace.get_item(&name)?;
                owner
                    .getattr(intern!(py, "__dict__"))
                    .ok()
                    .and_then(|d| d.cast_into::<PyDict>().ok())
                    .map(|overrides| EnvKnob {
                        variable,
                        group: owner.unbind(),
                        overrides: overrides.unbind(),
                        class_namespace: class_namespace.unbind(),
                        descriptor: descriptor.unbind(),
                        last: Mutex::new(None),
                    })
            }
        };
        Ok(KnobRead { group, name, env })
    }

    /// The knob's value now.
    pub(crate) fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let group = self.group.get(py)?;
        let name = self.name.bind(py);
        let env = match &self.env {
            Some(env) if env.serves(&group, name)? => env,
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
pub(crate) fn hooked(hook: &Bound<'_, PyAny>, chain_type: &Bound<'_, PyAny>) -> PyResult<bool> {
    if hook.is_none() {
        return Ok(false);
    }
    if !hook.get_type().is(chain_type) {
        return Ok(true);
    }
    match hook.getattr(intern!(hook.py(), "calls")) {
        Ok(calls) => calls.is_truthy(),
        Err(_) => Ok(true),
    }
}
