//! The `launch` statement of an AMDGPU kernel, step by step: operands checked (HIP's limits,
//! the `kDLROCM` environment stream), kernel arguments stored, the runtime found once, the
//! kernel's module loaded once per device, the launch device made current, the launch
//! (`hipModuleLaunchKernel`, `hipModuleLaunchCooperativeKernel` for a cooperative grid, or
//! `hipDrvLaunchKernelEx` with a cluster: [`super::cluster`]), the caller's device current
//! again.

use crate::ir::{Launch, Platform};
use crate::lir::{BinOp, IntCC, Ty, Var};

use super::super::super::context::FnCtx;
use super::super::super::options::LowerError;
use super::super::super::raise::{MsgPart, Tag};
use super::super::args::lower_args;
use super::super::operands::{Flag, Int, Operands, dims_parts, lower_operands};
use super::super::shared::load_table;
use super::api::{self, Entry};
use super::cluster::{Shape, launch_ex, require_launch_ex};
use super::module::call_loader;
use super::runtime::{call, check};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

/// Lowers `launch binary.kernel[...](args)` of a HIP device binary.
pub(crate) fn lower_launch(fx: &mut FnCtx<'_, '_>, l: &Launch) -> Result<(), LowerError> {
    let prefix = format!("{}: launch of {}.{}", fx.func.name, l.binary, l.kernel);
    let ops = lower_operands(fx, l, &prefix, Platform::Hip)?;
    let args = lower_args(fx, &l.args, &prefix)?;
    if ops.function.is_none() {
        // Only the binary's per-device module cache limits the ordinal.
        check_cached_device(fx, &ops, &prefix);
    }
    fx.flush_checks();

    let (cell, source) = fx.m.hip_runtime();
    let error = fx.error_block();
    let table = load_table(fx.m, &mut fx.b, cell, source, error);
    if ops.cluster.is_some() {
        require_launch_ex(fx, table, &prefix);
    }
    let kernel = match ops.function {
        // The caller's handle: nothing loaded.
        Some(handle) => handle,
        None => load_kernel(fx, l, table, ops.ordinal)?,
    };
    let switch = make_current(fx, table, &ops, &prefix);

    let u32s =
        |fx: &mut FnCtx<'_, '_>, dims: &[Int; 3]| dims.map(|d| fx.b.resize(d.var, Ty::I32, false));
    let grid = u32s(fx, &ops.grid);
    let block = u32s(fx, &ops.block);
    let shared = match ops.shared_mem {
        Some(s) => fx.b.resize(s.var, Ty::I32, false),
        None => fx.b.iconst(Ty::I32, 0),
    };
    let params = fx.b.stack_addr(args.params_slot, 0);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let mut launch_args = vec![kernel];
    launch_args.extend(grid);
    launch_args.extend(block);
    launch_args.extend([shared, ops.stream, params]);
    let plain = |fx: &mut FnCtx<'_, '_>| {
        let mut a = launch_args.clone();
        a.push(null);
        call(&mut fx.b, table, Entry::ModuleLaunchKernel, a)
    };
    let cooperative = |fx: &mut FnCtx<'_, '_>| {
        call(
            &mut fx.b,
            table,
            Entry::ModuleLaunchCooperativeKernel,
            launch_args.clone(),
        )
    };
    // The caller's device back, then the result checked (the message names the entry called).
    let finish = |fx: &mut FnCtx<'_, '_>, rc: Var, entry: Entry| {
        restore(fx, table, &switch);
        check(fx, table, rc, |fx| {
            launch_failed(fx, table, kernel, &prefix, &ops, entry.name())
        });
    };
    if let Some(cluster) = ops.cluster {
        // One entry for every grid: the cooperative flag is an attribute.
        let shape = Shape {
            grid,
            block,
            shared,
        };
        let rc = launch_ex(fx, table, kernel, &ops, cluster, &shape, params);
        finish(fx, rc, Entry::DrvLaunchKernelEx);
        return Ok(());
    }
    match ops.cooperative {
        Flag::Off => {
            let rc = plain(fx);
            finish(fx, rc, Entry::ModuleLaunchKernel);
        }
        Flag::On => {
            let rc = cooperative(fx);
            finish(fx, rc, Entry::ModuleLaunchCooperativeKernel);
        }
        Flag::Dynamic(on) => {
            let coop = fx.b.new_block();
            let normal = fx.b.new_block();
            let done = fx.b.new_block();
            let is_on = fx.b.icmp_imm(IntCC::Ne, on, 0);
            fx.b.branch(is_on, coop, normal);
            fx.b.switch_to(coop);
            let rc = cooperative(fx);
            finish(fx, rc, Entry::ModuleLaunchCooperativeKernel);
            fx.b.jump(done);
            fx.b.switch_to(normal);
            let rc = plain(fx);
            finish(fx, rc, Entry::ModuleLaunchKernel);
            fx.b.jump(done);
            fx.b.switch_to(done);
        }
    }
    Ok(())
}

/// Modules are cached for ordinals below [`api::CACHED_DEVICES`] only.
fn check_cached_device(fx: &mut FnCtx<'_, '_>, ops: &Operands, prefix: &str) {
    let device = ops.device;
    let ok =
        fx.b.icmp_imm(IntCC::Ult, device.var, i64::from(api::CACHED_DEVICES));
    let p = prefix.to_owned();
    fx.check(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::text(format!("{p}: device is ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(format!(
                ", but HIP kernels launch on devices 0 to {}",
                api::CACHED_DEVICES - 1
            )),
        ]
    });
}

/// The kernel's handle on device `ordinal`: from the binary's cache, or loaded (once per
/// device) by the binary's loader.
fn load_kernel(
    fx: &mut FnCtx<'_, '_>,
    l: &Launch,
    table: Var,
    ordinal: Var,
) -> Result<Var, LowerError> {
    let (cache, loader) = fx.m.hip_binary(&l.binary)?;
    let kernels =
        fx.m.ir
            .device_binaries
            .iter()
            .find(|b| b.name == l.binary)
            .map(|b| {
                (
                    b.kernels.len(),
                    b.kernels.iter().position(|k| *k == l.kernel),
                )
            });
    let Some((count, Some(index))) = kernels else {
        return Err(LowerError::internal(format!(
            "no kernel `{}` in `{}`",
            l.kernel, l.binary
        )));
    };
    let base = fx.b.symbol_addr(crate::lir::Symbol::Data(cache));
    let wide = fx.b.resize(ordinal, Ty::I64, false);
    let offset = fx.b.binary_imm(BinOp::Imul, wide, (count * 8) as i64);
    let row = fx.b.ptr_add(base, offset);
    let cached = fx.b.load(Ty::Ptr, row, index * 8);
    let kernel = fx.b.mutable_var(Ty::Ptr);
    fx.b.assign(kernel, cached);
    let null = fx.b.iconst(Ty::Ptr, 0);
    let missing = fx.b.icmp(IntCC::Eq, cached, null);
    let load = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.b.branch(missing, load, join);
    fx.b.switch_to(load);
    let rc = call_loader(&mut fx.b, loader, table, ordinal, row);
    let failed = fx.b.icmp_imm(IntCC::Ne, rc, 0);
    let loaded = fx.b.new_block();
    let error = fx.error_block();
    fx.b.branch(failed, error, loaded);
    fx.b.switch_to(loaded);
    let k = fx.b.load(Ty::Ptr, row, index * 8);
    fx.b.assign(kernel, k);
    fx.b.jump(join);
    fx.b.switch_to(join);
    Ok(kernel)
}

/// The caller's device and whether the launch switched away from it.
struct Switch {
    previous: Var,
    switched: Var,
}

/// Makes the launch device current unless it is.
fn make_current(fx: &mut FnCtx<'_, '_>, table: Var, ops: &Operands, prefix: &str) -> Switch {
    let slot = fx.b.slot(8, 8);
    let at = fx.b.stack_addr(slot, 0);
    fx.b.store_imm(Ty::I32, at, 0, -1);
    let rc = call(&mut fx.b, table, Entry::GetDevice, vec![at]);
    let p = prefix.to_owned();
    check(fx, table, rc, |_| {
        vec![MsgPart::text(format!("{p}: hipGetDevice returned "))]
    });
    let previous = fx.b.load(Ty::I32, at, 0);
    let switched = fx.b.icmp(IntCC::Ne, previous, ops.ordinal);
    let set = fx.b.new_block();
    let done = fx.b.new_block();
    fx.b.branch(switched, set, done);
    fx.b.switch_to(set);
    let rc = call(&mut fx.b, table, Entry::SetDevice, vec![ops.ordinal]);
    let device = ops.device;
    let p = prefix.to_owned();
    check(fx, table, rc, |_| {
        vec![
            MsgPart::text(format!("{p}: HIP device ")),
            MsgPart::Value(device.tag, device.var),
            MsgPart::text(" is not available: hipSetDevice returned "),
        ]
    });
    fx.b.jump(done);
    fx.b.switch_to(done);
    Switch { previous, switched }
}

/// Makes the caller's device current again when [`make_current`] switched.
fn restore(fx: &mut FnCtx<'_, '_>, table: Var, switch: &Switch) {
    let back = fx.b.new_block();
    let done = fx.b.new_block();
    fx.b.branch(switch.switched, back, done);
    fx.b.switch_to(back);
    call(&mut fx.b, table, Entry::SetDevice, vec![switch.previous]);
    fx.b.jump(done);
    fx.b.switch_to(done);
}

/// The message of a failed launch (the runtime's words follow). With `shared_mem`, it adds
/// the kernel's static LDS and the device's limit per block, asked for on this cold path.
fn launch_failed(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    kernel: Var,
    prefix: &str,
    ops: &Operands,
    entry: &str,
) -> Vec<MsgPart> {
    let mut parts = vec![
        MsgPart::text(format!("{prefix} failed on HIP device ")),
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
    match ops.shared_mem {
        Some(s) => {
            let slot = fx.b.slot(8, 8);
            let static_at = fx.b.stack_addr(slot, 0);
            let limit_at = fx.b.stack_addr(slot, 4);
            fx.b.store_imm(Ty::I32, static_at, 0, -1);
            fx.b.store_imm(Ty::I32, limit_at, 0, -1);
            let attr = fx.b.iconst(Ty::I32, api::FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
            call(
                &mut fx.b,
                table,
                Entry::FuncGetAttribute,
                vec![static_at, attr, kernel],
            );
            let attr =
                fx.b.iconst(Ty::I32, api::ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
            call(
                &mut fx.b,
                table,
                Entry::DeviceGetAttribute,
                vec![limit_at, attr, ops.ordinal],
            );
            let static_lds = fx.b.load(Ty::I32, static_at, 0);
            let static_lds = fx.b.resize(static_lds, Ty::I64, true);
            let limit = fx.b.load(Ty::I32, limit_at, 0);
            let limit = fx.b.resize(limit, Ty::I64, true);
            parts.push(MsgPart::text(", shared_mem "));
            parts.push(MsgPart::Value(s.tag, s.var));
            parts.push(MsgPart::text(" (the kernel's static LDS: "));
            parts.push(MsgPart::Value(Tag::I64, static_lds));
            parts.push(MsgPart::text(" bytes; the device's LDS per block: "));
            parts.push(MsgPart::Value(Tag::I64, limit));
            parts.push(MsgPart::text(" bytes)"));
        }
        None => parts.push(MsgPart::text(", shared_mem 0")),
    }
    parts.push(MsgPart::text(format!(": {entry} returned ")));
    parts
}
