//! Printing of launch arguments: an expression, `tensormap(TENSOR, box=(..), ...)` with
//! the options that differ from the driver's zero value, or `tdm(TENSOR, block=(..), ...)`.

use super::super::model::{
    Expr, Interleave, L2Promotion, LaunchArg, OobFill, Swizzle, TensorMapArg, TensorMapLayout,
};
use super::super::syntax::name;
use super::expr::print_expr;

/// Prints launch arguments, comma-separated.
pub(super) fn print_launch_args(args: &[LaunchArg]) -> String {
    args.iter()
        .map(print_launch_arg)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints one launch argument as a launch statement spells it.
pub fn print_launch_arg(arg: &LaunchArg) -> String {
    match arg {
        LaunchArg::Value(e) => print_expr(e),
        LaunchArg::TensorMap(t) => print_tensormap(t),
        LaunchArg::Tdm(t) => super::tdm::print_tdm(t),
    }
}

fn dims(d: &[Expr]) -> String {
    let parts: Vec<String> = d.iter().map(print_expr).collect();
    format!("({})", parts.join(", "))
}

fn print_tensormap(t: &TensorMapArg) -> String {
    let mut s = format!("{}({}", t.layout.keyword(), name(&t.tensor));
    match &t.layout {
        TensorMapLayout::Tiled { box_dims } => s.push_str(&format!(", box={}", dims(box_dims))),
        TensorMapLayout::Im2col {
            lower,
            upper,
            channels,
            pixels,
        } => s.push_str(&format!(
            ", lower={}, upper={}, channels={}, pixels={}",
            dims(lower),
            dims(upper),
            print_expr(channels),
            print_expr(pixels)
        )),
    }
    let mut opt = |key: &str, value: String| {
        s.push_str(&format!(", {key}={value}"));
    };
    if !t.element_strides.is_empty() {
        opt("element_strides", dims(&t.element_strides));
    }
    if t.interleave != Interleave::None {
        opt("interleave", t.interleave.keyword().to_owned());
    }
    if t.swizzle != Swizzle::None {
        opt("swizzle", t.swizzle.keyword().to_owned());
    }
    if t.l2_promotion != L2Promotion::None {
        opt("l2_promotion", t.l2_promotion.keyword().to_owned());
    }
    if t.oob_fill != OobFill::None {
        opt("oob_fill", t.oob_fill.keyword().to_owned());
    }
    if let Some(d) = t.dtype {
        opt("dtype", d.keyword().to_owned());
    }
    s.push(')');
    s
}
