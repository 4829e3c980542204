//! Tensors of `safecall run`: created from their [`TensorArg`] description, filled with their
//! pattern, relabelled with their device; and read back element by element for printing.

use safecall_runtime::Tensor;
use safecall_runtime::abi::{DLDataType, DLDevice, device_type, dtype_code};

use crate::args::{CPU, Fill, Num, TensorArg};

/// How one scalar of a dtype is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// Signed integer of this many bytes.
    Int(usize),
    /// Unsigned integer of this many bytes.
    UInt(usize),
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
    /// One byte, 0 or 1.
    Bool,
}

impl Scalar {
    /// The storage of `dtype`'s lanes, if the CLI can read and write it.
    pub fn of(dtype: DLDataType) -> Option<Scalar> {
        Some(match (dtype.code, dtype.bits) {
            (dtype_code::INT, b @ (8 | 16 | 32 | 64)) => Scalar::Int(usize::from(b / 8)),
            (dtype_code::UINT, b @ (8 | 16 | 32 | 64)) => Scalar::UInt(usize::from(b / 8)),
            (dtype_code::FLOAT, 16) => Scalar::F16,
            (dtype_code::FLOAT, 32) => Scalar::F32,
            (dtype_code::FLOAT, 64) => Scalar::F64,
            (dtype_code::BFLOAT, 16) => Scalar::BF16,
            (dtype_code::BOOL, 8) => Scalar::Bool,
            _ => return None,
        })
    }

    /// Bytes per scalar.
    pub fn size(self) -> usize {
        match self {
            Scalar::Int(n) | Scalar::UInt(n) => n,
            Scalar::F16 | Scalar::BF16 => 2,
            Scalar::F32 => 4,
            Scalar::F64 => 8,
            Scalar::Bool => 1,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16 | Scalar::F32 | Scalar::F64)
    }

    /// Little-endian bytes of `value`; `wrap` converts integers as numpy's `astype` does
    /// (modulo the type's range), otherwise a value that does not fit is an error.
    fn encode(self, value: Num, wrap: bool, out: &mut [u8]) -> Result<(), String> {
        let int = |value: Num| -> Result<i128, String> {
            match value {
                Num::Int(v) => Ok(i128::from(v)),
                Num::Float(f) if wrap && f.is_finite() => Ok(f as i128),
                Num::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(f as i128),
                Num::Float(f) => Err(format!("{f} is not an integer")),
            }
        };
        let float = match value {
            Num::Int(v) => v as f64,
            Num::Float(f) => f,
        };
        match self {
            Scalar::Int(n) | Scalar::UInt(n) => {
                let v = int(value)?;
                let bits = 8 * n as u32;
                let (lo, hi) = if matches!(self, Scalar::Int(_)) {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                if !wrap && !(lo..=hi).contains(&v) {
                    return Err(format!(
                        "{v} does not fit {}{bits}",
                        if lo < 0 { "int" } else { "uint" }
                    ));
                }
                out.copy_from_slice(&v.to_le_bytes()[..n]);
            }
            Scalar::Bool => out[0] = u8::from(float != 0.0),
            Scalar::F16 => out.copy_from_slice(&f32_to_f16(float as f32).to_le_bytes()),
            Scalar::BF16 => out.copy_from_slice(&f32_to_bf16(float as f32).to_le_bytes()),
            Scalar::F32 => out.copy_from_slice(&(float as f32).to_le_bytes()),
            Scalar::F64 => out.copy_from_slice(&float.to_le_bytes()),
        }
        Ok(())
    }

    /// The scalar stored in `bytes`.
    pub fn decode(self, bytes: &[u8]) -> Num {
        let mut wide = [0u8; 8];
        wide[..bytes.len()].copy_from_slice(bytes);
        let raw = u64::from_le_bytes(wide);
        match self {
            Scalar::Int(n) => {
                let shift = 64 - 8 * n as u32;
                Num::Int(((raw << shift) as i64) >> shift)
            }
            Scalar::UInt(_) => match i64::try_from(raw) {
                Ok(v) => Num::Int(v),
                Err(_) => Num::Float(raw as f64),
            },
            Scalar::Bool => Num::Int(i64::from(raw != 0)),
            Scalar::F16 => Num::Float(f64::from(f16_to_f32(raw as u16))),
            Scalar::BF16 => Num::Float(f64::from(f32::from_bits((raw as u32) << 16))),
            Scalar::F32 => Num::Float(f64::from(f32::from_bits(raw as u32))),
            Scalar::F64 => Num::Float(f64::from_bits(raw)),
        }
    }
}

/// Nearest-even conversion to IEEE half.
fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rounded = (m + half - 1 + ((m >> shift) & 1)) >> shift;
        return sign | rounded as u16;
    }
    let rounded = (mant + 0xfff + ((mant >> 13) & 1)) >> 13;
    // A carry out of the mantissa moves to the exponent, as it should.
    sign | (((e as u32) << 10) + rounded) as u16
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24.
            let magnitude = m as f32 * 2f32.powi(-24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn f32_to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// Creates the tensor `arg` describes.
pub fn create(arg: &TensorArg) -> Result<Tensor, String> {
    let cpu = Tensor::empty(&arg.shape, arg.dtype, CPU).map_err(|e| e.message().into_owned())?;
    fill(&cpu, arg)?;
    if arg.device == CPU {
        return Ok(cpu);
    }
    relabel(&cpu, arg.device)
}

fn fill(tensor: &Tensor, arg: &TensorArg) -> Result<(), String> {
    let numel = usize::try_from(tensor.numel()).map_err(|_| "too many elements".to_owned())?;
    let lanes = usize::from(arg.dtype.lanes.max(1));
    let count = numel * lanes;
    if arg.fill == Fill::Zeros {
        return Ok(());
    }
    let Some(scalar) = Scalar::of(DLDataType {
        lanes: 1,
        ..arg.dtype
    }) else {
        return Err(format!(
            "{} tensors can only be `zeros`: the CLI writes int, uint, float (16, 32, 64 bits), \
             bfloat16 and bool elements",
            arg.dtype_name
        ));
    };
    if let Fill::Values(values) = &arg.fill
        && values.len() != count
    {
        return Err(format!(
            "{} values for a tensor of {count} element{}",
            values.len(),
            if count == 1 { "" } else { "s" }
        ));
    }
    let size = scalar.size();
    // SAFETY: a fresh compact host tensor owned by the caller: `count` scalars of `size` bytes
    // from its data pointer, nothing else touches it.
    let data =
        unsafe { std::slice::from_raw_parts_mut(tensor.data_ptr().cast::<u8>(), count * size) };
    for (i, out) in data.chunks_exact_mut(size).enumerate() {
        let (value, wrap) = match &arg.fill {
            Fill::Zeros => unreachable!("handled above"),
            Fill::Ones => (Num::Int(1), false),
            Fill::Arange => (Num::Int(i as i64), true),
            Fill::Value(v) => (*v, false),
            Fill::Values(values) => (values[i], false),
        };
        if let Num::Float(f) = value
            && !scalar.is_float()
            && !f.is_finite()
        {
            return Err(format!(
                "{} elements cannot hold {}",
                arg.dtype_name,
                crate::show::float(f)
            ));
        }
        scalar.encode(value, wrap, out)?;
    }
    Ok(())
}

/// A tensor object over `cpu`'s memory that says it lives on `device` (through DLPack, so the
/// new tensor keeps the CPU one alive).
fn relabel(cpu: &Tensor, device: DLDevice) -> Result<Tensor, String> {
    let managed = cpu.to_dlpack();
    // SAFETY: a fresh DLPack export we own until `from_dlpack` takes it over.
    unsafe {
        (*managed).dl_tensor.device = device;
        Tensor::from_dlpack(managed, 0, false).map_err(|e| {
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
            e.message().into_owned()
        })
    }
}

/// Whether the host can read the data of a tensor on `device`.
pub fn host_readable(device: DLDevice) -> bool {
    matches!(
        device.device_type,
        device_type::CPU | device_type::CUDA_HOST | device_type::ROCM_HOST
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_round_trips() {
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            65504.0,
            6.1035156e-5,
            5.9604645e-8,
            0.1,
            1e-3,
        ] {
            let h = f32_to_f16(v);
            let back = f16_to_f32(h);
            assert!(
                (back - v).abs() <= v.abs() * 1e-3 + 6e-8,
                "{v} -> {h:#x} -> {back}"
            );
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(65536.0), 0x7c00, "overflow is infinity");
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
    }

    #[test]
    fn integers_wrap_only_when_asked() {
        let mut out = [0u8; 1];
        Scalar::Int(1)
            .encode(Num::Int(300), true, &mut out)
            .unwrap();
        assert_eq!(out[0] as i8, 44);
        let err = Scalar::Int(1)
            .encode(Num::Int(300), false, &mut out)
            .unwrap_err();
        assert_eq!(err, "300 does not fit int8");
        assert_eq!(Scalar::Int(1).decode(&[0xff]), Num::Int(-1));
        assert_eq!(Scalar::UInt(1).decode(&[0xff]), Num::Int(255));
        assert!(
            Scalar::Int(4)
                .encode(Num::Float(1.5), false, &mut [0; 4])
                .is_err()
        );
    }
}
