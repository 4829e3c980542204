//! A launch with a thread-block cluster on AMD GPUs: `hipDrvLaunchKernelEx` with a
//! `HIP_LAUNCH_CONFIG` carrying two attributes, the cluster's dimensions and whether the grid
//! is cooperative (0 or 1), in that order, as Triton 3.9's AMD launcher passes them for
//! `num_ctas` above 1. The entry is optional in the runtime table (older runtimes lack it): a
//! launch with a cluster checks it is there before the module is loaded or the device switched.

use crate::lir::{IntCC, Ty, Var};

use super::super::super::context::FnCtx;
use super::super::super::raise::MsgPart;
use super::super::operands::{Flag, Int, Operands};
use super::api::{self, Entry};
use super::runtime::call;
use safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR;

/// Raises a RuntimeError unless the runtime has `hipDrvLaunchKernelEx`.
pub(super) fn require_launch_ex(fx: &mut FnCtx<'_, '_>, table: Var, prefix: &str) {
    let entry = fx.b.load(Ty::Ptr, table, Entry::DrvLaunchKernelEx.offset());
    let null = fx.b.iconst(Ty::Ptr, 0);
    let present = fx.b.icmp(IntCC::Ne, entry, null);
    let p = prefix.to_owned();
    fx.check(present, RUNTIME_ERROR, |_| {
        vec![MsgPart::text(format!(
            "{p}: the HIP runtime has no `{}`, which a launch with a cluster needs (a newer \
             ROCm has it)",
            Entry::DrvLaunchKernelEx.name()
        ))]
    });
}

/// The grid, block and dynamic shared memory of a launch, as `I32`s.
pub(super) struct Shape {
    pub grid: [Var; 3],
    pub block: [Var; 3],
    pub shared: Var,
}

/// Calls `hipDrvLaunchKernelEx` for `kernel` with `cluster`'s dimensions; returns its result.
pub(super) fn launch_ex(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    kernel: Var,
    ops: &Operands,
    cluster: [Int; 3],
    shape: &Shape,
    params: Var,
) -> Var {
    let attrs_slot = fx.b.slot(2 * api::ATTR_SIZE, 8);
    let attrs = fx.b.stack_addr(attrs_slot, 0);
    fx.b.store_imm(
        Ty::I32,
        attrs,
        api::ATTR_ID,
        api::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
    );
    for (i, d) in cluster.iter().enumerate() {
        let v = fx.b.resize(d.var, Ty::I32, false);
        fx.b.store(attrs, api::ATTR_VALUE + 4 * i, v);
    }
    let second = api::ATTR_SIZE as usize;
    fx.b.store_imm(
        Ty::I32,
        attrs,
        second + api::ATTR_ID,
        api::LAUNCH_ATTRIBUTE_COOPERATIVE,
    );
    let cooperative = second + api::ATTR_VALUE;
    match ops.cooperative {
        Flag::Off => fx.b.store_imm(Ty::I32, attrs, cooperative, 0),
        Flag::On => fx.b.store_imm(Ty::I32, attrs, cooperative, 1),
        Flag::Dynamic(v) => fx.b.store(attrs, cooperative, v),
    }

    let config_slot = fx.b.slot(api::CONFIG_SIZE, 8);
    let config = fx.b.stack_addr(config_slot, 0);
    for i in 0..3 {
        fx.b.store(config, api::CONFIG_GRID[i], shape.grid[i]);
        fx.b.store(config, api::CONFIG_BLOCK[i], shape.block[i]);
    }
    fx.b.store(config, api::CONFIG_SHARED_MEM, shape.shared);
    fx.b.store(config, api::CONFIG_STREAM, ops.stream);
    fx.b.store(config, api::CONFIG_ATTRS, attrs);
    fx.b.store_imm(Ty::I32, config, api::CONFIG_NUM_ATTRS, 2);
    let null = fx.b.iconst(Ty::Ptr, 0);
    call(
        &mut fx.b,
        table,
        Entry::DrvLaunchKernelEx,
        vec![config, kernel, params, null],
    )
}
