//! Expressions in the text format, with minimal parentheses (operator precedence).

use super::super::model::*;
use super::super::syntax::{self, name};

/// Precedence levels, loosest first; atoms bind tightest.
pub(crate) fn binop_prec(op: BinOp) -> u8 {
    match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
        BinOp::BitOr => 4,
        BinOp::BitXor => 5,
        BinOp::BitAnd => 6,
        BinOp::Shl | BinOp::Shr => 7,
        BinOp::Add | BinOp::Sub => 8,
        BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
        // Written as calls: atoms.
        BinOp::FloorDiv | BinOp::FloorMod | BinOp::CeilDiv | BinOp::Min | BinOp::Max => 11,
    }
}

const UNARY_PREC: u8 = 10;
const ATOM_PREC: u8 = 11;

/// The operator symbol of an infix binary operator, or the function name of the others.
pub fn binop_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Rem => "%",
        BinOp::FloorDiv => "floordiv",
        BinOp::FloorMod => "floormod",
        BinOp::CeilDiv => "ceil_div",
        BinOp::Min => "min",
        BinOp::Max => "max",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::And => "&&",
        BinOp::Or => "||",
    }
}

/// The symbol of a unary operator.
pub fn unop_symbol(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "-",
        UnOp::Not => "!",
        UnOp::BitNot => "~",
    }
}

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Binary { op, .. } => binop_prec(*op),
        Expr::Unary { .. } => UNARY_PREC,
        _ => ATOM_PREC,
    }
}

fn is_comparison(e: &Expr) -> bool {
    matches!(e, Expr::Binary { op, .. } if binop_prec(*op) == 3)
}

fn paren_if(s: String, cond: bool) -> String {
    if cond { format!("({s})") } else { s }
}

/// Prints an expression.
pub fn print_expr(e: &Expr) -> String {
    match e {
        Expr::Int { value, ty } => {
            let v = syntax::int_value(*value, *ty);
            if *ty == IntType::I64 {
                v
            } else {
                format!("{v}{}", syntax::int_type(*ty))
            }
        }
        Expr::Float {
            bits,
            ty: FloatType::F64,
        } => syntax::f64_literal(*bits),
        Expr::Float {
            bits,
            ty: FloatType::F32,
        } => syntax::f32_literal(*bits),
        Expr::Float {
            bits,
            ty: ty @ (FloatType::F16 | FloatType::BF16),
        } => syntax::half_literal(*bits, *ty),
        Expr::Bool(b) => b.to_string(),
        Expr::Str(s) => syntax::quote(s, '"'),
        Expr::Var(v) => name(v),
        Expr::Field { tensor, field } => {
            let t = name(tensor);
            match field {
                TensorField::Data => format!("{t}.data"),
                TensorField::Shape(i) => format!("{t}.shape[{i}]"),
                TensorField::Stride(i) => format!("{t}.strides[{i}]"),
                TensorField::NDim => format!("{t}.ndim"),
                TensorField::DType => format!("{t}.dtype"),
                TensorField::Device => format!("{t}.device"),
                TensorField::DeviceType => format!("{t}.device_type"),
                TensorField::DeviceId => format!("{t}.device_id"),
                TensorField::ByteOffset => format!("{t}.byte_offset"),
            }
        }
        Expr::Unary { op, arg } => {
            // `-` before a literal would read back as a negative literal.
            let literal = matches!(**arg, Expr::Int { .. } | Expr::Float { .. });
            let needs = prec(arg) < UNARY_PREC || (*op == UnOp::Neg && literal);
            format!("{}{}", unop_symbol(*op), paren_if(print_expr(arg), needs))
        }
        Expr::Binary { op, lhs, rhs } => {
            let p = binop_prec(*op);
            if p == ATOM_PREC {
                return format!(
                    "{}({}, {})",
                    binop_symbol(*op),
                    print_expr(lhs),
                    print_expr(rhs)
                );
            }
            let comparison = p == 3;
            let l = paren_if(
                print_expr(lhs),
                prec(lhs) < p || (comparison && is_comparison(lhs)),
            );
            let r = paren_if(print_expr(rhs), prec(rhs) <= p);
            format!("{l} {} {r}", binop_symbol(*op))
        }
        Expr::Select {
            cond,
            then_value,
            else_value,
        } => format!(
            "select({}, {}, {})",
            print_expr(cond),
            print_expr(then_value),
            print_expr(else_value)
        ),
        Expr::Cast { ty, arg } => {
            format!("cast<{}>({})", syntax::scalar_type(*ty), print_expr(arg))
        }
        Expr::PtrOffset { ptr, offset } => {
            format!("offset({}, {})", print_expr(ptr), print_expr(offset))
        }
        Expr::Load { ty, ptr } => {
            format!("load<{}>({})", syntax::scalar_type(*ty), print_expr(ptr))
        }
        Expr::IsNone(n) => format!("is_none({})", name(n)),
    }
}
