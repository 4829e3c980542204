//! [`DispatchedMethod`]: the descriptor `install(dispatch=True)` puts on Triton's classes as
//! `__getitem__`, so that `kernel[grid]` reaches the kernel's native dispatcher with no Python
//! frame in between (a Python `__getitem__` forwarding to it cost two or three frames).
//!
//! Python looks a special method up on the type and, the descriptor not being a method
//! descriptor, calls its `__get__(kernel, type)`, then calls what that returns with `grid`.
//! Once the kernel's dispatcher is made, the kernel's instance dictionary holds the
//! dispatcher's native bound method under [`DispatchedMethod`]'s attribute name, and `__get__`
//! returns it as it is (no allocation); before that, and for objects never dispatched, it
//! returns the Python fallback bound to the object, which makes the dispatcher or goes to
//! Triton's own method.
//!
//! [`DispatchedRun`] is the same descriptor for `run`, and a data descriptor: assigning
//! `kernel.run = f` on an instance (a test's `mock.patch.object(kernel, "run")`, a tracer's
//! wrapper) and deleting it again are handed to Python functions, which keep `f` where `__get__`
//! finds it and tell the kernel's dispatcher that `kernel[grid](...)` and the layers above
//! must now call `kernel.run` as Triton's own do (`run overridden`).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A method of Triton's classes served from an attribute of the instance when it is set,
/// else by a Python function; on the class itself, that function (its `__doc__`, its name).
#[pyclass(module = "safecall._native", frozen)]
pub(crate) struct DispatchedMethod {
    /// The instance attribute holding the native bound method.
    attribute: Py<PyString>,
    /// The Python function that serves the method until then.
    fallback: Py<PyAny>,
}

#[pymethods]
impl DispatchedMethod {
    /// `DispatchedMethod(attribute, fallback)`.
    #[new]
    fn new(attribute: Py<PyString>, fallback: Py<PyAny>) -> Self {
        DispatchedMethod {
            attribute,
            fallback,
        }
    }

    /// The bound method for `obj` (the fallback function itself on class access).
    fn __get__<'py>(
        &self,
        py: Python<'py>,
        obj: Option<Bound<'py, PyAny>>,
        owner: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        served(py, (&self.attribute, &self.fallback), false, obj, owner)
    }
}

/// `__get__` of both descriptors: the instance's attribute `attribute` when set (and not
/// `None`, unless `run`), else, for `run`, the instance's own `run` in its dictionary, else
/// `fallback` bound to the instance; on the class, `fallback` itself.
fn served<'py>(
    py: Python<'py>,
    (attribute, fallback): (&Py<PyString>, &Py<PyAny>),
    run: bool,
    obj: Option<Bound<'py, PyAny>>,
    owner: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let fallback = fallback.bind(py);
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(fallback.clone());
    };
    // Set on the instance (the classes have no attribute of that name): one generic
    // attribute read, cheaper than reading `__dict__` and then the item.
    if let Some(method) = obj.getattr_opt(attribute.bind(py))?
        && (run || !method.is_none())
    {
        return Ok(method);
    }
    // An own `run` given before the install (the data descriptor hides it from Python).
    if run
        && let Ok(state) = obj.getattr(intern!(py, "__dict__"))
        && let Ok(state) = state.cast::<PyDict>()
        && let Some(own) = state.get_item(intern!(py, "run"))?
    {
        return Ok(own);
    }
    fallback.call_method1(intern!(py, "__get__"), (obj, owner))
}

/// `run` of Triton's classes: [`DispatchedMethod`], and assignments and deletions on an
/// instance handed to `on_set(instance, value)` and `on_delete(instance)`.
#[pyclass(module = "safecall._native", frozen)]
pub(crate) struct DispatchedRun {
    /// The instance attribute holding the native bound method, or the instance's own `run`.
    attribute: Py<PyString>,
    /// The Python function that serves the method until then.
    fallback: Py<PyAny>,
    on_set: Py<PyAny>,
    on_delete: Py<PyAny>,
}

#[pymethods]
impl DispatchedRun {
    /// `DispatchedRun(attribute, fallback, on_set, on_delete)`.
    #[new]
    fn new(
        attribute: Py<PyString>,
        fallback: Py<PyAny>,
        on_set: Py<PyAny>,
        on_delete: Py<PyAny>,
    ) -> Self {
        DispatchedRun {
            attribute,
            fallback,
            on_set,
            on_delete,
        }
    }

    /// The instance's `run` (its dispatcher's native method, or its own, `None` too); before
    /// its dispatcher is made, its own given before the install (in its dictionary, which this
    /// data descriptor hides), else the fallback bound to it; the fallback itself on class
    /// access.
    fn __get__<'py>(
        &self,
        py: Python<'py>,
        obj: Option<Bound<'py, PyAny>>,
        owner: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        served(py, (&self.attribute, &self.fallback), true, obj, owner)
    }

    /// `instance.run = value`.
    fn __set__(&self, instance: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.on_set.bind(instance.py()).call1((instance, value))?;
        Ok(())
    }

    /// `del instance.run`.
    fn __delete__(&self, instance: &Bound<'_, PyAny>) -> PyResult<()> {
        self.on_delete.bind(instance.py()).call1((instance,))?;
        Ok(())
    }
}
