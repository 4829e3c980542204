//! [`Shape`]: a shared, immutable list of dimensions (`ffi.Shape`).

use crate::rust_api::ObjectRef;
use crate::rust_api::object_ref::typed_object_ref;

/// A reference to an `ffi.Shape` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(ObjectRef);

typed_object_ref!(Shape);

impl Shape {
    /// A shape holding a copy of `dims`.
    pub fn new(dims: &[i64]) -> Self {
        // SAFETY: a fresh object comes with one strong reference we take over.
        Shape(
            unsafe { ObjectRef::from_raw_owned(crate::shape::new_shape(dims)) }.expect("allocated"),
        )
    }

    /// The dimensions.
    pub fn as_slice(&self) -> &[i64] {
        // SAFETY: the object is a Shape, alive while we hold it.
        unsafe { crate::shape::dims(self.0.as_ptr()) }
    }

    /// The number of elements of a tensor of this shape.
    pub fn numel(&self) -> i64 {
        self.as_slice().iter().product()
    }
}
