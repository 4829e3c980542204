//! The types of expressions: [`expr_type`] and the rules it applies (operators, casts, tensor
//! fields, parameters' values), over a [`Scope`] of names.

use std::collections::HashMap;
use std::fmt;

use rustc_hash::FxBuildHasher;

use super::super::model::*;
use super::super::print::{binop_symbol, unop_symbol};

/// Names visible to an expression.
pub trait Scope {
    /// The type of `name`, or `None` when it is not in scope.
    fn type_of(&self, name: &str) -> Option<Type>;

    /// Whether `name` may be None at run time (an optional parameter, a `const(none)`
    /// parameter, or an [`Type::Any`] value): what `is_none` accepts.
    fn is_nullable(&self, name: &str) -> bool {
        matches!(self.type_of(name), Some(Type::Any))
    }

    /// The number of dimensions of tensor `name`, when known (for `shape[i]` range checks).
    fn tensor_ndim(&self, name: &str) -> Option<usize> {
        let _ = name;
        None
    }

    /// Whether `name` is a tensor of any rank (`tensor[any, ...]`), whose dims the body
    /// cannot index.
    fn tensor_any_rank(&self, name: &str) -> bool {
        let _ = name;
        false
    }
}

impl<F: Fn(&str) -> Option<Type>> Scope for F {
    fn type_of(&self, name: &str) -> Option<Type> {
        self(name)
    }
}

/// Why an expression has no type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    /// Where in the expression (child indices, see [`expr_children`](super::super::source_map::expr_children)).
    pub path: Vec<usize>,
    /// What is wrong.
    pub kind: TypeErrorKind,
}

/// The kinds of [`TypeError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeErrorKind {
    /// A name that is not in scope.
    Unbound(String),
    /// Anything else, described.
    Invalid(String),
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TypeErrorKind::Unbound(n) => write!(f, "`{n}` is not in scope"),
            TypeErrorKind::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TypeError {}

pub(super) fn invalid(message: String) -> TypeError {
    TypeError {
        path: vec![],
        kind: TypeErrorKind::Invalid(message),
    }
}

pub(super) fn at(i: usize, mut e: TypeError) -> TypeError {
    e.path.insert(0, i);
    e
}

fn is_int(t: &Type) -> bool {
    matches!(t, Type::Scalar(ScalarType::Int(_)))
}

fn is_float(t: &Type) -> bool {
    matches!(t, Type::Scalar(ScalarType::Float(_)))
}

/// A float with arithmetic: `f32` or `f64` (`f16` and `bf16` only convert and compare).
fn is_arith_float(t: &Type) -> bool {
    matches!(t, Type::Scalar(ScalarType::Float(f)) if !f.is_half())
}

/// `e`, with a hint when `t` is a half-precision type (which has no arithmetic).
fn half_hint(e: String, t: &Type) -> String {
    if is_float(t) && !is_arith_float(t) {
        format!(
            "{e} (f16 and bf16 only convert and compare: compute in f32, e.g. `cast<f16>(cast<f32>(x) * 2.0f32)`)"
        )
    } else {
        e
    }
}

/// The type of a tensor field.
pub fn field_type(field: TensorField) -> Type {
    match field {
        TensorField::Data => Type::Scalar(ScalarType::Ptr),
        TensorField::Shape(_) | TensorField::Stride(_) => {
            Type::Scalar(ScalarType::Int(IntType::I64))
        }
        TensorField::NDim | TensorField::DeviceType | TensorField::DeviceId => {
            Type::Scalar(ScalarType::Int(IntType::I32))
        }
        TensorField::DType => Type::DType,
        TensorField::Device => Type::Device,
        TensorField::ByteOffset => Type::Scalar(ScalarType::Int(IntType::U64)),
    }
}

/// The type of the value of a parameter of type `t` in the body (an optional parameter has
/// its inner type; using it when it is None raises a ValueError naming the argument).
pub fn param_value_type(t: &ParamType) -> Type {
    match t {
        ParamType::Int(i) => Type::Scalar(ScalarType::Int(*i)),
        ParamType::Bool => Type::Scalar(ScalarType::Bool),
        ParamType::Float(f) => Type::Scalar(ScalarType::Float(*f)),
        ParamType::Ptr | ParamType::DataPtr | ParamType::Stream => Type::Scalar(ScalarType::Ptr),
        ParamType::Str => Type::Str,
        ParamType::Bytes => Type::Bytes,
        ParamType::Device => Type::Device,
        ParamType::DType => Type::DType,
        ParamType::Shape => Type::Shape,
        ParamType::Func => Type::Func,
        ParamType::Any | ParamType::Tuple(_) => Type::Any,
        ParamType::Tensor(_) => Type::Tensor,
        ParamType::Optional(inner) => param_value_type(inner),
        ParamType::Const(ConstValue::Int(_)) => Type::Scalar(ScalarType::Int(IntType::I64)),
        ParamType::Const(ConstValue::Bool(_)) => Type::Scalar(ScalarType::Bool),
        ParamType::Const(ConstValue::Float(_)) => Type::Scalar(ScalarType::Float(FloatType::F64)),
        ParamType::Const(ConstValue::None) => Type::Any,
    }
}

/// Whether a parameter of type `t` may be None (what `is_none` accepts).
pub fn param_nullable(t: &ParamType) -> bool {
    matches!(
        t,
        ParamType::Optional(_) | ParamType::Any | ParamType::Const(ConstValue::None)
    )
}

/// The type of `op a`.
pub fn unary_type(op: UnOp, arg: &Type) -> Result<Type, String> {
    let ok = match op {
        UnOp::Neg => is_int(arg) || is_arith_float(arg),
        UnOp::Not => *arg == Type::Scalar(ScalarType::Bool),
        UnOp::BitNot => is_int(arg),
    };
    if ok {
        Ok(arg.clone())
    } else {
        let wants = match op {
            UnOp::Neg => "an integer or float",
            UnOp::Not => "a bool",
            UnOp::BitNot => "an integer",
        };
        Err(half_hint(
            format!("`{}` needs {wants} operand, found {arg}", unop_symbol(op)),
            arg,
        ))
    }
}

/// The type of `a op b`.
pub fn binary_type(op: BinOp, lhs: &Type, rhs: &Type) -> Result<Type, String> {
    let sym = binop_symbol(op);
    if lhs != rhs {
        return Err(format!(
            "operands of `{sym}` have different types: {lhs} and {rhs} (there are no implicit conversions; use `cast<T>(...)`)"
        ));
    }
    let t = lhs;
    let bool_t = Type::Scalar(ScalarType::Bool);
    let (ok, wants, result) = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max => (
            is_int(t) || is_arith_float(t),
            "integer or float",
            t.clone(),
        ),
        BinOp::Rem
        | BinOp::FloorDiv
        | BinOp::FloorMod
        | BinOp::CeilDiv
        | BinOp::BitAnd
        | BinOp::BitOr
        | BinOp::BitXor
        | BinOp::Shl
        | BinOp::Shr => (is_int(t), "integer", t.clone()),
        BinOp::Eq | BinOp::Ne => (
            matches!(t, Type::Scalar(_)),
            "scalar (bool, integer, float or ptr)",
            bool_t,
        ),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            (is_int(t) || is_float(t), "integer or float", bool_t)
        }
        BinOp::And | BinOp::Or => (*t == bool_t, "bool", bool_t),
    };
    if ok {
        Ok(result)
    } else {
        Err(half_hint(
            format!("`{sym}` needs {wants} operands, found {t}"),
            t,
        ))
    }
}

/// Whether `cast<to>(a)` is allowed for an `a` of type `from`: between integers (truncation
/// or extension by the source's signedness); integer to and from `f32`/`f64` (float to integer
/// saturates, NaN is 0); between floats (to `f16`/`bf16`: round to nearest even; from them:
/// exact); `bool` to integer (0/1); integer to `bool` (`!= 0`); `ptr` to and from `i64`/`u64`;
/// from [`Type::Any`] to any scalar (checked at run time, TypeError when the value does not
/// have that type); and any scalar to itself. `f16` and `bf16` convert only to and from
/// floats: an integer goes through `f32` or `f64`.
pub fn cast_allowed(from: &Type, to: ScalarType) -> bool {
    use ScalarType as S;
    let Type::Scalar(from) = from else {
        return *from == Type::Any;
    };
    let wide = |i: IntType| matches!(i, IntType::I64 | IntType::U64);
    match (*from, to) {
        (a, b) if a == b => true,
        (S::Int(_), S::Int(_) | S::Bool) => true,
        (S::Int(_), S::Float(f)) | (S::Float(f), S::Int(_)) => !f.is_half(),
        (S::Float(_), S::Float(_)) => true,
        (S::Bool, S::Int(_)) => true,
        (S::Ptr, S::Int(i)) | (S::Int(i), S::Ptr) => wide(i),
        (S::Float(_) | S::Bool | S::Ptr, _) => false,
    }
}

/// Whether a value of type `t` may be a `let` binding: POD values (scalars, devices, dtypes).
pub fn bindable(t: &Type) -> bool {
    matches!(t, Type::Scalar(_) | Type::Device | Type::DType)
}

/// Whether a value of type `t` may be interpolated into an assertion message (scalars,
/// devices, dtypes).
pub fn formattable(t: &Type) -> bool {
    bindable(t)
}

/// The type of an expression.
pub fn expr_type(expr: &Expr, scope: &dyn Scope) -> Result<Type, TypeError> {
    type_and_record(expr, scope, &mut |_, _| {})
}

/// [`expr_type`], recording the type of `expr` and of each of its subexpressions that has one
/// in `types` (the verifier's table, read by the lowering).
pub(crate) fn expr_type_recorded(
    expr: &Expr,
    scope: &dyn Scope,
    types: &mut ExprTypes,
) -> Result<Type, TypeError> {
    type_and_record(expr, scope, &mut |e, t| types.record(e, t))
}

/// The typing rules: the type of `expr`, calling `record` with every subexpression that has
/// one (children before their parent).
fn type_and_record(
    expr: &Expr,
    scope: &dyn Scope,
    record: &mut dyn FnMut(&Expr, &Type),
) -> Result<Type, TypeError> {
    let t = type_of(expr, scope, record)?;
    record(expr, &t);
    Ok(t)
}

fn type_of(
    expr: &Expr,
    scope: &dyn Scope,
    record: &mut dyn FnMut(&Expr, &Type),
) -> Result<Type, TypeError> {
    let mut sub = |i: usize, e: &Expr| type_and_record(e, scope, record).map_err(|err| at(i, err));
    Ok(match expr {
        Expr::Int { ty, .. } => Type::Scalar(ScalarType::Int(*ty)),
        Expr::Float { ty, .. } => Type::Scalar(ScalarType::Float(*ty)),
        Expr::Bool(_) => Type::Scalar(ScalarType::Bool),
        Expr::Str(_) => Type::Str,
        Expr::Var(name) => scope.type_of(name).ok_or_else(|| TypeError {
            path: vec![],
            kind: TypeErrorKind::Unbound(name.clone()),
        })?,
        Expr::Field { tensor, field } => {
            let t = scope.type_of(tensor).ok_or_else(|| TypeError {
                path: vec![],
                kind: TypeErrorKind::Unbound(tensor.clone()),
            })?;
            if t != Type::Tensor {
                return Err(invalid(format!(
                    "`{tensor}` is not a tensor parameter (it is {t})"
                )));
            }
            if let TensorField::Shape(i) | TensorField::Stride(i) = field
                && scope.tensor_any_rank(tensor)
            {
                let part = if matches!(field, TensorField::Shape(_)) {
                    "shape"
                } else {
                    "strides"
                };
                return Err(invalid(format!(
                    "`{tensor}.{part}[{i}]`: tensor `{tensor}` has any rank (`tensor[any, ...]`), \
                     so its dimensions cannot be indexed (`{tensor}.ndim` is its rank)"
                )));
            }
            if let (TensorField::Shape(i) | TensorField::Stride(i), Some(ndim)) =
                (field, scope.tensor_ndim(tensor))
                && *i >= ndim
            {
                return Err(invalid(format!(
                    "dimension index {i} out of range: tensor `{tensor}` has {ndim} dimension{}",
                    if ndim == 1 { "" } else { "s" }
                )));
            }
            field_type(*field)
        }
        Expr::Unary { op, arg } => unary_type(*op, &sub(0, arg)?).map_err(invalid)?,
        Expr::Binary { op, lhs, rhs } => {
            let l = sub(0, lhs)?;
            let r = sub(1, rhs)?;
            binary_type(*op, &l, &r).map_err(invalid)?
        }
        Expr::Select {
            cond,
            then_value,
            else_value,
        } => {
            let c = sub(0, cond)?;
            let a = sub(1, then_value)?;
            let b = sub(2, else_value)?;
            if c != Type::Scalar(ScalarType::Bool) {
                return Err(at(
                    0,
                    invalid(format!("the condition of `select` must be bool, found {c}")),
                ));
            }
            if a != b {
                return Err(invalid(format!(
                    "the arms of `select` have different types: {a} and {b}"
                )));
            }
            if !matches!(a, Type::Scalar(_)) {
                return Err(invalid(format!(
                    "`select` chooses between scalar values, found {a}"
                )));
            }
            a
        }
        Expr::Cast { ty, arg } => {
            let from = sub(0, arg)?;
            if !cast_allowed(&from, *ty) {
                let half = matches!(ty, ScalarType::Float(f) if f.is_half())
                    || (is_float(&from) && !is_arith_float(&from));
                let hint = if half {
                    " (f16 and bf16 convert only to and from floats: cast through f32 or f64)"
                } else {
                    ""
                };
                return Err(invalid(format!("cannot cast {from} to {ty}{hint}")));
            }
            Type::Scalar(*ty)
        }
        Expr::PtrOffset { ptr, offset } => {
            let p = sub(0, ptr)?;
            let o = sub(1, offset)?;
            if p != Type::Scalar(ScalarType::Ptr) {
                return Err(at(0, invalid(format!("`offset` needs a ptr, found {p}"))));
            }
            if o != Type::Scalar(ScalarType::Int(IntType::I64)) {
                return Err(at(
                    1,
                    invalid(format!(
                        "the byte offset of `offset` must be i64, found {o}"
                    )),
                ));
            }
            Type::Scalar(ScalarType::Ptr)
        }
        Expr::Load { ty, ptr } => {
            let p = sub(0, ptr)?;
            if p != Type::Scalar(ScalarType::Ptr) {
                return Err(at(0, invalid(format!("`load` needs a ptr, found {p}"))));
            }
            Type::Scalar(*ty)
        }
        Expr::IsNone(name) => {
            if scope.type_of(name).is_none() {
                return Err(TypeError {
                    path: vec![],
                    kind: TypeErrorKind::Unbound(name.clone()),
                });
            }
            if !scope.is_nullable(name) {
                return Err(invalid(format!(
                    "`is_none({name})`: `{name}` is never None (only optional parameters and any values are)"
                )));
            }
            Type::Scalar(ScalarType::Bool)
        }
    })
}

/// The type of an expression whose node spells it: literals, casts, loads, tensor fields,
/// `offset` and `is_none` (assuming the expression is well typed). `None` for names,
/// operators and `select`, whose types depend on their operands and the scope.
pub fn spelled_type(expr: &Expr) -> Option<Type> {
    Some(match expr {
        Expr::Int { ty, .. } => Type::Scalar(ScalarType::Int(*ty)),
        Expr::Float { ty, .. } => Type::Scalar(ScalarType::Float(*ty)),
        Expr::Bool(_) | Expr::IsNone(_) => Type::Scalar(ScalarType::Bool),
        Expr::Str(_) => Type::Str,
        Expr::Field { field, .. } => field_type(*field),
        Expr::Cast { ty, .. } | Expr::Load { ty, .. } => Type::Scalar(*ty),
        Expr::PtrOffset { .. } => Type::Scalar(ScalarType::Ptr),
        Expr::Var(_) | Expr::Unary { .. } | Expr::Binary { .. } | Expr::Select { .. } => {
            return None;
        }
    })
}

/// The types of the expressions of a module, recorded by the verifier so that the lowering
/// reads them instead of deriving them again. Only expressions without a [`spelled_type`]
/// take room; the others are answered from the expression itself.
///
/// A recorded expression is identified by its address: the table is only meaningful next to
/// the module it was recorded for, left unchanged (which
/// [`VerifiedModule`](super::VerifiedModule) guarantees by holding the module immutably).
/// Addresses are compared, never dereferenced.
#[derive(Clone, Debug, Default)]
pub(crate) struct ExprTypes {
    by_address: HashMap<usize, Type, FxBuildHasher>,
}

impl ExprTypes {
    /// A table with room for `n` recorded expressions.
    pub(crate) fn with_capacity(n: usize) -> Self {
        ExprTypes {
            by_address: HashMap::with_capacity_and_hasher(n, FxBuildHasher),
        }
    }

    fn key(e: &Expr) -> usize {
        std::ptr::from_ref(e) as usize
    }

    /// Records that `e` has type `t` (nothing to keep when `e` spells its type).
    pub(crate) fn record(&mut self, e: &Expr, t: &Type) {
        if spelled_type(e).is_none() {
            self.by_address.insert(Self::key(e), t.clone());
        }
    }

    /// The type of `e`: the one it spells, or the one recorded for it (`None` when neither).
    pub(crate) fn get(&self, e: &Expr) -> Option<Type> {
        spelled_type(e).or_else(|| self.by_address.get(&Self::key(e)).cloned())
    }

    /// How many expressions have a recorded type.
    pub(crate) fn len(&self) -> usize {
        self.by_address.len()
    }
}
