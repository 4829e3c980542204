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

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;

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
        let fallback = self.fallback.bind(py);
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(fallback.clone());
        };
        // Set on the instance (the classes have no attribute of that name): one generic
        // attribute read, cheaper than reading `__dict__` and then the item.
        if let Some(method) = obj.getattr_opt(self.attribute.bind(py))?
            && !method.is_none()
        {
            return Ok(method);
        }
        fallback.call_method1(intern!(py, "__get__"), (obj, owner))
    }
}
