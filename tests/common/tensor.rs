//! Tensors described by case data: real (or fake) memory, a `DLTensor` over it, and Tensor
//! objects that keep it alive.

use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::Arc;

use safecall_runtime::Tensor;
use safecall_runtime::abi::{DLDataType, DLDevice, DLManagedTensor, DLTensor, dtype_code};
use serde_json::Value;

use super::cases::int_list;

/// Alignment of every allocated buffer (misalignment is added on top).
const BASE_ALIGN: usize = 64;

/// Where a tensor's data pointer points.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// A fresh 64-byte aligned buffer.
    Alloc,
    /// A fresh buffer, with the data pointer this many bytes past a 64-byte boundary.
    Misalign(usize),
    /// NULL.
    Null,
    /// This address, never dereferenced (for calls that fail before reading data).
    Fake(u64),
}

/// How a tensor's elements are initialized (in logical row-major order).
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    /// 0, 1, 2, ...
    Iota,
    /// These values.
    Values(Vec<f64>),
}

/// A tensor descriptor (see `tests/checks/README.md`).
#[derive(Clone, Debug)]
pub struct TensorDesc {
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
    /// Strides in elements; `None` is NULL (compact).
    pub strides: Option<Vec<i64>>,
    pub byte_offset: u64,
    pub device: DLDevice,
    pub data: Data,
    pub fill: Fill,
}

/// Parses `cpu:0`, `cuda:1`, ...
pub fn parse_device(s: &str) -> DLDevice {
    let (name, id) = s.split_once(':').unwrap_or((s, "0"));
    let device_type = match name {
        "cpu" => 1,
        "cuda" => 2,
        "cuda_host" => 3,
        "opencl" => 4,
        "vulkan" => 7,
        "metal" => 8,
        "rocm" => 10,
        "ext_dev" => 12,
        other => panic!("unknown device type {other:?}"),
    };
    DLDevice {
        device_type,
        device_id: id.parse().expect("device id"),
    }
}

/// Parses a dtype name (`float32`, `int8x4`).
pub fn parse_dtype(s: &str) -> DLDataType {
    safecall_runtime::dtype::parse(s).unwrap_or_else(|e| panic!("bad dtype {s:?}: {e:?}"))
}

impl TensorDesc {
    /// Reads a `{"tensor": {...}}` body.
    pub fn parse(v: &Value) -> TensorDesc {
        let known = [
            "dtype",
            "shape",
            "strides",
            "byte_offset",
            "device",
            "data",
            "fill",
            "view",
        ];
        for key in v
            .as_object()
            .expect("a tensor descriptor is an object")
            .keys()
        {
            assert!(known.contains(&key.as_str()), "unknown tensor key `{key}`");
        }
        let data = match &v["data"] {
            Value::Null => Data::Alloc,
            Value::String(s) if s == "alloc" => Data::Alloc,
            Value::String(s) if s == "null" => Data::Null,
            Value::Object(o) if o.contains_key("misalign") => {
                Data::Misalign(o["misalign"].as_u64().expect("misalign bytes") as usize)
            }
            Value::Object(o) if o.contains_key("fake") => {
                Data::Fake(o["fake"].as_u64().expect("fake address"))
            }
            other => panic!("bad tensor data {other}"),
        };
        let fill = match &v["fill"] {
            Value::Null => Fill::Iota,
            Value::String(s) if s == "iota" => Fill::Iota,
            Value::Array(xs) => Fill::Values(xs.iter().map(|x| x.as_f64().unwrap()).collect()),
            other => panic!("bad tensor fill {other}"),
        };
        TensorDesc {
            dtype: parse_dtype(v["dtype"].as_str().unwrap_or("float32")),
            shape: int_list(&v["shape"]),
            strides: (!v["strides"].is_null()).then(|| int_list(&v["strides"])),
            byte_offset: v["byte_offset"].as_u64().unwrap_or(0),
            device: parse_device(v["device"].as_str().unwrap_or("cpu:0")),
            data,
            fill,
        }
    }

    /// Bytes per element (sub-byte types round up).
    pub fn element_size(&self) -> usize {
        (usize::from(self.dtype.bits) * usize::from(self.dtype.lanes)).div_ceil(8)
    }

    /// The strides, with NULL read as compact.
    pub fn effective_strides(&self) -> Vec<i64> {
        match &self.strides {
            Some(s) => s.clone(),
            None => {
                let mut out = vec![1i64; self.shape.len()];
                for k in (0..self.shape.len().saturating_sub(1)).rev() {
                    out[k] = out[k + 1] * self.shape[k + 1];
                }
                out
            }
        }
    }

    /// The element count.
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }

    /// Element offsets (from the first element) of every element, in row-major logical order.
    pub fn element_offsets(&self) -> Vec<i64> {
        let strides = self.effective_strides();
        let mut out = Vec::new();
        if self.numel() <= 0 {
            return out;
        }
        let mut index = vec![0i64; self.shape.len()];
        loop {
            out.push(index.iter().zip(&strides).map(|(i, s)| i * s).sum());
            let mut k = self.shape.len();
            loop {
                if k == 0 {
                    return out;
                }
                k -= 1;
                index[k] += 1;
                if index[k] < self.shape[k] {
                    break;
                }
                index[k] = 0;
            }
        }
    }
}

/// Memory and layout of one tensor argument; shared by its Tensor object (through the DLPack
/// manager context) and by the case, which reads it back.
pub struct Storage {
    pub desc: TensorDesc,
    buffer: Option<(*mut u8, Layout)>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    /// The DLTensor passed as a `DLTensor*` argument (its shape and strides point into `self`).
    pub dl: DLTensor,
}

// SAFETY: the buffer is plain memory owned by the storage; calls are made on one thread at a
// time and the storage is only freed when the last reference goes.
unsafe impl Send for Storage {}
// SAFETY: as above.
unsafe impl Sync for Storage {}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Some((ptr, layout)) = self.buffer {
            // SAFETY: allocated in `Storage::new` with this layout.
            unsafe { std::alloc::dealloc(ptr, layout) };
        }
    }
}

fn write_element(p: *mut u8, dtype: DLDataType, value: f64) {
    // SAFETY: `p` points at an element of the buffer, which has room for the element type.
    unsafe {
        match (dtype.code, dtype.bits, dtype.lanes) {
            (dtype_code::FLOAT, 32, 1) => p.cast::<f32>().write_unaligned(value as f32),
            (dtype_code::FLOAT, 64, 1) => p.cast::<f64>().write_unaligned(value),
            (dtype_code::INT, 8, 1) => p.cast::<i8>().write_unaligned(value as i8),
            (dtype_code::INT, 16, 1) => p.cast::<i16>().write_unaligned(value as i16),
            (dtype_code::INT, 32, 1) => p.cast::<i32>().write_unaligned(value as i32),
            (dtype_code::INT, 64, 1) => p.cast::<i64>().write_unaligned(value as i64),
            (dtype_code::UINT, 8, 1) | (dtype_code::BOOL, 8, 1) => p.write(value as u8),
            // Other element types are left zero.
            _ => {}
        }
    }
}

pub fn read_element(p: *const u8, dtype: DLDataType) -> Option<f64> {
    // SAFETY: `p` points at an element of the buffer.
    unsafe {
        Some(match (dtype.code, dtype.bits, dtype.lanes) {
            (dtype_code::FLOAT, 32, 1) => f64::from(p.cast::<f32>().read_unaligned()),
            (dtype_code::FLOAT, 64, 1) => p.cast::<f64>().read_unaligned(),
            (dtype_code::INT, 8, 1) => f64::from(p.cast::<i8>().read_unaligned()),
            (dtype_code::INT, 16, 1) => f64::from(p.cast::<i16>().read_unaligned()),
            (dtype_code::INT, 32, 1) => f64::from(p.cast::<i32>().read_unaligned()),
            (dtype_code::INT, 64, 1) => p.cast::<i64>().read_unaligned() as f64,
            (dtype_code::UINT, 8, 1) | (dtype_code::BOOL, 8, 1) => f64::from(p.read()),
            _ => return None,
        })
    }
}

impl Storage {
    /// Allocates and fills the memory a descriptor asks for.
    pub fn new(desc: TensorDesc) -> Arc<Storage> {
        let elem = desc.element_size();
        // Tensors without memory may be huge (element-count limits): never enumerate them.
        let has_memory = matches!(desc.data, Data::Alloc | Data::Misalign(_));
        let offsets = if has_memory {
            desc.element_offsets()
        } else {
            Vec::new()
        };
        let min = offsets.iter().copied().min().unwrap_or(0);
        assert!(
            min >= 0,
            "negative strides are not supported by the runners"
        );
        let extent = offsets.iter().copied().max().map_or(0, |m| m as usize + 1);
        let misalign = match desc.data {
            Data::Misalign(m) => m,
            _ => 0,
        };
        let buffer = match desc.data {
            Data::Alloc | Data::Misalign(_) => {
                let size = misalign + desc.byte_offset as usize + extent * elem + BASE_ALIGN;
                let layout = Layout::from_size_align(size, BASE_ALIGN).expect("layout");
                // SAFETY: non-zero size.
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                assert!(!ptr.is_null(), "out of memory");
                Some((ptr, layout))
            }
            Data::Null | Data::Fake(_) => None,
        };
        let data: *mut c_void = match desc.data {
            // SAFETY: within the buffer.
            Data::Alloc | Data::Misalign(_) => unsafe { buffer.unwrap().0.add(misalign) }.cast(),
            Data::Null => std::ptr::null_mut(),
            Data::Fake(a) => a as usize as *mut c_void,
        };
        if buffer.is_some() {
            let values: Vec<f64> = match &desc.fill {
                Fill::Iota => (0..offsets.len()).map(|i| i as f64).collect(),
                Fill::Values(v) => {
                    assert_eq!(v.len(), offsets.len(), "fill has one value per element");
                    v.clone()
                }
            };
            for (off, value) in offsets.iter().zip(values) {
                let at = desc.byte_offset as usize + *off as usize * elem;
                // SAFETY: within the buffer (sized for the largest offset).
                write_element(unsafe { data.cast::<u8>().add(at) }, desc.dtype, value);
            }
        }
        let mut storage = Storage {
            shape: desc.shape.clone(),
            strides: desc.strides.clone(),
            buffer,
            dl: DLTensor {
                data,
                device: desc.device,
                ndim: desc.shape.len() as i32,
                dtype: desc.dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: desc.byte_offset,
            },
            desc,
        };
        storage.dl.shape = storage.shape.as_mut_ptr();
        storage.dl.strides = storage
            .strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr());
        Arc::new(storage)
    }

    /// The data pointer.
    pub fn data(&self) -> u64 {
        self.dl.data as u64
    }

    /// The elements, in logical order (None for element types the runners do not read).
    pub fn values(&self) -> Option<Vec<f64>> {
        self.buffer?;
        let elem = self.desc.element_size();
        self.desc
            .element_offsets()
            .iter()
            .map(|off| {
                let at = self.desc.byte_offset as usize + *off as usize * elem;
                // SAFETY: within the buffer.
                read_element(
                    unsafe { self.dl.data.cast::<u8>().add(at) },
                    self.desc.dtype,
                )
            })
            .collect()
    }

    /// A Tensor object over this storage (the object keeps it alive).
    pub fn tensor_object(self: &Arc<Storage>) -> Tensor {
        unsafe extern "C" fn release(managed: *mut DLManagedTensor) {
            // SAFETY: `managed` and its context were boxed in `tensor_object`; called once.
            unsafe {
                let managed = Box::from_raw(managed);
                drop(Box::from_raw(managed.manager_ctx.cast::<Arc<Storage>>()));
            }
        }
        let context = Box::into_raw(Box::new(self.clone()));
        let managed = Box::into_raw(Box::new(DLManagedTensor {
            dl_tensor: self.dl,
            manager_ctx: context.cast(),
            deleter: Some(release),
        }));
        // SAFETY: a valid managed tensor whose deleter may run on any thread.
        unsafe { Tensor::from_dlpack(managed, 0, false) }.expect("wrapping a DLPack tensor")
    }
}
