//! The specialization key of `TritonDispatch` as machine words, hashed and compared in Rust.
//!
//! The key used to be a Python tuple of the parts (types, dtypes, constexpr values), so each
//! call hashed and compared them in Python: a `triton.language.dtype` costs about 70 ns to hash
//! and 160 ns to compare there, per tensor argument. Here every part is one or two words:
//! integers, booleans, `None` and floats by value, and any other object by a *code*, a number
//! the [`Interner`] gives each distinct value (equal values, by Python's `==` and `hash`, get
//! the same code). Objects known to be immutable (`str`, `tuple`, `dtype`s, types) are also
//! remembered by identity, so a call with the same objects as before reads their codes without
//! calling into Python.
//!
//! Two keys are equal exactly when the tuples the Python side documents
//! (`safecall._triton_dispatch`) would be equal, with one refinement that only makes the key
//! finer: floats are told apart by their bits rather than by `repr` (so two NaNs with different
//! payloads are two entries of the table, each recorded from Triton's own choice).

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString, PyTuple};

/// A specialization key.
pub(crate) type Key = Vec<u64>;

/// How Triton specializes one parameter (the Python side spells these as strings).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Param {
    /// A `tl.constexpr`: its value is the key.
    Constexpr,
    /// Specialized on its value (an int's 1 and divisibility, a pointer's alignment).
    Value,
    /// In `do_not_specialize`: its type alone, so a tensor's `data_ptr()` is not read for the
    /// key (Triton's launcher reads it, with its errors).
    TypeOnly,
}

impl Param {
    /// `"constexpr"`, `"value"` or `"type only"`.
    pub(crate) fn parse(spelled: &str) -> PyResult<Param> {
        Ok(match spelled {
            "constexpr" => Param::Constexpr,
            "value" => Param::Value,
            "type only" => Param::TypeOnly,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "a parameter is specialized as 'constexpr', 'value' or 'type only', not {other:?}"
                )));
            }
        })
    }
}

/// Appends `words` to `key` (built in a `Vec` with its capacity reserved once: appending is a
/// store or two per word, where a `SmallVec`'s push cost about 18 instructions).
#[inline]
pub(crate) fn append(key: &mut Key, words: &[u64]) {
    key.extend_from_slice(words);
}

/// The table from keys to what Triton chose for them, hashed with rustc's Fx hasher (the keys
/// are short and ours: no hash flooding to defend against).
pub(crate) type KeyMap<V> = HashMap<Key, V, rustc_hash::FxBuildHasher>;

/// Tags of a constant's first word (a constexpr, a keyword option, a knob, the device).
const INT: u64 = 1;
const BOOL: u64 = 2;
const NONE: u64 = 3;
const FLOAT: u64 = 4;
const OBJECT: u64 = 5;

/// How many objects the identity cache holds before it starts over (an object a caller makes
/// afresh on every call would otherwise grow it without bound).
const IDENTITY_CAPACITY: usize = 4096;

/// A value the key cannot hold: Python's `hash` refused it (Triton's own key would too).
pub(crate) struct Unhashable;

/// Codes for values (see the module docs).
pub(crate) struct Interner {
    /// Python key -> code.
    by_value: Py<PyDict>,
    state: Mutex<State>,
}

struct State {
    /// Object address -> (the object, kept alive so the address is not reused; its code).
    by_identity: HashMap<usize, (Py<PyAny>, u64), rustc_hash::FxBuildHasher>,
    next: u64,
}

/// Which name space a code belongs to (the Python keys of different kinds never compare).
#[derive(Clone, Copy)]
pub(crate) enum Space {
    /// A constexpr, option or knob value: keyed `("c", type, value)`.
    Constant,
    /// A tensor argument's `dtype`: keyed `("d", dtype)`.
    Dtype,
    /// A tensor argument's type: keyed `("t", type)`.
    Type,
    /// A keyword option's name: keyed `("o", name)`.
    Option,
}

impl Space {
    fn tag(self) -> &'static str {
        match self {
            Space::Constant => "c",
            Space::Dtype => "d",
            Space::Type => "t",
            Space::Option => "o",
        }
    }
}

impl Interner {
    pub(crate) fn new(py: Python<'_>) -> Self {
        Interner {
            by_value: PyDict::new(py).unbind(),
            state: Mutex::new(State {
                by_identity: HashMap::default(),
                next: 0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only caches behind: still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The code of `value` in `space`; `by_identity` when the object is immutable, so its
    /// address may stand for its value while the cache keeps it alive. `parts` are the items
    /// of its Python key after the space's tag. No lock is held while Python runs (a `__eq__`
    /// may call anything, this dispatcher included).
    pub(crate) fn code<'py>(
        &self,
        space: Space,
        value: &Bound<'py, PyAny>,
        by_identity: bool,
        parts: impl FnOnce() -> PyResult<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<Result<u64, Unhashable>> {
        let address = value.as_ptr() as usize;
        if by_identity && let Some((_, code)) = self.state().by_identity.get(&address) {
            return Ok(Ok(*code));
        }
        let py = value.py();
        let mut items = vec![PyString::new(py, space.tag()).into_any()];
        items.extend(parts()?);
        let key = PyTuple::new(py, items)?;
        let by_value = self.by_value.bind(py);
        let code = match by_value.get_item(&key) {
            Ok(Some(code)) => code.extract::<u64>()?,
            Ok(None) => {
                let code = {
                    let mut state = self.state();
                    state.next += 1;
                    state.next
                };
                by_value.set_item(&key, code)?;
                code
            }
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                return Ok(Err(Unhashable));
            }
            Err(e) => return Err(e),
        };
        if by_identity {
            // What the cache lets go of is released after its lock (a release may run Python
            // code, which may take another thread through here).
            let released = {
                let mut state = self.state();
                let full = (state.by_identity.len() >= IDENTITY_CAPACITY)
                    .then(|| std::mem::take(&mut state.by_identity));
                let replaced = state
                    .by_identity
                    .insert(address, (value.clone().unbind(), code));
                (full, replaced)
            };
            drop(released);
        }
        Ok(Ok(code))
    }

    /// A dtype's code (dtypes cannot change: remembered by identity too).
    pub(crate) fn dtype(&self, dtype: &Bound<'_, PyAny>) -> PyResult<Result<u64, Unhashable>> {
        self.code(Space::Dtype, dtype, true, || Ok(vec![dtype.clone()]))
    }

    /// A constant's two words: its tag and its value or code (`("c", type, value)` for an
    /// object; `float_key(value)` for a tuple, as the Python side's `_constexpr_key`).
    pub(crate) fn constant(
        &self,
        value: &Bound<'_, PyAny>,
        tuple_key: &Bound<'_, PyAny>,
        words: &mut Key,
    ) -> PyResult<Result<(), Unhashable>> {
        if value.is_none() {
            append(words, &[NONE, 0]);
            return Ok(Ok(()));
        }
        if value.is_exact_instance_of::<PyBool>() {
            append(words, &[BOOL, u64::from(value.is_truthy()?)]);
            return Ok(Ok(()));
        }
        if let Some(v) = crate::triton_values::exact_i64(value) {
            append(words, &[INT, v as u64]);
            return Ok(Ok(()));
        }
        if value.is_exact_instance_of::<PyFloat>() {
            append(words, &[FLOAT, value.extract::<f64>()?.to_bits()]);
            return Ok(Ok(()));
        }
        let immutable =
            value.is_exact_instance_of::<PyString>() || value.is_exact_instance_of::<PyTuple>();
        let code = self.code(Space::Constant, value, immutable, || {
            let shown = if value.is_instance_of::<PyTuple>() {
                tuple_key.call1((value,))?
            } else {
                value.clone()
            };
            Ok(vec![value.get_type().into_any(), shown])
        })?;
        Ok(code.map(|code| append(words, &[OBJECT, code])))
    }
}

/// An exact `int`'s part of the key, one item: `16 + (== 1) + 2 * (divisible by 16) + 4 * width`,
/// the width 0 for i32, 1 for i64, 2 for u64 and 3 beyond (16 to 31: no other kind's code).
pub(crate) fn int_key(value: &Bound<'_, PyAny>) -> PyResult<u8> {
    let (one, divisible, width) = match crate::triton_values::exact_i64(value) {
        Some(v) => (
            v == 1,
            v % 16 == 0,
            if i32::try_from(v).is_ok() { 0u8 } else { 1 },
        ),
        None => match value.extract::<u64>() {
            Ok(v) => (false, v % 16 == 0, 2),
            Err(_) => (false, value.rem(16)?.extract::<i64>()? == 0, 3),
        },
    };
    Ok(16 + u8::from(one) + 2 * u8::from(divisible) + 4 * width)
}
