//! Address arithmetic in LLVM IR: a pointer plus a byte offset, as `getelementptr i8`, in an
//! instruction (function bodies) or a constant expression (data initializers).

use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::values::{IntValue, PointerValue};

use crate::backend::llvm::error::LlvmError;

/// `getelementptr i8, base, offset`: `base + offset` bytes.
pub(super) fn byte_offset<'ctx>(
    ctx: &'ctx Context,
    b: &Builder<'ctx>,
    base: PointerValue<'ctx>,
    offset: IntValue<'ctx>,
    name: &str,
) -> Result<PointerValue<'ctx>, LlvmError> {
    // SAFETY: a `getelementptr` without `inbounds` is wrapping address arithmetic, defined for
    // any base and offset; one `i8` index into an `i8` element type is well-formed.
    Ok(unsafe { b.build_gep(ctx.i8_type(), base, &[offset], name) }?)
}

/// The constant `getelementptr i8, base, offset`.
pub(super) fn const_byte_offset<'ctx>(
    ctx: &'ctx Context,
    base: PointerValue<'ctx>,
    offset: IntValue<'ctx>,
) -> PointerValue<'ctx> {
    // SAFETY: as in `byte_offset`, for a constant expression; nothing is dereferenced.
    unsafe { base.const_gep(ctx.i8_type(), &[offset]) }
}
