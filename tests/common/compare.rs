//! Comparing a call's result with the expected value descriptor.

use safecall_runtime::abi::{TVMFFIAny, type_index as ti};
use safecall_runtime::{Any, AnyView};
use serde_json::Value;

use super::args::Args;
use super::array::array_items;
use super::cases::{arg_path, int_list, tag};
use super::tensor::{parse_device, parse_dtype};

fn float_matches(expected: &Value, got: f64) -> bool {
    match expected {
        Value::String(s) if s == "nan" => got.is_nan(),
        Value::String(s) if s == "inf" => got == f64::INFINITY,
        Value::String(s) if s == "-inf" => got == f64::NEG_INFINITY,
        Value::String(s) if s == "-0.0" => got.to_bits() == (-0.0f64).to_bits(),
        other => other.as_f64().is_some_and(|x| x.to_bits() == got.to_bits()),
    }
}

/// Describes a raw value for failure messages.
pub fn show(raw: &TVMFFIAny) -> String {
    // SAFETY: only used on values that are alive.
    let view = unsafe { AnyView::from_raw(*raw) };
    // SAFETY: the union is read as the member its type index selects.
    let bits = unsafe { raw.value.v_int64 };
    match raw.type_index {
        ti::NONE => "None".to_owned(),
        ti::INT => format!("int {bits}"),
        ti::BOOL => format!("bool {}", bits != 0),
        ti::FLOAT => format!("float {}", f64::from_bits(bits as u64)),
        ti::OPAQUE_PTR => format!("void* {bits:#x}"),
        ti::SMALL_STR | ti::STR | ti::SMALL_BYTES | ti::BYTES => format!(
            "type {} {:?}",
            raw.type_index,
            String::from_utf8_lossy(view.str_bytes().unwrap_or_default())
        ),
        t => format!("type index {t} (value {bits:#x})"),
    }
}

/// Checks `got` (a value inside a result) against `expected`.
fn check_raw(expected: &Value, got: &TVMFFIAny, args: &Args) -> Result<(), String> {
    // SAFETY: the result is alive while it is being checked.
    let view = unsafe { AnyView::from_raw(*got) };
    let mismatch = || Err(format!("expected {expected}, got {}", show(got)));
    if expected.is_null() {
        return if got.type_index == ti::NONE {
            Ok(())
        } else {
            mismatch()
        };
    }
    // SAFETY: the union is read as the member its type index selects.
    let bits = unsafe { got.value.v_int64 };
    let (key, body) = tag(expected);
    let ok = match key {
        "int" => got.type_index == ti::INT && Some(bits) == body.as_i64(),
        // SAFETY: a BigInt result's words are alive with it.
        // (An expected value of one word is an Int, as the README says.)
        "big_int" => {
            let words = int_list(body);
            got.type_index
                == if words.len() == 1 {
                    ti::INT
                } else {
                    ti::BIG_INT
                }
                && unsafe { safecall_runtime::big_int::words(got) } == words.as_slice()
        }
        "bool" => got.type_index == ti::BOOL && Some(bits != 0) == body.as_bool(),
        "float" => got.type_index == ti::FLOAT && float_matches(body, f64::from_bits(bits as u64)),
        "ptr" => got.type_index == ti::OPAQUE_PTR && Some(bits as u64) == body.as_u64(),
        "str" => {
            matches!(got.type_index, ti::SMALL_STR | ti::STR)
                && view.str_bytes() == body.as_str().map(str::as_bytes)
        }
        "bytes" => {
            matches!(got.type_index, ti::SMALL_BYTES | ti::BYTES)
                && view.str_bytes() == body.as_str().map(str::as_bytes)
        }
        "device" => {
            view.cast::<safecall_runtime::abi::DLDevice>().ok() == body.as_str().map(parse_device)
        }
        "dtype" => {
            view.cast::<safecall_runtime::abi::DLDataType>().ok() == body.as_str().map(parse_dtype)
        }
        "shape" => {
            let want = int_list(body);
            view.cast::<safecall_runtime::Shape>()
                .is_ok_and(|s| s.as_slice() == want.as_slice())
        }
        "func" => got.type_index == ti::FUNCTION,
        "array" => {
            let want = body.as_array().expect("a list");
            // SAFETY: a live value; the copy holds its own reference.
            let owned = Any::from_view(view).map_err(|e| e.to_string())?;
            let Some(items) = array_items(&owned) else {
                return mismatch();
            };
            if items.len() != want.len() {
                return mismatch();
            }
            for (j, (w, g)) in want.iter().zip(&items).enumerate() {
                check_raw(w, g, args).map_err(|e| format!("element {j}: {e}"))?;
            }
            true
        }
        // The tensor passed at this path, passed through: the same object, or the same
        // DLTensor pointer.
        "arg" => {
            let passed = args.tensor_at(&arg_path(body, "returns"));
            match &passed.object {
                Some(obj) => {
                    got.type_index == ti::TENSOR && view.object_ptr() == Some(obj.as_ptr())
                }
                None => {
                    got.type_index == ti::DL_TENSOR_PTR
                        && bits as u64 == (&raw const passed.storage.dl) as u64
                }
            }
        }
        // A tensor the function allocated: its shape, dtype, device and contents.
        "new_tensor" => {
            let Ok(t) = view.cast::<safecall_runtime::Tensor>() else {
                return mismatch();
            };
            let dtype = parse_dtype(body["dtype"].as_str().unwrap_or("float32"));
            let device = parse_device(body["device"].as_str().unwrap_or("cpu:0"));
            let shape = int_list(&body["shape"]);
            if t.shape() != shape.as_slice() || t.dtype() != dtype || t.device() != device {
                return Err(format!(
                    "expected {expected}, got a tensor of shape {:?}, dtype {:?}, device {:?}",
                    t.shape(),
                    t.dtype(),
                    t.device()
                ));
            }
            if let Some(want) = body.get("values") {
                let elem = (usize::from(dtype.bits) * usize::from(dtype.lanes)).div_ceil(8);
                let got: Vec<Option<f64>> = (0..t.numel() as usize)
                    .map(|k| {
                        // SAFETY: a compact CPU tensor of numel elements.
                        super::tensor::read_element(
                            unsafe { t.data_ptr().cast::<u8>().add(k * elem) },
                            dtype,
                        )
                    })
                    .collect();
                let want: Vec<Option<f64>> = want
                    .as_array()
                    .expect("values is a list")
                    .iter()
                    .map(Value::as_f64)
                    .collect();
                if got != want {
                    return Err(format!("expected {expected}, got values {got:?}"));
                }
            }
            true
        }
        other => panic!("unknown expected-value descriptor `{other}`"),
    };
    if ok { Ok(()) } else { mismatch() }
}

/// Checks a call's result against `expected`.
pub fn check_result(expected: &Value, got: &Any, args: &Args) -> Result<(), String> {
    check_raw(expected, got.as_raw(), args)
}

/// Checks tensor contents after a call.
pub fn check_after(after: &[(Vec<usize>, Vec<f64>)], args: &Args) -> Result<(), String> {
    for (path, want) in after {
        let got = args
            .tensor_at(path)
            .storage
            .values()
            .ok_or_else(|| format!("cannot read back the tensor at {path:?}"))?;
        if &got != want {
            return Err(format!(
                "tensor at {path:?} holds {got:?} after the call, expected {want:?}"
            ));
        }
    }
    Ok(())
}
