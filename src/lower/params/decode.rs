//! Phase 2 of the argument checks: per parameter (tuple elements after their tuple), the type
//! index and the value, decoded into the binding of its name.

use std::rc::Rc;

use safecall_runtime::abi::{
    ANY_SIZE, ANY_TYPE_INDEX_OFFSET, ANY_VALUE_OFFSET, SEQ_OBJECT_DATA_OFFSET,
    SEQ_OBJECT_SIZE_OFFSET, TENSOR_OBJECT_DLTENSOR_OFFSET, type_index as ti,
};

use crate::ir::{ConstValue, FloatType, IntType, Param, ParamType, ScalarType, TensorSpec};
use crate::lir::{BinOp, ConvOp, IntCC, Symbol, Ty, Var};
use crate::lower::half;

use crate::lower::big_int;
use crate::lower::context::{Binding, FnCtx, NoneGuard, TensorBinding};
use crate::lower::layout::int_lir_type;
use crate::lower::raise::{MsgPart, Tag};
use crate::lower::schema::{self, expected_text, int_range, out_of_range_text};

use super::tensor::TensorLeaf;
use crate::lower::options::LowerError;
use safecall_runtime::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};

/// Where a parameter's `TVMFFIAny` is: `base + offset`.
#[derive(Clone, Copy, Debug)]
pub(super) struct AnySrc {
    pub base: Var,
    pub offset: usize,
}

/// One argument being decoded.
struct Arg<'p> {
    param: &'p Param,
    src: AnySrc,
    /// Pointer to the argument's `TVMFFIAny`.
    any_ptr: Var,
    /// Its type index (`I32`).
    type_idx: Var,
    /// `'x' (#0)` or `'x' (args[0][1])`, as messages name it.
    label: String,
    /// `args[0]`, `args[0][1]`: where the argument is (tuple elements extend it).
    path: &'p str,
    /// `"<name>: argument 'x' (#0): "` when explaining; empty on the fast path.
    prefix: String,
    /// The parameter type as type errors name it (only when explaining).
    expected: String,
}

impl Arg<'_> {
    /// `I8` 1 when the type index is `index`.
    fn is(&self, fx: &mut FnCtx<'_, '_>, index: i32) -> Var {
        fx.b.icmp_imm(IntCC::Eq, self.type_idx, i64::from(index))
    }

    /// `I8` 1 when the argument is an int or a bool.
    fn int_or_bool(&self, fx: &mut FnCtx<'_, '_>) -> Var {
        let a = self.is(fx, ti::INT);
        let b = self.is(fx, ti::BOOL);
        fx.b.binary(BinOp::Or, a, b)
    }

    /// The type check: a TypeError naming the expected type and the type index unless `ok`.
    fn type_error(&self, fx: &mut FnCtx<'_, '_>, ok: Var) {
        // Only the explain function shows the message: the fast path formats nothing.
        let msg = if fx.explaining() {
            format!("{}expected {}, got ", self.prefix, self.expected)
        } else {
            String::new()
        };
        let type_idx = self.type_idx;
        fx.check_arg(ok, TYPE_ERROR, |_| {
            vec![MsgPart::Text(msg), MsgPart::Value(Tag::TypeIndex, type_idx)]
        });
    }

    /// Loads the value field of the `TVMFFIAny` as `ty`.
    fn load_value(&self, fx: &mut FnCtx<'_, '_>, ty: Ty) -> Var {
        fx.b.load(ty, self.src.base, self.src.offset + ANY_VALUE_OFFSET)
    }
}

/// Phase 2 for one parameter (and, for tuples, its elements); binds the name.
pub(super) fn decode(
    fx: &mut FnCtx<'_, '_>,
    param: &Param,
    src: AnySrc,
    label: String,
    path: &str,
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
) -> Result<(), LowerError> {
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
    let any_ptr = fx.b.ptr_add_imm(src.base, src.offset as i64);
    let arg = Arg {
        param,
        src,
        any_ptr,
        type_idx,
        label,
        path,
        prefix,
        expected,
    };

    let ParamType::Optional(inner) = &param.ty else {
        return decode_value(fx, &arg, &param.ty, guard, tensors);
    };
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
        label: arg.label.clone(),
    });
    decode_value(fx, &arg, inner, guard, tensors)?;
    fx.jump(join);
    fx.b.switch_to(join);
    Ok(())
}

/// Checks the type index against a non-optional parameter type and binds the value.
fn decode_value(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    ty: &ParamType,
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
) -> Result<(), LowerError> {
    let binding = match ty {
        ParamType::Int(t) => decode_int(fx, arg, *t, guard),
        ParamType::Bool => decode_bool(fx, arg, guard),
        ParamType::Float(ft) => decode_float(fx, arg, *ft, guard),
        ParamType::Ptr | ParamType::DataPtr | ParamType::Stream => {
            decode_pointer(fx, arg, ty, guard)
        }
        ParamType::Device => {
            let ok = arg.is(fx, ti::DEVICE);
            arg.type_error(fx, ok);
            let var = decode_pod(fx, arg, Ty::I64, guard.is_some());
            Binding::Device { var, guard }
        }
        ParamType::DType => {
            let ok = arg.is(fx, ti::DATA_TYPE);
            arg.type_error(fx, ok);
            let var = decode_pod(fx, arg, Ty::I32, guard.is_some());
            Binding::DType { var, guard }
        }
        ParamType::Str | ParamType::Bytes | ParamType::Shape | ParamType::Func => {
            decode_object(fx, arg, ty, guard)
        }
        ParamType::Any => Binding::Ref {
            any: arg.any_ptr,
            guard,
        },
        ParamType::Tensor(spec) => decode_tensor(fx, arg, spec, guard, tensors),
        ParamType::Const(c) => decode_const(fx, arg, c, guard),
        ParamType::Tuple(items) => decode_tuple(fx, arg, items, guard, tensors)?,
        ParamType::Optional(_) => {
            return Err(LowerError::internal(format!(
                "parameter `{}`: Optional[Optional[...]] is not supported",
                arg.param.name
            )));
        }
    };
    fx.bind(&arg.param.name, binding);
    Ok(())
}

/// An int (or bool) in the range of the integer type, narrowed to it. An int beyond 64 bits
/// (an `ffi.BigInt`, as tvm_ffi passes a Python int outside `i64`) is a ValueError, out of
/// range, but for `u64` (see [`decode_u64`]).
fn decode_int(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    t: IntType,
    guard: Option<NoneGuard>,
) -> Binding {
    if t == IntType::U64 {
        return decode_u64(fx, arg, guard);
    }
    if fx.explaining() {
        // The fast path refuses a BigInt with the type check; the explain function says why.
        let big = arg.is(fx, ti::BIG_INT);
        let small = fx.b.icmp_imm(IntCC::Eq, big, 0);
        let text = out_of_range_text(t);
        let prefix = arg.prefix.clone();
        fx.check_arg(small, VALUE_ERROR, |_| {
            vec![
                MsgPart::Text(prefix),
                MsgPart::text(format!("the int{text}")),
            ]
        });
    }
    let ok = arg.int_or_bool(fx);
    arg.type_error(fx, ok);
    let raw = arg.load_value(fx, Ty::I64);
    let (lo, hi) = int_range(t);
    if (lo, hi) != (i64::MIN, i64::MAX) {
        let ge = fx.b.icmp_imm(IntCC::Sge, raw, lo);
        let le = fx.b.icmp_imm(IntCC::Sle, raw, hi);
        let ok = fx.b.binary(BinOp::And, ge, le);
        let prefix = &arg.prefix;
        fx.check_arg(ok, VALUE_ERROR, |_| {
            vec![
                MsgPart::Text(prefix.clone()),
                MsgPart::Value(Tag::I64, raw),
                MsgPart::text(out_of_range_text(t)),
            ]
        });
    }
    let lty = int_lir_type(t);
    let var = fx.decoded_var(lty, 0, guard.is_some());
    let narrowed = fx.b.resize(raw, lty, true);
    fx.b.assign(var, narrowed);
    Binding::Scalar { var, guard }
}

/// A `u64`: an int (or bool) from 0 to 2^63 - 1, or an `ffi.BigInt` of two words whose high
/// word is 0 (2^63 to 2^64 - 1: tvm_ffi passes a Python int beyond `i64` as a BigInt, whose
/// words are the minimal two's complement, so such a value has a zero sign word).
fn decode_u64(fx: &mut FnCtx<'_, '_>, arg: &Arg<'_>, guard: Option<NoneGuard>) -> Binding {
    let small = arg.int_or_bool(fx);
    let big = arg.is(fx, ti::BIG_INT);
    let ok = fx.b.binary(BinOp::Or, small, big);
    arg.type_error(fx, ok);
    let text = out_of_range_text(IntType::U64);
    let raw = arg.load_value(fx, Ty::I64);
    let non_negative = fx.b.icmp_imm(IntCC::Sge, raw, 0);
    let in_range = fx.b.binary(BinOp::Or, big, non_negative);
    let prefix = arg.prefix.clone();
    fx.check_arg(in_range, VALUE_ERROR, |_| {
        vec![
            MsgPart::Text(prefix.clone()),
            MsgPart::Value(Tag::I64, raw),
            MsgPart::text(text.clone()),
        ]
    });
    let var = fx.decoded_var(Ty::I64, 0, guard.is_some());
    fx.b.assign(var, raw);
    let words = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.branch(big, words, join);
    fx.b.switch_to(words);
    // The object is a BigInt (the type check above holds here).
    let obj = arg.load_value(fx, Ty::Ptr);
    let prefix = arg.prefix.clone();
    let low = big_int::read_u64(fx, obj, |fx, ok| {
        let (prefix, text) = (prefix.clone(), text.clone());
        fx.check_arg(ok, VALUE_ERROR, |_| {
            vec![
                MsgPart::Text(prefix),
                MsgPart::text(format!("the int{text}")),
            ]
        });
        fx.flush_checks();
    });
    fx.b.assign(var, low);
    fx.jump(join);
    fx.b.switch_to(join);
    Binding::Scalar { var, guard }
}

/// A bool (or int): non-zero is true. An `ffi.BigInt` (never zero) is true, as Python's
/// `bool()` of such an int is.
fn decode_bool(fx: &mut FnCtx<'_, '_>, arg: &Arg<'_>, guard: Option<NoneGuard>) -> Binding {
    let small = arg.int_or_bool(fx);
    let big = arg.is(fx, ti::BIG_INT);
    let ok = fx.b.binary(BinOp::Or, small, big);
    arg.type_error(fx, ok);
    let raw = arg.load_value(fx, Ty::I64);
    let var = fx.decoded_var(Ty::I8, 0, guard.is_some());
    let nz = fx.b.icmp_imm(IntCC::Ne, raw, 0);
    let nz = fx.b.binary(BinOp::Or, nz, big);
    fx.b.assign(var, nz);
    Binding::Scalar { var, guard }
}

/// A float, or an int converted to one: an `ffi.BigInt` (a Python int beyond `i64`) to the
/// nearest `f64`, as Python's `float()` converts it; one that rounds beyond the `f64` range is
/// a ValueError. An `f32` or half is then rounded from that `f64`, as from a float.
fn decode_float(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    ft: FloatType,
    guard: Option<NoneGuard>,
) -> Binding {
    let is_float = arg.is(fx, ti::FLOAT);
    let is_int = arg.int_or_bool(fx);
    let big = arg.is(fx, ti::BIG_INT);
    let ok = fx.b.binary(BinOp::Or, is_float, is_int);
    let ok = fx.b.binary(BinOp::Or, ok, big);
    arg.type_error(fx, ok);
    // Both readings of the 8 value bytes, then the one the type index names.
    let as_float = arg.load_value(fx, Ty::F64);
    let as_int = arg.load_value(fx, Ty::I64);
    let from_int = fx.b.convert(ConvOp::StoF, as_int, Ty::F64);
    let selected = fx.b.select(is_float, as_float, from_int);
    let prefix = arg.prefix.clone();
    let wide = big_int::f64_or_big_int(
        fx,
        selected,
        big,
        |fx| arg.load_value(fx, Ty::Ptr),
        |fx, ok| {
            let prefix = prefix.clone();
            fx.check_arg(ok, VALUE_ERROR, |_| {
                vec![
                    MsgPart::Text(prefix),
                    MsgPart::text(big_int::F64_RANGE_TEXT),
                ]
            });
            fx.flush_checks();
        },
    );
    let (lty, value) = match ft {
        FloatType::F64 => (Ty::F64, wide),
        FloatType::F32 => (Ty::F32, fx.b.convert(ConvOp::Fdemote, wide, Ty::F32)),
        // Rounded once from the f64 (to nearest, ties to even).
        FloatType::F16 | FloatType::BF16 => (Ty::I16, half::round_from_f64(&mut fx.b, wide, ft)),
    };
    let var = fx.decoded_var(lty, 0, guard.is_some());
    fx.b.assign(var, value);
    Binding::Scalar { var, guard }
}

/// `Ptr`: void* or None. `DataPtr`: void* or int. `Stream`: void*, int or None.
fn decode_pointer(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    ty: &ParamType,
    guard: Option<NoneGuard>,
) -> Binding {
    let accepts_int = !matches!(ty, ParamType::Ptr);
    let accepts_none = !matches!(ty, ParamType::DataPtr);
    let mut ok = arg.is(fx, ti::OPAQUE_PTR);
    if accepts_int {
        let int = arg.is(fx, ti::INT);
        ok = fx.b.binary(BinOp::Or, ok, int);
    }
    if accepts_none {
        let none = arg.is(fx, ti::NONE);
        ok = fx.b.binary(BinOp::Or, ok, none);
    }
    arg.type_error(fx, ok);
    // The value of None is all zero bits (null), so one load covers every case.
    let var = decode_pod(fx, arg, Ty::Ptr, guard.is_some());
    Binding::Scalar { var, guard }
}

/// The value field as `ty` (type already checked), in a variable defined from the entry when
/// the argument is `guarded` (inside an optional one).
fn decode_pod(fx: &mut FnCtx<'_, '_>, arg: &Arg<'_>, ty: Ty, guarded: bool) -> Var {
    let raw = arg.load_value(fx, ty);
    let var = fx.decoded_var(ty, 0, guarded);
    fx.b.assign(var, raw);
    var
}

/// A string, bytes, shape or function: borrowed in place (any of its type indices).
fn decode_object(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    ty: &ParamType,
    guard: Option<NoneGuard>,
) -> Binding {
    let accepted: &[i32] = match ty {
        ParamType::Str => &[ti::RAW_STR, ti::SMALL_STR, ti::STR],
        ParamType::Bytes => &[ti::BYTE_ARRAY_PTR, ti::SMALL_BYTES, ti::BYTES],
        ParamType::Shape => &[ti::SHAPE],
        ParamType::Int(_)
        | ParamType::Bool
        | ParamType::Float(_)
        | ParamType::Ptr
        | ParamType::Device
        | ParamType::DType
        | ParamType::Func
        | ParamType::Any
        | ParamType::Tensor(_)
        | ParamType::Optional(_)
        | ParamType::Const(_)
        | ParamType::Tuple(_)
        | ParamType::DataPtr
        | ParamType::Stream => &[ti::FUNCTION],
    };
    let mut ok = arg.is(fx, accepted[0]);
    for &index in &accepted[1..] {
        let more = arg.is(fx, index);
        ok = fx.b.binary(BinOp::Or, ok, more);
    }
    arg.type_error(fx, ok);
    Binding::Ref {
        any: arg.any_ptr,
        guard,
    }
}

/// `type_index >> OBJECT_KIND_SHIFT`: 1 for a tensor object, 0 for a `DLTensor*`.
const OBJECT_KIND_SHIFT: i64 = 6;
const _: () =
    assert!(ti::TENSOR >> OBJECT_KIND_SHIFT == 1 && ti::DL_TENSOR_PTR >> OBJECT_KIND_SHIFT == 0);

/// A tensor (object or `DLTensor*`, non-NULL): its `DLTensor`, queued for the phase-3 checks.
fn decode_tensor(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    spec: &TensorSpec,
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
) -> Binding {
    let is_obj = arg.is(fx, ti::TENSOR);
    let is_ptr = arg.is(fx, ti::DL_TENSOR_PTR);
    let ok = fx.b.binary(BinOp::Or, is_obj, is_ptr);
    arg.type_error(fx, ok);
    let raw = arg.load_value(fx, Ty::Ptr);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let non_null = fx.b.icmp(IntCC::Ne, raw, null);
    let msg = if fx.explaining() {
        format!("{}expected Tensor, got a NULL ", arg.prefix)
    } else {
        String::new()
    };
    let type_idx = arg.type_idx;
    fx.check_arg(non_null, TYPE_ERROR, |_| {
        vec![MsgPart::Text(msg), MsgPart::Value(Tag::TypeIndex, type_idx)]
    });
    // The `DLTensor`: the embedded one of a tensor object, or the `DLTensor*` itself. The type
    // index being one of the two, the offset is `(type_index >> OBJECT_KIND_SHIFT) * offset`
    // (`llvm_check_forms`): a shift and an address computation, where a select takes
    // a comparison, two constants and a conditional move. The other backends keep the
    // select (fewer instructions to compile).
    let dl_value = if fx.m.options.llvm_check_forms {
        let kind = fx.b.binary_imm(BinOp::Ushr, type_idx, OBJECT_KIND_SHIFT);
        let kind = fx.b.resize(kind, Ty::I64, false);
        let offset =
            fx.b.binary_imm(BinOp::Imul, kind, TENSOR_OBJECT_DLTENSOR_OFFSET as i64);
        fx.b.ptr_add(raw, offset)
    } else {
        let embedded = fx.b.ptr_add_imm(raw, TENSOR_OBJECT_DLTENSOR_OFFSET as i64);
        fx.b.select(is_obj, embedded, raw)
    };
    let dl = fx.decoded_var(Ty::Ptr, 0, guard.is_some());
    fx.b.assign(dl, dl_value);
    // One copy of the spec, shared by the checks and the binding.
    let spec = Rc::new(spec.clone());
    tensors.push(TensorLeaf {
        name: arg.param.name.clone(),
        label: arg.label.clone(),
        spec: Rc::clone(&spec),
        dl,
        guard: guard.clone(),
    });
    Binding::Tensor(TensorBinding {
        any: arg.any_ptr,
        dl,
        spec,
        shape: None,
        guard,
        owned: false,
    })
}

/// A tuple (an array or list of exactly its length), then each element decoded in turn.
fn decode_tuple(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    items: &[Param],
    guard: Option<NoneGuard>,
    tensors: &mut Vec<TensorLeaf>,
) -> Result<Binding, LowerError> {
    let prefix = &arg.prefix;
    let is_array = arg.is(fx, ti::ARRAY);
    let is_list = arg.is(fx, ti::LIST);
    let ok = fx.b.binary(BinOp::Or, is_array, is_list);
    arg.type_error(fx, ok);
    // Safety boundary: the array object is read below.
    fx.flush_checks();
    let obj = arg.load_value(fx, Ty::Ptr);
    let size = fx.b.load(Ty::I64, obj, SEQ_OBJECT_SIZE_OFFSET);
    let n = items.len() as i64;
    let ok = fx.b.icmp_imm(IntCC::Eq, size, n);
    fx.check_arg(ok, VALUE_ERROR, |_| {
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
        let item_path = format!("{}[{j}]", arg.path);
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
    Ok(Binding::Ref {
        any: arg.any_ptr,
        guard,
    })
}

/// A constant parameter: the argument must carry exactly the value the kernel was specialized on.
fn decode_const(
    fx: &mut FnCtx<'_, '_>,
    arg: &Arg<'_>,
    c: &ConstValue,
    guard: Option<NoneGuard>,
) -> Binding {
    let (prefix, type_idx) = (&arg.prefix, arg.type_idx);
    let is = |fx: &mut FnCtx<'_, '_>, index: i32| arg.is(fx, index);
    let type_error = |fx: &mut FnCtx<'_, '_>, ok: Var| arg.type_error(fx, ok);
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
                ConstValue::Float(_) | ConstValue::None => unreachable!(),
            };
            let a = is(fx, ti::INT);
            let b = is(fx, ti::BOOL);
            let ok = fx.b.binary(BinOp::Or, a, b);
            type_error(fx, ok);
            let raw = arg.load_value(fx, Ty::I64);
            let equal = fx.b.icmp_imm(IntCC::Eq, raw, expected);
            let msg = format!("{prefix}expected the constant {want}, got ");
            fx.check_arg(equal, VALUE_ERROR, |fx| {
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
                    VALUE_ERROR,
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
            Binding::Scalar { var: value, guard }
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
            let raw = arg.load_value(fx, Ty::I64);
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
            fx.check_arg(equal, VALUE_ERROR, |fx| {
                if int_equivalent.is_some() {
                    // An int argument is shown as the int it is.
                    let float_block = fx.b.new_cold_block();
                    let int_block = fx.b.new_cold_block();
                    fx.b.branch(is_float, float_block, int_block);
                    fx.b.switch_to(int_block);
                    fx.fail(
                        VALUE_ERROR,
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
            Binding::Scalar { var: value, guard }
        }
    }
}
