//! The kernel's arguments: each value in its own aligned place on the stack, and the
//! `kernelParams` array of pointers to them that `cuLaunchKernelEx` takes.

use crate::ir::Expr;
use crate::lir::{SlotId, Var};

use super::super::context::FnCtx;
use super::super::expr::{Val, lower_expr};
use super::super::options::LowerError;

/// Lowers the arguments and stores them; returns the slot of the pointer array.
pub(super) fn lower_args(fx: &mut FnCtx<'_, '_>, args: &[Expr]) -> Result<SlotId, LowerError> {
    let mut values: Vec<Var> = Vec::new();
    for (k, e) in args.iter().enumerate() {
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
    Ok(params_slot)
}
