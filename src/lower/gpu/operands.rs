//! The operands of a `launch`: each setting lowered and checked before anything reaches the
//! driver (grid, block, cluster and preferred-cluster dims, shared memory, device, stream,
//! the PDL and cooperative flags, the priority).

use crate::ir::{ClusterPolicy, Expr, Launch, Platform, ScalarType, TensorField};
use crate::lir::{BinOp, Callee, IntCC, Ty, Var};

use super::super::capi::CApi;
use super::super::context::FnCtx;
use super::super::expr::{Val, lower_expr, lower_ptr, lower_tensor_field};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::cuda;
use super::hip::api as hip;
use super::settings::{Settings, settings};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

/// An integer operand of the launch, widened to `I64`, with how messages print it.
#[derive(Clone, Copy)]
pub(super) struct Int {
    /// The value.
    pub var: Var,
    /// How messages print it.
    pub tag: Tag,
}

/// A boolean launch attribute: absent (or the literal `false`), always on (the literal
/// `true`), or decided at run time (the attribute is passed with the value 0 or 1).
#[derive(Clone, Copy)]
pub(super) enum Flag {
    /// Not passed.
    Off,
    /// Passed with the value 1.
    On,
    /// Passed with this `I32` value (0 or 1).
    Dynamic(Var),
}

/// Every operand of a launch, checked.
#[derive(Clone, Copy)]
pub(super) struct Operands {
    /// Grid dims (missing ones 1), each 1 to the device limit.
    pub grid: [Int; 3],
    /// Block dims, each within the limits, at most 1024 threads in all.
    pub block: [Int; 3],
    /// Cluster dims, each 1 to `u32::MAX`, when given.
    pub cluster: Option<[Int; 3]>,
    /// Preferred cluster dims, each a multiple of the cluster's, when given.
    pub preferred_cluster: Option<[Int; 3]>,
    /// The cluster scheduling policy, when given.
    pub cluster_policy: Option<ClusterPolicy>,
    /// Dynamic shared memory, 0 to `u32::MAX`, when given.
    pub shared_mem: Option<Int>,
    /// The device ordinal, 0 to `i32::MAX`.
    pub device: Int,
    /// The ordinal as an `I32`.
    pub ordinal: Var,
    /// The stream.
    pub stream: Var,
    /// Programmatic dependent launch.
    pub pdl: Flag,
    /// A cooperative grid.
    pub cooperative: Flag,
    /// The priority as an `I32`, when given.
    pub priority: Option<Var>,
    /// The kernel's handle the caller loaded, when given (a `Ptr`).
    pub function: Option<Var>,
}

/// Lowers and checks every operand of `l` (ValueErrors prefixed with `prefix`), in the order
/// its messages promise; [`Settings`] is taken apart without `..`, so a new setting does not
/// compile until it is lowered here.
pub(super) fn lower_operands(
    fx: &mut FnCtx<'_, '_>,
    l: &Launch,
    prefix: &str,
    platform: Platform,
) -> Result<Operands, LowerError> {
    let Settings {
        grid,
        block,
        cluster,
        preferred_cluster,
        cluster_policy,
        shared_mem,
        stream,
        device,
        pdl,
        cooperative,
        priority,
        function,
    } = settings(l);
    let grid = lower_dims(fx, grid, "grid")?;
    let block = lower_dims(fx, block, "block")?;
    check_grid_and_block(fx, &grid, &block, prefix, platform);
    let cluster = optional_dims(fx, cluster, "cluster", prefix)?;
    let preferred_cluster = optional_dims(fx, preferred_cluster, "preferred_cluster", prefix)?;
    if let (Some(c), Some(p)) = (&cluster, &preferred_cluster) {
        check_multiple(fx, c, p, prefix);
    }
    let shared_mem = match shared_mem {
        Some(e) => Some(lower_shared_mem(fx, e, prefix)?),
        None => None,
    };
    let device = lower_device(fx, device, prefix, platform)?;
    let ordinal = fx.b.resize(device.var, Ty::I32, false);
    let stream = lower_stream(fx, stream, ordinal, platform)?;
    let pdl = lower_flag(fx, pdl, "pdl")?;
    let cooperative = lower_flag(fx, cooperative, "cooperative")?;
    let priority = match priority {
        Some(e) => Some(lower_priority(fx, e, prefix)?),
        None => None,
    };
    // The kernel's handle: a `ptr` (the verifier's rule), passed to the launch as it is.
    let function = match function {
        Some(e) => Some(lower_ptr(fx, e)?),
        None => None,
    };
    Ok(Operands {
        grid,
        block,
        cluster,
        preferred_cluster,
        cluster_policy,
        shared_mem,
        device,
        ordinal,
        stream,
        pdl,
        cooperative,
        priority,
        function,
    })
}

/// An integer expression widened to `I64` (`what` names it in the internal error of a value
/// the verifier rules out).
pub(super) fn lower_int(fx: &mut FnCtx<'_, '_>, e: &Expr, what: &str) -> Result<Int, LowerError> {
    let value = lower_expr(fx, e)?;
    widen_int(fx, value, what)
}

/// An integer value widened to `I64`.
fn widen_int(fx: &mut FnCtx<'_, '_>, value: Val, what: &str) -> Result<Int, LowerError> {
    match value {
        Val::Scalar(var, ScalarType::Int(t)) => {
            let signed = t.is_signed();
            Ok(Int {
                var: fx.b.resize(var, Ty::I64, signed),
                tag: if signed { Tag::I64 } else { Tag::U64 },
            })
        }
        other @ (Val::Scalar(..)
        | Val::Device(_)
        | Val::DType(_)
        | Val::Ref { .. }
        | Val::Tensor(_)
        | Val::Str(_)) => Err(LowerError::internal(format!(
            "{what} is not an integer: {other:?}"
        ))),
    }
}

/// Up to three dims, missing ones 1.
fn lower_dims(fx: &mut FnCtx<'_, '_>, dims: &[Expr], what: &str) -> Result<[Int; 3], LowerError> {
    let one = fx.b.iconst(Ty::I64, 1);
    let mut out = [Int {
        var: one,
        tag: Tag::I64,
    }; 3];
    for (i, e) in dims.iter().enumerate().take(3) {
        out[i] = lower_int(fx, e, &format!("{what}[{i}]"))?;
    }
    Ok(out)
}

/// `(a, b, c)` as message parts.
pub(super) fn dims_parts(dims: &[Int; 3]) -> Vec<MsgPart> {
    let mut parts = vec![MsgPart::text("(")];
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            parts.push(MsgPart::text(", "));
        }
        parts.push(MsgPart::Value(d.tag, d.var));
    }
    parts.push(MsgPart::text(")"));
    parts
}

/// `1 <= v <= max`, as one unsigned comparison (catches 0, negatives and huge values).
fn in_range(fx: &mut FnCtx<'_, '_>, v: Var, max: i64) -> Var {
    let minus_one = fx.b.binary_imm(BinOp::Isub, v, 1);
    fx.b.icmp_imm(IntCC::Ult, minus_one, max)
}

/// Grid and block dims within the platform's limits, at most 1024 threads in a block (and on
/// HIP, each grid dimension times the block's at most `u32::MAX` threads).
fn check_grid_and_block(
    fx: &mut FnCtx<'_, '_>,
    grid: &[Int; 3],
    block: &[Int; 3],
    prefix: &str,
    platform: Platform,
) {
    let (max_grid, max_block, max_threads) = match platform {
        Platform::Cuda => (cuda::MAX_GRID, cuda::MAX_BLOCK, cuda::MAX_THREADS_PER_BLOCK),
        Platform::Hip => (hip::MAX_GRID, hip::MAX_BLOCK, hip::MAX_THREADS_PER_BLOCK),
    };
    let limits = [("grid", grid, max_grid), ("block", block, max_block)];
    for (what, dims, max) in limits {
        for i in 0..3 {
            let ok = in_range(fx, dims[i].var, max[i]);
            let p = prefix.to_owned();
            let dims = *dims;
            fx.check(ok, VALUE_ERROR, |_| {
                let mut parts = vec![MsgPart::text(format!("{p}: {what} is "))];
                parts.extend(dims_parts(&dims));
                parts.push(MsgPart::text(format!(
                    ", but {what}[{i}] must be 1 to {}",
                    max[i]
                )));
                parts
            });
        }
    }
    let xy = fx.b.binary(BinOp::Imul, block[0].var, block[1].var);
    let threads = fx.b.binary(BinOp::Imul, xy, block[2].var);
    let ok = fx.b.icmp_imm(IntCC::Sle, threads, max_threads);
    let p = prefix.to_owned();
    let block = *block;
    fx.check(ok, VALUE_ERROR, |_| {
        let mut parts = vec![MsgPart::text(format!("{p}: block is "))];
        parts.extend(dims_parts(&block));
        parts.push(MsgPart::text(", which is "));
        parts.push(MsgPart::Value(Tag::I64, threads));
        parts.push(MsgPart::text(format!(
            " threads; a block has at most {max_threads}"
        )));
        parts
    });
    if platform == Platform::Hip {
        check_work_size(fx, grid, &block, prefix);
    }
}

/// HIP counts each dimension's threads (grid times block) in 32 bits.
fn check_work_size(fx: &mut FnCtx<'_, '_>, grid: &[Int; 3], block: &[Int; 3], prefix: &str) {
    for i in 0..3 {
        // Both are at most u32::MAX here: the product fits in an unsigned 64-bit value.
        let size = fx.b.binary(BinOp::Imul, grid[i].var, block[i].var);
        let ok = fx.b.icmp_imm(IntCC::Ule, size, hip::MAX_WORK_SIZE);
        let p = prefix.to_owned();
        let (g, b) = (*grid, *block);
        fx.check(ok, VALUE_ERROR, |_| {
            let mut parts = vec![MsgPart::text(format!("{p}: grid "))];
            parts.extend(dims_parts(&g));
            parts.push(MsgPart::text(" with block "));
            parts.extend(dims_parts(&b));
            parts.push(MsgPart::text(" has "));
            parts.push(MsgPart::Value(Tag::U64, size));
            parts.push(MsgPart::text(format!(
                " threads in dimension {i}; HIP allows at most {}",
                hip::MAX_WORK_SIZE
            )));
            parts
        });
    }
}

/// Cluster-like dims when given, each 1 to `u32::MAX`.
fn optional_dims(
    fx: &mut FnCtx<'_, '_>,
    dims: &[Expr],
    what: &str,
    prefix: &str,
) -> Result<Option<[Int; 3]>, LowerError> {
    if dims.is_empty() {
        return Ok(None);
    }
    let dims = lower_dims(fx, dims, what)?;
    for i in 0..3 {
        let ok = in_range(fx, dims[i].var, i64::from(u32::MAX));
        let p = prefix.to_owned();
        let what = what.to_owned();
        fx.check(ok, VALUE_ERROR, |_| {
            let mut parts = vec![MsgPart::text(format!("{p}: {what} is "))];
            parts.extend(dims_parts(&dims));
            parts.push(MsgPart::text(format!(
                ", but {what}[{i}] must be at least 1"
            )));
            parts
        });
    }
    Ok(Some(dims))
}

/// Each preferred cluster dim a multiple of the cluster's (both already at least 1).
fn check_multiple(fx: &mut FnCtx<'_, '_>, cluster: &[Int; 3], preferred: &[Int; 3], prefix: &str) {
    for i in 0..3 {
        let rem = fx.b.binary(BinOp::Urem, preferred[i].var, cluster[i].var);
        let ok = fx.b.icmp_imm(IntCC::Eq, rem, 0);
        let p = prefix.to_owned();
        let (c, pc) = (*cluster, *preferred);
        fx.check(ok, VALUE_ERROR, |_| {
            let mut parts = vec![MsgPart::text(format!("{p}: preferred_cluster is "))];
            parts.extend(dims_parts(&pc));
            parts.push(MsgPart::text(format!(
                ", but preferred_cluster[{i}] must be a multiple of cluster[{i}] (cluster is "
            )));
            parts.extend(dims_parts(&c));
            parts.push(MsgPart::text(")"));
            parts
        });
    }
}

/// `shared_mem`, 0 to `u32::MAX`.
fn lower_shared_mem(fx: &mut FnCtx<'_, '_>, e: &Expr, prefix: &str) -> Result<Int, LowerError> {
    let shared_mem = lower_int(fx, e, "shared_mem")?;
    let fits =
        fx.b.icmp_imm(IntCC::Ule, shared_mem.var, i64::from(u32::MAX));
    let p = prefix.to_owned();
    fx.check(fits, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: shared_mem is ")),
            MsgPart::Value(shared_mem.tag, shared_mem.var),
            MsgPart::text(format!(" bytes, expected 0 to {}", u32::MAX)),
        ]
    });
    Ok(shared_mem)
}

/// `device=`, or the device id of the function's first tensor on the platform; 0 to
/// `i32::MAX`.
fn lower_device(
    fx: &mut FnCtx<'_, '_>,
    device: Option<&Expr>,
    prefix: &str,
    platform: Platform,
) -> Result<Int, LowerError> {
    let device = match device {
        Some(e) => lower_int(fx, e, "the device")?,
        None => {
            let tensor = fx.func.first_tensor_on(platform).ok_or_else(|| {
                LowerError::internal(format!(
                    "a launch without `device=` in a function with no {} tensor",
                    platform.name()
                ))
            })?;
            let id = lower_tensor_field(fx, tensor, TensorField::DeviceId)?;
            widen_int(fx, id, "the device")?
        }
    };
    let ok = fx.b.icmp_imm(IntCC::Ule, device.var, i64::from(i32::MAX));
    let p = prefix.to_owned();
    fx.check(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: device is ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(format!(
                ", expected a {} device ordinal (0 to {})",
                platform.name(),
                i32::MAX
            )),
        ]
    });
    Ok(device)
}

/// `stream=`, or the environment stream of the launch device.
fn lower_stream(
    fx: &mut FnCtx<'_, '_>,
    stream: Option<&Expr>,
    ordinal: Var,
    platform: Platform,
) -> Result<Var, LowerError> {
    Ok(match stream {
        Some(e) => match lower_expr(fx, e)? {
            Val::Scalar(v, ScalarType::Ptr) => v,
            other @ (Val::Scalar(..)
            | Val::Device(_)
            | Val::DType(_)
            | Val::Ref { .. }
            | Val::Tensor(_)
            | Val::Str(_)) => {
                return Err(LowerError::internal(format!(
                    "the stream is not a pointer: {other:?}"
                )));
            }
        },
        None => {
            let get = fx.m.capi(CApi::EnvGetStream);
            let device_type = fx.b.iconst(Ty::I32, i64::from(platform.device_type()));
            fx.b.call(
                Callee::Import(get),
                Some(Ty::Ptr),
                vec![device_type, ordinal],
            )
            .expect("returns")
        }
    })
}

/// A boolean setting: literals decide at compile time, other expressions at run time.
fn lower_flag(fx: &mut FnCtx<'_, '_>, e: Option<&Expr>, what: &str) -> Result<Flag, LowerError> {
    Ok(match e {
        None | Some(Expr::Bool(false)) => Flag::Off,
        Some(Expr::Bool(true)) => Flag::On,
        Some(e) => match lower_expr(fx, e)? {
            Val::Scalar(v, ScalarType::Bool) => Flag::Dynamic(fx.b.resize(v, Ty::I32, false)),
            other @ (Val::Scalar(..)
            | Val::Device(_)
            | Val::DType(_)
            | Val::Ref { .. }
            | Val::Tensor(_)
            | Val::Str(_)) => {
                return Err(LowerError::internal(format!(
                    "{what} is not a bool: {other:?}"
                )));
            }
        },
    })
}

/// `priority=`, an `i32`.
fn lower_priority(fx: &mut FnCtx<'_, '_>, e: &Expr, prefix: &str) -> Result<Var, LowerError> {
    let priority = lower_int(fx, e, "priority")?;
    let ok = if priority.tag == Tag::U64 {
        // Unsigned (a u64 above i64::MAX reads as negative): only the upper bound.
        fx.b.icmp_imm(IntCC::Ule, priority.var, i64::from(i32::MAX))
    } else {
        let low = fx.b.icmp_imm(IntCC::Sge, priority.var, i64::from(i32::MIN));
        let high = fx.b.icmp_imm(IntCC::Sle, priority.var, i64::from(i32::MAX));
        fx.b.binary(BinOp::And, low, high)
    };
    let p = prefix.to_owned();
    fx.check(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: priority is ")),
            MsgPart::Value(priority.tag, priority.var),
            MsgPart::text(format!(", expected {} to {}", i32::MIN, i32::MAX)),
        ]
    });
    Ok(fx.b.resize(priority.var, Ty::I32, false))
}
