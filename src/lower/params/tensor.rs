//! The per-tensor checks (phase 3): ndim, dtype, device type, dims, strides, byte_offset,
//! alignment, non-NULL data, device id, element-count limit.

use std::rc::Rc;

use safecall_runtime::abi::{
    DLTENSOR_BYTE_OFFSET_OFFSET, DLTENSOR_DATA_OFFSET, DLTENSOR_DEVICE_ID_OFFSET,
    DLTENSOR_DEVICE_TYPE_OFFSET, DLTENSOR_DTYPE_OFFSET, DLTENSOR_NDIM_OFFSET,
    DLTENSOR_SHAPE_OFFSET, DLTENSOR_STRIDES_OFFSET, ndim_dtype_bits,
};

use crate::ir::{
    ByteOffsetPolicy, DeviceIdPolicy, DeviceTypePolicy, Dim, IntType, Strides, TensorShape,
    TensorSpec,
};
use crate::lir::{BinOp, ConvOp, IntCC, Ty, Var};

use crate::lower::context::{Binding, FnCtx, NoneGuard};
use crate::lower::layout::{compact_strides, effective_strides};
use crate::lower::raise::{MsgPart, Tag};
use crate::lower::schema::{self, int_range};

use super::syms::{SymKey, SymState, Syms, bind_or_compare};
use safecall_runtime::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};

/// A tensor parameter waiting for its phase-3 checks.
pub(super) struct TensorLeaf {
    /// The parameter's name (bound to a [`Binding::Tensor`]).
    pub name: String,
    /// The argument as messages name it.
    pub label: String,
    pub spec: Rc<TensorSpec>,
    /// Pointer to the `DLTensor`.
    pub dl: Var,
    /// Set when the tensor is optional (or inside an optional tuple).
    pub guard: Option<NoneGuard>,
}

/// What the checks of one tensor share.
struct Checked<'l> {
    leaf: &'l TensorLeaf,
    /// Pointer to the `DLTensor`.
    dl: Var,
    /// `"<name>: argument 'x' (#0): "` when explaining; empty on the fast path.
    prefix: String,
    /// Whether the tensor is optional (its checks run only when it is present, and symbols
    /// it binds fall back to another binder when it is None).
    guarded: bool,
}

/// Runs the phase-3 checks of one tensor; binds its shape values when they dominate the body.
pub(super) fn check_tensor(fx: &mut FnCtx<'_, '_>, leaf: &TensorLeaf, syms: &mut Syms) {
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
    let t = Checked {
        leaf,
        dl: leaf.dl,
        prefix: fx.message_prefix(&leaf.label),
        guarded: leaf.guard.is_some(),
    };

    // Safety boundary: the DLTensor is read below (its argument's type and pointer are checked).
    fx.flush_checks();
    check_ndim_and_dtype(fx, &t);
    check_device_type(fx, &t, syms);
    // Safety boundary: `ndim` shape entries are read below.
    fx.flush_checks();
    let dims = check_shape(fx, &t, syms);

    // Zero-element tensors pass the stride, alignment and data checks whatever their fields.
    let has_zero = match leaf.spec.shape {
        TensorShape::Dims(_) => any_zero(fx, &dims),
        TensorShape::AnyRank => any_zero_of_any_rank(fx, t.dl),
    };
    let nonempty = {
        let one = fx.b.iconst(Ty::I8, 1);
        fx.b.binary(BinOp::Xor, has_zero, one)
    };
    match &leaf.spec.strides {
        Strides::Any => {}
        Strides::Compact => check_compact_strides(fx, &t, &dims, nonempty),
        Strides::Exact(wanted) => check_exact_strides(fx, &t, syms, wanted, &dims, has_zero),
    }
    let byte_offset = check_byte_offset(fx, &t);
    check_data(fx, &t, byte_offset, has_zero);
    check_device_id(fx, &t, syms);
    if let Some(index) = leaf.spec.index_type {
        check_element_count(fx, &t, index, &dims, has_zero);
    }

    if let Some(join) = join {
        fx.jump(join);
        fx.b.switch_to(join);
    }
    // Shape values loaded here dominate the body only when the tensor is always present. The
    // tensor was bound in this (the parameters') scope.
    if !t.guarded
        && let Some(Binding::Tensor(binding)) = fx.innermost_binding_mut(&leaf.name)
    {
        binding.shape = Some(dims);
    }
}

/// ndim and dtype: on the fast path of a little-endian host one 8-byte load and one
/// comparison check both (the explain function checks them one by one).
fn check_ndim_and_dtype(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>) {
    let (spec, dl, prefix) = (&t.leaf.spec, t.dl, &t.prefix);
    let Some(ndim) = spec.shape.rank() else {
        check_ndim_not_negative(fx, t);
        return check_dtype(fx, t);
    };
    let fused_dtype = spec
        .dtype
        .filter(|_| fx.fast_path() && cfg!(target_endian = "little"));
    if let Some(dtype) = fused_dtype {
        let both = fx.b.load(Ty::I64, dl, DLTENSOR_NDIM_OFFSET);
        let want = ndim_dtype_bits(ndim as i32, dtype) as i64;
        let ok = fx.b.icmp_imm(IntCC::Eq, both, want);
        fx.require_fast(ok);
        return;
    }
    let actual_ndim = fx.b.load(Ty::I32, dl, DLTENSOR_NDIM_OFFSET);
    let ok = fx.b.icmp_imm(IntCC::Eq, actual_ndim, ndim as i64);
    fx.check_arg(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{prefix}ndim is ")),
            MsgPart::Value(Tag::I64, actual_ndim),
            MsgPart::text(format!(", expected {ndim}")),
        ]
    });

    check_dtype(fx, t);
}

/// A tensor of any rank: `ndim` is not negative (the loops over its dims trust it).
fn check_ndim_not_negative(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>) {
    let prefix = &t.prefix;
    let actual_ndim = fx.b.load(Ty::I32, t.dl, DLTENSOR_NDIM_OFFSET);
    let ok = fx.b.icmp_imm(IntCC::Sge, actual_ndim, 0);
    fx.check_arg(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{prefix}ndim is ")),
            MsgPart::Value(Tag::I64, actual_ndim),
            MsgPart::text(", expected 0 or more"),
        ]
    });
}

/// The dtype (a TypeError: the element type is part of the argument's type).
fn check_dtype(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>) {
    let (spec, dl, prefix) = (&t.leaf.spec, t.dl, &t.prefix);
    if let Some(dtype) = spec.dtype {
        let packed = i64::from(dtype.to_bits());
        let actual = fx.b.load(Ty::I32, dl, DLTENSOR_DTYPE_OFFSET);
        let actual64 = fx.b.resize(actual, Ty::I64, false);
        let ok = fx.b.icmp_imm(IntCC::Eq, actual64, packed);
        let want = schema::dtype_text(Some(dtype));
        fx.check_arg(ok, TYPE_ERROR, |_| {
            vec![
                MsgPart::text(format!("{prefix}dtype is ")),
                MsgPart::Value(Tag::DType, actual),
                MsgPart::text(format!(", expected {want}")),
            ]
        });
    }
}

/// The device type: any, a code, or the same as the other tensors with `device=same`.
fn check_device_type(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, syms: &mut Syms) {
    let device_type = match t.leaf.spec.device_type {
        DeviceTypePolicy::Any => return,
        DeviceTypePolicy::Same => return check_same_device_type(fx, t, syms),
        DeviceTypePolicy::Code(code) => code,
    };
    let (dl, prefix) = (t.dl, &t.prefix);
    let actual = fx.b.load(Ty::I32, dl, DLTENSOR_DEVICE_TYPE_OFFSET);
    let ok = fx.b.icmp_imm(IntCC::Eq, actual, i64::from(device_type));
    let want = schema::device_type_text(device_type);
    fx.check_arg(ok, VALUE_ERROR, |fx| {
        let device = fx.b.load(Ty::I64, dl, DLTENSOR_DEVICE_TYPE_OFFSET);
        vec![
            MsgPart::text(format!("{prefix}device is ")),
            MsgPart::Value(Tag::Device, device),
            MsgPart::text(format!(", expected a {want} tensor")),
        ]
    });
}

/// `device=same`: the first tensor with it that is present binds the device type, the later
/// ones must match.
fn check_same_device_type(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, syms: &mut Syms) {
    let shown = "device type of the tensor arguments";
    let field = (DLTENSOR_DEVICE_TYPE_OFFSET, "device type");
    bind_device_field(fx, t, syms, SymKey::SameDeviceType, field, shown);
}

/// The shape: constant dims first, then symbolic ones (bound or compared). Returns the dims.
fn check_shape(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, syms: &mut Syms) -> Vec<Var> {
    let (spec, prefix) = (&t.leaf.spec, &t.prefix);
    let shape_ptr = fx.b.load(Ty::Ptr, t.dl, DLTENSOR_SHAPE_OFFSET);
    let mut dims: Vec<Var> = (0..spec.shape.dims().len())
        .map(|k| fx.b.load(Ty::I64, shape_ptr, k * 8))
        .collect();
    for (k, dim) in spec.shape.dims().iter().enumerate() {
        if let Dim::Const(c) = dim {
            let ok = fx.b.icmp_imm(IntCC::Eq, dims[k], *c);
            let actual = dims[k];
            fx.check_arg(ok, VALUE_ERROR, |_| {
                vec![
                    MsgPart::text(format!("{prefix}shape[{k}] is ")),
                    MsgPart::Value(Tag::I64, actual),
                    MsgPart::text(format!(", expected {c}")),
                ]
            });
        }
    }
    for (k, dim) in spec.shape.dims().iter().enumerate() {
        if let Dim::Var(name) = dim {
            let key = SymKey::Named(name.clone());
            let bound = matches!(syms.state.get(&key), Some(SymState::Bound { .. }));
            bind_dim_var(fx, t, syms, ("shape", k), name, dims[k], None);
            // Compared with a binding made on every path: from here on the dim is that
            // value, and the checks below read the binding (already in a register) rather
            // than holding one more value through them.
            if bound && !t.guarded {
                dims[k] = syms.vars[&key];
            }
        }
    }
    dims
}

/// Binds symbolic variable `name` to `value`, entry `k` of `field` (`shape` or `strides`) of
/// the tensor, or compares it with its earlier binding; a set `skip` makes the occurrence not
/// count at run time (see `bind_or_compare`).
fn bind_dim_var(
    fx: &mut FnCtx<'_, '_>,
    t: &Checked<'_>,
    syms: &mut Syms,
    (field, k): (&str, usize),
    name: &str,
    value: Var,
    skip: Option<Var>,
) {
    // Only messages show these; the fast path builds none.
    let (what, binder) = if fx.explaining() {
        (
            format!("{field}[{k}]"),
            format!("{}.{field}[{k}]", t.leaf.name),
        )
    } else {
        Default::default()
    };
    bind_or_compare(
        fx,
        syms,
        SymKey::Named(name.to_owned()),
        value,
        t.guarded,
        &t.prefix,
        &what,
        name,
        &binder,
        skip,
    );
}

/// `strides=compact`: NULL strides, or row-major contiguous ones (a dim of 1 may have any
/// stride); checked only for non-empty tensors.
fn check_compact_strides(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, dims: &[Var], nonempty: Var) {
    let ndim = dims.len();
    if ndim == 0 {
        return;
    }
    let prefix = &t.prefix;
    let strides_ptr = fx.b.load(Ty::Ptr, t.dl, DLTENSOR_STRIDES_OFFSET);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let has_strides = fx.b.icmp(IntCC::Ne, strides_ptr, null);
    // One dim: non-empty and not of extent 1 is one unsigned comparison, as C writes it (a
    // negative extent counts as longer than 1, as before).
    let nonempty = if ndim == 1 {
        fx.b.icmp_imm(IntCC::Ugt, dims[0], 1)
    } else {
        nonempty
    };
    let check_needed = fx.b.binary(BinOp::And, has_strides, nonempty);
    let check_block = fx.b.new_block();
    let done = fx.b.new_block();
    fx.branch(check_needed, check_block, done);
    fx.b.switch_to(check_block);
    let compact = compact_strides(fx, dims);
    for k in (0..ndim).rev() {
        let actual = fx.b.load(Ty::I64, strides_ptr, k * 8);
        let equal = fx.b.icmp(IntCC::Eq, actual, compact[k]);
        let unit = fx.b.icmp_imm(IntCC::Eq, dims[k], 1);
        let ok = fx.b.binary(BinOp::Or, equal, unit);
        let expected = compact[k];
        fx.check_arg(ok, VALUE_ERROR, |_| {
            vec![
                MsgPart::text(format!("{prefix}strides[{k}] is ")),
                MsgPart::Value(Tag::I64, actual),
                MsgPart::text(", expected "),
                MsgPart::Value(Tag::I64, expected),
                MsgPart::text(" (the tensor must be compact: row-major and contiguous)"),
            ]
        });
    }
    fx.jump(done);
    fx.b.switch_to(done);
}

/// `strides=[...]`: each stride (NULL strides read as compact) is the constant or binds or
/// compares the symbol; dims of 1 and empty tensors are exempt.
fn check_exact_strides(
    fx: &mut FnCtx<'_, '_>,
    t: &Checked<'_>,
    syms: &mut Syms,
    wanted: &[Dim],
    dims: &[Var],
    has_zero: Var,
) {
    let prefix = &t.prefix;
    let actual = effective_strides(fx, t.dl, dims);
    for (k, want) in wanted.iter().enumerate() {
        let unit = fx.b.icmp_imm(IntCC::Eq, dims[k], 1);
        let skip = fx.b.binary(BinOp::Or, unit, has_zero);
        let value = actual[k];
        match want {
            Dim::Const(c) => {
                let equal = fx.b.icmp_imm(IntCC::Eq, value, *c);
                let ok = fx.b.binary(BinOp::Or, equal, skip);
                fx.check_arg(ok, VALUE_ERROR, |_| {
                    vec![
                        MsgPart::text(format!("{prefix}strides[{k}] is ")),
                        MsgPart::Value(Tag::I64, value),
                        MsgPart::text(format!(", expected {c}")),
                    ]
                });
            }
            Dim::Var(name) => bind_dim_var(fx, t, syms, ("strides", k), name, value, Some(skip)),
        }
    }
}

/// `byte_offset`: checked to be 0, or returned (loaded) when any offset is allowed.
fn check_byte_offset(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>) -> Option<Var> {
    let prefix = &t.prefix;
    match t.leaf.spec.byte_offset {
        ByteOffsetPolicy::Zero => {
            let actual = fx.b.load(Ty::I64, t.dl, DLTENSOR_BYTE_OFFSET_OFFSET);
            let ok = fx.b.icmp_imm(IntCC::Eq, actual, 0);
            fx.check_arg(ok, VALUE_ERROR, |_| {
                vec![
                    MsgPart::text(format!("{prefix}byte_offset is ")),
                    MsgPart::Value(Tag::U64, actual),
                    MsgPart::text(", expected 0"),
                ]
            });
            None
        }
        ByteOffsetPolicy::Any => Some(fx.b.load(Ty::I64, t.dl, DLTENSOR_BYTE_OFFSET_OFFSET)),
    }
}

/// Alignment (of the data pointer plus any byte offset) and non-NULL data, for non-empty
/// tensors only.
fn check_data(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, byte_offset: Option<Var>, has_zero: Var) {
    let prefix = &t.prefix;
    // With LLVM (`llvm_check_forms`) only a tensor with elements has its data pointer read:
    // an empty one branches past, as C tests the extent first. Elsewhere the pointer is read
    // and tested first, and the tensor's emptiness only when the pointer fails (Cranelift
    // keeps the order of `||`: one test fewer for every tensor with data).
    let skip_empty = fx.m.options.llvm_check_forms.then(|| {
        let nonempty = fx.b.new_block();
        let done = fx.b.new_block();
        fx.branch(has_zero, done, nonempty);
        fx.b.switch_to(nonempty);
        done
    });
    // Whether the check passes as it stands, or for an empty tensor too.
    let or_empty = |fx: &mut FnCtx<'_, '_>, ok: Var| match skip_empty {
        Some(_) => ok,
        None => fx.b.binary(BinOp::Or, ok, has_zero),
    };
    let data = fx.b.load(Ty::Ptr, t.dl, DLTENSOR_DATA_OFFSET);
    if let Some(align) = t.leaf.spec.alignment.filter(|a| *a > 1) {
        let base = fx.b.convert(ConvOp::PtrToInt, data, Ty::I64);
        let addr = match byte_offset {
            Some(off) => fx.b.binary(BinOp::Iadd, base, off),
            None => base,
        };
        let low = fx.b.binary_imm(BinOp::And, addr, i64::from(align) - 1);
        let aligned = fx.b.icmp_imm(IntCC::Eq, low, 0);
        let ok = or_empty(fx, aligned);
        let what = if byte_offset.is_some() {
            "data pointer + byte_offset"
        } else {
            "data pointer"
        };
        fx.check_arg(ok, VALUE_ERROR, |_| {
            vec![
                MsgPart::text(format!("{prefix}{what} ")),
                MsgPart::Value(Tag::Ptr, addr),
                MsgPart::text(format!(" is not aligned to {align} bytes")),
            ]
        });
    }
    let null = fx.b.iconst(Ty::Ptr, 0);
    let non_null = fx.b.icmp(IntCC::Ne, data, null);
    let ok = or_empty(fx, non_null);
    fx.check_arg(ok, VALUE_ERROR, |_| {
        vec![MsgPart::text(format!(
            "{prefix}data pointer is NULL but the tensor has elements"
        ))]
    });
    if let Some(done) = skip_empty {
        fx.jump(done);
        fx.b.switch_to(done);
    }
}

/// The device id: free, the same for all tensor arguments, or a symbol (bound or compared).
fn check_device_id(fx: &mut FnCtx<'_, '_>, t: &Checked<'_>, syms: &mut Syms) {
    let (key, shown) = match &t.leaf.spec.device_id {
        DeviceIdPolicy::Free => return,
        DeviceIdPolicy::Same => (
            SymKey::SameDevice,
            "device id of the tensor arguments".to_owned(),
        ),
        DeviceIdPolicy::Var(name) => (SymKey::Named(name.clone()), name.clone()),
    };
    let field = (DLTENSOR_DEVICE_ID_OFFSET, "device id");
    bind_device_field(fx, t, syms, key, field, &shown);
}

/// Binds or compares `key` with a 32-bit field of the tensor's `DLDevice` (its offset and
/// name), `shown` naming the binding in messages.
fn bind_device_field(
    fx: &mut FnCtx<'_, '_>,
    t: &Checked<'_>,
    syms: &mut Syms,
    key: SymKey,
    (offset, what): (usize, &str),
    shown: &str,
) {
    let value32 = fx.b.load(Ty::I32, t.dl, offset);
    let value = fx.b.resize(value32, Ty::I64, true);
    let binder = if fx.explaining() {
        format!("{}.device", t.leaf.name)
    } else {
        String::new()
    };
    bind_or_compare(
        fx, syms, key, value, t.guarded, &t.prefix, what, shown, &binder, None,
    );
}

/// The element-count limit of `index_type`: the product of the dims fits the index type
/// (computed without overflow); empty tensors pass.
fn check_element_count(
    fx: &mut FnCtx<'_, '_>,
    t: &Checked<'_>,
    index: IntType,
    dims: &[Var],
    has_zero: Var,
) {
    let prefix = &t.prefix;
    let limit = int_range(index).1;
    let ok = fx.b.mutable_var(Ty::I8);
    fx.b.assign_iconst(ok, 1);
    let product = fx.b.mutable_var(Ty::I64);
    fx.b.assign_iconst(product, 1);
    for &d in dims {
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
    fx.check_arg(pass, VALUE_ERROR, |_| {
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

/// `I8` 1 when any of the `ndim` dims of a tensor of any rank is 0 (a loop over its shape;
/// `ndim` was checked not to be negative).
fn any_zero_of_any_rank(fx: &mut FnCtx<'_, '_>, dl: Var) -> Var {
    // Safety boundary: `ndim` shape entries are read below.
    fx.flush_checks();
    let ndim32 = fx.b.load(Ty::I32, dl, DLTENSOR_NDIM_OFFSET);
    let ndim = fx.b.resize(ndim32, Ty::I64, true);
    let shape_ptr = fx.b.load(Ty::Ptr, dl, DLTENSOR_SHAPE_OFFSET);
    let found = fx.b.mutable_var(Ty::I8);
    fx.b.assign_iconst(found, 0);
    let k = fx.b.mutable_var(Ty::I64);
    fx.b.assign_iconst(k, 0);
    let (head, body, exit) = (fx.b.new_block(), fx.b.new_block(), fx.b.new_block());
    fx.b.jump(head);
    fx.b.switch_to(head);
    let more = fx.b.icmp(IntCC::Slt, k, ndim);
    fx.b.branch(more, body, exit);
    fx.b.switch_to(body);
    let byte = fx.b.binary_imm(BinOp::Imul, k, 8);
    let entry = fx.b.ptr_add(shape_ptr, byte);
    let dim = fx.b.load(Ty::I64, entry, 0);
    let zero = fx.b.icmp_imm(IntCC::Eq, dim, 0);
    let either = fx.b.binary(BinOp::Or, found, zero);
    fx.b.assign(found, either);
    let next = fx.b.binary_imm(BinOp::Iadd, k, 1);
    fx.b.assign(k, next);
    fx.b.jump(head);
    fx.b.switch_to(exit);
    found
}

/// `I8` 1 when any dim is 0.
fn any_zero(fx: &mut FnCtx<'_, '_>, dims: &[Var]) -> Var {
    let zeros: Vec<Var> = dims
        .iter()
        .map(|&d| fx.b.icmp_imm(IntCC::Eq, d, 0))
        .collect();
    match zeros.split_first() {
        Some((&first, rest)) => rest
            .iter()
            .fold(first, |acc, &z| fx.b.binary(BinOp::Or, acc, z)),
        None => fx.b.iconst(Ty::I8, 0),
    }
}
