//! Printing the values of `safecall run`: results in the argument syntax where there is one
//! (`42`, `1.5`, `none`, `cuda:0`, `dtype:float32`, `"text"`), tensors as their description
//! and contents.

use safecall_runtime::abi::{DLTensor, TVMFFIAny, TVMFFISeqCell, type_index as ti};
use safecall_runtime::{AnyView, Shape, Tensor};

use crate::args::Num;
use crate::tensor::{Scalar, host_readable};

/// Above this many elements, each dimension shows only its first and last few entries.
const SUMMARIZE_ABOVE: i64 = 1000;
/// Entries shown at each end of a summarized dimension.
const EDGE_ITEMS: i64 = 3;

/// Decides whether a tensor's data may be read (host memory).
pub trait Readable {
    /// Whether the data of `t` is host memory.
    fn readable(&self, t: &DLTensor) -> bool;
}

/// Tensors whose device can be read by the host, or whose data is in one of `extra`'s ranges
/// (host memory labelled with another device by `run`).
pub struct HostData {
    /// `[start, end)` address ranges known to be host memory.
    pub extra: Vec<(usize, usize)>,
}

impl Readable for HostData {
    fn readable(&self, t: &DLTensor) -> bool {
        let data = t.data as usize;
        host_readable(t.device) || self.extra.iter().any(|&(s, e)| s <= data && data < e)
    }
}

/// A float as the argument syntax writes it.
pub fn float(v: f64) -> String {
    if v.is_nan() {
        "nan".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{v:?}")
    }
}

fn device(t: i32, id: i32) -> String {
    match safecall::ir::syntax::device_name(t) {
        Some(name) => format!("{name}:{id}"),
        None => format!("device({t}):{id}"),
    }
}

fn dtype(d: safecall_runtime::abi::DLDataType) -> String {
    safecall_runtime::dtype::format(d)
        .unwrap_or_else(|_| format!("dtype({}, {}, {})", d.code, d.bits, d.lanes))
}

fn bytes_text(bytes: &[u8]) -> String {
    let mut out = String::from("bytes:");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// A value, in the argument syntax where it has one.
pub fn value(v: &AnyView<'_>, readable: &dyn Readable) -> String {
    let raw = *v.as_raw();
    // SAFETY (all union reads below): each reads the member its type index selects.
    match raw.type_index {
        ti::NONE => "none".to_owned(),
        ti::INT => unsafe { raw.value.v_int64 }.to_string(),
        ti::BOOL => (unsafe { raw.value.v_int64 } != 0).to_string(),
        ti::FLOAT => float(unsafe { raw.value.v_float64 }),
        ti::OPAQUE_PTR => format!("ptr:{:#x}", unsafe { raw.value.v_ptr } as usize),
        ti::DATA_TYPE => format!("dtype:{}", dtype(unsafe { raw.value.v_dtype })),
        ti::DEVICE => {
            let d = unsafe { raw.value.v_device };
            device(d.device_type, d.device_id)
        }
        ti::RAW_STR | ti::SMALL_STR | ti::STR => {
            let text = String::from_utf8_lossy(v.str_bytes().unwrap_or_default()).into_owned();
            serde_json::to_string(&text).unwrap_or(text)
        }
        ti::BYTE_ARRAY_PTR | ti::SMALL_BYTES | ti::BYTES => {
            bytes_text(v.str_bytes().unwrap_or_default())
        }
        ti::SHAPE => match v.cast::<Shape>() {
            Ok(s) => format!("shape:{}", dims(s.as_slice())),
            Err(_) => "<ffi.Shape>".to_owned(),
        },
        ti::TENSOR => match v.cast::<Tensor>() {
            Ok(t) => tensor(t.dltensor(), readable),
            Err(_) => "<ffi.Tensor>".to_owned(),
        },
        ti::DL_TENSOR_PTR => {
            let p = unsafe { raw.value.v_ptr }.cast::<DLTensor>();
            if p.is_null() {
                "<NULL DLTensor*>".to_owned()
            } else {
                // SAFETY: a DLTensor pointer value points to a live DLTensor.
                tensor(unsafe { &*p }, readable)
            }
        }
        ti::ARRAY | ti::LIST => {
            let items = array_items(&raw)
                .iter()
                // SAFETY: the array's own slots, alive while `v` is.
                .map(|item| value(&unsafe { AnyView::from_raw(*item) }, readable))
                .collect::<Vec<_>>();
            match items.len() {
                1 => format!("({},)", items[0]),
                _ => format!("({})", items.join(", ")),
            }
        }
        ti::BIG_INT => {
            // SAFETY: the BigInt's words are alive while `v` is.
            match unsafe { safecall_runtime::big_int::words(&raw) } {
                &[low, high] => (i128::from(high) << 64 | i128::from(low as u64)).to_string(),
                words => format!("<ffi.BigInt of {} words>", words.len()),
            }
        }
        t => format!("<{}>", safecall_runtime::registry::type_key_of(t)),
    }
}

/// The elements of an Array or List value.
fn array_items(raw: &TVMFFIAny) -> Vec<TVMFFIAny> {
    // SAFETY: Array and List objects carry a TVMFFISeqCell right after the 24-byte header.
    unsafe {
        let obj = raw.value.v_obj;
        let cell = &*obj.add(1).cast::<TVMFFISeqCell>();
        let data = cell.data.cast::<TVMFFIAny>();
        (0..cell.size.max(0) as usize)
            .map(|i| *data.add(i))
            .collect()
    }
}

fn dims(shape: &[i64]) -> String {
    format!(
        "[{}]",
        shape
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// `float32[2,3]@cpu:0 [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]`.
pub fn tensor(t: &DLTensor, readable: &dyn Readable) -> String {
    let ndim = usize::try_from(t.ndim).unwrap_or(0);
    let shape: &[i64] = if ndim == 0 || t.shape.is_null() {
        &[]
    } else {
        // SAFETY: a DLTensor's shape holds ndim entries.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let head = format!(
        "{}{}@{}",
        dtype(t.dtype),
        dims(shape),
        device(t.device.device_type, t.device.device_id)
    );
    let Some(scalar) = Scalar::of(safecall_runtime::abi::DLDataType {
        lanes: 1,
        ..t.dtype
    }) else {
        return format!("{head} <elements of this dtype are not shown>");
    };
    if t.dtype.lanes != 1 {
        return format!("{head} <vector elements are not shown>");
    }
    if !readable.readable(t) {
        return format!("{head} <device memory>");
    }
    if shape.contains(&0) {
        return format!("{head} []");
    }
    if t.data.is_null() {
        return format!("{head} <NULL data>");
    }
    let strides: Vec<i64> = if t.strides.is_null() {
        let mut s = vec![1i64; ndim];
        for i in (0..ndim.saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1];
        }
        s
    } else {
        // SAFETY: non-NULL strides hold ndim entries.
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec()
    };
    let numel: i64 = shape.iter().product();
    let reader = Reader {
        base: t.data.cast::<u8>().wrapping_add(t.byte_offset as usize),
        scalar,
        shape,
        strides: &strides,
        summarize: numel > SUMMARIZE_ABOVE,
    };
    format!("{head} {}", reader.render(0, 0))
}

struct Reader<'a> {
    base: *const u8,
    scalar: Scalar,
    shape: &'a [i64],
    strides: &'a [i64],
    summarize: bool,
}

impl Reader<'_> {
    fn element(&self, offset: i64) -> String {
        let size = self.scalar.size();
        let at = self.base.wrapping_offset(offset as isize * size as isize);
        // SAFETY: `offset` is within the tensor (indices below its shape, its own strides), in
        // host memory (checked by the caller).
        let bytes = unsafe { std::slice::from_raw_parts(at, size) };
        match (self.scalar, self.scalar.decode(bytes)) {
            (Scalar::Bool, Num::Int(v)) => (v != 0).to_string(),
            (_, Num::Int(v)) => v.to_string(),
            (_, Num::Float(v)) => float(v),
        }
    }

    fn render(&self, dim: usize, offset: i64) -> String {
        if dim == self.shape.len() {
            return self.element(offset);
        }
        let n = self.shape[dim];
        let item = |i: i64| self.render(dim + 1, offset + i * self.strides[dim]);
        let items: Vec<String> = if self.summarize && n > 2 * EDGE_ITEMS {
            (0..EDGE_ITEMS)
                .map(item)
                .chain(std::iter::once("...".to_owned()))
                .chain((n - EDGE_ITEMS..n).map(item))
                .collect()
        } else {
            (0..n).map(item).collect()
        };
        format!("[{}]", items.join(", "))
    }
}
