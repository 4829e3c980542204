//! A tuple argument's part of the key, as Triton specializes tuples: element by element, each
//! as an argument of a specialized parameter is (Triton's specializer gives a tuple's elements
//! their full specialization whatever the parameter's `do_not_specialize` and
//! `do_not_specialize_on_alignment`: each tensor's `dtype` is read, then its `data_ptr()`
//! called for its alignment, on Triton 3.6 to 3.9), nested tuples alike. Tuple subclasses
//! (named tuples) are tuples to Triton's specializer; their type is part of the key.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::{TENSOR, TUPLE, TritonDispatch, scalar_word};
use crate::triton_key::{Key, Unhashable, append};
use crate::triton_values::Address;

/// How deeply tuples may nest in one argument before the call goes through Triton's path
/// (the key is built by recursion, which must not exhaust the stack).
const MAX_DEPTH: usize = 32;

/// What keying a tuple found.
pub(super) enum TupleKey {
    /// Its words are in the key.
    Keyed,
    /// What the dispatcher does not model in it (an element's type, or the nesting): the
    /// call goes through Triton's path.
    Unmodelled(String),
}

impl TritonDispatch {
    /// Appends the words of `tuple` (an argument of type code `type_code`) to `key`:
    /// `[TUPLE, type code, length]`, then each element's words, as an argument's would be
    /// (`scalar_word`; an object with
    /// `data_ptr()`: its type, dtype and alignment; a tuple: these words again). `native`:
    /// the target's specializer is Triton's native one (see `Address::aligned_16`).
    pub(super) fn tuple_key(
        &self,
        tuple: &Bound<'_, PyTuple>,
        type_code: u64,
        native: bool,
        depth: usize,
        key: &mut Key,
    ) -> PyResult<Result<TupleKey, Unhashable>> {
        if depth >= MAX_DEPTH {
            return Ok(Ok(TupleKey::Unmodelled(format!(
                "tuples nested more than {MAX_DEPTH} deep"
            ))));
        }
        let py = tuple.py();
        append(key, &[TUPLE.into(), type_code, tuple.len() as u64]);
        for item in tuple.iter() {
            if let Some(word) = scalar_word(&item)? {
                key.push(word);
            } else {
                let (kind, code) = match self.kind(&item)? {
                    Ok(known) => known,
                    Err(unhashable) => return Ok(Err(unhashable)),
                };
                if kind == TUPLE {
                    let inner = item.cast::<PyTuple>()?;
                    match self.tuple_key(inner, code, native, depth + 1, key)? {
                        Ok(TupleKey::Keyed) => continue,
                        other => return Ok(other),
                    }
                }
                if kind != TENSOR {
                    let name = item.get_type().name()?;
                    return Ok(Ok(TupleKey::Unmodelled(format!(
                        "argument type {name} in a tuple"
                    ))));
                }
                let dtype = item.getattr(intern!(py, "dtype"))?;
                let dtype_code = match self.interner.dtype(&dtype)? {
                    Ok(code) => code,
                    Err(unhashable) => return Ok(Err(unhashable)),
                };
                let address = Address::new(crate::method_call::call_method0(
                    &item,
                    intern!(py, "data_ptr"),
                )?);
                let aligned = address.aligned_16(native)?;
                append(key, &[TENSOR.into(), code, dtype_code, u64::from(aligned)]);
            }
        }
        Ok(Ok(TupleKey::Keyed))
    }
}
