//! The printer of the text format (see `docs/ir.md`).
//!
//! [`print()`] writes any [`Module`], valid or not, so that [`parse`](super::parse::parse)
//! gives it back exactly: names that are not plain identifiers (or are reserved words) are
//! quoted with backticks, floats that no decimal literal spells (NaN payloads, `f32`
//! constants no `f32` holds) use a bits form, and dtypes without a name use
//! `dtype(code, bits, lanes)`. The output is canonical: items in a fixed order, one statement
//! per line, four-space indentation, minimal parentheses.
//!
//! ```
//! use safecall::ir::build::*;
//! use safecall::ir::print::print_expr;
//! let x = TensorRef::new("x");
//! assert_eq!(print_expr(&ceil_div(x.shape(0), int(128))), "ceil_div(x.shape[0], 128)");
//! assert_eq!(print_expr(&((var("a") + var("b")) * int(2))), "(a + b) * 2");
//! ```

use std::fmt::{self, Write as _};

use super::model::*;
use super::syntax::{self, name};

mod alloc;
mod device;
mod expr;
mod tdm;
mod tensormap;
use alloc::print_alloc;
pub use device::print_device_binary;
use device::print_launch;
pub(crate) use expr::binop_prec;
pub use expr::{binop_symbol, print_expr, unop_symbol};
pub use tensormap::print_launch_arg;

/// Signatures longer than this print one parameter per line.
const MAX_SIGNATURE: usize = 100;

/// Prints a module in the text format.
pub fn print(module: &Module) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "module {};", name(&module.name));
    if let Some(prefix) = &module.system_lib_prefix {
        let _ = writeln!(out, "\nsystem_lib_prefix {};", syntax::quote(prefix, '"'));
    }
    if !module.externs.is_empty() {
        out.push('\n');
        for e in &module.externs {
            let _ = writeln!(out, "{}", print_extern(e));
        }
    }
    for m in &module.imported_modules {
        out.push('\n');
        out.push_str(&print_imported_module(m));
    }
    for b in &module.device_binaries {
        out.push('\n');
        out.push_str(&print_device_binary(b));
    }
    if !module.imports.is_empty() {
        out.push('\n');
        for label in &module.imports {
            let _ = writeln!(out, "import {};", name(label));
        }
    }
    for f in &module.functions {
        out.push('\n');
        out.push_str(&print_function(f));
    }
    out
}

/// Prints an `extern fn` declaration (one line).
pub fn print_extern(e: &ExternFn) -> String {
    let params: Vec<&str> = e.params.iter().map(|&t| syntax::scalar_type(t)).collect();
    let mut s = format!("extern fn {}({})", name(&e.name), params.join(", "));
    if let Some(ret) = e.ret {
        let _ = write!(s, " -> {}", syntax::scalar_type(ret));
    }
    if e.errors == ErrorConvention::NonZeroIsRaised {
        s.push_str(" nonzero_is_raised");
    }
    s.push(';');
    s
}

/// Prints an `imported_module` item (several lines, ending with a newline).
pub fn print_imported_module(m: &ImportedModule) -> String {
    let mut s = format!("imported_module {} {{\n", name(&m.label));
    let _ = writeln!(s, "    kind {};", syntax::quote(&m.kind, '"'));
    let _ = writeln!(s, "    payload {};", syntax::bytes_literal(&m.payload));
    if !m.imports.is_empty() {
        let labels: Vec<String> = m.imports.iter().map(|l| name(l)).collect();
        let _ = writeln!(s, "    imports [{}];", labels.join(", "));
    }
    s.push_str("}\n");
    s
}

/// Prints a function with its doc comment (ending with a newline).
pub fn print_function(f: &Function) -> String {
    let mut s = String::new();
    if !f.doc.is_empty() {
        for line in f.doc.split('\n') {
            if line.is_empty() {
                s.push_str("///\n");
            } else {
                let _ = writeln!(s, "/// {line}");
            }
        }
    }
    let params: Vec<String> = f.params.iter().map(print_param).collect();
    let mut tail = String::new();
    if f.ret != RetType::None {
        let _ = write!(tail, " -> {}", print_ret_type(&f.ret));
    }
    if !f.constraints.is_empty() {
        let cs: Vec<String> = f.constraints.iter().map(print_constraint).collect();
        let _ = write!(tail, " where {}", cs.join(", "));
    }
    let one_line = format!("fn {}({}){tail} {{", name(&f.name), params.join(", "));
    if one_line.len() <= MAX_SIGNATURE || params.is_empty() {
        s.push_str(&one_line);
        s.push('\n');
    } else {
        let _ = writeln!(s, "fn {}(", name(&f.name));
        for p in &params {
            let _ = writeln!(s, "    {p},");
        }
        let _ = writeln!(s, "){tail} {{");
    }
    print_block(&mut s, &f.body, 1);
    s.push_str("}\n");
    s
}

/// Prints `name: type`.
pub fn print_param(p: &Param) -> String {
    format!("{}: {}", name(&p.name), print_param_type(&p.ty))
}

/// Prints a constraint (`n % 16 == 0`).
pub fn print_constraint(c: &Constraint) -> String {
    match c {
        Constraint::Divisible { var, divisor } => format!("{} % {divisor} == 0", name(var)),
    }
}

/// Prints a parameter type.
pub fn print_param_type(t: &ParamType) -> String {
    match t {
        ParamType::Optional(inner) => format!(
            "{}[{}]",
            ParamForm::Optional.keyword(),
            print_param_type(inner)
        ),
        ParamType::Const(v) => format!("{}({})", ParamForm::Const.keyword(), print_const(v)),
        ParamType::Tuple(elems) => {
            let es: Vec<String> = elems.iter().map(print_param).collect();
            format!("{}({})", ParamForm::Tuple.keyword(), es.join(", "))
        }
        ParamType::Tensor(spec) => print_tensor_spec(spec),
        // Every other type is one word (`ParamType::word` matches them all).
        one_word => match one_word.word() {
            Some(Ok(scalar)) => syntax::scalar_type(scalar).to_owned(),
            Some(Err(word)) => word.keyword().to_owned(),
            None => unreachable!("the bracketed forms are printed above"),
        },
    }
}

/// Prints the value of a `const(...)` parameter.
pub fn print_const(v: &ConstValue) -> String {
    match v {
        ConstValue::Int(i) => i.to_string(),
        ConstValue::Bool(b) => b.to_string(),
        ConstValue::Float(bits) => syntax::f64_literal(*bits),
        ConstValue::None => "none".to_owned(),
    }
}

fn print_dim(d: &Dim) -> String {
    match d {
        Dim::Const(c) => c.to_string(),
        Dim::Var(v) => name(v),
    }
}

fn print_dims(dims: &[Dim]) -> String {
    let ds: Vec<String> = dims.iter().map(print_dim).collect();
    if ds.len() == 1 {
        format!("({},)", ds[0])
    } else {
        format!("({})", ds.join(", "))
    }
}

/// Prints a tensor type: `tensor[(n, 4), float32, device=cuda, ...]` (defaults omitted).
pub fn print_tensor_spec(spec: &TensorSpec) -> String {
    let mut s = match &spec.shape {
        TensorShape::Dims(dims) => format!("tensor[{}, ", print_dims(dims)),
        TensorShape::AnyRank => "tensor[any, ".to_owned(),
    };
    match spec.dtype {
        Some(d) => s.push_str(&syntax::dtype(d)),
        None => s.push_str("any"),
    }
    match spec.device_type {
        DeviceTypePolicy::Any => {}
        DeviceTypePolicy::Same => s.push_str(", device=same"),
        DeviceTypePolicy::Code(code) => match syntax::device_name(code) {
            Some(n) => {
                let _ = write!(s, ", device={n}");
            }
            None => {
                let _ = write!(s, ", device={code}");
            }
        },
    }
    match &spec.strides {
        Strides::Compact => {}
        Strides::Any => s.push_str(", strides=any"),
        Strides::Exact(dims) => {
            let _ = write!(s, ", strides={}", print_dims(dims));
        }
    }
    match &spec.device_id {
        DeviceIdPolicy::Same => {}
        DeviceIdPolicy::Free => s.push_str(", device_id=free"),
        DeviceIdPolicy::Var(v) => {
            let _ = write!(s, ", device_id={}", name(v));
        }
    }
    if spec.byte_offset == ByteOffsetPolicy::Any {
        s.push_str(", byte_offset=any");
    }
    if let Some(a) = spec.alignment {
        let _ = write!(s, ", align={a}");
    }
    if let Some(t) = spec.index_type {
        let _ = write!(s, ", index={}", syntax::int_type(t));
    }
    s.push(']');
    s
}

/// Prints a return type.
pub fn print_ret_type(t: &RetType) -> String {
    match t.word() {
        Some(Ok(scalar)) => syntax::scalar_type(scalar).to_owned(),
        Some(Err(word)) => word.keyword().to_owned(),
        None => {
            let RetType::Tuple(items) = t else {
                unreachable!("every return type but a tuple is one word")
            };
            let items: Vec<String> = items.iter().map(print_ret_type).collect();
            format!("({})", items.join(", "))
        }
    }
}

/// Prints the type of a value.
pub fn print_type(t: &Type) -> String {
    match t {
        Type::Scalar(s) => syntax::scalar_type(*s).to_owned(),
        Type::Str => "str".to_owned(),
        Type::Bytes => "bytes".to_owned(),
        Type::Device => "device".to_owned(),
        Type::DType => "dtype".to_owned(),
        Type::Shape => "shape".to_owned(),
        Type::Func => "func".to_owned(),
        Type::Tensor => "tensor".to_owned(),
        Type::Any => "any".to_owned(),
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("    ");
    }
}

fn print_block(out: &mut String, body: &[Stmt], level: usize) {
    for stmt in body {
        print_stmt_into(out, stmt, level);
    }
}

fn print_stmt_into(out: &mut String, stmt: &Stmt, level: usize) {
    indent(out, level);
    match stmt {
        Stmt::If { .. } => print_if(out, stmt, level),
        Stmt::For {
            var,
            start,
            end,
            step,
            body,
        } => {
            out.push_str(&for_head(var, start, end, *step));
            out.push_str(" {\n");
            print_block(out, body, level + 1);
            indent(out, level);
            out.push_str("}\n");
        }
        _ => {
            out.push_str(&print_stmt_head(stmt));
            out.push('\n');
        }
    }
}

/// Prints an `if` starting at the current position (handles `else if` chains).
fn print_if(out: &mut String, stmt: &Stmt, level: usize) {
    let Stmt::If {
        cond,
        then_body,
        else_body,
    } = stmt
    else {
        unreachable!()
    };
    let _ = writeln!(out, "if {} {{", print_expr(cond));
    print_block(out, then_body, level + 1);
    indent(out, level);
    out.push('}');
    match else_body.as_slice() {
        [] => out.push('\n'),
        [nested @ Stmt::If { .. }] => {
            out.push_str(" else ");
            print_if(out, nested, level);
        }
        _ => {
            out.push_str(" else {\n");
            print_block(out, else_body, level + 1);
            indent(out, level);
            out.push_str("}\n");
        }
    }
}

fn for_head(var: &str, start: &Expr, end: &Expr, step: i64) -> String {
    let mut s = format!(
        "for {} in {}..{}",
        name(var),
        print_expr(start),
        print_expr(end)
    );
    if step != 1 {
        let _ = write!(s, " step {step}");
    }
    s
}

/// Prints a statement with its nested blocks (no indentation at the first level, ending with
/// a newline).
pub fn print_stmt(stmt: &Stmt) -> String {
    let mut s = String::new();
    print_stmt_into(&mut s, stmt, 0);
    s
}

/// Prints a statement on one line; the blocks of `if` and `for` are elided as `{ ... }`.
/// Diagnostics use this to show the statement they are about.
pub fn print_stmt_head(stmt: &Stmt) -> String {
    match stmt {
        Stmt::Let {
            name: n,
            mutable,
            value,
        } => {
            format!(
                "let {}{} = {};",
                if *mutable { "mut " } else { "" },
                name(n),
                print_expr(value)
            )
        }
        Stmt::Assign { name: n, value } => format!("{} = {};", name(n), print_expr(value)),
        Stmt::Store { ty, ptr, value } => format!(
            "store<{}>({}, {});",
            syntax::scalar_type(*ty),
            print_expr(ptr),
            print_expr(value)
        ),
        Stmt::If {
            cond, else_body, ..
        } => {
            if else_body.is_empty() {
                format!("if {} {{ ... }}", print_expr(cond))
            } else {
                format!("if {} {{ ... }} else {{ ... }}", print_expr(cond))
            }
        }
        Stmt::For {
            var,
            start,
            end,
            step,
            ..
        } => format!("{} {{ ... }}", for_head(var, start, end, *step)),
        Stmt::Assert {
            cond,
            kind,
            message,
        } => {
            let parts: Vec<String> = message
                .iter()
                .map(|p| match p {
                    MessagePart::Text(t) => syntax::quote(t, '"'),
                    // A string literal in value position is parenthesized so that it does not
                    // read back as text.
                    MessagePart::Value(e @ Expr::Str(_)) => format!("({})", print_expr(e)),
                    MessagePart::Value(e) => print_expr(e),
                })
                .collect();
            format!(
                "assert {} else {}({});",
                print_expr(cond),
                name(kind),
                parts.join(", ")
            )
        }
        Stmt::CallExtern { dest, func, args } => {
            format!(
                "{}call {}({});",
                dest_prefix(dest),
                name(func),
                print_args(args)
            )
        }
        Stmt::CallPacked { dest, callee, args } => {
            let callee = match callee {
                Callee::Global(g) => format!("global {}", syntax::quote(g, '"')),
                Callee::Import(i) => format!("import {}", syntax::quote(i, '"')),
                Callee::Direct(d) => format!("direct {}", syntax::quote(d, '"')),
                Callee::Param(p) => name(p),
            };
            format!(
                "{}call_packed {callee}({});",
                dest_prefix(dest),
                print_args(args)
            )
        }
        Stmt::GetStream {
            dest,
            device_type,
            device_id,
        } => format!(
            "let {} = get_stream({}, {});",
            name(dest),
            print_expr(device_type),
            print_expr(device_id)
        ),
        Stmt::Launch(l) => print_launch(l),
        Stmt::Alloc(a) => print_alloc(a),
        Stmt::Return(None) => "return;".to_owned(),
        Stmt::Return(Some(e)) => format!("return {};", print_expr(e)),
        Stmt::ReturnTuple(values) => {
            let values: Vec<String> = values.iter().map(print_expr).collect();
            let comma = if values.len() == 1 { "," } else { "" };
            format!("return ({}{comma});", values.join(", "))
        }
    }
}

fn dest_prefix(dest: &Option<String>) -> String {
    match dest {
        Some(d) => format!("let {} = ", name(d)),
        None => String::new(),
    }
}

fn print_args(args: &[Expr]) -> String {
    args.iter().map(print_expr).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_function(self))
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_stmt_head(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_expr(self))
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_param_type(self))
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_type(self))
    }
}

impl fmt::Display for RetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_ret_type(self))
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(syntax::scalar_type(*self))
    }
}
