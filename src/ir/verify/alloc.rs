//! The allocation statement: `let NAME = empty((DIMS), DTYPE, DEVICE);`.

use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax;
use super::{FnVerifier, StmtFocus};

impl FnVerifier<'_, '_> {
    /// `empty(...)`: `i64` dims, a dtype with a size, a `device` value or `device(i32, i32)`;
    /// binds a tensor of `shape.len()` dimensions.
    pub(super) fn alloc(&mut self, path: &StmtPath, a: &Alloc) {
        let i64_t = Type::Scalar(ScalarType::Int(IntType::I64));
        let i32_t = Type::Scalar(ScalarType::Int(IntType::I32));
        let mut index = 0;
        for (k, dim) in a.shape.iter().enumerate() {
            self.expect_type(
                path,
                index,
                dim,
                &i64_t,
                &format!("dimension {k} of `empty`"),
            );
            index += 1;
        }
        match &a.device {
            AllocDevice::Value(e) => {
                self.expect_type(path, index, e, &Type::Device, "the device of `empty`");
            }
            AllocDevice::Parts {
                device_type,
                device_id,
            } => {
                self.expect_type(path, index, device_type, &i32_t, "the device type");
                self.expect_type(path, index + 1, device_id, &i32_t, "the device id");
            }
        }
        if a.element_bytes() == 0 {
            self.stmt_err(
                path,
                StmtFocus::Whole,
                format!(
                    "`empty` of dtype {}: its elements have no size (bits and lanes must be non-zero)",
                    syntax::dtype(a.dtype)
                ),
            );
        }
        let mark_bound = !self.declared.contains_key(&a.dest);
        self.declare(path, &a.dest, Some(Type::Tensor), false);
        if mark_bound {
            self.scope.bind_tensor(&a.dest, a.shape.len());
        }
    }
}
