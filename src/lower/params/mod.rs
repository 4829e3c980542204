//! Argument decoding and checks, in the order of docs/abi.md ("Checks, in order"):
//! 1. the argument count;
//! 2. per parameter (tuple elements after their tuple), the type index, and the value;
//! 3. per tensor: ndim, dtype, device type, constant dims, symbolic dims, strides,
//!    byte_offset, alignment, non-NULL data, device id, element-count limit;
//! 4. constraints (divisibility).

mod constraint;
mod syms;
mod tensor;

use std::collections::HashMap;

use safecall_runtime::abi::{
    ANY_SIZE, ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, SEQ_OBJECT_DATA_OFFSET,
    SEQ_OBJECT_SIZE_OFFSET, TENSOR_OBJECT_DLTENSOR_OFFSET, type_index as ti,
};

use crate::ir::{ConstValue, FloatType, IntType, Param, ParamType, ScalarType, TensorSpec};
use crate::lir::{BinOp, ConvOp, IntCC, Symbol, Ty, Var};

use super::context::{Binding, FnCtx, NoneGuard, TensorBinding};
use super::layout::int_lir_type;
use super::raise::{MsgPart, Tag};
use super::schema::{self, expected_text, int_range};

use constraint::lower_constraint;
use syms::{SymKey, SymState, Syms, UNBOUND};
use tensor::check_tensor;

/// Where a parameter's `TVMFFIAny` is: `base + offset`.
#[derive(Clone, Copy, Debug)]
struct AnySrc {
    base: Var,
    offset: usize,
}

/// A tensor parameter waiting for its phase-3 checks.
struct TensorLeaf {
    name: String,
    label: String,
    spec: TensorSpec,
    dl: Var,
    guard: Option<NoneGuard>,
}

/// Lowers the whole argument prologue and binds every parameter name.
pub(crate) fn lower_params(fx: &mut FnCtx<'_, '_>) -> Result<(), String> {
    let func = fx.func;
    let n = func.params.len();

    if fx.b.annotating() {
        fx.b.source(format!("check: {} takes {n} argument(s)", func.name));
    }
    let expected = fx.b.iconst(Ty::I32, n as i64);
    let ok = fx.b.icmp(IntCC::Eq, fx.num_args, expected);
    let num_args = fx.num_args;
    fx.check_arg(ok, "TypeError", |_| {
        vec![
            MsgPart::text(format!(
                "{}: expected {n} argument{}, got ",
                func.name,
                if n == 1 { "" } else { "s" }
            )),
            MsgPart::Value(Tag::I64, num_args),
        ]
    });
    // Safety boundary: the argument array is read below.
    fx.flush_checks();

    let mut tensors = Vec::new();
    for (i, param) in func.params.iter().enumerate() {
        let src = AnySrc {
            base: fx.args,
            offset: i * ANY_SIZE,
        };
        let label = format!("'{}' (#{i})", param.name);
        decode(
            fx,
            param,
            src,
            label,
            &format!("args[{i}]"),
            None,
            &mut tensors,
        )?;
    }

    let mut syms = Syms {
        vars: HashMap::new(),
        state: HashMap::new(),
    };
    for leaf in &tensors {
        check_tensor(fx, leaf, &mut syms);
    }
    for (key, state) in &syms.state {
        let SymKey::Named(name) = key else { continue };
        let var = syms.vars[key];
        let unbound_check = match state {
            SymState::Bound { .. } => None,
            SymState::Dynamic { flag, .. } => {
                let has_value = fx.b.icmp_imm(IntCC::Ne, *flag, UNBOUND);
                Some((has_value, name.clone()))
            }
        };
        fx.bind(name, Binding::Sym { var, unbound_check });
    }
    for constraint in &func.constraints {
        lower_constraint(fx, constraint, &syms)?;
    }
    fx.flush_checks();
    Ok(())
}

/// Phase 2 for one parameter (and, for tuples, its elements); binds the name.
fn decode(
    fx: &mut FnCtx<'_, '_>,
    param: &Param,
    src: AnySrc,
    label: String,
    path: &str,
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
) -> Result<(), String> {
    if fx.b.annotating() {
        fx.b.source(format!(
            "decode argument {label}: {}",
            schema::param_text(&param.ty)
        ));
    }
    let type_idx =
        fx.b.load(Ty::I32, src.base, src.offset + ANY_TYPE_INDEX_OFFSET);
    let prefix = fx.message_prefix(&label);
    let expected = if fx.explaining() {
        expected_text(&param.ty)
    } else {
        String::new()
    };
    let type_error = |fx: &mut FnCtx<'_, '_>, ok: Var| {
        let msg = format!("{prefix}expected {expected}, got ");
        fx.check_arg(ok, "TypeError", |_| {
            vec![MsgPart::Text(msg), MsgPart::Value(Tag::TypeIndex, type_idx)]
        });
    };
    let any_ptr = fx.b.ptr_add_imm(src.base, src.offset as i64);

    let (inner, guard) = match &param.ty {
        ParamType::Optional(inner) => {
            // `is_none` is 1 from the entry, so it also reads None when an enclosing optional
            // argument was None and this one was never decoded.
            let is_none = fx.entry_var(Ty::I8, 1);
            let none = fx.b.icmp_imm(IntCC::Eq, type_idx, i64::from(ti::NONE));
            fx.b.assign(is_none, none);
            let present = fx.b.new_block();
            let join = fx.b.new_block();
            fx.branch(none, join, present);
            fx.b.switch_to(present);
            let guard = Some(NoneGuard {
                is_none,
                label: label.clone(),
            });
            decode_value(
                fx,
                param,
                inner,
                src,
                any_ptr,
                type_idx,
                &label,
                path,
                guard,
                tensors,
                &type_error,
            )?;
            fx.jump(join);
            fx.b.switch_to(join);
            return Ok(());
        }
        other => (other, guard),
    };
    decode_value(
        fx,
        param,
        inner,
        src,
        any_ptr,
        type_idx,
        &label,
        path,
        guard,
        tensors,
        &type_error,
    )
}

/// Checks the type index against a non-optional parameter type and binds the value.
#[allow(clippy::too_many_arguments)]
fn decode_value(
    fx: &mut FnCtx<'_, '_>,
    param: &Param,
    ty: &ParamType,
    src: AnySrc,
    any_ptr: Var,
    type_idx: Var,
    label: &str,
    path: &str,
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
    type_error: &dyn Fn(&mut FnCtx<'_, '_>, Var),
) -> Result<(), String> {
    let value_off = src.offset + ANY_VALUE_OFFSET;
    let prefix = fx.message_prefix(label);
    let is =
        |fx: &mut FnCtx<'_, '_>, index: i32| fx.b.icmp_imm(IntCC::Eq, type_idx, i64::from(index));
    let int_or_bool = |fx: &mut FnCtx<'_, '_>| {
        let a = is(fx, ti::INT);
        let b = is(fx, ti::BOOL);
        fx.b.binary(BinOp::Or, a, b)
    };
    let binding = match ty {
        ParamType::Int(t) => {
            let ok = int_or_bool(fx);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I64, src.base, value_off);
            let (lo, hi) = int_range(*t);
            if (lo, hi) != (i64::MIN, i64::MAX) {
                let ge = fx.b.icmp_imm(IntCC::Sge, raw, lo);
                let le = fx.b.icmp_imm(IntCC::Sle, raw, hi);
                let ok = fx.b.binary(BinOp::And, ge, le);
                let name = schema::int_name(*t);
                fx.check_arg(ok, "ValueError", |_| {
                    vec![
                        MsgPart::Text(prefix.clone()),
                        MsgPart::Value(Tag::I64, raw),
                        MsgPart::text(format!(" is out of range for {name} [{lo}, {hi}]")),
                    ]
                });
            }
            let lty = int_lir_type(*t);
            let var = fx.entry_var(lty, 0);
            let narrowed = fx.b.resize(raw, lty, true);
            fx.b.assign(var, narrowed);
            Binding::Scalar {
                var,
                ty: ScalarType::Int(*t),
                guard,
            }
        }
        ParamType::Bool => {
            let ok = int_or_bool(fx);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I64, src.base, value_off);
            let var = fx.entry_var(Ty::I8, 0);
            let nz = fx.b.icmp_imm(IntCC::Ne, raw, 0);
            fx.b.assign(var, nz);
            Binding::Scalar {
                var,
                ty: ScalarType::Bool,
                guard,
            }
        }
        ParamType::Float(ft) => {
            let is_float = is(fx, ti::FLOAT);
            let is_int = int_or_bool(fx);
            let ok = fx.b.binary(BinOp::Or, is_float, is_int);
            type_error(fx, ok);
            // Both readings of the 8 value bytes, then the one the type index names.
            let as_float = fx.b.load(Ty::F64, src.base, value_off);
            let as_int = fx.b.load(Ty::I64, src.base, value_off);
            let from_int = fx.b.convert(ConvOp::StoF, as_int, Ty::F64);
            let wide = fx.b.select(is_float, as_float, from_int);
            let (lty, value) = match ft {
                FloatType::F64 => (Ty::F64, wide),
                FloatType::F32 => (Ty::F32, fx.b.convert(ConvOp::Fdemote, wide, Ty::F32)),
            };
            let var = fx.entry_var(lty, 0);
            fx.b.assign(var, value);
            Binding::Scalar {
                var,
                ty: ScalarType::Float(*ft),
                guard,
            }
        }
        ParamType::Ptr | ParamType::DataPtr | ParamType::Stream => {
            // Ptr: void* or None. DataPtr: void* or int. Stream: void*, int or None.
            let accepts_int = !matches!(ty, ParamType::Ptr);
            let accepts_none = !matches!(ty, ParamType::DataPtr);
            let mut ok = is(fx, ti::OPAQUE_PTR);
            if accepts_int {
                let int = is(fx, ti::INT);
                ok = fx.b.binary(BinOp::Or, ok, int);
            }
            if accepts_none {
                let none = is(fx, ti::NONE);
                ok = fx.b.binary(BinOp::Or, ok, none);
            }
            type_error(fx, ok);
            // The value of None is all zero bits (null), so one load covers every case.
            let raw = fx.b.load(Ty::Ptr, src.base, value_off);
            let var = fx.entry_var(Ty::Ptr, 0);
            fx.b.assign(var, raw);
            Binding::Scalar {
                var,
                ty: ScalarType::Ptr,
                guard,
            }
        }
        ParamType::Device => {
            let ok = is(fx, ti::DEVICE);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I64, src.base, value_off);
            let var = fx.entry_var(Ty::I64, 0);
            fx.b.assign(var, raw);
            Binding::Device { var, guard }
        }
        ParamType::DType => {
            let ok = is(fx, ti::DATA_TYPE);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I32, src.base, value_off);
            let var = fx.entry_var(Ty::I32, 0);
            fx.b.assign(var, raw);
            Binding::DType { var, guard }
        }
        ParamType::Str | ParamType::Bytes | ParamType::Shape | ParamType::Func => {
            let (accepted, ir_ty): (&[i32], crate::ir::Type) = match ty {
                ParamType::Str => (&[ti::RAW_STR, ti::SMALL_STR, ti::STR], crate::ir::Type::Str),
                ParamType::Bytes => (
                    &[ti::BYTE_ARRAY_PTR, ti::SMALL_BYTES, ti::BYTES],
                    crate::ir::Type::Bytes,
                ),
                ParamType::Shape => (&[ti::SHAPE], crate::ir::Type::Shape),
                _ => (&[ti::FUNCTION], crate::ir::Type::Func),
            };
            let mut ok = is(fx, accepted[0]);
            for &index in &accepted[1..] {
                let more = is(fx, index);
                ok = fx.b.binary(BinOp::Or, ok, more);
            }
            type_error(fx, ok);
            Binding::Ref {
                any: any_ptr,
                ty: ir_ty,
                guard,
            }
        }
        ParamType::Any => Binding::Ref {
            any: any_ptr,
            ty: crate::ir::Type::Any,
            guard,
        },
        ParamType::Tensor(spec) => {
            let is_obj = is(fx, ti::TENSOR);
            let is_ptr = is(fx, ti::DL_TENSOR_PTR);
            let ok = fx.b.binary(BinOp::Or, is_obj, is_ptr);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::Ptr, src.base, value_off);
            let null = fx.b.iconst(Ty::Ptr, 0);
            let non_null = fx.b.icmp(IntCC::Ne, raw, null);
            let msg = format!("{prefix}expected Tensor, got a NULL ");
            fx.check_arg(non_null, "TypeError", |_| {
                vec![MsgPart::Text(msg), MsgPart::Value(Tag::TypeIndex, type_idx)]
            });
            let embedded = fx.b.ptr_add_imm(raw, TENSOR_OBJECT_DLTENSOR_OFFSET as i64);
            let dl_value = fx.b.select(is_obj, embedded, raw);
            let dl = fx.entry_var(Ty::Ptr, 0);
            fx.b.assign(dl, dl_value);
            tensors.push(TensorLeaf {
                name: param.name.clone(),
                label: label.to_owned(),
                spec: spec.clone(),
                dl,
                guard: guard.clone(),
            });
            Binding::Tensor(TensorBinding {
                any: any_ptr,
                dl,
                spec: spec.clone(),
                shape: None,
                guard,
            })
        }
        ParamType::Const(c) => decode_const(fx, c, src, type_idx, &prefix, type_error, guard),
        ParamType::Tuple(items) => {
            let is_array = is(fx, ti::ARRAY);
            let is_list = is(fx, ti::LIST);
            let ok = fx.b.binary(BinOp::Or, is_array, is_list);
            type_error(fx, ok);
            // Safety boundary: the array object is read below.
            fx.flush_checks();
            let obj = fx.b.load(Ty::Ptr, src.base, value_off);
            let size = fx.b.load(Ty::I64, obj, SEQ_OBJECT_SIZE_OFFSET);
            let n = items.len() as i64;
            let ok = fx.b.icmp_imm(IntCC::Eq, size, n);
            fx.check_arg(ok, "ValueError", |_| {
                vec![
                    MsgPart::text(format!(
                        "{prefix}expected {n} element{}, got ",
                        if n == 1 { "" } else { "s" }
                    )),
                    MsgPart::Value(Tag::I64, size),
                ]
            });
            // Safety boundary: the elements are read below.
            fx.flush_checks();
            let data = fx.b.load(Ty::Ptr, obj, SEQ_OBJECT_DATA_OFFSET);
            for (j, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{j}]");
                let item_label = format!("'{}' ({item_path})", item.name);
                let item_src = AnySrc {
                    base: data,
                    offset: j * ANY_SIZE,
                };
                decode(
                    fx,
                    item,
                    item_src,
                    item_label,
                    &item_path,
                    guard.clone(),
                    tensors,
                )?;
            }
            Binding::Ref {
                any: any_ptr,
                ty: crate::ir::Type::Any,
                guard,
            }
        }
        ParamType::Optional(_) => {
            return Err(format!(
                "parameter `{}`: Optional[Optional[...]] is not supported",
                param.name
            ));
        }
    };
    fx.bind(&param.name, binding);
    Ok(())
}

/// A constant parameter: the argument must carry exactly the value the kernel was specialized on.
fn decode_const(
    fx: &mut FnCtx<'_, '_>,
    c: &ConstValue,
    src: AnySrc,
    type_idx: Var,
    prefix: &str,
    type_error: &dyn Fn(&mut FnCtx<'_, '_>, Var),
    guard: Option<NoneGuard>,
) -> Binding {
    let value_off = src.offset + ANY_VALUE_OFFSET;
    let is =
        |fx: &mut FnCtx<'_, '_>, index: i32| fx.b.icmp_imm(IntCC::Eq, type_idx, i64::from(index));
    let want = schema::const_text(c);
    match *c {
        ConstValue::None => {
            let ok = is(fx, ti::NONE);
            type_error(fx, ok);
            Binding::Unit
        }
        ConstValue::Int(_) | ConstValue::Bool(_) => {
            let (expected, ty) = match *c {
                ConstValue::Int(v) => (v, ScalarType::Int(IntType::I64)),
                ConstValue::Bool(b) => (i64::from(b), ScalarType::Bool),
                _ => unreachable!(),
            };
            let a = is(fx, ti::INT);
            let b = is(fx, ti::BOOL);
            let ok = fx.b.binary(BinOp::Or, a, b);
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I64, src.base, value_off);
            let equal = fx.b.icmp_imm(IntCC::Eq, raw, expected);
            let msg = format!("{prefix}expected the constant {want}, got ");
            fx.check_arg(equal, "ValueError", |fx| {
                // A bool argument is shown as the constants are (True / False), an int as a
                // number.
                let bool_block = fx.b.new_cold_block();
                let int_block = fx.b.new_cold_block();
                let is_bool = fx.b.icmp_imm(IntCC::Eq, type_idx, i64::from(ti::BOOL));
                fx.b.branch(is_bool, bool_block, int_block);
                fx.b.switch_to(bool_block);
                let true_text = fx.m.cstring(b"True");
                let false_text = fx.m.cstring(b"False");
                let t = fx.b.symbol_addr(Symbol::Data(true_text));
                let f = fx.b.symbol_addr(Symbol::Data(false_text));
                let nonzero = fx.b.icmp_imm(IntCC::Ne, raw, 0);
                let shown = fx.b.select(nonzero, t, f);
                fx.fail(
                    "ValueError",
                    vec![MsgPart::Text(msg.clone()), MsgPart::Value(Tag::CStr, shown)],
                );
                fx.b.switch_to(int_block);
                vec![MsgPart::Text(msg), MsgPart::Value(Tag::I64, raw)]
            });
            let value = if ty == ScalarType::Bool {
                fx.b.iconst(Ty::I8, expected)
            } else {
                fx.b.iconst(Ty::I64, expected)
            };
            Binding::Scalar {
                var: value,
                ty,
                guard,
            }
        }
        ConstValue::Float(bits) => {
            let is_float = is(fx, ti::FLOAT);
            let f = f64::from_bits(bits);
            // An int argument is accepted when the constant is an integer it converts to exactly.
            let int_equivalent = (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64);
            let ok = match int_equivalent {
                Some(_) => {
                    let is_int = is(fx, ti::INT);
                    fx.b.binary(BinOp::Or, is_float, is_int)
                }
                None => is_float,
            };
            type_error(fx, ok);
            let raw = fx.b.load(Ty::I64, src.base, value_off);
            let as_float_bits = fx.b.icmp_imm(IntCC::Eq, raw, bits as i64);
            let equal = match int_equivalent {
                Some(iv) => {
                    let as_int = fx.b.icmp_imm(IntCC::Eq, raw, iv);
                    fx.b.select(is_float, as_float_bits, as_int)
                }
                None => as_float_bits,
            };
            // The bits of both values are shown: two floats that print alike may differ.
            let msg = format!("{prefix}expected the constant {want} (bits {bits:#x}), got ");
            fx.check_arg(equal, "ValueError", |fx| {
                if int_equivalent.is_some() {
                    // An int argument is shown as the int it is.
                    let float_block = fx.b.new_cold_block();
                    let int_block = fx.b.new_cold_block();
                    fx.b.branch(is_float, float_block, int_block);
                    fx.b.switch_to(int_block);
                    fx.fail(
                        "ValueError",
                        vec![MsgPart::Text(msg.clone()), MsgPart::Value(Tag::I64, raw)],
                    );
                    fx.b.switch_to(float_block);
                }
                let shown = fx.b.convert(ConvOp::Bitcast, raw, Ty::F64);
                vec![
                    MsgPart::Text(msg),
                    MsgPart::Value(Tag::F64, shown),
                    MsgPart::text(" (bits "),
                    MsgPart::Value(Tag::Ptr, raw),
                    MsgPart::text(")"),
                ]
            });
            let value = fx.b.fconst(Ty::F64, bits);
            Binding::Scalar {
                var: value,
                ty: ScalarType::Float(FloatType::F64),
                guard,
            }
        }
    }
}
