//! Tensor arguments: declared parameter specs, near-valid and random tensors over real memory,
//! and the verdict the checks of DESIGN.md §3 give for them.

use std::collections::HashMap;
use std::sync::Arc;

use safecall_runtime::abi::{DLDataType, DLDevice};

use super::Rng;
use super::model::{TYPE_ERROR, VALUE_ERROR};
use super::values::{Desc, dtype};
use crate::common::tensor::{Data, Fill, Storage, TensorDesc};

/// A declared dim or stride.
#[derive(Clone, Copy, Debug)]
pub enum Dim {
    Const(i64),
    Var(&'static str),
}

/// Declared strides.
#[derive(Clone, Debug)]
pub enum Strides {
    Compact,
    Any,
    Declared(Vec<Dim>),
}

/// A tensor parameter as declared in `hostile.scir`.
#[derive(Clone, Debug)]
pub struct Spec {
    pub dims: Vec<Dim>,
    pub dtype: Option<DLDataType>,
    pub device_type: Option<i32>,
    pub strides: Strides,
    pub byte_offset_any: bool,
    pub align: Option<u64>,
    pub index_max: Option<i64>,
    pub optional: bool,
}

pub const F32: DLDataType = DLDataType {
    code: 2,
    bits: 32,
    lanes: 1,
};
pub const I32: DLDataType = DLDataType {
    code: 0,
    bits: 32,
    lanes: 1,
};
pub const I64: DLDataType = DLDataType {
    code: 0,
    bits: 64,
    lanes: 1,
};
pub const I8: DLDataType = DLDataType {
    code: 0,
    bits: 8,
    lanes: 1,
};
pub const CPU: i32 = 1;
pub const CUDA: i32 = 2;

impl Spec {
    /// A compact tensor of `dims` and `dtype`, on any device, without other attributes.
    pub fn new(dims: Vec<Dim>, dtype: Option<DLDataType>) -> Spec {
        Spec {
            dims,
            dtype,
            device_type: None,
            strides: Strides::Compact,
            byte_offset_any: false,
            align: None,
            index_max: None,
            optional: false,
        }
    }
}

/// What the checks must do with an argument list.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Reject: some check must fail, raising this error kind.
    Reject(&'static str, String),
    /// The rules in DESIGN.md do not settle it: only the contract is checked.
    Unsure,
}

/// Checks one tensor argument against `spec`, binding variables into `vars`; `Err` carries
/// the verdict when the argument is not accepted for sure.
pub fn check(
    spec: &Spec,
    desc: &Desc,
    vars: &mut HashMap<&'static str, i64>,
) -> Result<Option<Arc<Storage>>, Verdict> {
    let storage = match desc {
        Desc::Tensor { storage, .. } => storage.0.clone(),
        Desc::None if spec.optional => return Ok(None),
        other => {
            return Err(Verdict::Reject(
                TYPE_ERROR,
                format!("not a tensor: {other:?}"),
            ));
        }
    };
    let d = &storage.desc;
    // Every tensor check raises a ValueError but the dtype's (docs/abi.md, "Checks, in order").
    let reject = |why: String| Err(Verdict::Reject(VALUE_ERROR, why));
    if d.shape.len() != spec.dims.len() {
        return reject(format!("ndim {} for {}", d.shape.len(), spec.dims.len()));
    }
    if let Some(want) = spec.dtype
        && (want.code, want.bits, want.lanes) != (d.dtype.code, d.dtype.bits, d.dtype.lanes)
    {
        return Err(Verdict::Reject(TYPE_ERROR, format!("dtype {:?}", d.dtype)));
    }
    if let Some(t) = spec.device_type
        && d.device.device_type != t
    {
        return reject(format!("device type {}", d.device.device_type));
    }
    let mut bind = |dim: Dim, value: i64, what: &str| -> Result<(), Verdict> {
        match dim {
            Dim::Const(c) if c != value => Err(Verdict::Reject(
                VALUE_ERROR,
                format!("{what} {value} != {c}"),
            )),
            Dim::Const(_) => Ok(()),
            Dim::Var(name) => match vars.get(name) {
                Some(&bound) if bound != value => Err(Verdict::Reject(
                    VALUE_ERROR,
                    format!("{what} {value} != {name} = {bound}"),
                )),
                Some(_) => Ok(()),
                None => {
                    vars.insert(name, value);
                    Ok(())
                }
            },
        }
    };
    for (i, (&dim, &extent)) in spec.dims.iter().zip(&d.shape).enumerate() {
        bind(dim, extent, &format!("shape[{i}]"))?;
    }
    let numel: i64 = d.shape.iter().product();
    if let Some(max) = spec.index_max
        && numel > max
    {
        return reject(format!("{numel} elements > {max}"));
    }
    let strides = d.effective_strides();
    let compact = TensorDesc {
        strides: None,
        ..d.clone()
    }
    .effective_strides();
    if numel > 0 {
        match &spec.strides {
            Strides::Any => {}
            Strides::Compact => {
                for i in 0..strides.len() {
                    if d.shape[i] != 1 && strides[i] != compact[i] {
                        return reject(format!("stride[{i}] {} not compact", strides[i]));
                    }
                }
            }
            Strides::Declared(declared) => {
                for (i, &dim) in declared.iter().enumerate() {
                    if d.shape[i] == 1 {
                        // Whether an extent-1 dim binds its stride variable is not settled.
                        return Err(Verdict::Unsure);
                    }
                    bind(dim, strides[i], &format!("stride[{i}]"))?;
                }
            }
        }
    } else if matches!(spec.strides, Strides::Declared(_)) {
        return Err(Verdict::Unsure);
    }
    if !spec.byte_offset_any && d.byte_offset != 0 {
        return reject(format!("byte_offset {}", d.byte_offset));
    }
    if numel > 0 {
        if storage.dl.data.is_null() {
            return reject("NULL data".to_owned());
        }
        if let Some(align) = spec.align
            && (storage.data() + d.byte_offset) % align != 0
        {
            return reject("misaligned".to_owned());
        }
    }
    Ok(Some(storage))
}

/// The device id rule across the tensor arguments of one call: the same id unless a parameter
/// says `device_id=free`; checked as each tensor is (one tensor's checks before the next's).
#[derive(Default)]
pub struct DeviceIds(Option<DLDevice>);

impl DeviceIds {
    /// The rule for the next tensor argument, `free` when its parameter says so.
    pub fn check(&mut self, tensor: &Storage, free: bool) -> Result<(), Verdict> {
        if free {
            return Ok(());
        }
        let dev = tensor.desc.device;
        match self.0 {
            None => {
                self.0 = Some(dev);
                Ok(())
            }
            Some(f) if f.device_id != dev.device_id => Err(Verdict::Reject(
                VALUE_ERROR,
                format!("device ids {} and {}", f.device_id, dev.device_id),
            )),
            Some(_) => Ok(()),
        }
    }
}

fn storage(desc: TensorDesc, rng: &mut Rng) -> Desc {
    Desc::Tensor {
        storage: super::values::Mem(Storage::new(desc)),
        object: rng.below(2) == 0,
    }
}

/// A tensor `spec` accepts, with variables taken from `vars` (bound at random when new).
pub fn valid(spec: &Spec, vars: &mut HashMap<&'static str, i64>, rng: &mut Rng) -> TensorDesc {
    let mut value = |dim: Dim, rng: &mut Rng, lo: i64| match dim {
        Dim::Const(c) => c,
        Dim::Var(name) => *vars.entry(name).or_insert_with(|| lo + rng.below(5) as i64),
    };
    let shape: Vec<i64> = spec.dims.iter().map(|&d| value(d, rng, 1)).collect();
    let strides = match &spec.strides {
        Strides::Compact => None,
        Strides::Any => (rng.below(2) == 0).then(|| {
            (0..shape.len())
                .map(|_| rng.below(12) as i64)
                .collect::<Vec<_>>()
        }),
        Strides::Declared(declared) => {
            let last = shape.last().copied().unwrap_or(1);
            Some(
                declared
                    .iter()
                    .map(|&d| value(d, rng, last))
                    .collect::<Vec<_>>(),
            )
        }
    };
    let device_type = spec.device_type.unwrap_or(CPU);
    let byte_offset = if spec.byte_offset_any {
        *rng.pick(&[0u64, 4, 16, 3])
    } else {
        0
    };
    let data = match spec.align {
        Some(align) => Data::Misalign(((align - byte_offset % align) % align) as usize),
        None => Data::Alloc,
    };
    TensorDesc {
        dtype: spec.dtype.unwrap_or_else(|| tensor_dtype(rng)),
        shape,
        strides,
        byte_offset,
        device: DLDevice {
            device_type,
            device_id: 0,
        },
        data,
        fill: Fill::Iota,
    }
}

/// A dtype whose elements are at most 32 bytes (so random tensors stay small).
fn tensor_dtype(rng: &mut Rng) -> DLDataType {
    let mut d = dtype(rng);
    d.bits = *rng.pick(&[8u8, 16, 32, 64]);
    d.lanes = 1 + rng.below(4) as u16;
    d
}

/// One random change to a tensor: any field, any value (memory stays honest).
pub fn mutate(d: &mut TensorDesc, rng: &mut Rng) {
    match rng.below(11) {
        0 => d.dtype = tensor_dtype(rng),
        1 => {
            if rng.below(2) == 0 || d.shape.is_empty() {
                d.shape.push(1 + rng.below(3) as i64);
            } else {
                d.shape.pop();
            }
            d.strides = None;
        }
        2 | 3 => {
            if !d.shape.is_empty() {
                let i = rng.below(d.shape.len() as u64) as usize;
                d.shape[i] = *rng.pick(&[0i64, 1, 2, 3, 7, 255, 256, 300]);
            }
        }
        4 | 5 => {
            d.strides = (rng.below(3) != 0).then(|| {
                (0..d.shape.len())
                    .map(|_| rng.below(10) as i64)
                    .collect::<Vec<_>>()
            })
        }
        6 => d.byte_offset = *rng.pick(&[0u64, 1, 4, 8, 12, 64]),
        7 => d.data = Data::Misalign(*rng.pick(&[0usize, 1, 4, 8])),
        8 => d.data = Data::Null,
        9 => d.device.device_type = *rng.pick(&[CPU, CUDA, 3, 4, 8]),
        _ => d.device.device_id = rng.below(3) as i32,
    }
    if let Some(s) = &d.strides
        && s.len() != d.shape.len()
    {
        d.strides = None;
    }
}

/// A near-valid tensor for `spec`: valid, then up to two random changes.
pub fn near_valid(spec: &Spec, vars: &mut HashMap<&'static str, i64>, rng: &mut Rng) -> Desc {
    let mut d = valid(spec, vars, rng);
    for _ in 0..rng.below(3) {
        mutate(&mut d, rng);
    }
    storage(d, rng)
}

/// A tensor with random everything (over real memory).
pub fn random_tensor(rng: &mut Rng) -> Desc {
    let ndim = rng.below(4) as usize;
    let shape: Vec<i64> = (0..ndim).map(|_| rng.below(5) as i64).collect();
    let mut d = TensorDesc {
        dtype: tensor_dtype(rng),
        shape,
        strides: None,
        byte_offset: 0,
        device: DLDevice {
            device_type: CPU,
            device_id: 0,
        },
        data: Data::Alloc,
        fill: Fill::Iota,
    };
    for _ in 0..1 + rng.below(3) {
        mutate(&mut d, rng);
    }
    storage(d, rng)
}
