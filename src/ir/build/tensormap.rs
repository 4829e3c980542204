//! Building `tensormap(..)` launch arguments.

use super::super::model::{
    Expr, Interleave, L2Promotion, OobFill, Swizzle, TensorMapArg, TensorMapDtype, TensorMapLayout,
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

/// An im2col descriptor argument (`cuTensorMapEncodeIm2col`) of tensor parameter `tensor` (rank
/// 3 to 5: N, the spatial dims, C) with the pixel box's corner offsets (one per spatial dim,
/// outermost first), channels per pixel and pixels per column.
///
/// ```
/// use safecall::ir::build::*;
///
/// let map = tensormap_im2col("x", [int(-1), int(-1)], [int(1), int(1)], int(64), int(128));
/// assert_eq!(map.exprs().count(), 6);
/// ```
pub fn tensormap_im2col<E: Into<Expr>>(
    tensor: &str,
    lower: impl IntoIterator<Item = E>,
    upper: impl IntoIterator<Item = E>,
    channels: impl Into<Expr>,
    pixels: impl Into<Expr>,
) -> TensorMapArg {
    TensorMapArg::with_layout(
        tensor,
        TensorMapLayout::Im2col {
            lower: lower.into_iter().map(Into::into).collect(),
            upper: upper.into_iter().map(Into::into).collect(),
            channels: channels.into(),
            pixels: pixels.into(),
        },
    )
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
