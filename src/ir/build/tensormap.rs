//! Building `tensormap(..)` launch arguments.

use super::super::model::{
    Expr, Interleave, L2Promotion, OobFill, Swizzle, TensorMapArg, TensorMapDtype,
};

/// A TMA descriptor argument of tensor parameter `tensor` with box `box_dims` (outermost
/// first) and the driver's zero value of every option; pass it to
/// [`LaunchBuilder::arg`](super::LaunchBuilder::arg).
///
/// ```
/// use safecall::ir::build::*;
/// use safecall::ir::Swizzle;
///
/// let map = tensormap("a", [int(64), int(64)]).swizzle(Swizzle::B128);
/// let launch = LaunchBuilder::new("kernels", "copy").arg(map).arg(var("n"));
/// assert_eq!(launch.finish().args.len(), 2);
/// ```
pub fn tensormap<E: Into<Expr>>(
    tensor: &str,
    box_dims: impl IntoIterator<Item = E>,
) -> TensorMapArg {
    TensorMapArg::new(tensor, box_dims.into_iter().map(Into::into).collect())
}

impl TensorMapArg {
    /// Sets the element strides (outermost first).
    pub fn element_strides<E: Into<Expr>>(mut self, strides: impl IntoIterator<Item = E>) -> Self {
        self.element_strides = strides.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the interleave.
    pub fn interleave(mut self, interleave: Interleave) -> Self {
        self.interleave = interleave;
        self
    }

    /// Sets the swizzle.
    pub fn swizzle(mut self, swizzle: Swizzle) -> Self {
        self.swizzle = swizzle;
        self
    }

    /// Sets the L2 promotion.
    pub fn l2_promotion(mut self, l2_promotion: L2Promotion) -> Self {
        self.l2_promotion = l2_promotion;
        self
    }

    /// Sets the out-of-bounds fill.
    pub fn oob_fill(mut self, oob_fill: OobFill) -> Self {
        self.oob_fill = oob_fill;
        self
    }

    /// Overrides the element type.
    pub fn dtype(mut self, dtype: TensorMapDtype) -> Self {
        self.dtype = Some(dtype);
        self
    }
}
