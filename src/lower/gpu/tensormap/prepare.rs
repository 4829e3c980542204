//! Preparation: the encoder's inputs of one `tensormap(..)` argument read from its tensor
//! (address, dims and strides, the layout's values, the cache key).
//!
//! Every list here is in the tensor's order (outermost first), as the IR and the messages
//! count; the driver's arrays are innermost first, and [`super::encode`] reverses them as it
//! stores them. The cache key alone is in the driver's order.

use crate::ir::{Expr, TensorMapArg, TensorMapDtype};
use crate::lir::{BinOp, Ty, Var};

use super::super::super::context::{Binding, FnCtx};
use super::super::super::options::LowerError;
use super::super::descriptor_source::{self, Source};
use super::super::operands::lower_int;

/// The encoder's inputs of one descriptor argument (checked on a cache miss only: a hit has
/// the key of inputs that passed).
pub(crate) struct Prepared<'a> {
    pub(crate) arg: &'a TensorMapArg,
    /// `<prefix>: kernel argument K (tensormap of 'T')`, which starts every message.
    pub(crate) what: String,
    pub(crate) elem: TensorMapDtype,
    /// The values, in the host function.
    pub(crate) inputs: Inputs,
}

/// The encoder's inputs as values: in the host function ([`prepare`]), or as the miss
/// function reads them back (`miss`).
pub(crate) struct Inputs {
    pub(crate) addr: Var,
    /// `addr` as an `I64`.
    pub(crate) addr_int: Var,
    /// The tensor's strides in elements (`I64`).
    pub(crate) tensor_strides: Vec<Var>,
    /// Dims (`I64`) as the driver counts them: the innermost one in values of a packed type.
    pub(crate) dims: Vec<Var>,
    /// The tensor's innermost extent (bytes for a packed type; the last of `dims` otherwise).
    pub(crate) inner_extent: Option<Var>,
    /// The byte strides of every dim but the innermost (`I64`), as the driver takes them.
    pub(crate) byte_strides: Vec<Var>,
    /// The layout's values (`I64`), in [`TensorMapLayout::exprs`] order.
    ///
    /// [`TensorMapLayout::exprs`]: crate::ir::TensorMapLayout::exprs
    pub(crate) layout: Vec<Var>,
    /// The traversal strides (`element_strides=`, 1 where not given) (`I64`).
    pub(crate) element_strides: Vec<Var>,
}

impl Inputs {
    /// The cache key of these inputs of `t` (the argument, or its form in the miss function),
    /// in the driver's order: the address, the dims and byte strides innermost first, then each
    /// layout value that is not a constant of `t` (in [`TensorMapLayout::exprs`] order) and
    /// each element stride that is not one (innermost first).
    ///
    /// [`TensorMapLayout::exprs`]: crate::ir::TensorMapLayout::exprs
    pub(crate) fn key(&self, t: &TensorMapArg) -> Vec<Var> {
        let mut key = vec![self.addr_int];
        key.extend(self.dims.iter().rev());
        key.extend(self.byte_strides.iter().rev());
        for (e, &v) in t.layout.exprs().zip(&self.layout) {
            if !matches!(e, Expr::Int { .. }) {
                key.push(v);
            }
        }
        for (i, &v) in self.element_strides.iter().enumerate().rev() {
            if t.element_strides
                .get(i)
                .is_some_and(|e| !matches!(e, Expr::Int { .. }))
            {
                key.push(v);
            }
        }
        key
    }
}

/// An integer expression (a box value or element stride) widened to `I64`.
fn int_i64(fx: &mut FnCtx<'_, '_>, e: &Expr) -> Result<Var, LowerError> {
    Ok(lower_int(fx, e, "a box or element stride")?.var)
}

/// Reads the encoder's inputs of descriptor argument `k` (`prefix` starts every message).
pub(crate) fn prepare<'a>(
    fx: &mut FnCtx<'_, '_>,
    t: &'a TensorMapArg,
    k: usize,
    prefix: &str,
) -> Result<Prepared<'a>, LowerError> {
    let what = format!(
        "{prefix}: kernel argument {k} (tensormap of '{}')",
        t.tensor
    );
    let Binding::Tensor(tensor) = fx.lookup(&t.tensor)? else {
        return Err(LowerError::internal(format!(
            "{what}: not a tensor parameter"
        )));
    };
    let elem = t
        .element_type(tensor.spec.dtype)
        .ok_or_else(|| LowerError::internal(format!("{what}: no element type")))?;
    let size = i64::from(elem.size());
    let rank = tensor
        .spec
        .shape
        .rank()
        .ok_or_else(|| LowerError::internal(format!("{what}: a tensor of any rank")))?;

    let Source {
        addr,
        addr_int,
        mut dims,
        strides: tensor_strides,
    } = descriptor_source::read(fx, &t.tensor, rank)?;
    // Computed innermost first, the key's order, then held in the tensor's.
    let mut byte_strides = Vec::with_capacity(rank.saturating_sub(1));
    for i in (0..rank.saturating_sub(1)).rev() {
        byte_strides.push(fx.b.binary_imm(BinOp::Imul, tensor_strides[i], size));
    }
    byte_strides.reverse();
    let inner_extent = dims.last().copied();
    if let (Some((values, bytes)), Some(d)) = (elem.packing(), dims.last_mut()) {
        let scaled = fx.b.binary_imm(BinOp::Imul, *d, values);
        *d = if bytes == 1 {
            scaled
        } else {
            let by = fx.b.iconst(Ty::I64, bytes);
            fx.b.binary(BinOp::Sdiv, scaled, by)
        };
    }

    let mut layout = Vec::new();
    for e in t.layout.exprs() {
        layout.push(int_i64(fx, e)?);
    }
    // Innermost first, as the key holds them.
    let mut element_strides = Vec::with_capacity(rank);
    for i in (0..rank).rev() {
        element_strides.push(match t.element_strides.get(i) {
            None => fx.b.iconst(Ty::I64, 1),
            Some(e) => int_i64(fx, e)?,
        });
    }
    element_strides.reverse();
    Ok(Prepared {
        arg: t,
        what,
        elem,
        inputs: Inputs {
            addr,
            addr_int,
            tensor_strides,
            dims,
            inner_extent,
            byte_strides,
            layout,
            element_strides,
        },
    })
}
