//! Allocation in a block: [`BlockBuilder::empty`].

use safecall_runtime::abi::DLDataType;

use super::super::model::*;
use super::block::BlockBuilder;
use super::tensor::TensorRef;

impl BlockBuilder {
    /// `let dest = empty((dims...), dtype, device);`: a compact tensor from the environment
    /// allocator (`device` a `device` value such as `x.device()`, or
    /// [`AllocDevice::Parts`]); returns the new tensor, to read its fields, launch on it or
    /// return it.
    pub fn empty(
        &mut self,
        dest: &str,
        shape: impl IntoIterator<Item = Expr>,
        dtype: DLDataType,
        device: impl Into<AllocDevice>,
    ) -> TensorRef {
        self.push(Stmt::Alloc(Box::new(Alloc {
            dest: dest.to_owned(),
            shape: shape.into_iter().collect(),
            dtype,
            device: device.into(),
        })));
        TensorRef::new(dest)
    }
}

impl From<Expr> for AllocDevice {
    /// A `device` value.
    fn from(e: Expr) -> AllocDevice {
        AllocDevice::Value(e)
    }
}
