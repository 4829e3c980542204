//! Printing of the allocation statement: `let y = empty((m, n), float16, x.device);`.

use super::super::model::{Alloc, AllocDevice};
use super::super::syntax::{self, name};
use super::expr::print_expr;

/// Prints an allocation statement (one line).
pub(super) fn print_alloc(a: &Alloc) -> String {
    let dims: Vec<String> = a.shape.iter().map(print_expr).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let device = match &a.device {
        AllocDevice::Value(e) => print_expr(e),
        AllocDevice::Parts {
            device_type,
            device_id,
        } => format!(
            "{}({}, {})",
            AllocDevice::PARTS_KEYWORD,
            print_expr(device_type),
            print_expr(device_id)
        ),
    };
    format!(
        "let {} = {}({shape}, {}, {device});",
        name(&a.dest),
        Alloc::KEYWORD,
        syntax::dtype(a.dtype)
    )
}
