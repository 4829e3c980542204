//! Arguments built from case descriptors (see `tests/checks/README.md`), as raw `TVMFFIAny`
//! values plus everything they borrow.

use std::ffi::CString;
use std::sync::Arc;

use safecall_runtime::abi::{TVMFFIAny, TVMFFIByteArray, TVMFFIValue, type_index as ti};
use safecall_runtime::{Any, AnyView, Bytes, Error, Function, Shape, Tensor};
use serde_json::Value;

use super::array::new_sequence;
use super::cases::{float_of, int_list, tag};
use super::tensor::{Storage, TensorDesc, parse_device, parse_dtype};

/// How top-level tensor arguments are passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorMode {
    /// A Tensor object (type index 70).
    Object,
    /// A `DLTensor*` (type index 7). Tensors inside arrays are always objects.
    DLTensorPtr,
}

impl TensorMode {
    /// Parses a `tensor_modes` entry.
    pub fn parse(s: &str) -> TensorMode {
        match s {
            "object" => TensorMode::Object,
            "dltensor_ptr" => TensorMode::DLTensorPtr,
            other => panic!("unknown tensor mode {other:?}"),
        }
    }
}

/// A tensor argument: where it is and how it was passed.
pub struct PassedTensor {
    /// Argument path (`[2, 1]` is element 1 of argument 2).
    pub path: Vec<usize>,
    /// Its memory.
    pub storage: Arc<Storage>,
    /// The object, when it was passed as one.
    pub object: Option<Tensor>,
}

/// Arguments ready for a call, and what they borrow.
#[derive(Default)]
pub struct Args {
    /// The values passed.
    pub raw: Vec<TVMFFIAny>,
    owned: Vec<Any>,
    c_strings: Vec<CString>,
    /// Byte arrays passed by pointer (boxed: their address is passed) and their bytes.
    byte_arrays: Vec<(Box<TVMFFIByteArray>, Vec<u8>)>,
    /// Every tensor passed, by path.
    pub tensors: Vec<PassedTensor>,
}

/// The callbacks cases can pass by name.
pub fn callback(name: &str) -> Function {
    match name {
        // Returns its first argument (None without arguments).
        "echo" => Function::from_closure(|args| match args.first() {
            Some(a) => Any::from_view(*a),
            None => Ok(Any::none()),
        }),
        // Always raises.
        "fail" => Function::from_closure(|_| Err(Error::new("ValueError", "callback failed"))),
        other => panic!("unknown callback {other:?}"),
    }
}

fn pod(type_index: i32, value: TVMFFIValue) -> TVMFFIAny {
    TVMFFIAny {
        type_index,
        small_str_len: 0,
        value,
    }
}

impl Args {
    /// Builds the arguments of a call.
    pub fn build(descs: &[Value], mode: TensorMode) -> Args {
        let mut args = Args::default();
        for (i, d) in descs.iter().enumerate() {
            let raw = args.value(d, vec![i], Some(mode));
            args.raw.push(raw);
        }
        args
    }

    /// Views of the arguments.
    pub fn views(&self) -> Vec<AnyView<'_>> {
        self.raw
            .iter()
            // SAFETY: everything the values refer to is owned by `self`.
            .map(|r| unsafe { AnyView::from_raw(*r) })
            .collect()
    }

    fn keep(&mut self, any: Any) -> TVMFFIAny {
        let raw = *any.as_raw();
        self.owned.push(any);
        raw
    }

    /// An owned value (for array elements): `mode` is None.
    fn owned_value(&mut self, d: &Value, path: Vec<usize>) -> Any {
        let raw = self.value(d, path, None);
        // SAFETY: `raw` is a valid value kept alive by `self`; the copy takes its own reference.
        Any::from_view(unsafe { AnyView::from_raw(raw) }).expect("an ownable value")
    }

    /// A value; `mode` is None inside arrays (where only owned values are possible).
    fn value(&mut self, d: &Value, path: Vec<usize>, mode: Option<TensorMode>) -> TVMFFIAny {
        if d.is_null() {
            return TVMFFIAny::NONE;
        }
        let (key, body) = tag(d);
        match key {
            "int" => pod(
                ti::INT,
                TVMFFIValue {
                    v_int64: body.as_i64().expect("an i64"),
                },
            ),
            "bool" => pod(
                ti::BOOL,
                TVMFFIValue {
                    v_int64: i64::from(body.as_bool().expect("a bool")),
                },
            ),
            "float" => pod(
                ti::FLOAT,
                TVMFFIValue {
                    v_float64: float_of(body),
                },
            ),
            "ptr" => pod(
                ti::OPAQUE_PTR,
                TVMFFIValue {
                    v_uint64: body.as_u64().expect("an address"),
                },
            ),
            "big_int" => self.keep(safecall_runtime::big_int::any_from_words(&int_list(body))),
            "str" => self.keep(Any::from(body.as_str().expect("a string"))),
            "bytes" => self.keep(Bytes::new(body.as_str().expect("a string")).into_any()),
            "raw_str" => {
                assert!(mode.is_some(), "raw strings cannot be array elements");
                let c = CString::new(body.as_str().expect("a string")).expect("no NUL");
                let raw = pod(
                    ti::RAW_STR,
                    TVMFFIValue {
                        v_c_str: c.as_ptr(),
                    },
                );
                self.c_strings.push(c);
                raw
            }
            "byte_array" => {
                assert!(
                    mode.is_some(),
                    "byte-array pointers cannot be array elements"
                );
                let bytes = body.as_str().expect("a string").as_bytes().to_vec();
                let mut array = Box::new(TVMFFIByteArray {
                    data: bytes.as_ptr().cast(),
                    size: bytes.len(),
                });
                let raw = pod(
                    ti::BYTE_ARRAY_PTR,
                    TVMFFIValue {
                        v_ptr: (&raw mut *array).cast(),
                    },
                );
                self.byte_arrays.push((array, bytes));
                raw
            }
            "device" => {
                let d = parse_device(body.as_str().expect("a device name"));
                *AnyView::from(d).as_raw()
            }
            "dtype" => {
                let d = parse_dtype(body.as_str().expect("a dtype name"));
                *AnyView::from(d).as_raw()
            }
            "shape" => {
                let dims = int_list(body);
                self.keep(Shape::new(&dims).into())
            }
            "array" | "list" => {
                let items: Vec<Any> = body
                    .as_array()
                    .expect("a list")
                    .iter()
                    .enumerate()
                    .map(|(j, item)| {
                        let mut p = path.clone();
                        p.push(j);
                        self.owned_value(item, p)
                    })
                    .collect();
                let index = if key == "list" { ti::LIST } else { ti::ARRAY };
                self.keep(new_sequence(index, items))
            }
            "func" => self.keep(callback(body.as_str().expect("a callback name")).into()),
            "data_ptr" => {
                let storage = Storage::new(TensorDesc::parse(body));
                let address = storage.data() + storage.desc.byte_offset;
                self.tensors.push(PassedTensor {
                    path,
                    storage,
                    object: None,
                });
                match d.get("as").and_then(Value::as_str).unwrap_or("ptr") {
                    "int" => pod(
                        ti::INT,
                        TVMFFIValue {
                            v_int64: address as i64,
                        },
                    ),
                    "ptr" => pod(ti::OPAQUE_PTR, TVMFFIValue { v_uint64: address }),
                    other => panic!("data_ptr passed as {other:?}"),
                }
            }
            "tensor" => {
                let storage = Storage::new(TensorDesc::parse(body));
                if mode == Some(TensorMode::DLTensorPtr) {
                    let raw = pod(
                        ti::DL_TENSOR_PTR,
                        TVMFFIValue {
                            v_ptr: (&raw const storage.dl).cast_mut().cast(),
                        },
                    );
                    self.tensors.push(PassedTensor {
                        path,
                        storage,
                        object: None,
                    });
                    raw
                } else {
                    let object = storage.tensor_object();
                    let raw = self.keep(object.clone().into());
                    self.tensors.push(PassedTensor {
                        path,
                        storage,
                        object: Some(object),
                    });
                    raw
                }
            }
            // A Tensor object value whose pointer is NULL.
            "null_tensor_object" => pod(
                ti::TENSOR,
                TVMFFIValue {
                    v_obj: std::ptr::null_mut(),
                },
            ),
            // A DLTensor* that is NULL.
            "null_dltensor" => pod(
                ti::DL_TENSOR_PTR,
                TVMFFIValue {
                    v_ptr: std::ptr::null_mut(),
                },
            ),
            other => panic!("unknown value descriptor `{other}`"),
        }
    }

    /// The strong reference counts of every object the arguments hold.
    pub fn strong_counts(&self) -> Vec<u32> {
        self.owned
            .iter()
            .filter(|a| !a.object_ptr().is_null())
            // SAFETY: the objects are alive: `self` holds a reference to each.
            .map(|a| unsafe { safecall_runtime::object::strong_count(a.object_ptr()) })
            .collect()
    }

    /// The tensor passed at `path`.
    pub fn tensor_at(&self, path: &[usize]) -> &PassedTensor {
        self.tensors
            .iter()
            .find(|t| t.path == path)
            .unwrap_or_else(|| panic!("no tensor was passed at {path:?}"))
    }

    /// Expands `{ptr:PATH}` placeholders: the address of the first element of the tensor at
    /// PATH (data + byte_offset), in hex.
    pub fn expand(&self, message: &str) -> String {
        let mut out = String::new();
        let mut rest = message;
        while let Some(start) = rest.find("{ptr:") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find('}').expect("closed placeholder") + start;
            let path: Vec<usize> = rest[start + 5..end]
                .split('.')
                .map(|p| p.parse().expect("a path"))
                .collect();
            let t = &self.tensor_at(&path).storage;
            out.push_str(&format!("{:#x}", t.data() + t.desc.byte_offset));
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }
}
