//! Lowering of the body: statements and returns (expressions are [`expr`](super::expr)).

use safecall_runtime::abi::{ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, type_index as ti};

use crate::ir::{Expr, FloatType, IntType, MessagePart, ScalarType, Stmt};
use crate::lir::{self, IntCC, Ty, Var};

use super::capi::CApi;
use super::context::{Binding, FnCtx, TensorBinding};
use super::expr::{
    Val, copy_any, lower_expr, lower_ptr, lower_scalar, write_pod, write_scalar_any,
};
use super::half;
use super::layout::scalar_lir_type;
use super::options::LowerError;
use super::raise::{MAX_PARTS, MsgPart, Tag};
use super::schema::scalar_name;
use super::{alloc, calls, gpu};

/// Lowers a block of statements in a new scope.
pub(crate) fn lower_block<'a>(fx: &mut FnCtx<'a, '_>, stmts: &'a [Stmt]) -> Result<(), LowerError> {
    fx.push_scope();
    for stmt in stmts {
        if fx.b.is_terminated() {
            // Code after a `return` is unreachable; give it a block of its own.
            let dead = fx.b.new_block();
            fx.b.switch_to(dead);
        }
        lower_stmt(fx, stmt)?;
    }
    fx.pop_scope();
    Ok(())
}

fn lower_stmt<'a>(fx: &mut FnCtx<'a, '_>, stmt: &'a Stmt) -> Result<(), LowerError> {
    if fx.b.annotating() {
        fx.b.source(crate::ir::print::print_stmt_head(stmt));
    }
    fx.current_stmt = Some(stmt);
    match stmt {
        Stmt::Let {
            name,
            mutable,
            value,
        } => {
            let v = lower_expr(fx, value)?;
            let binding = bind_value(fx, v, *mutable);
            fx.bind(name, binding);
        }
        Stmt::Assign { name, value } => {
            let v = lower_expr(fx, value)?;
            match (fx.lookup(name)?, v) {
                (Binding::Scalar { var, .. }, Val::Scalar(src, _))
                | (Binding::Device { var, .. }, Val::Device(src))
                | (Binding::DType { var, .. }, Val::DType(src))
                | (Binding::Ref { any: var, .. }, Val::Ref { any: src, .. }) => {
                    fx.b.assign(var, src)
                }
                (
                    Binding::Scalar { .. }
                    | Binding::Device { .. }
                    | Binding::DType { .. }
                    | Binding::Ref { .. }
                    | Binding::Tensor(_)
                    | Binding::Sym { .. }
                    | Binding::StrLit(_)
                    | Binding::Unit,
                    _,
                ) => {
                    return Err(LowerError::internal(format!(
                        "cannot assign this value to `{name}`"
                    )));
                }
            }
        }
        Stmt::Store { ty, ptr, value } => {
            let p = lower_ptr(fx, ptr)?;
            let v = lower_scalar(fx, value)?;
            if fx.b.ty(v) != scalar_lir_type(*ty) {
                return Err(LowerError::internal(format!(
                    "store<{}> of a value of another type",
                    scalar_name(*ty)
                )));
            }
            fx.b.store(p, 0, v);
        }
        Stmt::If {
            cond,
            then_body,
            else_body,
        } => {
            let c = lower_scalar(fx, cond)?;
            let then_block = fx.b.new_block();
            let else_block = fx.b.new_block();
            let join = fx.b.new_block();
            fx.b.branch(c, then_block, else_block);
            fx.b.switch_to(then_block);
            lower_block(fx, then_body)?;
            if !fx.b.is_terminated() {
                fx.b.jump(join);
            }
            fx.b.switch_to(else_block);
            lower_block(fx, else_body)?;
            if !fx.b.is_terminated() {
                fx.b.jump(join);
            }
            fx.b.switch_to(join);
        }
        Stmt::For {
            var,
            start,
            end,
            step,
            body,
        } => lower_for(fx, var, start, end, *step, body)?,
        Stmt::Assert {
            cond,
            kind,
            message,
        } => {
            let c = lower_scalar(fx, cond)?;
            if message.len() > MAX_PARTS as usize / 2 {
                return Err(LowerError::limit(format!(
                    "assert message has {} parts; at most {} are supported",
                    message.len(),
                    MAX_PARTS / 2
                )));
            }
            let pass = fx.b.new_block();
            let failing = fx.b.new_cold_block();
            fx.b.branch(c, pass, failing);
            fx.b.switch_to(failing);
            // Message values are evaluated only on the failure path.
            let mut parts = Vec::new();
            for part in message {
                match part {
                    MessagePart::Text(t) => parts.push(MsgPart::Text(t.clone())),
                    MessagePart::Value(e) => {
                        let v = lower_expr(fx, e)?;
                        parts.push(message_value(fx, v)?);
                    }
                }
            }
            // The compiler's own message, as it wrote it.
            fx.fail_verbatim(kind, parts);
            fx.b.switch_to(pass);
        }
        Stmt::CallExtern { dest, func, args } => {
            calls::lower_extern_call(fx, dest.as_deref(), func, args)?
        }
        Stmt::CallPacked { dest, callee, args } => {
            calls::lower_packed_call(fx, dest.as_deref(), callee, args)?
        }
        Stmt::GetStream {
            dest,
            device_type,
            device_id,
        } => {
            let dt = lower_scalar(fx, device_type)?;
            let id = lower_scalar(fx, device_id)?;
            let get_stream = fx.m.capi(CApi::EnvGetStream);
            let stream =
                fx.b.call(lir::Callee::Import(get_stream), Some(Ty::Ptr), vec![dt, id])
                    .expect("returns");
            fx.bind(
                dest,
                Binding::Scalar {
                    var: stream,
                    guard: None,
                },
            );
        }
        Stmt::Launch(launch) => gpu::lower_launch(fx, launch)?,
        Stmt::Alloc(a) => alloc::lower_alloc(fx, a)?,
        Stmt::Return(value) => lower_return(fx, value.as_ref())?,
        Stmt::ReturnTuple(values) => lower_return_tuple(fx, values)?,
    }
    Ok(())
}

/// A binding for `let`: scalars are copied into a fresh variable so later assignments to the
/// source do not change it.
fn bind_value(fx: &mut FnCtx<'_, '_>, v: Val, mutable: bool) -> Binding {
    let copy = |fx: &mut FnCtx<'_, '_>, src: Var| {
        let ty = fx.b.ty(src);
        let dst = if mutable {
            fx.b.mutable_var(ty)
        } else {
            fx.b.var(ty)
        };
        fx.b.assign(dst, src);
        dst
    };
    match v {
        Val::Scalar(var, _) => Binding::Scalar {
            var: copy(fx, var),
            guard: None,
        },
        Val::Device(var) => Binding::Device {
            var: copy(fx, var),
            guard: None,
        },
        Val::DType(var) => Binding::DType {
            var: copy(fx, var),
            guard: None,
        },
        Val::Ref { any } => Binding::Ref {
            any: copy(fx, any),
            guard: None,
        },
        Val::Tensor(t) => Binding::Tensor(t),
        Val::Str(s) => Binding::StrLit(s),
    }
}

fn lower_for<'a>(
    fx: &mut FnCtx<'a, '_>,
    name: &str,
    start: &Expr,
    end: &Expr,
    step: i64,
    body: &'a [Stmt],
) -> Result<(), LowerError> {
    let (s, ty) = match lower_expr(fx, start)? {
        Val::Scalar(v, ScalarType::Int(t)) => (v, t),
        Val::Scalar(..)
        | Val::Device(_)
        | Val::DType(_)
        | Val::Ref { .. }
        | Val::Tensor(_)
        | Val::Str(_) => {
            return Err(LowerError::internal(format!(
                "loop `{name}`: the start is not an integer"
            )));
        }
    };
    let e = lower_scalar(fx, end)?;
    if step == 0 {
        return Err(LowerError::internal(format!(
            "loop `{name}`: the step is 0"
        )));
    }
    let signed = ty.is_signed();
    let i = fx.b.mutable_var(fx.b.ty(s));
    fx.b.assign(i, s);
    let body_block = fx.b.new_block();
    let latch = fx.b.new_block();
    let exit = fx.b.new_block();
    let cc = match (step > 0, signed) {
        (true, true) => IntCC::Slt,
        (true, false) => IntCC::Ult,
        (false, true) => IntCC::Sgt,
        (false, false) => IntCC::Ugt,
    };
    let enter = fx.b.icmp(cc, i, e);
    fx.b.branch(enter, body_block, exit);

    fx.b.switch_to(body_block);
    fx.push_scope();
    fx.bind(
        name,
        Binding::Scalar {
            var: i,
            guard: None,
        },
    );
    lower_block(fx, body)?;
    fx.pop_scope();
    if !fx.b.is_terminated() {
        fx.b.jump(latch);
    }

    fx.b.switch_to(latch);
    if step.unsigned_abs() == 1 {
        // A unit step cannot overflow: the body ran with `i` strictly inside the bound (the
        // loop variable is immutable), so `i ± 1` is representable and the next value is
        // compared with the bound directly. The fast form: one add, one compare, one branch.
        let stepped = fx.b.binary_imm(lir::BinOp::Iadd, i, step);
        fx.b.assign(i, stepped);
        let again = fx.b.icmp(cc, i, e);
        fx.b.branch(again, body_block, exit);
        fx.b.switch_to(exit);
        return Ok(());
    }
    // Continue while the distance to the bound exceeds the step: no overflow at the ends.
    let distance = if step > 0 {
        fx.b.binary(lir::BinOp::Isub, e, i)
    } else {
        fx.b.binary(lir::BinOp::Isub, i, e)
    };
    let magnitude = fx.b.iconst(fx.b.ty(i), step.unsigned_abs() as i64);
    let again = fx.b.icmp(IntCC::Ugt, distance, magnitude);
    let advance = fx.b.new_block();
    fx.b.branch(again, advance, exit);
    fx.b.switch_to(advance);
    let stepped = fx.b.binary_imm(lir::BinOp::Iadd, i, step);
    fx.b.assign(i, stepped);
    fx.b.jump(body_block);
    fx.b.switch_to(exit);
    Ok(())
}

/// The message part for a value in an assertion message.
fn message_value(fx: &mut FnCtx<'_, '_>, v: Val) -> Result<MsgPart, LowerError> {
    Ok(match v {
        Val::Scalar(var, ScalarType::Int(t)) => {
            MsgPart::Value(if t.is_signed() { Tag::I64 } else { Tag::U64 }, var)
        }
        Val::Scalar(var, ScalarType::Bool) => MsgPart::Value(Tag::Bool, var),
        Val::Scalar(var, ScalarType::Float(ft)) => match ft {
            FloatType::F32 | FloatType::F64 => MsgPart::Value(Tag::F64, var),
            // Shown as the f64 of the same value.
            FloatType::F16 | FloatType::BF16 => {
                MsgPart::Value(Tag::F64, half::widen(&mut fx.b, var, ft, FloatType::F64))
            }
        },
        Val::Scalar(var, ScalarType::Ptr) => MsgPart::Value(Tag::Ptr, var),
        Val::Device(var) => MsgPart::Value(Tag::Device, var),
        Val::DType(var) => MsgPart::Value(Tag::DType, var),
        Val::Str(s) => MsgPart::Text(s),
        Val::Ref { any, .. } | Val::Tensor(TensorBinding { any, .. }) => {
            // Show what kind of value it is.
            let index = fx.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
            MsgPart::Value(Tag::TypeIndex, index)
        }
    })
}

/// The global function that makes the `ffi.Array` of a tuple return.
const ARRAY_CONSTRUCTOR: &str = "ffi.Array";

/// `return (a, b, ...);`: a new `ffi.Array` of the values (`ffi.Array(a, b, ...)`, which takes
/// its own references), moved into `result`.
fn lower_return_tuple(fx: &mut FnCtx<'_, '_>, values: &[Expr]) -> Result<(), LowerError> {
    let callee = crate::ir::Callee::Global(ARRAY_CONSTRUCTOR.to_owned());
    let array = calls::packed_call(fx, &callee, values)?;
    copy_any(fx, fx.result, array);
    fx.return_ok();
    Ok(())
}

/// A `u64` result: an `Int` up to 2^63 - 1 (TVM-FFI ints are signed 64-bit); from 2^63 on a
/// new `ffi.BigInt` of two words, the value and a zero sign word (`TVMFFIBigIntFromByteArray`),
/// as tvm_ffi holds such a Python int.
fn return_u64(fx: &mut FnCtx<'_, '_>, var: lir::Var) -> Result<(), LowerError> {
    let result = fx.result;
    let small = fx.b.icmp_imm(IntCC::Sge, var, 0);
    let int_block = fx.b.new_block();
    let big_block = fx.b.new_block();
    let join = fx.b.new_block();
    fx.branch(small, int_block, big_block);
    fx.b.switch_to(int_block);
    write_scalar_any(fx, result, var, ScalarType::Int(IntType::U64))?;
    fx.b.jump(join);
    fx.b.switch_to(big_block);
    super::big_int::write_u64(fx, result, var);
    fx.b.jump(join);
    fx.b.switch_to(join);
    Ok(())
}

fn lower_return(fx: &mut FnCtx<'_, '_>, value: Option<&Expr>) -> Result<(), LowerError> {
    let result = fx.result;
    let Some(value) = value else {
        fx.write_none_result();
        fx.return_ok();
        return Ok(());
    };
    let v = lower_expr(fx, value)?;
    match v {
        Val::Scalar(var, ScalarType::Int(IntType::U64)) => return_u64(fx, var)?,
        Val::Scalar(var, ty) => write_scalar_any(fx, result, var, ty)?,
        Val::Device(var) => write_pod(fx, result, ti::DEVICE, var),
        Val::DType(var) => write_pod(fx, result, ti::DATA_TYPE, var),
        Val::Str(s) => {
            // A new String through the C API (short ones become SmallStr, no allocation).
            let data = fx.m.cstring(s.as_bytes());
            let slot = fx.b.slot(safecall_runtime::abi::BYTE_ARRAY_SIZE as u32, 8);
            let ba = fx.b.stack_addr(slot, 0);
            let p = fx.b.symbol_addr(lir::Symbol::Data(data));
            fx.b.store(ba, safecall_runtime::abi::BYTE_ARRAY_DATA_OFFSET, p);
            fx.b.store_imm(
                Ty::I64,
                ba,
                safecall_runtime::abi::BYTE_ARRAY_SIZE_OFFSET,
                s.len() as i64,
            );
            let f = fx.m.capi(CApi::StringFromByteArray);
            let rc =
                fx.b.call(lir::Callee::Import(f), Some(Ty::I32), vec![ba, result])
                    .expect("returns");
            fx.fail_on_nonzero(rc);
        }
        Val::Tensor(TensorBinding {
            any, owned: true, ..
        }) => {
            // An allocated tensor moves to the caller: its slot no longer releases it.
            copy_any(fx, result, any);
            fx.b.store_imm(Ty::I32, any, ANY_TYPE_INDEX_OFFSET, i64::from(ti::NONE));
        }
        Val::Tensor(TensorBinding { any, .. }) => {
            // A DLTensor* argument goes back as the same borrowed pointer; a Tensor object with
            // a new reference.
            let index = fx.b.load(Ty::I32, any, ANY_TYPE_INDEX_OFFSET);
            let is_obj = fx.b.icmp_imm(IntCC::Eq, index, i64::from(ti::TENSOR));
            let inc = fx.b.new_block();
            let join = fx.b.new_block();
            fx.b.branch(is_obj, inc, join);
            fx.b.switch_to(inc);
            let obj = fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET);
            let f = fx.m.capi(CApi::ObjectIncRef);
            fx.b.call(lir::Callee::Import(f), Some(Ty::I32), vec![obj]);
            fx.b.jump(join);
            fx.b.switch_to(join);
            copy_any(fx, result, any);
        }
        Val::Ref { any, .. } => {
            // Views become owned values (raw strings are copied into String objects, objects
            // get a new reference).
            let f = fx.m.capi(CApi::AnyViewToOwnedAny);
            let rc =
                fx.b.call(lir::Callee::Import(f), Some(Ty::I32), vec![any, result])
                    .expect("returns");
            fx.fail_on_nonzero(rc);
        }
    }
    fx.return_ok();
    Ok(())
}
