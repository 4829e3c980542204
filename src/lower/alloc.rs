//! Lowering of `let y = empty((dims), dtype, device);`: the shape checks, the prototype
//! `DLTensor` on the stack, the environment allocator (`TVMFFIEnvTensorAlloc`) and the owned
//! slot that releases the tensor on every exit unless it is returned.

use std::rc::Rc;

use safecall_runtime::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};
use safecall_runtime::abi::{
    ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, DLTENSOR_BYTE_OFFSET_OFFSET, DLTENSOR_DATA_OFFSET,
    DLTENSOR_DEVICE_TYPE_OFFSET, DLTENSOR_DTYPE_OFFSET, DLTENSOR_NDIM_OFFSET,
    DLTENSOR_SHAPE_OFFSET, DLTENSOR_SIZE, DLTENSOR_STRIDES_OFFSET, TENSOR_OBJECT_DLTENSOR_OFFSET,
    type_index,
};

use crate::ir::syntax;
use crate::ir::{Alloc, AllocDevice, Dim, TensorSpec};
use crate::lir::{BinOp, Callee, IntCC, Ty, Var};

use super::capi::CApi;
use super::context::{Binding, FnCtx, TensorBinding};
use super::expr::lower_scalar;
use super::options::LowerError;
use super::raise::{MsgPart, Tag};

/// Lowers an allocation: checks the shape, asks the environment allocator, checks what it
/// returned and binds the tensor (held in an owned slot, released on every exit).
pub(crate) fn lower_alloc(fx: &mut FnCtx<'_, '_>, a: &Alloc) -> Result<(), LowerError> {
    let dims = a
        .shape
        .iter()
        .map(|d| lower_scalar(fx, d))
        .collect::<Result<Vec<Var>, _>>()?;
    let device = lower_device(fx, &a.device)?;
    let dtype = fx.b.iconst(Ty::I32, packed_dtype(a.dtype));
    check_shape(fx, a, &dims);
    let proto = prototype(fx, a, &dims, device, dtype);
    require_allocator(fx, a, &dims, device, dtype);
    let slot = fx.owned_slot();
    let any = fx.b.stack_addr(slot, 0);
    // An allocation in a loop releases the previous iteration's tensor first.
    fx.release_any(any);
    let out = fx.b.ptr_add_imm(any, ANY_VALUE_OFFSET as i64);
    let alloc = fx.m.capi(CApi::EnvTensorAlloc);
    let rc =
        fx.b.call(Callee::Import(alloc), Some(Ty::I32), vec![proto, out])
            .expect("returns");
    // The allocator's own error (out of memory, ...) is already raised: pass it through.
    fx.fail_on_nonzero(rc);
    fx.b.store_imm(
        Ty::I32,
        any,
        ANY_TYPE_INDEX_OFFSET,
        i64::from(type_index::TENSOR),
    );
    fx.b.store_imm(Ty::I32, any, ANY_TYPE_INDEX_OFFSET + 4, 0);
    let obj = fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET);
    let dl = fx.b.ptr_add_imm(obj, TENSOR_OBJECT_DLTENSOR_OFFSET as i64);
    check_result(fx, a, &dims, device, dtype, dl);
    let spec = TensorSpec::new(
        Some(a.dtype),
        (0..dims.len()).map(|_| Dim::Const(0)).collect(),
    );
    fx.bind(
        &a.dest,
        Binding::Tensor(TensorBinding {
            any,
            dl,
            spec: Rc::new(spec),
            shape: Some(dims),
            guard: None,
            owned: true,
        }),
    );
    Ok(())
}

/// `code | bits << 8 | lanes << 16`, the `DLDataType` as the `I32` the DLTensor holds.
fn packed_dtype(d: safecall_runtime::abi::DLDataType) -> i64 {
    i64::from(d.code) | i64::from(d.bits) << 8 | i64::from(d.lanes) << 16
}

/// The device packed `type | id << 32` in an `I64`.
fn lower_device(fx: &mut FnCtx<'_, '_>, device: &AllocDevice) -> Result<Var, LowerError> {
    Ok(match device {
        AllocDevice::Value(e) => lower_scalar(fx, e)?,
        AllocDevice::Parts {
            device_type,
            device_id,
        } => {
            let t = lower_scalar(fx, device_type)?;
            let id = lower_scalar(fx, device_id)?;
            let t = fx.b.resize(t, Ty::I64, false);
            let id = fx.b.resize(id, Ty::I64, false);
            let high = fx.b.binary_imm(BinOp::Shl, id, 32);
            fx.b.binary(BinOp::Or, t, high)
        }
    })
}

/// `f: cannot allocate `y` with shape (2, 3), float32`, then ` on cuda:0` when the device
/// is given: how messages name an allocation.
fn describe(fx: &FnCtx<'_, '_>, a: &Alloc, dims: &[Var], device: Option<Var>) -> Vec<MsgPart> {
    let mut parts = vec![MsgPart::Text(format!(
        "{}: cannot allocate `{}` with shape (",
        fx.func.name,
        syntax::name(&a.dest)
    ))];
    for (k, &d) in dims.iter().enumerate() {
        if k > 0 {
            parts.push(MsgPart::text(", "));
        }
        parts.push(MsgPart::Value(Tag::I64, d));
    }
    parts.push(MsgPart::Text(format!(
        "{}), {}",
        if dims.len() == 1 { "," } else { "" },
        syntax::dtype(a.dtype)
    )));
    if let Some(device) = device {
        parts.push(MsgPart::text(" on "));
        parts.push(MsgPart::Value(Tag::Device, device));
    }
    parts
}

/// Every dim at least 0, and elements × element size within `i64`: a ValueError before the
/// allocator is called.
fn check_shape(fx: &mut FnCtx<'_, '_>, a: &Alloc, dims: &[Var]) {
    for (k, &d) in dims.iter().enumerate() {
        let ok = fx.b.icmp_imm(IntCC::Sge, d, 0);
        fx.check(ok, VALUE_ERROR, |fx| {
            let mut parts = describe(fx, a, dims, None);
            parts.push(MsgPart::Text(format!(": dimension {k} is negative")));
            parts
        });
    }
    let bytes = a.element_bytes().max(1);
    if dims.is_empty() || (dims.len() == 1 && bytes == 1) {
        return;
    }
    // Elements × bytes fits i64 iff the running product stays at most `i64::MAX / bytes`.
    let limit = (i64::MAX as u64 / bytes) as i64;
    let mut product = fx.b.iconst(Ty::I64, 1);
    let mut ok: Option<Var> = None;
    for &d in dims {
        let divisor = fx.b.binary_imm(BinOp::Umax, d, 1);
        let limit_v = fx.b.iconst(Ty::I64, limit);
        let room = fx.b.binary(BinOp::Udiv, limit_v, divisor);
        let fits = fx.b.icmp(IntCC::Ule, product, room);
        ok = Some(match ok {
            Some(prev) => fx.b.binary(BinOp::And, prev, fits),
            None => fits,
        });
        product = fx.b.binary(BinOp::Imul, product, d);
    }
    let ok = ok.expect("at least one dim");
    fx.check(ok, VALUE_ERROR, |fx| {
        let mut parts = describe(fx, a, dims, None);
        parts.push(MsgPart::Text(format!(
            ": its size in bytes (elements x {bytes}) does not fit in int64"
        )));
        parts
    });
}

/// The prototype `DLTensor` on the stack: dtype, ndim, shape and device (data, strides and
/// byte_offset zero).
fn prototype(fx: &mut FnCtx<'_, '_>, a: &Alloc, dims: &[Var], device: Var, dtype: Var) -> Var {
    let slot = fx.b.slot(DLTENSOR_SIZE as u32, 8);
    let p = fx.b.stack_addr(slot, 0);
    let shape_slot = fx.b.slot((dims.len().max(1) * 8) as u32, 8);
    let shape = fx.b.stack_addr(shape_slot, 0);
    for (k, &d) in dims.iter().enumerate() {
        fx.b.store(shape, k * 8, d);
    }
    fx.b.store_imm(Ty::Ptr, p, DLTENSOR_DATA_OFFSET, 0);
    fx.b.store(p, DLTENSOR_DEVICE_TYPE_OFFSET, device);
    fx.b.store_imm(Ty::I32, p, DLTENSOR_NDIM_OFFSET, a.shape.len() as i64);
    fx.b.store(p, DLTENSOR_DTYPE_OFFSET, dtype);
    fx.b.store(p, DLTENSOR_SHAPE_OFFSET, shape);
    fx.b.store_imm(Ty::Ptr, p, DLTENSOR_STRIDES_OFFSET, 0);
    fx.b.store_imm(Ty::I64, p, DLTENSOR_BYTE_OFFSET_OFFSET, 0);
    p
}

/// A RuntimeError naming the tensor and what to do when no allocator is installed.
fn require_allocator(fx: &mut FnCtx<'_, '_>, a: &Alloc, dims: &[Var], device: Var, _dtype: Var) {
    let get = fx.m.capi(CApi::EnvGetDLPackManagedTensorAllocator);
    let allocator =
        fx.b.call(Callee::Import(get), Some(Ty::Ptr), vec![])
            .expect("returns");
    let present = fx.b.icmp_imm(IntCC::Ne, allocator, 0);
    fx.check(present, RUNTIME_ERROR, |fx| {
        let mut parts = describe(fx, a, dims, Some(device));
        parts.push(MsgPart::text(
            ": no tensor allocator is installed (TVMFFIEnvGetDLPackManagedTensorAllocator() is \
             NULL). From Python, pass a PyTorch tensor among the arguments (tvm_ffi then \
             allocates with PyTorch) or call safecall.use_cpu_allocator() for CPU tensors; from \
             C or C++, install one with TVMFFIEnvSetDLPackManagedTensorAllocator",
        ));
        parts
    });
}

/// The allocator must return what was asked: same ndim, dtype, device and dims, a zero
/// `byte_offset`, and data unless the tensor is empty. A RuntimeError otherwise (the tensor is
/// released by the exit).
fn check_result(fx: &mut FnCtx<'_, '_>, a: &Alloc, dims: &[Var], device: Var, dtype: Var, dl: Var) {
    let ndim = fx.b.load(Ty::I32, dl, DLTENSOR_NDIM_OFFSET);
    let mut ok = fx.b.icmp_imm(IntCC::Eq, ndim, a.shape.len() as i64);
    let got_dtype = fx.b.load(Ty::I32, dl, DLTENSOR_DTYPE_OFFSET);
    let same = fx.b.icmp(IntCC::Eq, got_dtype, dtype);
    ok = fx.b.binary(BinOp::And, ok, same);
    let got_device = fx.b.load(Ty::I64, dl, DLTENSOR_DEVICE_TYPE_OFFSET);
    let same = fx.b.icmp(IntCC::Eq, got_device, device);
    ok = fx.b.binary(BinOp::And, ok, same);
    let offset = fx.b.load(Ty::I64, dl, DLTENSOR_BYTE_OFFSET_OFFSET);
    let zero = fx.b.icmp_imm(IntCC::Eq, offset, 0);
    ok = fx.b.binary(BinOp::And, ok, zero);
    // Dims are read only when ndim matched (the shape array has that many entries).
    let read = fx.b.new_block();
    let bad = fx.b.new_cold_block();
    let good = fx.b.new_block();
    fx.b.branch(ok, read, bad);
    fx.b.switch_to(read);
    let shape = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
    let mut all = fx.b.iconst(Ty::I8, 1);
    let mut empty = fx.b.iconst(Ty::I8, 0);
    for (k, &d) in dims.iter().enumerate() {
        let got = fx.b.load(Ty::I64, shape, k * 8);
        let same = fx.b.icmp(IntCC::Eq, got, d);
        all = fx.b.binary(BinOp::And, all, same);
        let is_zero = fx.b.icmp_imm(IntCC::Eq, d, 0);
        empty = fx.b.binary(BinOp::Or, empty, is_zero);
    }
    let data = fx.b.load(Ty::Ptr, dl, DLTENSOR_DATA_OFFSET);
    let has_data = fx.b.icmp_imm(IntCC::Ne, data, 0);
    let data_ok = fx.b.binary(BinOp::Or, has_data, empty);
    all = fx.b.binary(BinOp::And, all, data_ok);
    fx.b.branch(all, good, bad);
    fx.b.switch_to(bad);
    let mut parts = describe(fx, a, dims, Some(device));
    parts.push(MsgPart::text(
        ": the tensor allocator returned a tensor that is not the one requested (its ndim, \
         shape, dtype, device or byte_offset differ, or its data is NULL)",
    ));
    fx.fail(RUNTIME_ERROR, parts);
    fx.b.switch_to(good);
}
