//! Lowered types of IR scalar types and tensor layouts, shared by the parameter checks and
//! expressions.

use safecall_runtime::abi::DLTENSOR_STRIDES_OFFSET;

use crate::ir::{FloatType, IntType, ScalarType, Strides};
use crate::lir::{BinOp, IntCC, Ty, Var};

use super::context::FnCtx;

/// The lowered type of an integer type.
pub(crate) fn int_lir_type(t: IntType) -> Ty {
    match t {
        IntType::I8 | IntType::U8 => Ty::I8,
        IntType::I16 | IntType::U16 => Ty::I16,
        IntType::I32 | IntType::U32 => Ty::I32,
        IntType::I64 | IntType::U64 => Ty::I64,
    }
}

/// The lowered type of a scalar type.
pub(crate) fn scalar_lir_type(t: ScalarType) -> Ty {
    match t {
        ScalarType::Bool => Ty::I8,
        ScalarType::Int(i) => int_lir_type(i),
        // A half is its bits (`lower::half` converts).
        ScalarType::Float(FloatType::F16 | FloatType::BF16) => Ty::I16,
        ScalarType::Float(FloatType::F32) => Ty::F32,
        ScalarType::Float(FloatType::F64) => Ty::F64,
        ScalarType::Ptr => Ty::Ptr,
    }
}

/// Row-major compact strides of a shape.
pub(crate) fn compact_strides(fx: &mut FnCtx<'_, '_>, dims: &[Var]) -> Vec<Var> {
    let mut strides = vec![fx.b.iconst(Ty::I64, 1); dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        strides[k] = fx.b.binary(BinOp::Imul, strides[k + 1], dims[k + 1]);
    }
    strides
}

/// The strides of a tensor declared with `kind`: a compact tensor's from its dims, any other's
/// read ([`effective_strides`]).
pub(crate) fn declared_strides(
    fx: &mut FnCtx<'_, '_>,
    dl: Var,
    kind: &Strides,
    dims: &[Var],
) -> Vec<Var> {
    match kind {
        Strides::Compact => compact_strides(fx, dims),
        Strides::Any | Strides::Exact(_) => effective_strides(fx, dl, dims),
    }
}

/// The strides of a tensor, reading NULL strides as the compact ones.
pub(crate) fn effective_strides(fx: &mut FnCtx<'_, '_>, dl: Var, dims: &[Var]) -> Vec<Var> {
    let compact = compact_strides(fx, dims);
    let strides_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_STRIDES_OFFSET);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let has = fx.b.icmp(IntCC::Ne, strides_ptr, null);
    let out: Vec<Var> = (0..dims.len()).map(|_| fx.b.mutable_var(Ty::I64)).collect();
    let load_block = fx.b.new_block();
    let null_block = fx.b.new_block();
    let join = fx.b.new_block();
    fx.branch(has, load_block, null_block);
    fx.b.switch_to(load_block);
    for (k, &o) in out.iter().enumerate() {
        let v = fx.b.load(Ty::I64, strides_ptr, k * 8);
        fx.b.assign(o, v);
    }
    fx.jump(join);
    fx.b.switch_to(null_block);
    for (&o, &c) in out.iter().zip(&compact) {
        fx.b.assign(o, c);
    }
    fx.jump(join);
    fx.b.switch_to(join);
    out
}
