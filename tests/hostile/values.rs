//! Argument values for hostile calls: every value kind the safe-call ABI has, built honestly
//! (a pointer points at real memory of the size it claims, an object is a real object of its
//! type index) and described, so the model can predict what a callee must do with it.

use std::ffi::CString;
use std::sync::Arc;

use safecall_runtime::abi::{
    DLDataType, DLDevice, TVMFFIAny, TVMFFIByteArray, TVMFFIValue, type_index as ti,
};
use safecall_runtime::{Any, AnyView, Bytes, Error, Function, Shape, big_int};

use super::Rng;
use crate::common::array::new_sequence;
use crate::common::tensor::Storage;

/// What a generated callback does when called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callback {
    /// Returns its first argument (None without one).
    Echo,
    /// Raises a ValueError.
    Raise,
}

/// How a string or byte string is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// A pointer (`const char*` for str, `TVMFFIByteArray*` for bytes).
    Pointer,
    /// Inline, up to 7 bytes (SmallStr / SmallBytes).
    Small,
    /// An `ffi.String` / `ffi.Bytes` object.
    Object,
}

/// What a value is.
#[derive(Clone, Debug)]
pub enum Desc {
    None,
    Int(i64),
    Bool(bool),
    Float(f64),
    Ptr(u64),
    DataType(DLDataType),
    Device(DLDevice),
    Str(Vec<u8>, Carrier),
    Bytes(Vec<u8>, Carrier),
    Shape(Vec<i64>),
    Func(Callback),
    /// A tensor, as an `ffi.Tensor` object (`object`) or a `DLTensor*`.
    Tensor {
        storage: Mem,
        object: bool,
    },
    /// A NULL `DLTensor*` or NULL Tensor object pointer (honestly NULL).
    NullTensor {
        object: bool,
    },
    /// An `ffi.Array` (or `ffi.List` when `list`).
    Array {
        items: Vec<Desc>,
        list: bool,
    },
    /// An `ffi.Error` object.
    ErrorObject,
    /// An int beyond int64, as an `ffi.BigInt` object: its minimal 64-bit words, least
    /// significant first.
    BigInt(Vec<i64>),
}

/// A tensor's memory and layout (shown as its descriptor).
#[derive(Clone)]
pub struct Mem(pub Arc<Storage>);

impl std::fmt::Debug for Mem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} at {:#x}", self.0.desc, self.0.data())
    }
}

impl std::ops::Deref for Mem {
    type Target = Arc<Storage>;
    fn deref(&self) -> &Arc<Storage> {
        &self.0
    }
}

/// One argument: the raw value, what keeps its referents alive, and its description.
pub struct Arg {
    pub raw: TVMFFIAny,
    pub desc: Desc,
    /// The object passed, if any (its strong count must not change across a call).
    pub object: Option<Any>,
    _c_string: Option<CString>,
    _byte_array: Option<(Box<TVMFFIByteArray>, Vec<u8>)>,
    _storage: Option<Arc<Storage>>,
}

fn pod(type_index: i32, value: TVMFFIValue) -> TVMFFIAny {
    TVMFFIAny {
        type_index,
        small_str_len: 0,
        value,
    }
}

impl Arg {
    fn plain(raw: TVMFFIAny, desc: Desc) -> Arg {
        Arg {
            raw,
            desc,
            object: None,
            _c_string: None,
            _byte_array: None,
            _storage: None,
        }
    }

    fn owning(any: Any, desc: Desc) -> Arg {
        let raw = *any.as_raw();
        Arg {
            object: Some(any),
            ..Arg::plain(raw, desc)
        }
    }

    /// The strong count of the object passed (0 for values that are not objects).
    pub fn strong_count(&self) -> u32 {
        match &self.object {
            Some(any) if any.type_index() >= ti::STATIC_OBJECT_BEGIN => {
                // SAFETY: `any` keeps the object alive.
                unsafe { safecall_runtime::object::strong_count(any.object_ptr()) }
            }
            _ => 0,
        }
    }

    /// Builds the argument `desc` describes.
    pub fn build(desc: Desc) -> Arg {
        match &desc {
            Desc::None => Arg::plain(TVMFFIAny::NONE, desc),
            Desc::Int(v) => Arg::plain(pod(ti::INT, TVMFFIValue { v_int64: *v }), desc),
            Desc::Bool(b) => Arg::plain(pod(ti::BOOL, TVMFFIValue { v_int64: *b as i64 }), desc),
            Desc::Float(x) => Arg::plain(pod(ti::FLOAT, TVMFFIValue { v_float64: *x }), desc),
            Desc::Ptr(p) => Arg::plain(pod(ti::OPAQUE_PTR, TVMFFIValue { v_uint64: *p }), desc),
            Desc::DataType(d) => Arg::plain(*AnyView::from(*d).as_raw(), desc),
            Desc::Device(d) => Arg::plain(*AnyView::from(*d).as_raw(), desc),
            Desc::Str(bytes, Carrier::Pointer) => {
                let c = CString::new(bytes.clone()).expect("raw strings have no NUL");
                let raw = pod(
                    ti::RAW_STR,
                    TVMFFIValue {
                        v_c_str: c.as_ptr(),
                    },
                );
                Arg {
                    _c_string: Some(c),
                    ..Arg::plain(raw, desc)
                }
            }
            Desc::Str(bytes, _) => {
                let any = safecall_runtime::String::new(bytes).into_any();
                Arg::owning(any, desc)
            }
            Desc::Bytes(bytes, Carrier::Pointer) => {
                let data = bytes.clone();
                let array = Box::new(TVMFFIByteArray {
                    data: data.as_ptr().cast(),
                    size: data.len(),
                });
                let raw = pod(
                    ti::BYTE_ARRAY_PTR,
                    TVMFFIValue {
                        v_ptr: (&*array as *const TVMFFIByteArray).cast_mut().cast(),
                    },
                );
                Arg {
                    _byte_array: Some((array, data)),
                    ..Arg::plain(raw, desc)
                }
            }
            Desc::Bytes(bytes, _) => Arg::owning(Bytes::new(bytes).into_any(), desc),
            Desc::Shape(dims) => Arg::owning(Shape::new(dims).into(), desc),
            Desc::Func(cb) => Arg::owning(callback(*cb).into(), desc),
            Desc::Tensor { storage, object } => {
                if *object {
                    let any: Any = storage.tensor_object().into();
                    Arg {
                        _storage: Some(storage.0.clone()),
                        ..Arg::owning(any, desc.clone())
                    }
                } else {
                    let raw = pod(
                        ti::DL_TENSOR_PTR,
                        TVMFFIValue {
                            v_ptr: (&storage.dl as *const _ as *mut std::ffi::c_void),
                        },
                    );
                    Arg {
                        _storage: Some(storage.0.clone()),
                        ..Arg::plain(raw, desc.clone())
                    }
                }
            }
            Desc::NullTensor { object } => {
                let index = if *object {
                    ti::TENSOR
                } else {
                    ti::DL_TENSOR_PTR
                };
                Arg::plain(
                    pod(
                        index,
                        TVMFFIValue {
                            v_ptr: std::ptr::null_mut(),
                        },
                    ),
                    desc,
                )
            }
            Desc::Array { items, list } => {
                let anys = items
                    .iter()
                    .map(|d| {
                        let arg = Arg::build(d.clone());
                        // SAFETY: `arg` keeps its referents alive for the view.
                        let view = unsafe { AnyView::from_raw(arg.raw) };
                        Any::from_view(view).expect("an ownable element")
                    })
                    .collect();
                let index = if *list { ti::LIST } else { ti::ARRAY };
                Arg::owning(new_sequence(index, anys), desc)
            }
            Desc::ErrorObject => Arg::owning(Error::new("ValueError", "a value").into(), desc),
            Desc::BigInt(words) => {
                let any = big_int::any_from_words(words);
                assert_eq!(
                    any.as_raw().type_index,
                    ti::BIG_INT,
                    "{words:?} fits an int64"
                );
                Arg::owning(any, desc)
            }
        }
    }
}

/// An array of `items`, as an array can hold them: owned values only (a raw string or byte
/// array becomes an object, a `DLTensor*` a Tensor object, a NULL tensor None).
pub fn array(items: Vec<Desc>, list: bool) -> Desc {
    let items = items
        .into_iter()
        .map(|d| match d {
            Desc::Str(b, Carrier::Pointer) => Desc::Str(b, Carrier::Object),
            Desc::Bytes(b, Carrier::Pointer) => Desc::Bytes(b, Carrier::Object),
            Desc::Tensor { storage, .. } => Desc::Tensor {
                storage,
                object: true,
            },
            Desc::NullTensor { .. } => Desc::None,
            other => other,
        })
        .collect();
    Desc::Array { items, list }
}

/// A Function running `cb`.
pub fn callback(cb: Callback) -> Function {
    match cb {
        Callback::Echo => Function::from_closure(|args| match args.first() {
            Some(a) => Any::from_view(*a),
            None => Ok(Any::none()),
        }),
        Callback::Raise => {
            Function::from_closure(|_| Err(Error::new("ValueError", "hostile callback raised")))
        }
    }
}

/// The words of an int beyond int64: `u64`'s upper half (2^63 to 2^64 - 1: two words, the high
/// one 0), just beyond either end of `u64`, or three words.
pub fn big_int(rng: &mut Rng) -> Vec<i64> {
    let low = rng.next() as i64;
    match rng.below(6) {
        0 => vec![i64::MIN, 0],
        1 => vec![-1, 0],
        2 => vec![low | i64::MIN, 0],
        3 => vec![low, 1],                    // 2^64 and a little more
        4 => vec![low & i64::MAX, -1],        // below -2^63
        _ => vec![low, rng.next() as i64, 7], // three words
    }
}

/// Integers near the edges of every width, and random ones.
pub fn int(rng: &mut Rng) -> i64 {
    const EDGES: [i64; 18] = [
        0,
        1,
        -1,
        127,
        128,
        -128,
        -129,
        255,
        256,
        32767,
        32768,
        -32768,
        -32769,
        65535,
        65536,
        i32::MAX as i64,
        i32::MIN as i64,
        u32::MAX as i64,
    ];
    match rng.below(5) {
        0 => *rng.pick(&EDGES) + rng.below(3) as i64 - 1,
        1 => *rng.pick(&[i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1, 1 << 32]),
        2 => rng.next() as i64,
        _ => rng.below(300) as i64 - 150,
    }
}

/// Floats: specials, exact and inexact ones.
pub fn float(rng: &mut Rng) -> f64 {
    match rng.below(4) {
        0 => *rng.pick(&[
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-5,
            2.0,
            128.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            1e300,
        ]),
        1 => f64::from_bits(rng.next()),
        2 => (rng.below(2001) as f64 - 1000.0) / 8.0,
        _ => rng.below(1 << 30) as f64 * 1.1,
    }
}

/// Bytes of a random length (0..=20), with NULs when `nul` is allowed.
pub fn bytes(rng: &mut Rng, nul: bool) -> Vec<u8> {
    let len = rng.pick(&[0usize, 1, 6, 7, 8, 15, 20]);
    (0..*len)
        .map(|_| {
            let b = rng.below(256) as u8;
            if !nul && b == 0 { b'x' } else { b }
        })
        .collect()
}

/// A device: mostly CPU and CUDA with small ids, sometimes random bits.
pub fn device(rng: &mut Rng) -> DLDevice {
    if rng.below(8) == 0 {
        let bits = rng.next();
        DLDevice {
            device_type: bits as i32,
            device_id: (bits >> 32) as i32,
        }
    } else {
        DLDevice {
            device_type: *rng.pick(&[1, 2, 2, 4, 8]),
            device_id: rng.below(3) as i32,
        }
    }
}

/// A dtype: mostly common ones, sometimes random bits.
pub fn dtype(rng: &mut Rng) -> DLDataType {
    const COMMON: [(u8, u8, u16); 8] = [
        (2, 32, 1),
        (2, 64, 1),
        (0, 32, 1),
        (0, 64, 1),
        (0, 8, 1),
        (1, 8, 1),
        (2, 16, 1),
        (0, 8, 4),
    ];
    if rng.below(8) == 0 {
        let bits = rng.next();
        DLDataType {
            code: bits as u8,
            bits: (bits >> 8) as u8,
            lanes: (bits >> 16) as u16,
        }
    } else {
        let (code, bits, lanes) = *rng.pick(&COMMON);
        DLDataType { code, bits, lanes }
    }
}

/// A random value of any kind except tensors (which `tensors::random` makes); `depth` bounds
/// nested arrays.
pub fn random(rng: &mut Rng, depth: u32) -> Desc {
    match rng.below(if depth > 0 { 16 } else { 15 }) {
        0 => Desc::None,
        1 | 2 => Desc::Int(int(rng)),
        3 => Desc::Bool(rng.below(2) == 1),
        4 => Desc::Float(float(rng)),
        5 => Desc::Ptr(if rng.below(2) == 0 { 0 } else { rng.next() }),
        6 => Desc::DataType(dtype(rng)),
        7 => Desc::Device(device(rng)),
        8 => {
            let carrier = *rng.pick(&[Carrier::Pointer, Carrier::Small, Carrier::Object]);
            let mut b = bytes(rng, carrier != Carrier::Pointer);
            if carrier == Carrier::Small {
                b.truncate(7);
            }
            Desc::Str(b, carrier)
        }
        9 => {
            let carrier = *rng.pick(&[Carrier::Pointer, Carrier::Small, Carrier::Object]);
            let mut b = bytes(rng, true);
            if carrier == Carrier::Small {
                b.truncate(7);
            }
            Desc::Bytes(b, carrier)
        }
        10 => Desc::Shape((0..rng.below(4)).map(|_| rng.below(6) as i64).collect()),
        11 => Desc::Func(*rng.pick(&[Callback::Echo, Callback::Raise])),
        12 => Desc::NullTensor {
            object: rng.below(2) == 0,
        },
        13 => Desc::ErrorObject,
        14 => super::tensors::random_tensor(rng),
        _ => array(
            (0..rng.below(4)).map(|_| random(rng, depth - 1)).collect(),
            rng.below(4) == 0,
        ),
    }
}
