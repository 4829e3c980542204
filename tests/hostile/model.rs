//! The parameter kinds under test: for each, the function of `hostile.scir`, a generator of
//! near-valid and random argument lists, and what DESIGN.md §3 says the call must do.

use std::collections::HashMap;

use safecall_runtime::abi::{DLDataType, DLDevice};

use super::Rng;
use super::tensors::{self, CPU, CUDA, Dim, F32, I8, I32, I64, Spec, Strides, Verdict};
use super::values::{self, Callback, Carrier, Desc};

/// What an accepted call must return.
#[derive(Clone, Debug, PartialEq)]
pub enum Obs {
    Int(i64),
    Bool(bool),
    /// A float equal (bit for bit, NaN to NaN) to one of these.
    Float(Vec<f64>),
    Ptr(u64),
    Device(DLDevice),
    DataType(DLDataType),
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    Shape(Vec<i64>),
    /// An `ffi.BigInt` of these words.
    BigInt(Vec<i64>),
    /// The argument itself (same type index and value).
    Same,
    /// A tensor the function allocated, of this shape.
    NewTensor(Vec<i64>),
}

/// What a call must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    Returns(Obs),
    /// Fail, raising this error kind (`None`: which of several failing checks comes first is
    /// not settled), for the reason given.
    Rejects(Option<&'static str>, String),
    Unsure,
}

/// The error kind of a type check (docs/abi.md, "Checks, in order").
pub const TYPE_ERROR: &str = "TypeError";
/// The error kind of a value check.
pub const VALUE_ERROR: &str = "ValueError";

/// The parameter kinds, one function each in `hostile.scir`.
pub const KINDS: [&str; 38] = [
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "bool",
    "f32",
    "f64",
    "ptr",
    "str",
    "bytes",
    "device",
    "dtype",
    "shape",
    "func",
    "any",
    "optional",
    "const",
    "tuple",
    "data_ptr",
    "stream",
    "tensor_dims",
    "tensor_symbolic",
    "tensor_strides",
    "tensor_any_strides",
    "tensor_offset",
    "tensor_align",
    "tensor_device_id",
    "tensor_device_var",
    "tensor_device_free",
    "tensor_index",
    "tensor_scalar",
    "tensor_anything",
    "tensor_optional",
    "alloc",
];

fn int_range(kind: &str) -> Option<(i64, i64)> {
    Some(match kind {
        "i8" => (i8::MIN as i64, i8::MAX as i64),
        "i16" => (i16::MIN as i64, i16::MAX as i64),
        "i32" => (i32::MIN as i64, i32::MAX as i64),
        "i64" => (i64::MIN, i64::MAX),
        "u8" => (0, u8::MAX as i64),
        "u16" => (0, u16::MAX as i64),
        "u32" => (0, u32::MAX as i64),
        "u64" => (0, i64::MAX),
        _ => return None,
    })
}

/// The tensor parameters of a tensor kind, and which of them have `device_id=free`.
fn tensor_specs(kind: &str) -> Option<(Vec<Spec>, Vec<bool>)> {
    use Dim::{Const, Var};
    let on = |mut s: Spec, device: i32| {
        s.device_type = Some(device);
        s
    };
    let n = || Spec::new(vec![Var("n")], Some(F32));
    Some(match kind {
        "tensor_dims" => (
            vec![on(Spec::new(vec![Const(2), Var("n")], Some(F32)), CPU)],
            vec![false],
        ),
        "tensor_symbolic" => (
            vec![
                on(Spec::new(vec![Var("n"), Var("m")], Some(I32)), CPU),
                on(Spec::new(vec![Var("m"), Var("n")], Some(I32)), CPU),
            ],
            vec![false, false],
        ),
        "tensor_strides" => {
            let mut s = on(Spec::new(vec![Var("n"), Var("m")], Some(F32)), CPU);
            s.strides = Strides::Declared(vec![Var("s"), Const(1)]);
            (vec![s], vec![false])
        }
        "tensor_any_strides" => {
            let mut s = Spec::new(vec![Var("n"), Var("m")], Some(F32));
            s.strides = Strides::Any;
            (vec![s], vec![false])
        }
        "tensor_offset" => {
            let mut s = on(n(), CPU);
            s.byte_offset_any = true;
            (vec![s], vec![false])
        }
        "tensor_align" => {
            let mut s = n();
            s.align = Some(16);
            (vec![s], vec![false])
        }
        "tensor_device_id" | "tensor_device_var" => {
            (vec![on(n(), CUDA), on(n(), CUDA)], vec![false, false])
        }
        "tensor_device_free" => (vec![on(n(), CUDA), on(n(), CUDA)], vec![false, true]),
        "tensor_index" => {
            let mut s = Spec::new(vec![Var("n")], Some(I8));
            s.index_max = Some(255);
            (vec![s], vec![false])
        }
        "tensor_scalar" => (vec![on(Spec::new(vec![], Some(I64)), CPU)], vec![false]),
        "tensor_anything" => {
            let mut s = Spec::new(vec![Var("n"), Var("m")], None);
            s.strides = Strides::Any;
            s.byte_offset_any = true;
            (vec![s], vec![false])
        }
        "tensor_optional" => {
            let mut s = n();
            s.optional = true;
            (vec![s], vec![false])
        }
        _ => return None,
    })
}

/// A value a parameter of `kind` accepts, or one near the edge of what it accepts.
fn near(kind: &str, rng: &mut Rng, data: &DataPtrs) -> Desc {
    if int_range(kind).is_some() {
        return match rng.below(8) {
            0 => Desc::Bool(rng.below(2) == 1),
            1 => Desc::BigInt(values::big_int(rng)),
            _ => Desc::Int(values::int(rng)),
        };
    }
    match kind {
        // Small sizes mostly (each is allocated), and the edges of the shape checks.
        "alloc" => match rng.below(8) {
            0 => Desc::Int(*rng.pick(&[-1, i64::MIN, i64::MAX, i64::MAX / 8 + 1, 1 << 62])),
            1 => Desc::Bool(rng.below(2) == 1),
            _ => Desc::Int(rng.below(40) as i64 - 4),
        },
        "bool" => match rng.below(8) {
            0..=2 => Desc::Bool(rng.below(2) == 1),
            3 => Desc::BigInt(values::big_int(rng)),
            _ => Desc::Int(values::int(rng)),
        },
        "f32" | "f64" => match rng.below(8) {
            0 | 1 => Desc::Int(values::int(rng)),
            2 => Desc::Bool(rng.below(2) == 1),
            3 => Desc::BigInt(values::big_int(rng)),
            _ => Desc::Float(values::float(rng)),
        },
        "ptr" => Desc::Ptr(rng.next()),
        "stream" => match rng.below(3) {
            0 => Desc::None,
            1 => Desc::Int(values::int(rng)),
            _ => Desc::Ptr(rng.next()),
        },
        "str" => {
            let carrier = *rng.pick(&[Carrier::Pointer, Carrier::Small, Carrier::Object]);
            let mut b = values::bytes(rng, carrier != Carrier::Pointer);
            if carrier == Carrier::Small {
                b.truncate(7);
            }
            Desc::Str(b, carrier)
        }
        "bytes" => {
            let carrier = *rng.pick(&[Carrier::Pointer, Carrier::Small, Carrier::Object]);
            let mut b = values::bytes(rng, true);
            if carrier == Carrier::Small {
                b.truncate(7);
            }
            Desc::Bytes(b, carrier)
        }
        "device" => Desc::Device(values::device(rng)),
        "dtype" => Desc::DataType(values::dtype(rng)),
        "shape" => Desc::Shape((0..rng.below(5)).map(|_| values::int(rng)).collect()),
        "func" => Desc::Func(*rng.pick(&[Callback::Echo, Callback::Echo, Callback::Raise])),
        "optional" => match rng.below(3) {
            0 => Desc::None,
            _ => Desc::Int(values::int(rng)),
        },
        "data_ptr" => data.pick(rng),
        _ => values::random(rng, 2),
    }
}

/// Real float32 buffers whose addresses `data_ptr` arguments pass (as ints or pointers).
pub struct DataPtrs {
    buffers: Vec<f32>,
}

impl DataPtrs {
    pub fn new() -> DataPtrs {
        DataPtrs {
            buffers: vec![1.5f32, -2.25, 0.0, f32::NAN, 1e30],
        }
    }

    fn pick(&self, rng: &mut Rng) -> Desc {
        let b = &self.buffers[rng.below(self.buffers.len() as u64) as usize];
        let address = b as *const f32 as u64;
        if rng.below(2) == 0 {
            Desc::Int(address as i64)
        } else {
            Desc::Ptr(address)
        }
    }

    fn value_at(&self, address: u64) -> Option<f32> {
        self.buffers
            .iter()
            .find(|b| *b as *const f32 as u64 == address)
            .copied()
    }
}

/// A hostile argument list for `kind`: near-valid values, random ones, and near-valid
/// tensors with random changes.
pub fn generate(kind: &str, rng: &mut Rng, data: &DataPtrs) -> Vec<Desc> {
    // A random value in place of the hostile argument, one time in four.
    let pick = |rng: &mut Rng, near_value: Desc| {
        if rng.below(4) == 0 {
            let v = values::random(rng, 2);
            // Ints and pointers for data_ptr must point at real memory.
            match (kind, &v) {
                ("data_ptr", Desc::Int(_) | Desc::Ptr(_)) => data.pick(rng),
                _ => v,
            }
        } else {
            near_value
        }
    };
    if let Some((specs, _)) = tensor_specs(kind) {
        let mut vars = HashMap::new();
        return specs
            .iter()
            .map(|s| {
                let v = if s.optional && rng.below(4) == 0 {
                    Desc::None
                } else {
                    tensors::near_valid(s, &mut vars, rng)
                };
                pick(rng, v)
            })
            .collect();
    }
    match kind {
        "bytes" | "shape" => {
            let v = near(kind, rng, data);
            vec![Desc::Func(Callback::Echo), pick(rng, v)]
        }
        "const" => {
            let mut args = vec![
                Desc::Int(128),
                Desc::Bool(true),
                Desc::Float(1e-5),
                Desc::None,
            ];
            let i = rng.below(5) as usize;
            if i < 4 {
                let v = match rng.below(3) {
                    0 => Desc::Int(values::int(rng)),
                    1 => Desc::Float(values::float(rng)),
                    _ => values::random(rng, 1),
                };
                args[i] = v;
            }
            args
        }
        "tuple" => {
            let spec = Spec::new(vec![Dim::Var("k")], Some(F32));
            let mut vars = HashMap::new();
            let mut items = vec![
                Desc::Int(values::int(rng)),
                tensors::near_valid(&spec, &mut vars, rng),
            ];
            match rng.below(6) {
                0 => items.truncate(rng.below(2) as usize),
                1 => items.push(values::random(rng, 1)),
                2 => items[rng.below(2) as usize] = values::random(rng, 1),
                _ => {}
            }
            let list = rng.below(8) == 0;
            vec![pick(rng, values::array(items, list))]
        }
        _ => {
            let v = near(kind, rng, data);
            vec![pick(rng, v)]
        }
    }
}

fn reject(kind: &'static str, why: impl Into<String>) -> Expect {
    Expect::Rejects(Some(kind), why.into())
}

/// The rejection of what is no int (or bool) for an `i64`: a BigInt is out of its range (a
/// ValueError), anything else of another type (a TypeError).
fn not_an_int(d: &Desc) -> Expect {
    match d {
        Desc::BigInt(w) => reject(VALUE_ERROR, format!("{w:?} beyond i64")),
        _ => reject(TYPE_ERROR, "not an int"),
    }
}

fn as_int(d: &Desc) -> Option<i64> {
    match d {
        Desc::Int(v) => Some(*v),
        Desc::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

fn float_results(d: &Desc, f32_param: bool) -> Option<Vec<f64>> {
    let x = match d {
        Desc::Float(x) => *x,
        Desc::Int(v) => {
            // An int may go to f32 directly or through f64: both round-to-nearest results.
            if f32_param {
                return Some(vec![f64::from(*v as f32), f64::from(*v as f64 as f32)]);
            }
            *v as f64
        }
        Desc::Bool(b) => *b as i64 as f64,
        // The nearest f64 (the draws stay far inside its range), then f32 from it.
        Desc::BigInt(w) => crate::common::big_int_text::decimal(w).parse().ok()?,
        _ => return None,
    };
    Some(vec![if f32_param { f64::from(x as f32) } else { x }])
}

/// What a call of `kind` with `args` must do.
pub fn expect(kind: &str, args: &[Desc], data: &DataPtrs) -> Expect {
    if let Some((lo, hi)) = int_range(kind) {
        return match &args[0] {
            Desc::Bool(b) => Expect::Returns(Obs::Int(*b as i64)),
            Desc::Int(v) if (lo..=hi).contains(v) => Expect::Returns(Obs::Int(*v)),
            Desc::Int(v) => reject(VALUE_ERROR, format!("{v} out of range")),
            // `u64` takes 2^63 to 2^64 - 1 (and returns it as a BigInt); the others none.
            Desc::BigInt(w) if kind == "u64" && w.len() == 2 && w[1] == 0 => {
                Expect::Returns(Obs::BigInt(w.clone()))
            }
            Desc::BigInt(w) => reject(VALUE_ERROR, format!("{w:?} beyond {kind}")),
            _ => reject(TYPE_ERROR, "not an int"),
        };
    }
    if let Some((specs, free)) = tensor_specs(kind) {
        return expect_tensors(kind, &specs, &free, args);
    }
    let a = &args[args.len() - 1];
    match kind {
        "alloc" => expect_alloc(a),
        "bool" => match (as_int(a), a) {
            (Some(v), _) => Expect::Returns(Obs::Bool(v != 0)),
            // An int beyond int64 is never zero.
            (None, Desc::BigInt(_)) => Expect::Returns(Obs::Bool(true)),
            (None, _) => reject(TYPE_ERROR, "not a bool"),
        },
        "f32" | "f64" => match float_results(a, kind == "f32") {
            Some(r) => Expect::Returns(Obs::Float(r)),
            None => reject(TYPE_ERROR, "not a float"),
        },
        "ptr" => match a {
            Desc::Ptr(p) => Expect::Returns(Obs::Ptr(*p)),
            Desc::None => Expect::Returns(Obs::Ptr(0)),
            _ => reject(TYPE_ERROR, "not a pointer"),
        },
        "stream" => match a {
            Desc::Ptr(p) => Expect::Returns(Obs::Ptr(*p)),
            Desc::Int(v) => Expect::Returns(Obs::Ptr(*v as u64)),
            Desc::None => Expect::Returns(Obs::Ptr(0)),
            _ => reject(TYPE_ERROR, "not a stream"),
        },
        "str" => match a {
            Desc::Str(b, _) => Expect::Returns(Obs::Str(b.clone())),
            _ => reject(TYPE_ERROR, "not a str"),
        },
        "bytes" => match a {
            Desc::Bytes(b, _) => Expect::Returns(Obs::Bytes(b.clone())),
            _ => reject(TYPE_ERROR, "not bytes"),
        },
        "device" => match a {
            Desc::Device(d) => Expect::Returns(Obs::Device(*d)),
            _ => reject(TYPE_ERROR, "not a device"),
        },
        "dtype" => match a {
            Desc::DataType(d) => Expect::Returns(Obs::DataType(*d)),
            _ => reject(TYPE_ERROR, "not a dtype"),
        },
        "shape" => match a {
            Desc::Shape(dims) => Expect::Returns(Obs::Shape(dims.clone())),
            _ => reject(TYPE_ERROR, "not a shape"),
        },
        "func" => match a {
            Desc::Func(Callback::Echo) => Expect::Returns(Obs::Int(7)),
            Desc::Func(Callback::Raise) => reject(VALUE_ERROR, "the callback raises"),
            _ => reject(TYPE_ERROR, "not a function"),
        },
        "any" => match a {
            // Borrowed pointers in a result: how they come back is not fixed by the rules.
            Desc::Str(_, Carrier::Pointer)
            | Desc::Bytes(_, Carrier::Pointer)
            | Desc::Tensor { object: false, .. }
            | Desc::NullTensor { object: false } => Expect::Unsure,
            // Not a valid value; safecall-runtime refuses to take a reference to NULL.
            Desc::NullTensor { object: true } => reject(TYPE_ERROR, "a NULL object"),
            _ => Expect::Returns(Obs::Same),
        },
        "optional" => match a {
            Desc::None => Expect::Returns(Obs::Int(-1)),
            other => match as_int(other) {
                Some(v) => Expect::Returns(Obs::Int(v)),
                None if matches!(other, Desc::BigInt(_)) => not_an_int(other),
                None => reject(TYPE_ERROR, "not an optional int"),
            },
        },
        "const" => expect_const(args),
        "tuple" => expect_tuple(a),
        "data_ptr" => {
            let address = match a {
                Desc::Int(v) => *v as u64,
                Desc::Ptr(p) => *p,
                _ => return reject(TYPE_ERROR, "not a data pointer"),
            };
            match data.value_at(address) {
                Some(v) => Expect::Returns(Obs::Float(vec![f64::from(v)])),
                None => panic!("a data_ptr argument that points nowhere: {address:#x}"),
            }
        }
        other => panic!("unknown kind {other}"),
    }
}

fn expect_const(args: &[Desc]) -> Expect {
    let int_like = |d: &Desc| matches!(d, Desc::Int(_) | Desc::Bool(_));
    // Each parameter in order: its type (a TypeError), then its value (a ValueError).
    let checks = [
        (int_like(&args[0]), matches!(&args[0], Desc::Int(128))),
        (
            int_like(&args[1]),
            matches!(&args[1], Desc::Bool(true) | Desc::Int(1)),
        ),
        (
            matches!(&args[2], Desc::Float(_)),
            matches!(&args[2], Desc::Float(x) if x.to_bits() == 1e-5f64.to_bits()),
        ),
        (matches!(&args[3], Desc::None), true),
    ];
    for (i, (type_ok, value_ok)) in checks.into_iter().enumerate() {
        if !type_ok {
            return reject(TYPE_ERROR, format!("constant #{i} of another type"));
        }
        if !value_ok {
            return reject(VALUE_ERROR, format!("constant #{i} differs"));
        }
    }
    Expect::Returns(Obs::Int(128))
}

/// `h_alloc(n)`: (n, 2) float32 and (n,) int8 CPU tensors, a raise after allocating both when
/// `n % 3 == 1`, else the first tensor; sizes over 2^24 are refused before allocating.
fn expect_alloc(a: &Desc) -> Expect {
    let Some(n) = as_int(a) else {
        return not_an_int(a);
    };
    if n < 0 {
        return reject(VALUE_ERROR, "a negative dimension");
    }
    if n > i64::MAX / 8 {
        return reject(VALUE_ERROR, "more bytes than fit in int64");
    }
    if n > 1 << 24 {
        return reject(
            VALUE_ERROR,
            "refused by the harness function before allocating",
        );
    }
    if n % 3 == 1 {
        return reject(VALUE_ERROR, "the function raises after allocating");
    }
    Expect::Returns(Obs::NewTensor(vec![n, 2]))
}

fn expect_tuple(a: &Desc) -> Expect {
    let Desc::Array { items, list } = a else {
        return reject(TYPE_ERROR, "not an array");
    };
    if *list {
        return Expect::Unsure;
    }
    if items.len() != 2 {
        return reject(VALUE_ERROR, "not 2 elements");
    }
    let Some(lo) = as_int(&items[0]) else {
        return match &items[0] {
            Desc::BigInt(w) => reject(VALUE_ERROR, format!("lo {w:?} beyond i64")),
            _ => reject(TYPE_ERROR, "lo is not an int"),
        };
    };
    let spec = Spec::new(vec![Dim::Var("k")], Some(F32));
    let mut vars = HashMap::new();
    match tensors::check(&spec, &items[1], &mut vars) {
        Ok(_) => Expect::Returns(Obs::Int(lo.wrapping_add(vars["k"] * 1000))),
        Err(Verdict::Reject(kind, why)) => reject(kind, why),
        Err(_) => Expect::Unsure,
    }
}

fn expect_tensors(kind: &str, specs: &[Spec], free: &[bool], args: &[Desc]) -> Expect {
    // Every parameter's type first (a TypeError), then each tensor's checks in order, its
    // device id among them (docs/abi.md, "Checks, in order").
    for (spec, arg) in specs.iter().zip(args) {
        match arg {
            Desc::Tensor { .. } => {}
            Desc::None if spec.optional => {}
            other => return reject(TYPE_ERROR, format!("not a tensor: {other:?}")),
        }
    }
    let mut vars = HashMap::new();
    let mut storages = Vec::new();
    let mut ids = tensors::DeviceIds::default();
    let mut unsure = false;
    for ((spec, arg), &is_free) in specs.iter().zip(args).zip(free) {
        let verdict = tensors::check(spec, arg, &mut vars).and_then(|s| match &s {
            Some(t) => ids.check(t, is_free).map(|()| s),
            None => Ok(s),
        });
        match verdict {
            Ok(s) => storages.push(s),
            // After a tensor whose checks are not settled (which can only fail with a
            // ValueError), a TypeError here may come second.
            Err(Verdict::Reject(kind, why)) => {
                return Expect::Rejects((!unsure || kind == VALUE_ERROR).then_some(kind), why);
            }
            Err(_) => {
                unsure = true;
                storages.push(None);
            }
        }
    }
    if unsure {
        return Expect::Unsure;
    }
    let first = storages[0].as_ref();
    let v = |name: &str| vars[name];
    let numel = |i: usize| -> i64 { storages[i].as_ref().map_or(0, |s| s.desc.numel()) };
    Expect::Returns(match kind {
        "tensor_dims" => Obs::Float(vec![if v("n") == 0 {
            -1.0
        } else {
            (numel(0) - 1) as f64
        }]),
        "tensor_symbolic" => {
            let (n, m) = (v("n"), v("m"));
            let last = if n * m == 0 { -1 } else { n * m - 1 };
            Obs::Int(n * 1_000_000 + m * 1000 + last)
        }
        "tensor_strides" => {
            let s = v("s");
            let last = if v("n") * v("m") == 0 {
                -1.0
            } else {
                (numel(0) - 1) as f64
            };
            Obs::Float(vec![(s * 1000) as f64 + last])
        }
        "tensor_any_strides" => {
            let st = first.expect("a tensor").desc.effective_strides();
            Obs::Int(st[0] * 1000 + st[1])
        }
        "tensor_offset" => {
            let off = first.expect("a tensor").desc.byte_offset as f64 * 1000.0;
            Obs::Float(vec![if v("n") == 0 { off - 1.0 } else { off }])
        }
        "tensor_align" | "tensor_index" => Obs::Int(v("n")),
        "tensor_device_id" | "tensor_device_var" => {
            Obs::Int(first.expect("a tensor").desc.device.device_id as i64)
        }
        "tensor_device_free" => Obs::Device(storages[1].as_ref().expect("a tensor").desc.device),
        "tensor_scalar" => Obs::Int(0),
        "tensor_anything" => Obs::DataType(first.expect("a tensor").desc.dtype),
        "tensor_optional" => match first {
            Some(_) => Obs::Int(v("n")),
            None => Obs::Int(-1),
        },
        other => panic!("unknown tensor kind {other}"),
    })
}
