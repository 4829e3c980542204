//! Printing of the GPU items: `device_binary` and `launch`.

use std::fmt::Write as _;

use super::super::model::{DeviceBinary, Launch, SettingValue};
use super::super::syntax::{self, name};
use super::expr::print_expr;
use super::tensormap::print_launch_args;

/// Prints a `device_binary` item (several lines, ending with a newline); the image is
/// printed as a byte string (a `file` path given in the source has been read by the parser).
pub fn print_device_binary(b: &DeviceBinary) -> String {
    let mut s = format!("device_binary {} {{\n", name(&b.name));
    let _ = writeln!(s, "    format {};", b.format.keyword());
    let _ = writeln!(s, "    data {};", syntax::bytes_literal(&b.data));
    let kernels: Vec<String> = b.kernels.iter().map(|k| name(k)).collect();
    let _ = writeln!(s, "    kernels [{}];", kernels.join(", "));
    s.push_str("}\n");
    s
}

/// Prints a `launch` statement (one line).
pub(super) fn print_launch(l: &Launch) -> String {
    let config: Vec<String> = l
        .settings
        .iter()
        .map(|setting| {
            let value = match setting.value() {
                SettingValue::Dims(d) => {
                    let parts: Vec<String> = d.iter().map(print_expr).collect();
                    format!("({})", parts.join(", "))
                }
                SettingValue::Expr(e) => print_expr(&e),
                SettingValue::Keyword(w) => w,
            };
            format!("{}={value}", setting.kind().keyword())
        })
        .collect();
    format!(
        "launch {}.{}[{}]({});",
        name(&l.binary),
        name(&l.kernel),
        config.join(", "),
        print_launch_args(&l.args)
    )
}
