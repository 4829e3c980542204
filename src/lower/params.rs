//! Argument decoding and checks, in the order of DESIGN.md §3:
//! 1. the argument count;
//! 2. per parameter (tuple elements after their tuple), the type index, and the value;
//! 3. per tensor: ndim, dtype, device type, constant dims, symbolic dims, strides,
//!    byte_offset, alignment, non-NULL data, device id, element-count limit;
//! 4. constraints (divisibility).

use std::collections::HashMap;

use safecall_runtime::abi::{
    ANY_SIZE, ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, DLTENSOR_BYTE_OFFSET_OFFSET,
    DLTENSOR_DATA_OFFSET, DLTENSOR_DEVICE_ID_OFFSET, DLTENSOR_DEVICE_TYPE_OFFSET,
    DLTENSOR_DTYPE_OFFSET, DLTENSOR_NDIM_OFFSET, DLTENSOR_SHAPE_OFFSET, DLTENSOR_STRIDES_OFFSET,
    SEQ_OBJECT_DATA_OFFSET, SEQ_OBJECT_SIZE_OFFSET, TENSOR_OBJECT_DLTENSOR_OFFSET,
    type_index as ti,
};

use crate::ir::{
    ByteOffsetPolicy, ConstValue, Constraint, DeviceIdPolicy, Dim, FloatType, IntType, Param,
    ParamType, ScalarType, Strides, TensorSpec,
};
use crate::lir::{BinOp, ConvOp, IntCC, Symbol, Ty, Var};

use super::function::{Binding, FnCtx, NoneGuard, TensorBinding};
use super::raise::{MsgPart, Tag};
use super::schema::{self, expected_text, int_range, is_signed};

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

/// What identifies a symbolic binding: a named variable, or "the common device id".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SymKey {
    Named(String),
    SameDevice,
}

/// How far a symbolic variable is bound at the current point of the checks.
#[derive(Clone, Debug)]
enum SymState {
    /// Bound on every path, by this occurrence.
    Bound { binder: String },
    /// Bound at run time by the first of `binders` that counted (its argument was present,
    /// and for a stride, its dim was not of extent 1 in a non-empty tensor). `flag` (`I8`) is
    /// [`UNBOUND`], [`BOUND`], or [`FALLBACK`].
    Dynamic { flag: Var, binders: Vec<String> },
}

/// No occurrence has given the variable a value.
const UNBOUND: i64 = 0;
/// An occurrence that counts has bound the variable.
const BOUND: i64 = 1;
/// Only occurrences that do not count were seen: the variable holds the first one's value
/// (a stride of an extent-1 dim), which nothing is checked against.
const FALLBACK: i64 = 2;

/// How messages name where a dynamically bound variable got its value.
fn bound_by_text(binders: &[String]) -> String {
    match binders {
        [] => String::new(),
        [one] => format!(", bound by {one}"),
        [init @ .., last] => format!(", bound by {} or {last}", init.join(", ")),
    }
}

struct Syms {
    vars: HashMap<SymKey, Var>,
    state: HashMap<SymKey, SymState>,
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
    fx.check_arg(ok, "TypeError", |fx| {
        vec![
            MsgPart::text(format!(
                "{}: expected {n} argument{}, got ",
                fx.signature(),
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

/// The lowered type of an integer type.
pub(crate) fn int_lir_type(t: IntType) -> Ty {
    match t {
        IntType::I8 | IntType::U8 => Ty::I8,
        IntType::I16 | IntType::U16 => Ty::I16,
        IntType::I32 | IntType::U32 => Ty::I32,
        IntType::I64 | IntType::U64 => Ty::I64,
    }
}

/// Runs the phase-3 checks of one tensor; binds its shape values when they dominate the body.
fn check_tensor(fx: &mut FnCtx<'_, '_>, leaf: &TensorLeaf, syms: &mut Syms) {
    if fx.b.annotating() {
        fx.b.source(format!(
            "check tensor {}: {}",
            leaf.label,
            schema::tensor_text(&leaf.spec)
        ));
    }
    let join = leaf.guard.as_ref().map(|g| {
        let present = fx.b.new_block();
        let join = fx.b.new_block();
        fx.branch(g.is_none, join, present);
        fx.b.switch_to(present);
        join
    });
    let guarded = leaf.guard.is_some();
    let spec = &leaf.spec;
    let dl = leaf.dl;
    let prefix = fx.message_prefix(&leaf.label);
    let ndim = spec.shape.len();

    // Safety boundary: the DLTensor is read below (its argument's type and pointer are checked).
    fx.flush_checks();

    // ndim
    let actual_ndim = fx.b.load(Ty::I32, dl, DLTENSOR_NDIM_OFFSET);
    let ok = fx.b.icmp_imm(IntCC::Eq, actual_ndim, ndim as i64);
    fx.check_arg(ok, "ValueError", |_| {
        vec![
            MsgPart::text(format!("{prefix}ndim is ")),
            MsgPart::Value(Tag::I64, actual_ndim),
            MsgPart::text(format!(", expected {ndim}")),
        ]
    });

    // dtype (a TypeError: the element type is part of the argument's type)
    if let Some(dtype) = spec.dtype {
        let packed =
            i64::from(dtype.code) | i64::from(dtype.bits) << 8 | i64::from(dtype.lanes) << 16;
        let actual = fx.b.load(Ty::I32, dl, DLTENSOR_DTYPE_OFFSET);
        let actual64 = fx.b.resize(actual, Ty::I64, false);
        let ok = fx.b.icmp_imm(IntCC::Eq, actual64, packed);
        let want = schema::dtype_text(Some(dtype));
        fx.check_arg(ok, "TypeError", |_| {
            vec![
                MsgPart::text(format!("{prefix}dtype is ")),
                MsgPart::Value(Tag::DType, actual),
                MsgPart::text(format!(", expected {want}")),
            ]
        });
    }

    // device type
    if let Some(device_type) = spec.device_type {
        let actual = fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_TYPE_OFFSET);
        let ok = fx.b.icmp_imm(IntCC::Eq, actual, i64::from(device_type));
        let want = schema::device_type_text(device_type);
        fx.check_arg(ok, "ValueError", |fx| {
            let device = fx.b.load(Ty::I64, dl, DLTENSOR_DEVICE_TYPE_OFFSET);
            vec![
                MsgPart::text(format!("{prefix}device is ")),
                MsgPart::Value(Tag::Device, device),
                MsgPart::text(format!(", expected a {want} tensor")),
            ]
        });
    }

    // Safety boundary: `ndim` shape entries are read below.
    fx.flush_checks();

    // shape: constant dims first, then symbolic ones
    let shape_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
    let dims: Vec<Var> = (0..ndim)
        .map(|k| fx.b.load(Ty::I64, shape_ptr, k * 8))
        .collect();
    for (k, dim) in spec.shape.iter().enumerate() {
        if let Dim::Const(c) = dim {
            let ok = fx.b.icmp_imm(IntCC::Eq, dims[k], *c);
            let actual = dims[k];
            fx.check_arg(ok, "ValueError", |_| {
                vec![
                    MsgPart::text(format!("{prefix}shape[{k}] is ")),
                    MsgPart::Value(Tag::I64, actual),
                    MsgPart::text(format!(", expected {c}")),
                ]
            });
        }
    }
    for (k, dim) in spec.shape.iter().enumerate() {
        if let Dim::Var(name) = dim {
            let what = format!("shape[{k}]");
            let binder = format!("{}.shape[{k}]", leaf.name);
            bind_or_compare(
                fx,
                syms,
                SymKey::Named(name.clone()),
                dims[k],
                guarded,
                &prefix,
                &what,
                name,
                &binder,
                None,
            );
        }
    }

    // Zero-element tensors pass the stride, alignment and data checks whatever their fields.
    let has_zero = any_zero(fx, &dims);
    let nonempty = {
        let one = fx.b.iconst(Ty::I8, 1);
        fx.b.binary(BinOp::Xor, has_zero, one)
    };

    // strides
    match &spec.strides {
        Strides::Any => {}
        Strides::Compact => {
            if ndim > 0 {
                let strides_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_STRIDES_OFFSET);
                let null = fx.b.iconst(Ty::Ptr, 0);
                let has_strides = fx.b.icmp(IntCC::Ne, strides_ptr, null);
                let check_needed = fx.b.binary(BinOp::And, has_strides, nonempty);
                let check_block = fx.b.new_block();
                let done = fx.b.new_block();
                fx.branch(check_needed, check_block, done);
                fx.b.switch_to(check_block);
                let compact = compact_strides(fx, &dims);
                for k in (0..ndim).rev() {
                    let actual = fx.b.load(Ty::I64, strides_ptr, k * 8);
                    let equal = fx.b.icmp(IntCC::Eq, actual, compact[k]);
                    let unit = fx.b.icmp_imm(IntCC::Eq, dims[k], 1);
                    let ok = fx.b.binary(BinOp::Or, equal, unit);
                    let expected = compact[k];
                    fx.check_arg(ok, "ValueError", |_| {
                        vec![
                            MsgPart::text(format!("{prefix}strides[{k}] is ")),
                            MsgPart::Value(Tag::I64, actual),
                            MsgPart::text(", expected "),
                            MsgPart::Value(Tag::I64, expected),
                            MsgPart::text(
                                " (the tensor must be compact: row-major and contiguous)",
                            ),
                        ]
                    });
                }
                fx.jump(done);
                fx.b.switch_to(done);
            }
        }
        Strides::Exact(wanted) => {
            let actual = effective_strides(fx, dl, &dims);
            let exempt = has_zero;
            for (k, want) in wanted.iter().enumerate() {
                let unit = fx.b.icmp_imm(IntCC::Eq, dims[k], 1);
                let skip = fx.b.binary(BinOp::Or, unit, exempt);
                let value = actual[k];
                match want {
                    Dim::Const(c) => {
                        let equal = fx.b.icmp_imm(IntCC::Eq, value, *c);
                        let ok = fx.b.binary(BinOp::Or, equal, skip);
                        fx.check_arg(ok, "ValueError", |_| {
                            vec![
                                MsgPart::text(format!("{prefix}strides[{k}] is ")),
                                MsgPart::Value(Tag::I64, value),
                                MsgPart::text(format!(", expected {c}")),
                            ]
                        });
                    }
                    Dim::Var(name) => {
                        let what = format!("strides[{k}]");
                        let binder = format!("{}.strides[{k}]", leaf.name);
                        bind_or_compare(
                            fx,
                            syms,
                            SymKey::Named(name.clone()),
                            value,
                            guarded,
                            &prefix,
                            &what,
                            name,
                            &binder,
                            Some(skip),
                        );
                    }
                }
            }
        }
    }

    // byte_offset
    let byte_offset = match spec.byte_offset {
        ByteOffsetPolicy::Zero => {
            let actual = fx.b.load(Ty::I64, dl, DLTENSOR_BYTE_OFFSET_OFFSET);
            let ok = fx.b.icmp_imm(IntCC::Eq, actual, 0);
            fx.check_arg(ok, "ValueError", |_| {
                vec![
                    MsgPart::text(format!("{prefix}byte_offset is ")),
                    MsgPart::Value(Tag::U64, actual),
                    MsgPart::text(", expected 0"),
                ]
            });
            None
        }
        ByteOffsetPolicy::Any => Some(fx.b.load(Ty::I64, dl, DLTENSOR_BYTE_OFFSET_OFFSET)),
    };

    // alignment and non-NULL data (non-empty tensors only)
    let data = fx.b.load(Ty::Ptr, dl, DLTENSOR_DATA_OFFSET);
    {
        if let Some(align) = spec.alignment.filter(|a| *a > 1) {
            let base = fx.b.convert(ConvOp::PtrToInt, data, Ty::I64);
            let addr = match byte_offset {
                Some(off) => fx.b.binary(BinOp::Iadd, base, off),
                None => base,
            };
            let low = fx.b.binary_imm(BinOp::And, addr, i64::from(align) - 1);
            let aligned = fx.b.icmp_imm(IntCC::Eq, low, 0);
            let ok = fx.b.binary(BinOp::Or, aligned, has_zero);
            let what = if byte_offset.is_some() {
                "data pointer + byte_offset"
            } else {
                "data pointer"
            };
            fx.check_arg(ok, "ValueError", |_| {
                vec![
                    MsgPart::text(format!("{prefix}{what} ")),
                    MsgPart::Value(Tag::Ptr, addr),
                    MsgPart::text(format!(" is not aligned to {align} bytes")),
                ]
            });
        }
        let null = fx.b.iconst(Ty::Ptr, 0);
        let non_null = fx.b.icmp(IntCC::Ne, data, null);
        let ok = fx.b.binary(BinOp::Or, non_null, has_zero);
        fx.check_arg(ok, "ValueError", |_| {
            vec![MsgPart::text(format!(
                "{prefix}data pointer is NULL but the tensor has elements"
            ))]
        });
    }

    // device id
    let device_key = match &spec.device_id {
        DeviceIdPolicy::Free => None,
        DeviceIdPolicy::Same => Some((
            SymKey::SameDevice,
            "device id of the tensor arguments".to_owned(),
        )),
        DeviceIdPolicy::Var(name) => Some((SymKey::Named(name.clone()), name.clone())),
    };
    if let Some((key, shown)) = device_key {
        let id32 = fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_ID_OFFSET);
        let id = fx.b.resize(id32, Ty::I64, true);
        let binder = format!("{}.device", leaf.name);
        bind_or_compare(
            fx,
            syms,
            key,
            id,
            guarded,
            &prefix,
            "device id",
            &shown,
            &binder,
            None,
        );
    }

    // element count limit
    if let Some(index) = spec.index_type {
        let limit = int_range(index).1;
        let ok = fx.b.mutable_var(Ty::I8);
        fx.b.assign_iconst(ok, 1);
        let product = fx.b.mutable_var(Ty::I64);
        fx.b.assign_iconst(product, 1);
        for &d in &dims {
            // Overflow-free: product * d <= limit  <=>  product <= limit / d (d >= 1 here).
            let safe_d = {
                let one = fx.b.iconst(Ty::I64, 1);
                let lt1 = fx.b.icmp_imm(IntCC::Slt, d, 1);
                fx.b.select(lt1, one, d)
            };
            let limit_v = fx.b.iconst(Ty::I64, limit);
            let quotient = fx.b.binary(BinOp::Sdiv, limit_v, safe_d);
            let fits = fx.b.icmp(IntCC::Sle, product, quotient);
            let both = fx.b.binary(BinOp::And, ok, fits);
            fx.b.assign(ok, both);
            let next = fx.b.binary(BinOp::Imul, product, safe_d);
            let kept = fx.b.select(fits, next, product);
            fx.b.assign(product, kept);
        }
        let pass = fx.b.binary(BinOp::Or, ok, has_zero);
        let name = schema::int_name(index);
        fx.check_arg(pass, "ValueError", |_| {
            let mut parts = vec![MsgPart::text(format!(
                "{prefix}has more than {limit} elements (the largest {name} index), shape is ("
            ))];
            for (k, &d) in dims.iter().enumerate() {
                if k > 0 {
                    parts.push(MsgPart::text(", "));
                }
                parts.push(MsgPart::Value(Tag::I64, d));
            }
            parts.push(MsgPart::text(if dims.len() == 1 { ",)" } else { ")" }));
            parts
        });
    }

    if let Some(join) = join {
        fx.jump(join);
        fx.b.switch_to(join);
    }
    // Shape values loaded here dominate the body only when the tensor is always present.
    if let (false, Ok(Binding::Tensor(mut t))) = (guarded, fx.lookup(&leaf.name)) {
        t.shape = Some(dims);
        fx.bind(&leaf.name, Binding::Tensor(t));
    }
}

/// `I8` 1 when any dim is 0.
fn any_zero(fx: &mut FnCtx<'_, '_>, dims: &[Var]) -> Var {
    let mut acc = fx.b.iconst(Ty::I8, 0);
    for &d in dims {
        let z = fx.b.icmp_imm(IntCC::Eq, d, 0);
        acc = fx.b.binary(BinOp::Or, acc, z);
    }
    acc
}

/// Row-major compact strides of a shape.
pub(crate) fn compact_strides(fx: &mut FnCtx<'_, '_>, dims: &[Var]) -> Vec<Var> {
    let mut strides = vec![fx.b.iconst(Ty::I64, 1); dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        strides[k] = fx.b.binary(BinOp::Imul, strides[k + 1], dims[k + 1]);
    }
    strides
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

/// An occurrence of a symbolic variable: the first binds it, later ones must match.
/// `skip` (an `I8`) makes the occurrence not count at run time (strides of extent-1 dims and
/// of empty tensors): it is not compared, and binds only a fallback value.
#[allow(clippy::too_many_arguments)]
fn bind_or_compare(
    fx: &mut FnCtx<'_, '_>,
    syms: &mut Syms,
    key: SymKey,
    value: Var,
    guarded: bool,
    prefix: &str,
    what: &str,
    shown: &str,
    binder: &str,
    skip: Option<Var>,
) {
    let var = *syms
        .vars
        .entry(key.clone())
        .or_insert_with(|| fx.entry_var(Ty::I64, 0));
    let compare = |fx: &mut FnCtx<'_, '_>, bound_by: String| {
        let key = &key;
        let mut ok = fx.b.icmp(IntCC::Eq, value, var);
        if let Some(s) = skip {
            ok = fx.b.binary(BinOp::Or, ok, s);
        }
        let same_device = *key == SymKey::SameDevice;
        fx.check_arg(ok, "ValueError", |_| {
            // `(= n, bound by x.shape[0])`; for the common device id, `(the device id of x)`.
            let source = if same_device {
                match bound_by.strip_prefix(", bound by ") {
                    Some(binders) => {
                        format!(" (the device id of {})", binders.replace(".device", ""))
                    }
                    None => String::new(),
                }
            } else {
                format!(" (= {shown}{bound_by})")
            };
            vec![
                MsgPart::text(format!("{prefix}{what} is ")),
                MsgPart::Value(Tag::I64, value),
                MsgPart::text(", expected "),
                MsgPart::Value(Tag::I64, var),
                MsgPart::Text(source),
            ]
        });
    };
    match syms.state.get(&key).cloned() {
        Some(SymState::Bound { binder: first }) => compare(fx, format!(", bound by {first}")),
        state => {
            if state.is_none() && !guarded && skip.is_none() {
                fx.b.assign(var, value);
                syms.state.insert(
                    key,
                    SymState::Bound {
                        binder: binder.to_owned(),
                    },
                );
                return;
            }
            // Dynamic: bound by the first occurrence that counts.
            let (flag, mut binders) = match state {
                Some(SymState::Dynamic { flag, binders }) => (flag, binders),
                _ => (fx.entry_var(Ty::I8, UNBOUND), Vec::new()),
            };
            let bound_by = bound_by_text(&binders);
            let compare_block = fx.b.new_block();
            let bind_block = fx.b.new_block();
            let join = fx.b.new_block();
            let is_bound = fx.b.icmp_imm(IntCC::Eq, flag, BOUND);
            fx.branch(is_bound, compare_block, bind_block);
            fx.b.switch_to(compare_block);
            compare(fx, bound_by);
            fx.jump(join);
            fx.b.switch_to(bind_block);
            match skip {
                None => {
                    fx.b.assign(var, value);
                    fx.b.assign_iconst(flag, BOUND);
                }
                Some(skip) => {
                    // Not counting: keep an earlier fallback, else take this value as one.
                    let had_fallback = fx.b.icmp_imm(IntCC::Eq, flag, FALLBACK);
                    let keep = fx.b.binary(BinOp::And, skip, had_fallback);
                    let new_value = fx.b.select(keep, var, value);
                    fx.b.assign(var, new_value);
                    let bound = fx.b.iconst(Ty::I8, BOUND);
                    let fallback = fx.b.iconst(Ty::I8, FALLBACK);
                    let new_flag = fx.b.select(skip, fallback, bound);
                    fx.b.assign(flag, new_flag);
                }
            }
            fx.jump(join);
            fx.b.switch_to(join);
            let new_state = if guarded || skip.is_some() {
                binders.push(binder.to_owned());
                SymState::Dynamic { flag, binders }
            } else {
                SymState::Bound {
                    binder: binder.to_owned(),
                }
            };
            syms.state.insert(key, new_state);
        }
    }
}

/// A divisibility constraint on an integer parameter or symbolic variable.
fn lower_constraint(
    fx: &mut FnCtx<'_, '_>,
    constraint: &Constraint,
    syms: &Syms,
) -> Result<(), String> {
    let Constraint::Divisible { var: name, divisor } = constraint;
    if *divisor == 0 {
        return Err(format!(
            "constraint `{name} % 0 == 0`: the divisor must be positive"
        ));
    }
    let divisor_i64 = i64::try_from(*divisor).map_err(|_| {
        format!("constraint `{name} % {divisor} == 0`: the divisor is larger than i64::MAX")
    })?;
    if fx.b.annotating() {
        fx.b.source(format!("check constraint {name} % {divisor} == 0"));
    }
    let (value, present, before, after) = match fx.lookup(name)? {
        Binding::Scalar {
            var,
            ty: ScalarType::Int(t),
            guard,
        } => {
            let wide = fx.b.resize(var, Ty::I64, is_signed(t));
            let label = fx
                .func
                .params
                .iter()
                .position(|p| &p.name == name)
                .map(|i| format!("'{name}' (#{i})"))
                .unwrap_or_else(|| format!("'{name}'"));
            let present = guard.map(|g| {
                let zero = fx.b.iconst(Ty::I8, 0);
                fx.b.icmp(IntCC::Eq, g.is_none, zero)
            });
            (wide, present, fx.arg_prefix(&label), String::new())
        }
        Binding::Sym { var, .. } => {
            // Checked only when an occurrence that counts bound the variable.
            let (binder, present) = match syms.state.get(&SymKey::Named(name.clone())) {
                Some(SymState::Bound { binder }) => (format!(" (bound by {binder})"), None),
                Some(SymState::Dynamic { flag, binders }) => {
                    let bound = fx.b.icmp_imm(IntCC::Eq, *flag, BOUND);
                    let text = match bound_by_text(binders).strip_prefix(", ") {
                        Some(text) => format!(" ({text})"),
                        None => String::new(),
                    };
                    (text, Some(bound))
                }
                None => (String::new(), None),
            };
            (
                var,
                present,
                format!("{}: {name} = ", fx.signature()),
                binder,
            )
        }
        _ => {
            return Err(format!(
                "constraint on `{name}`, which is not an integer parameter or symbolic variable"
            ));
        }
    };
    // The divisor is positive, so the signed remainder is never the trapping MIN % -1.
    let rem = fx.b.binary_imm(BinOp::Srem, value, divisor_i64);
    let mut ok = fx.b.icmp_imm(IntCC::Eq, rem, 0);
    if let Some(present) = present {
        let absent = {
            let one = fx.b.iconst(Ty::I8, 1);
            fx.b.binary(BinOp::Xor, present, one)
        };
        ok = fx.b.binary(BinOp::Or, ok, absent);
    }
    fx.check_arg(ok, "ValueError", |_| {
        vec![
            MsgPart::Text(before),
            MsgPart::Value(Tag::I64, value),
            MsgPart::text(format!("{after} is not a multiple of {divisor}")),
        ]
    });
    Ok(())
}
