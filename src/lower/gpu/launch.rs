//! The `launch` statement, step by step as docs/ir.md lists them: operands checked, kernel
//! arguments stored (descriptor inputs read), the driver and the kernel loaded once, what the
//! kernel must be allowed on the device, a context of the device current, TMA descriptors
//! taken from their caches or checked and encoded, the launch, the descriptors' cache entries
//! released, the caller's context back.

use crate::ir::{Launch, Platform};
use crate::lir::{BinOp, IntCC, Ty, Var};

use super::super::calls::load_once;
use super::super::context::FnCtx;
use super::super::options::LowerError;
use super::super::raise::MsgPart;
use super::args::lower_args;
use super::config::launch_config;
use super::context::{make_current, restore};
use super::cuda::{self, Entry};
use super::operands::{Operands, dims_parts, lower_operands};
use super::opt_in::{self, Target};
use super::settings::settings;
use super::shared::load_table;
use super::support::{cached_entry, call_entry, driver_check, zeroed};
use super::tensormap::cache as tensormap_cache;

/// Lowers `launch binary.kernel[...](args)`.
pub(crate) fn lower_launch(fx: &mut FnCtx<'_, '_>, l: &Launch) -> Result<(), LowerError> {
    let platform =
        fx.m.ir
            .device_binaries
            .iter()
            .find(|b| b.name == l.binary)
            .map(|b| b.format.platform());
    if platform == Some(Platform::Hip) {
        return super::hip::lower_launch(fx, l);
    }
    let prefix = format!("{}: launch of {}.{}", fx.func.name, l.binary, l.kernel);
    let ops = lower_operands(fx, l, &prefix, Platform::Cuda)?;
    let args = lower_args(fx, &l.args, &prefix)?;
    fx.flush_checks();

    let (table, kernel) = match ops.function {
        // The caller's handle: nothing loaded, its attributes the caller's.
        Some(handle) => (driver_table(fx), handle),
        None => load_kernel(fx, l)?,
    };
    let dev = device_handle(fx, table, &ops, &prefix);
    let target = Target {
        table,
        kernel,
        dev,
        binary: &l.binary,
        name: &l.kernel,
        prefix: &prefix,
    };
    if ops.function.is_none() {
        opt_in::shared_memory(fx, &target, &ops);
        opt_in::cluster_size(
            fx,
            &target,
            &ops,
            opt_in::constant_blocks(settings(l).cluster),
        );
    }
    opt_in::driver_version(fx, &target, &ops);

    let switch = make_current(fx, table, dev, ops.device, &prefix);
    let config = launch_config(fx, &ops);
    let held = args.build_maps(fx, table, &switch);
    let params = fx.b.stack_addr(args.params_slot, 0);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::LaunchKernelEx,
        vec![config, kernel, params, null],
    );
    tensormap_cache::release(fx, &held);
    restore(fx, table, &switch);
    driver_check(fx, table, rc, |_| launch_failed(&prefix, &ops));
    Ok(())
}

/// The driver table, loaded once per process.
fn driver_table(fx: &mut FnCtx<'_, '_>) -> Var {
    let (cell, source) = fx.m.cuda_driver();
    let error = fx.error_block();
    load_table(fx.m, &mut fx.b, cell, source, error)
}

/// The driver table and the kernel's handle, each loaded once per process.
fn load_kernel(fx: &mut FnCtx<'_, '_>, l: &Launch) -> Result<(Var, Var), LowerError> {
    let table = driver_table(fx);
    let error = fx.error_block();
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
    Ok((table, fx.b.load(Ty::Ptr, kernels, index * 8)))
}

/// The `CUdevice` of the launch's ordinal: from a per-ordinal cache (a device's handle never
/// changes in a process), asked of `cuDeviceGet` on the first launch on that device.
fn device_handle(fx: &mut FnCtx<'_, '_>, table: Var, ops: &Operands, prefix: &str) -> Var {
    let cache = match fx.m.gpu.devices {
        Some(id) => id,
        None => {
            let id = zeroed(fx.m, "cuda_devices", cuda::CACHED_DEVICES as usize * 8);
            fx.m.gpu.devices = Some(id);
            id
        }
    };
    let entry = cached_entry(fx, cache, ops.device.var);
    let cached = fx.b.load(Ty::I64, entry, 0);
    let dev = fx.b.mutable_var(Ty::I32);
    let low = fx.b.resize(cached, Ty::I32, false);
    fx.b.assign(dev, low);
    let known = fx.b.icmp_imm(IntCC::Ne, cached, 0);
    let ask = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.b.branch(known, join, ask);
    fx.b.switch_to(ask);
    let slot = fx.b.slot(8, 8);
    let dev_at = fx.b.stack_addr(slot, 0);
    let rc = call_entry(
        &mut fx.b,
        table,
        Entry::DeviceGet,
        vec![dev_at, ops.ordinal],
    );
    let device = ops.device;
    driver_check(fx, table, rc, |_| {
        vec![
            MsgPart::text(format!("{prefix}: CUDA device ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" is not available: cuDeviceGet returned "),
        ]
    });
    let got = fx.b.load(Ty::I32, dev_at, 0);
    fx.b.assign(dev, got);
    // Bit 32 marks the entry as known (a handle may be 0).
    let wide = fx.b.resize(got, Ty::I64, false);
    let marked = fx.b.binary_imm(BinOp::Or, wide, 1 << 32);
    fx.b.store(entry, 0, marked);
    fx.b.jump(join);
    fx.b.switch_to(join);
    dev
}

/// The message of a failed `cuLaunchKernelEx` (the driver's words follow).
fn launch_failed(prefix: &str, ops: &Operands) -> Vec<MsgPart> {
    let mut parts = vec![
        MsgPart::text(format!("{prefix} failed on CUDA device ")),
        MsgPart::Value(ops.device.tag, ops.device.var),
        MsgPart::text(" with grid "),
    ];
    parts.extend(dims_parts(&ops.grid));
    parts.push(MsgPart::text(", block "));
    parts.extend(dims_parts(&ops.block));
    if let Some(c) = &ops.cluster {
        parts.push(MsgPart::text(", cluster "));
        parts.extend(dims_parts(c));
    }
    if let Some(s) = ops.shared_mem {
        parts.push(MsgPart::text(", shared_mem "));
        parts.push(MsgPart::Value(s.tag, s.var));
    } else {
        parts.push(MsgPart::text(", shared_mem 0"));
    }
    parts.push(MsgPart::text(": cuLaunchKernelEx returned "));
    parts
}
