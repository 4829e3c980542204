//! Binding a dispatched call's arguments to the kernel's parameters, as Triton's binder
//! (`JITFunction.run`'s `binder(*args, **kwargs)`) binds them: positional arguments first, then
//! keywords by name, defaults for the rest; keywords that name no parameter are launch
//! options. For `run(*args, grid=, warmup=, **kwargs)` (`triton_run`) the caller's keyword
//! dictionary is bound as it is, `grid` and `warmup` left out, instead of being copied
//! without them.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use smallvec::SmallVec;

/// How many arguments a call holds on the stack (more spill to the heap).
pub(crate) const INLINE_ARGUMENTS: usize = 24;

/// A call's parameter values, in declaration order.
pub(crate) type Values<'py> = SmallVec<[Bound<'py, PyAny>; INLINE_ARGUMENTS]>;

/// A kernel's parameters: their names in declaration order, name -> position, and each one's
/// default (`None` where it has none).
pub(crate) type Parameters<'a, 'py> = (
    &'a [Py<PyString>],
    &'a Bound<'py, PyDict>,
    &'a [Option<Py<PyAny>>],
);

/// Whether keyword `name` is `word` (an interned `str`): the same object, as a keyword
/// written in code is, or the same text (compared as a dictionary compares `str` keys, without
/// a subclass's `__eq__`).
fn is_word(name: &Bound<'_, PyAny>, word: &Bound<'_, PyString>) -> bool {
    if name.is(word) {
        return true;
    }
    // SAFETY: `PyUnicode_Compare` of two `str`s (a subclass's text included) calls no Python
    // code and cannot fail.
    name.is_instance_of::<PyString>()
        && unsafe { ffi::PyUnicode_Compare(name.as_ptr(), word.as_ptr()) == 0 }
}

/// Binds the call's arguments: `values` receives the parameters' values in declaration order
/// and `options` the keyword options; `false` where Triton's binder would raise (too many,
/// repeated or missing arguments). With `run_keywords`, `kwargs` holds `grid` and `warmup`
/// too (once each, as a dictionary holds a key), which are left out.
pub(crate) fn bind_arguments<'py>(
    (names, index, defaults): Parameters<'_, 'py>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    run_keywords: bool,
    values: &mut Values<'py>,
    options: &mut Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
) -> PyResult<bool> {
    let py = args.py();
    let given = args.len();
    if given > names.len() {
        return Ok(false);
    }
    values.extend(args.iter());
    // A parameter without a default holds `None` until a keyword gives it a value.
    let mut missing = 0usize;
    values.extend(defaults[given..].iter().map(|d| match d {
        Some(d) => d.bind(py).clone(),
        None => {
            missing += 1;
            py.None().into_bound(py)
        }
    }));
    let Some(kwargs) = kwargs else {
        return Ok(missing == 0);
    };
    // `grid` and `warmup` still to leave out.
    let mut skip = if run_keywords { 2 } else { 0 };
    for (name, value) in kwargs.iter() {
        if skip > 0
            && (is_word(&name, intern!(py, "grid")) || is_word(&name, intern!(py, "warmup")))
        {
            skip -= 1;
            continue;
        }
        // A keyword is usually the very string object of the parameter's name (identifiers
        // are interned): found by address, else by the name's value.
        let position = match names.iter().position(|n| n.as_ptr() == name.as_ptr()) {
            Some(i) => Some(i),
            None => match index.get_item(&name)? {
                Some(i) => Some(i.extract::<usize>()?),
                None => None,
            },
        };
        match position {
            None => options.push((name.cast_into::<PyString>()?, value)),
            Some(i) => {
                if i < given {
                    return Ok(false);
                }
                // A dictionary's keys are distinct: each slot is given at most once.
                if defaults[i].is_none() {
                    missing -= 1;
                }
                values[i] = value;
            }
        }
    }
    Ok(missing == 0)
}

/// A copy of the caller's keywords of `run(*args, grid=, warmup=, **kwargs)` without `grid`
/// and `warmup` (both in it), for Triton's own `run`, which takes them apart.
pub(crate) fn without_run_keywords<'py>(
    kwargs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = kwargs.py();
    let rest = kwargs.copy()?;
    rest.del_item(intern!(py, "grid"))?;
    rest.del_item(intern!(py, "warmup"))?;
    Ok(rest)
}
