//! Writing values into `TVMFFIAny` slots (results, packed-call arguments) and leaving on
//! errors raised by callees.

use safecall_runtime::abi::{
    ANY_SMALL_STR_LEN_OFFSET, ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, type_index as ti,
};

use crate::ir::{FloatType, ScalarType};
use crate::lir::{ConvOp, Ty, Var};

use crate::lower::context::FnCtx;
use crate::lower::half;
use crate::lower::options::LowerError;

/// Writes a POD value into a `TVMFFIAny` at `dst`: type index, zero padding, value.
pub(crate) fn write_pod(fx: &mut FnCtx<'_, '_>, dst: Var, index: i32, value: Var) {
    fx.b.store_imm(Ty::I32, dst, ANY_TYPE_INDEX_OFFSET, i64::from(index));
    fx.b.store_imm(Ty::I32, dst, ANY_SMALL_STR_LEN_OFFSET, 0);
    let ty = fx.b.ty(value);
    let wide = match ty {
        Ty::I64 | Ty::F64 | Ty::Ptr => value,
        Ty::I8 | Ty::I16 | Ty::I32 | Ty::F32 => {
            // Zero the upper bytes (dtypes are 4 bytes; narrower ints arrive extended).
            fx.b.store_imm(Ty::I64, dst, ANY_VALUE_OFFSET, 0);
            value
        }
    };
    fx.b.store(dst, ANY_VALUE_OFFSET, wide);
}

/// Writes a scalar value as the POD `TVMFFIAny` TVM-FFI uses for its type.
pub(crate) fn write_scalar_any(
    fx: &mut FnCtx<'_, '_>,
    dst: Var,
    var: Var,
    ty: ScalarType,
) -> Result<(), LowerError> {
    match ty {
        ScalarType::Int(t) => {
            let wide = fx.b.resize(var, Ty::I64, t.is_signed());
            write_pod(fx, dst, ti::INT, wide);
        }
        ScalarType::Bool => {
            let wide = fx.b.resize(var, Ty::I64, false);
            write_pod(fx, dst, ti::BOOL, wide);
        }
        ScalarType::Float(FloatType::F64) => write_pod(fx, dst, ti::FLOAT, var),
        ScalarType::Float(FloatType::F32) => {
            let wide = fx.b.convert(ConvOp::Fpromote, var, Ty::F64);
            write_pod(fx, dst, ti::FLOAT, wide);
        }
        ScalarType::Float(ft @ (FloatType::F16 | FloatType::BF16)) => {
            let wide = half::widen(&mut fx.b, var, ft, FloatType::F64);
            write_pod(fx, dst, ti::FLOAT, wide);
        }
        ScalarType::Ptr => write_pod(fx, dst, ti::OPAQUE_PTR, var),
    }
    Ok(())
}

/// Copies a `TVMFFIAny` view (16 bytes).
pub(crate) fn copy_any(fx: &mut FnCtx<'_, '_>, dst: Var, src: Var) {
    let lo = fx.b.load(Ty::I64, src, 0);
    let hi = fx.b.load(Ty::I64, src, 8);
    fx.b.store(dst, 0, lo);
    fx.b.store(dst, 8, hi);
}
