//! Returns: `return;`, `return VALUE;` and `return (A, B, ...);` against the function's return
//! type, and the shape of a tuple return type.

use super::super::model::*;
use super::super::source_map::*;
use super::error::FnItem;
use super::{FnVerifier, StmtFocus};

/// The body type a value returned as `ret` must have (`None` for `none` and tuples).
fn value_type(ret: &RetType) -> Option<Type> {
    Some(match ret {
        RetType::Scalar(s) => Type::Scalar(*s),
        RetType::Device => Type::Device,
        RetType::DType => Type::DType,
        RetType::Str => Type::Str,
        RetType::Tensor => Type::Tensor,
        RetType::Any => Type::Any,
        RetType::None | RetType::Tuple(_) => return None,
    })
}

/// What values of a return type may be, for mismatch messages.
fn hint(ret: &RetType) -> &'static str {
    match ret {
        RetType::Tensor => " (a tensor return is a tensor parameter or an `empty` tensor)",
        RetType::Str => " (a str return is a string literal or a str parameter)",
        RetType::Any => " (an any return is an any parameter, tuple or packed call result)",
        RetType::Tuple(_) => " (a tuple return is written `return (a, b);`)",
        RetType::None | RetType::Scalar(_) | RetType::Device | RetType::DType => "",
    }
}

impl FnVerifier<'_, '_> {
    /// A tuple return type has at least one element, none of them `none` or a tuple.
    pub(super) fn ret_type(&mut self) {
        let RetType::Tuple(items) = &self.f.ret else {
            return;
        };
        let message = if items.is_empty() {
            Some("a tuple return type needs at least one element".to_owned())
        } else {
            items
                .iter()
                .find(|t| matches!(t, RetType::None | RetType::Tuple(_)))
                .map(|t| format!("a tuple return type cannot hold {t}"))
        };
        if let Some(m) = message {
            self.err(FnItem::Name, String::new(), m);
        }
    }

    /// Checks that `e` (expression `index` of the statement) has the type of `ret`.
    fn returned_value(&mut self, path: &StmtPath, index: usize, e: &Expr, ret: &RetType) {
        let Some(t) = self.expr(path, index, e) else {
            return;
        };
        if value_type(ret).is_none_or(|want| want != t) {
            self.stmt_err(
                path,
                StmtFocus::Expr(vec![index]),
                format!(
                    "return type mismatch: `{}` returns {ret}, found {t}{}",
                    self.f.name,
                    hint(ret)
                ),
            );
        }
    }

    /// `return [VALUE];`: matches the function's return type.
    pub(super) fn return_stmt(&mut self, path: &StmtPath, value: Option<&Expr>) {
        let ret = &self.f.ret;
        match value {
            None if *ret != RetType::None => self.stmt_err(
                path,
                StmtFocus::Whole,
                format!(
                    "return type mismatch: `{}` returns {ret}, but this `return` has no value",
                    self.f.name
                ),
            ),
            None => {}
            Some(_) if *ret == RetType::None => self.stmt_err(
                path,
                StmtFocus::Expr(vec![0]),
                format!(
                    "return type mismatch: `{}` returns none, but this `return` has a value",
                    self.f.name
                ),
            ),
            Some(e) => self.returned_value(path, 0, e, ret),
        }
    }

    /// `return (A, B, ...);`: the function returns a tuple of as many elements, each value of
    /// its element's type.
    pub(super) fn return_tuple(&mut self, path: &StmtPath, values: &[Expr]) {
        let ret = &self.f.ret;
        if let RetType::Tuple(items) = ret
            && items.len() == values.len()
        {
            for (i, (e, item)) in values.iter().zip(items).enumerate() {
                self.returned_value(path, i, e, item);
            }
            return;
        }
        let found = if let RetType::Tuple(items) = ret {
            format!("{} values", items.len())
        } else {
            "not a tuple".to_owned()
        };
        self.stmt_err(
            path,
            StmtFocus::Whole,
            format!(
                "return type mismatch: `{}` returns {ret} ({found}), but this `return` has {} values",
                self.f.name,
                values.len()
            ),
        );
        for (i, e) in values.iter().enumerate() {
            self.expr(path, i, e);
        }
    }
}
