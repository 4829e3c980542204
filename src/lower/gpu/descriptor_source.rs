//! What a descriptor argument (`tensormap(..)`, `tdm(..)`) reads of its tensor parameter: the
//! first element's address, the dims and the strides in elements, outermost first.

use crate::ir::TensorField;
use crate::lir::{ConvOp, Ty, Var};

use super::super::context::{Binding, FnCtx};
use super::super::expr::lower_tensor_scalar;
use super::super::layout::declared_strides;
use super::super::options::LowerError;

/// A tensor's geometry as machine values.
pub(super) struct Source {
    /// `data + byte_offset` (a `Ptr`).
    pub addr: Var,
    /// `addr` as an `I64`.
    pub addr_int: Var,
    /// The dims (`I64`).
    pub dims: Vec<Var>,
    /// The strides in elements (`I64`): a compact tensor's from its dims, else read (NULL
    /// read as compact).
    pub strides: Vec<Var>,
}

/// Reads tensor parameter `tensor`, of fixed rank `rank`.
pub(super) fn read(
    fx: &mut FnCtx<'_, '_>,
    tensor: &str,
    rank: usize,
) -> Result<Source, LowerError> {
    let Binding::Tensor(t) = fx.lookup(tensor)? else {
        return Err(LowerError::internal(format!(
            "`{tensor}` is not a tensor parameter"
        )));
    };
    let (dl, kind) = (t.dl, t.spec.strides.clone());
    let data = lower_tensor_scalar(fx, tensor, TensorField::Data)?;
    let offset = lower_tensor_scalar(fx, tensor, TensorField::ByteOffset)?;
    let addr = fx.b.ptr_add(data, offset);
    let addr_int = fx.b.convert(ConvOp::PtrToInt, addr, Ty::I64);
    let mut dims = Vec::with_capacity(rank);
    for i in 0..rank {
        dims.push(lower_tensor_scalar(fx, tensor, TensorField::Shape(i))?);
    }
    let strides = declared_strides(fx, dl, &kind, &dims);
    Ok(Source {
        addr,
        addr_int,
        dims,
        strides,
    })
}
