//! The `launch` statement: argument checks, the current context, the launch itself.

use crate::ir::{Expr, Launch, ScalarType, TensorField};
use crate::lir::{BinOp, Callee, IntCC, Symbol, Ty, Var};

use super::super::calls::load_once;
use super::super::capi::CApi;
use super::super::context::FnCtx;
use super::super::expr::{Val, lower_expr, lower_tensor_field};
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::cuda::{self, Entry};
use super::support::{call_entry, describe_error, zeroed};
use safecall_runtime::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};

/// An integer operand of the launch, widened to `I64`, with how messages print it.
#[derive(Clone, Copy)]
struct Int {
    var: Var,
    tag: Tag,
}

fn lower_int(fx: &mut FnCtx<'_, '_>, e: &Expr, what: &str) -> Result<Int, LowerError> {
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
        other => Err(LowerError::internal(format!(
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
fn dims_parts(dims: &[Int; 3]) -> Vec<MsgPart> {
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

/// Lowers `launch binary.kernel[...](args)`.
pub(crate) fn lower_launch(fx: &mut FnCtx<'_, '_>, l: &Launch) -> Result<(), LowerError> {
    let prefix = format!("{}: launch of {}.{}", fx.func.name, l.binary, l.kernel);

    // Operands, checked before anything reaches the driver.
    let grid = lower_dims(fx, &l.grid, "grid")?;
    let block = lower_dims(fx, &l.block, "block")?;
    let cluster = if l.cluster.is_empty() {
        None
    } else {
        Some(lower_dims(fx, &l.cluster, "cluster")?)
    };
    let limits = [
        ("grid", &grid, cuda::MAX_GRID),
        ("block", &block, cuda::MAX_BLOCK),
    ];
    for (what, dims, max) in limits {
        for i in 0..3 {
            let ok = in_range(fx, dims[i].var, max[i]);
            let p = prefix.clone();
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
    let ok =
        fx.b.icmp_imm(IntCC::Sle, threads, cuda::MAX_THREADS_PER_BLOCK);
    let p = prefix.clone();
    fx.check(ok, VALUE_ERROR, |_| {
        let mut parts = vec![MsgPart::text(format!("{p}: block is "))];
        parts.extend(dims_parts(&block));
        parts.push(MsgPart::text(", which is "));
        parts.push(MsgPart::Value(Tag::I64, threads));
        parts.push(MsgPart::text(format!(
            " threads; a block has at most {}",
            cuda::MAX_THREADS_PER_BLOCK
        )));
        parts
    });
    if let Some(cluster) = &cluster {
        for i in 0..3 {
            let ok = in_range(fx, cluster[i].var, i64::from(u32::MAX));
            let p = prefix.clone();
            let c = *cluster;
            fx.check(ok, VALUE_ERROR, |_| {
                let mut parts = vec![MsgPart::text(format!("{p}: cluster is "))];
                parts.extend(dims_parts(&c));
                parts.push(MsgPart::text(format!(
                    ", but cluster[{i}] must be at least 1"
                )));
                parts
            });
        }
    }
    let shared_mem = match &l.shared_mem {
        Some(e) => lower_int(fx, e, "shared_mem")?,
        None => Int {
            var: fx.b.iconst(Ty::I64, 0),
            tag: Tag::I64,
        },
    };
    let fits =
        fx.b.icmp_imm(IntCC::Ule, shared_mem.var, i64::from(u32::MAX));
    let p = prefix.clone();
    fx.check(fits, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: shared_mem is ")),
            MsgPart::Value(shared_mem.tag, shared_mem.var),
            MsgPart::text(format!(" bytes, expected 0 to {}", u32::MAX)),
        ]
    });
    let device = match &l.device {
        Some(e) => lower_int(fx, e, "the device")?,
        None => {
            let tensor = fx.func.first_cuda_tensor().ok_or_else(|| {
                LowerError::internal("a launch without `device=` in a function with no CUDA tensor")
            })?;
            let id = lower_tensor_field(fx, tensor, TensorField::DeviceId)?;
            widen_int(fx, id, "the device")?
        }
    };
    let ok = fx.b.icmp_imm(IntCC::Ule, device.var, i64::from(i32::MAX));
    let p = prefix.clone();
    fx.check(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: device is ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(format!(
                ", expected a CUDA device ordinal (0 to {})",
                i32::MAX
            )),
        ]
    });
    let ordinal = fx.b.resize(device.var, Ty::I32, false);
    let stream = match &l.stream {
        Some(e) => match lower_expr(fx, e)? {
            Val::Scalar(v, ScalarType::Ptr) => v,
            other => {
                return Err(LowerError::internal(format!(
                    "the stream is not a pointer: {other:?}"
                )));
            }
        },
        None => {
            let get = fx.m.capi(CApi::EnvGetStream);
            let dl_cuda = fx.b.iconst(Ty::I32, cuda::DL_CUDA);
            fx.b.call(Callee::Import(get), Some(Ty::Ptr), vec![dl_cuda, ordinal])
                .expect("returns")
        }
    };
    // Kernel arguments by value: each in its own aligned place, and a pointer to each.
    let mut values = Vec::new();
    for (k, e) in l.args.iter().enumerate() {
        match lower_expr(fx, e)? {
            Val::Scalar(v, _) => values.push(v),
            other => {
                return Err(LowerError::internal(format!(
                    "kernel argument {k} is not a scalar: {other:?}"
                )));
            }
        }
    }
    let mut offsets = Vec::new();
    let mut size = 0u32;
    for &v in &values {
        let bytes = fx.b.ty(v).bytes();
        size = size.next_multiple_of(bytes);
        offsets.push(size);
        size += bytes;
    }
    let values_slot = fx.b.slot(size.max(8), 8);
    let params_slot = fx.b.slot((values.len().max(1) * 8) as u32, 8);
    for (k, (&v, &at)) in values.iter().zip(&offsets).enumerate() {
        let p = fx.b.stack_addr(values_slot, at);
        fx.b.store(p, 0, v);
        let params = fx.b.stack_addr(params_slot, 0);
        fx.b.store(params, k * 8, p);
    }

    // The driver and the kernel (loaded once).
    fx.flush_checks();
    let (driver_cell, driver_init) = fx.m.cuda_driver();
    let error = fx.error_block();
    let table = load_once(fx.m, &mut fx.b, driver_cell, driver_init, error);
    let (binary_cell, binary_init) = fx.m.cuda_binary(&l.binary)?;
    let kernels = load_once(fx.m, &mut fx.b, binary_cell, binary_init, error);
    let index =
        fx.m.ir
            .device_binaries
            .iter()
            .find(|b| b.name == l.binary)
            .and_then(|b| b.kernels.iter().position(|k| *k == l.kernel))
            .ok_or_else(|| {
                LowerError::internal(format!("no kernel `{}` in `{}`", l.kernel, l.binary))
            })?;
    let kernel = fx.b.load(Ty::Ptr, kernels, index * 8);

    // The device.
    let out = fx.b.slot(16, 8);
    let dev_at = fx.b.stack_addr(out, 0);
    let rc = call_entry(&mut fx.b, table, Entry::DeviceGet, vec![dev_at, ordinal]);
    driver_check(fx, table, rc, || {
        vec![
            MsgPart::text(format!("{prefix}: CUDA device ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" is not available: cuDeviceGet returned "),
        ]
    });
    let dev = fx.b.load(Ty::I32, dev_at, 0);

    // Dynamic shared memory above the default limit needs an opt-in per kernel and device.
    let need =
        fx.b.icmp_imm(IntCC::Sgt, shared_mem.var, cuda::DEFAULT_SHARED_MEM_LIMIT);
    let opt_in = fx.b.new_block();
    let after = fx.b.new_block();
    fx.b.branch(need, opt_in, after);
    fx.b.switch_to(opt_in);
    let cache = shared_mem_cache(fx, &l.binary, &l.kernel);
    let cached = cached_entry(fx, cache, device.var);
    let allowed = fx.b.load(Ty::I64, cached, 0);
    let enough = fx.b.icmp(IntCC::Sge, allowed, shared_mem.var);
    let set = fx.b.new_block();
    fx.b.branch(enough, after, set);
    fx.b.switch_to(set);
    let attr = fx.b.iconst(Ty::I32, cuda::MAX_DYNAMIC_SHARED_SIZE_BYTES);
    let value = fx.b.resize(shared_mem.var, Ty::I32, false);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::KernelSetAttribute,
        vec![attr, value, kernel, dev],
    );
    driver_check(fx, table, rc, || {
        vec![
            MsgPart::text(format!("{prefix}: cannot allow ")),
            MsgPart::Value(shared_mem.tag, shared_mem.var),
            MsgPart::text(" bytes of dynamic shared memory on CUDA device "),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(": cuKernelSetAttribute returned "),
        ]
    });
    fx.b.store(cached, 0, shared_mem.var);
    fx.b.jump(after);
    fx.b.switch_to(after);

    // A context of the device: the caller's when it is on that device, else the primary one.
    let cur_at = fx.b.stack_addr(out, 8);
    fx.b.store_imm(Ty::Ptr, cur_at, 0, 0);
    let rc = call_entry(&mut fx.b, table, Entry::CtxGetCurrent, vec![cur_at]);
    driver_check(fx, table, rc, || {
        vec![MsgPart::text(format!(
            "{prefix}: cuCtxGetCurrent returned "
        ))]
    });
    let current = fx.b.load(Ty::Ptr, cur_at, 0);
    let switched = fx.b.mutable_var(Ty::I8);
    fx.b.assign_iconst(switched, 0);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let has_current = fx.b.icmp(IntCC::Ne, current, null);
    let ask = fx.b.new_block();
    let switch = fx.b.new_block();
    let ready = fx.b.new_block();
    fx.b.branch(has_current, ask, switch);
    fx.b.switch_to(ask);
    let cur_dev_at = fx.b.stack_addr(out, 4);
    let rc = call_entry(&mut fx.b, table, Entry::CtxGetDevice, vec![cur_dev_at]);
    let cur_dev = fx.b.load(Ty::I32, cur_dev_at, 0);
    let got = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    let same = fx.b.icmp(IntCC::Eq, cur_dev, dev);
    let keep = fx.b.binary(BinOp::And, got, same);
    fx.b.branch(keep, ready, switch);
    fx.b.switch_to(switch);
    let primary = primary_context(fx, table, dev, device, &prefix);
    let rc = call_entry(&mut fx.b, table, Entry::CtxSetCurrent, vec![primary]);
    driver_check(fx, table, rc, || {
        vec![
            MsgPart::text(format!(
                "{prefix}: cannot make the primary context of CUDA device "
            )),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" current: cuCtxSetCurrent returned "),
        ]
    });
    fx.b.assign_iconst(switched, 1);
    fx.b.jump(ready);
    fx.b.switch_to(ready);

    // The launch configuration and the launch.
    let config_slot = fx.b.slot(cuda::CONFIG_SIZE, 8);
    let config = fx.b.stack_addr(config_slot, 0);
    for i in 0..3 {
        let g = fx.b.resize(grid[i].var, Ty::I32, false);
        fx.b.store(config, cuda::CONFIG_GRID[i], g);
        let b = fx.b.resize(block[i].var, Ty::I32, false);
        fx.b.store(config, cuda::CONFIG_BLOCK[i], b);
    }
    let smem = fx.b.resize(shared_mem.var, Ty::I32, false);
    fx.b.store(config, cuda::CONFIG_SHARED_MEM, smem);
    fx.b.store(config, cuda::CONFIG_STREAM, stream);
    match &cluster {
        Some(c) => {
            let attr_slot = fx.b.slot(cuda::ATTR_SIZE, 8);
            let attr = fx.b.stack_addr(attr_slot, 0);
            fx.b.store_imm(
                Ty::I32,
                attr,
                cuda::ATTR_ID,
                cuda::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            );
            for (dim, offset) in c.iter().zip(cuda::ATTR_CLUSTER_DIM) {
                let v = fx.b.resize(dim.var, Ty::I32, false);
                fx.b.store(attr, offset, v);
            }
            fx.b.store(config, cuda::CONFIG_ATTRS, attr);
            fx.b.store_imm(Ty::I32, config, cuda::CONFIG_NUM_ATTRS, 1);
        }
        None => {
            fx.b.store_imm(Ty::Ptr, config, cuda::CONFIG_ATTRS, 0);
            fx.b.store_imm(Ty::I32, config, cuda::CONFIG_NUM_ATTRS, 0);
        }
    }
    let params = fx.b.stack_addr(params_slot, 0);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::LaunchKernelEx,
        vec![config, kernel, params, null],
    );
    let restore = fx.b.new_block();
    let done = fx.b.new_block();
    let was_switched = fx.b.icmp_imm(IntCC::Ne, switched, 0);
    fx.b.branch(was_switched, restore, done);
    fx.b.switch_to(restore);
    call_entry(&mut fx.b, table, Entry::CtxSetCurrent, vec![current]);
    fx.b.jump(done);
    fx.b.switch_to(done);
    driver_check(fx, table, rc, || {
        let mut parts = vec![
            MsgPart::text(format!("{prefix} failed on CUDA device ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" with grid "),
        ];
        parts.extend(dims_parts(&grid));
        parts.push(MsgPart::text(", block "));
        parts.extend(dims_parts(&block));
        if let Some(c) = &cluster {
            parts.push(MsgPart::text(", cluster "));
            parts.extend(dims_parts(c));
        }
        parts.push(MsgPart::text(", shared_mem "));
        parts.push(MsgPart::Value(shared_mem.tag, shared_mem.var));
        parts.push(MsgPart::text(": cuLaunchKernelEx returned "));
        parts
    });
    Ok(())
}

/// Raises a RuntimeError (the text of `parts`, then the driver's description of `rc`) unless
/// `rc` is `CUDA_SUCCESS`.
fn driver_check(fx: &mut FnCtx<'_, '_>, table: Var, rc: Var, parts: impl FnOnce() -> Vec<MsgPart>) {
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    fx.check(ok, RUNTIME_ERROR, |fx| {
        let mut all = parts();
        all.extend(describe_error(fx.m, &mut fx.b, table, rc));
        all
    });
}

/// The shared-memory opt-in cache of a kernel (bytes allowed, per device ordinal).
fn shared_mem_cache(fx: &mut FnCtx<'_, '_>, binary: &str, kernel: &str) -> crate::lir::DataId {
    let key = (binary.to_owned(), kernel.to_owned());
    if let Some(&id) = fx.m.gpu.shared_mem.get(&key) {
        return id;
    }
    let id = zeroed(fx.m, "cuda_shared_mem", cuda::CACHED_DEVICES as usize * 8);
    fx.m.gpu.shared_mem.insert(key, id);
    id
}

/// The address of `ordinal`'s 8-byte entry in the per-device cache `cache`; ordinals past
/// [`cuda::CACHED_DEVICES`] share a scratch entry that is reset to 0 (never a hit).
fn cached_entry(fx: &mut FnCtx<'_, '_>, cache: crate::lir::DataId, ordinal: Var) -> Var {
    let base = fx.b.symbol_addr(Symbol::Data(cache));
    let scratch_slot = fx.b.slot(8, 8);
    let scratch = fx.b.stack_addr(scratch_slot, 0);
    fx.b.store_imm(Ty::I64, scratch, 0, 0);
    let offset = fx.b.binary_imm(BinOp::Imul, ordinal, 8);
    let entry = fx.b.ptr_add(base, offset);
    let cached =
        fx.b.icmp_imm(IntCC::Ult, ordinal, i64::from(cuda::CACHED_DEVICES));
    fx.b.select(cached, entry, scratch)
}

/// The primary context of `dev`, retained once per device (cached per ordinal).
fn primary_context(fx: &mut FnCtx<'_, '_>, table: Var, dev: Var, device: Int, prefix: &str) -> Var {
    let cache = match fx.m.gpu.primary_contexts {
        Some(id) => id,
        None => {
            let id = zeroed(
                fx.m,
                "cuda_primary_contexts",
                cuda::CACHED_DEVICES as usize * 8,
            );
            fx.m.gpu.primary_contexts = Some(id);
            id
        }
    };
    let entry = cached_entry(fx, cache, device.var);
    let cached = fx.b.load(Ty::Ptr, entry, 0);
    let ctx = fx.b.mutable_var(Ty::Ptr);
    fx.b.assign(ctx, cached);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let missing = fx.b.icmp(IntCC::Eq, cached, null);
    let retain = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.b.branch(missing, retain, join);
    fx.b.switch_to(retain);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::DevicePrimaryCtxRetain,
        vec![entry, dev],
    );
    let prefix = prefix.to_owned();
    driver_check(fx, table, rc, || {
        vec![
            MsgPart::text(format!(
                "{prefix}: cannot retain the primary context of CUDA device "
            )),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(": cuDevicePrimaryCtxRetain returned "),
        ]
    });
    let retained = fx.b.load(Ty::Ptr, entry, 0);
    fx.b.assign(ctx, retained);
    fx.b.jump(join);
    fx.b.switch_to(join);
    ctx
}
