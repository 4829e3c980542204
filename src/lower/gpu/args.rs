//! The kernel's arguments: each value in its own aligned place on the stack, each TMA
//! descriptor in 128-byte aligned stack storage ([`tensormap`](super::tensormap)), each AMD TDM
//! descriptor in its own 80 bytes ([`tdm`](super::tdm)), and the `kernelParams` array
//! of pointers to them that `cuLaunchKernelEx` and `hipModuleLaunchKernel` take.

use crate::ir::{Expr, LaunchArg};
use crate::lir::{SlotId, Var};

use super::super::context::FnCtx;
use super::super::expr::{lower_expr, scalar_var};
use super::super::options::LowerError;
use super::context::Switch;
use super::tensormap::cache as tensormap_cache;
use super::tensormap::cleanup::Cleanup;
use super::tensormap::{self, Prepared};

/// The lowered arguments: the pointer array, and the descriptors still to take from their
/// caches or encode once the context is current ([`LoweredArgs::build_maps`]).
pub(super) struct LoweredArgs<'a> {
    /// The `kernelParams` array.
    pub params_slot: SlotId,
    /// Each descriptor: its argument index, its inputs, its stack storage.
    maps: Vec<(usize, Prepared<'a>, Var)>,
}

impl LoweredArgs<'_> {
    /// Points each descriptor's parameter at its cached copy (whose lock stays held) or at
    /// its stack storage, encoded; a failure undoes the context `switch` and the locks taken.
    /// Returns the held locks, for [`tensormap_cache::release`] after the launch.
    pub(super) fn build_maps(
        &self,
        fx: &mut FnCtx<'_, '_>,
        table: Var,
        switch: &Switch,
    ) -> Vec<Var> {
        let mut cleanup = Cleanup::new(table, switch);
        for (k, p, out) in &self.maps {
            let (map, held) = tensormap_cache::build(fx, p, *out, &cleanup);
            let params = fx.b.stack_addr(self.params_slot, 0);
            fx.b.store(params, k * 8, map);
            cleanup.hold(held);
        }
        cleanup.into_held()
    }
}

/// Lowers and stores the value arguments and reads the descriptors' inputs; fills the pointer
/// array's entries of the values.
pub(super) fn lower_args<'a>(
    fx: &mut FnCtx<'_, '_>,
    args: &'a [LaunchArg],
    prefix: &str,
) -> Result<LoweredArgs<'a>, LowerError> {
    let mut values: Vec<Var> = Vec::new();
    let mut maps = Vec::new();
    let mut tdms = Vec::new();
    for (k, arg) in args.iter().enumerate() {
        match arg {
            LaunchArg::Value(e) => values.push(lower_value(fx, k, e)?),
            LaunchArg::TensorMap(t) => {
                let p = tensormap::prepare(fx, t, k, prefix)?;
                let out = tensormap::storage(fx);
                maps.push((k, p, out));
            }
            LaunchArg::Tdm(t) => tdms.push(super::tdm::build(fx, t, k, prefix)?),
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
    let params_slot = fx.b.slot((args.len().max(1) * 8) as u32, 8);
    let mut value_iter = values.iter().zip(&offsets);
    let mut tdm_iter = tdms.into_iter();
    for (k, arg) in args.iter().enumerate() {
        match arg {
            LaunchArg::Value(_) => {
                let (&v, &at) = value_iter.next().expect("one per value argument");
                let p = fx.b.stack_addr(values_slot, at);
                fx.b.store(p, 0, v);
                let params = fx.b.stack_addr(params_slot, 0);
                fx.b.store(params, k * 8, p);
            }
            LaunchArg::Tdm(_) => {
                let p = tdm_iter.next().expect("one per tdm argument");
                let params = fx.b.stack_addr(params_slot, 0);
                fx.b.store(params, k * 8, p);
            }
            // Pointed at by `build_maps`.
            LaunchArg::TensorMap(_) => {}
        }
    }
    Ok(LoweredArgs { params_slot, maps })
}

/// A value argument's machine value.
fn lower_value(fx: &mut FnCtx<'_, '_>, k: usize, e: &Expr) -> Result<Var, LowerError> {
    let v = lower_expr(fx, e)?;
    scalar_var(v, || format!("kernel argument {k}"))
}
