//! The `CUlaunchConfig` of a launch and its attribute array, in the order Triton's launcher
//! writes them (PDL, cooperative, cluster dimensions, cluster scheduling policy), then the
//! preferred cluster and the priority.

use crate::ir::ClusterPolicy;
use crate::lir::{Ty, Var};

use super::super::context::FnCtx;
use super::cuda;
use super::operands::{Flag, Int, Operands};

/// One launch attribute's value.
enum AttrValue {
    /// An `int` value known at compile time.
    Const(i64),
    /// An `I32` value.
    Int(Var),
    /// Three dimensions at these offsets of the attribute.
    Dims([Int; 3], [usize; 3]),
}

/// Fills a `CUlaunchConfig` on the stack from `ops` and returns its address. `ops` is taken
/// apart without `..`: a new operand does not compile until it has its place here (or is
/// named as one the configuration does not carry).
pub(super) fn launch_config(fx: &mut FnCtx<'_, '_>, ops: &Operands) -> Var {
    let Operands {
        grid,
        block,
        cluster,
        preferred_cluster,
        cluster_policy,
        shared_mem,
        stream,
        pdl,
        cooperative,
        priority,
        // The context made current before the launch carries these.
        device: _,
        ordinal: _,
        // The launch's kernel argument, not part of the configuration.
        function: _,
    } = *ops;
    let config_slot = fx.b.slot(cuda::CONFIG_SIZE, 8);
    let config = fx.b.stack_addr(config_slot, 0);
    for i in 0..3 {
        let g = fx.b.resize(grid[i].var, Ty::I32, false);
        fx.b.store(config, cuda::CONFIG_GRID[i], g);
        let b = fx.b.resize(block[i].var, Ty::I32, false);
        fx.b.store(config, cuda::CONFIG_BLOCK[i], b);
    }
    match shared_mem {
        Some(s) => {
            let smem = fx.b.resize(s.var, Ty::I32, false);
            fx.b.store(config, cuda::CONFIG_SHARED_MEM, smem);
        }
        None => fx.b.store_imm(Ty::I32, config, cuda::CONFIG_SHARED_MEM, 0),
    }
    fx.b.store(config, cuda::CONFIG_STREAM, stream);
    let attrs = attributes(Attributes {
        pdl,
        cooperative,
        cluster,
        cluster_policy,
        preferred_cluster,
        priority,
    });
    if attrs.is_empty() {
        fx.b.store_imm(Ty::Ptr, config, cuda::CONFIG_ATTRS, 0);
        fx.b.store_imm(Ty::I32, config, cuda::CONFIG_NUM_ATTRS, 0);
        return config;
    }
    let slot = fx.b.slot(cuda::ATTR_SIZE * attrs.len() as u32, 8);
    let base = fx.b.stack_addr(slot, 0);
    for (k, (id, value)) in attrs.iter().enumerate() {
        let at = k * cuda::ATTR_SIZE as usize;
        fx.b.store_imm(Ty::I32, base, at + cuda::ATTR_ID, *id);
        match value {
            AttrValue::Const(v) => fx.b.store_imm(Ty::I32, base, at + cuda::ATTR_VALUE, *v),
            AttrValue::Int(v) => fx.b.store(base, at + cuda::ATTR_VALUE, *v),
            AttrValue::Dims(dims, offsets) => {
                for (d, offset) in dims.iter().zip(offsets) {
                    let v = fx.b.resize(d.var, Ty::I32, false);
                    fx.b.store(base, at + offset, v);
                }
            }
        }
    }
    fx.b.store(config, cuda::CONFIG_ATTRS, base);
    fx.b.store_imm(Ty::I32, config, cuda::CONFIG_NUM_ATTRS, attrs.len() as i64);
    config
}

/// The operands a launch passes as attributes.
struct Attributes {
    pdl: Flag,
    cooperative: Flag,
    cluster: Option<[Int; 3]>,
    cluster_policy: Option<ClusterPolicy>,
    preferred_cluster: Option<[Int; 3]>,
    priority: Option<Var>,
}

/// The attributes a launch passes, as (id, value), in order.
fn attributes(ops: Attributes) -> Vec<(i64, AttrValue)> {
    let mut attrs = Vec::new();
    for (flag, id) in [
        (ops.pdl, cuda::LAUNCH_ATTRIBUTE_PDL),
        (ops.cooperative, cuda::LAUNCH_ATTRIBUTE_COOPERATIVE),
    ] {
        match flag {
            Flag::Off => {}
            Flag::On => attrs.push((id, AttrValue::Const(1))),
            Flag::Dynamic(v) => attrs.push((id, AttrValue::Int(v))),
        }
    }
    if let Some(c) = ops.cluster {
        attrs.push((
            cuda::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            AttrValue::Dims(c, cuda::ATTR_CLUSTER_DIM),
        ));
    }
    if let Some(policy) = ops.cluster_policy {
        attrs.push((
            cuda::LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY,
            AttrValue::Const(cuda::cluster_policy(policy)),
        ));
    }
    if let Some(p) = ops.preferred_cluster {
        attrs.push((
            cuda::LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
            AttrValue::Dims(p, cuda::ATTR_PREFERRED_CLUSTER_DIM),
        ));
    }
    if let Some(v) = ops.priority {
        attrs.push((cuda::LAUNCH_ATTRIBUTE_PRIORITY, AttrValue::Int(v)));
    }
    attrs
}
