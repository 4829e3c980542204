//! The allocation statement: `let NAME = empty((DIMS), DTYPE, DEVICE);`.

use super::super::model::*;
use super::super::source_map::*;
use super::{PResult, ParseError, Parser};

impl Parser<'_> {
    /// Whether the tokens ahead start an allocation (`empty(`, after `let NAME =`).
    pub(super) fn at_alloc(&self) -> bool {
        self.is_kw(Alloc::KEYWORD) && self.is_punct_at(1, "(")
    }

    /// After `let NAME =`: `empty((d0, d1, ...), DTYPE, DEVICE)` where DEVICE is an expression
    /// or `device(TYPE, ID)`. The caller eats the `;`.
    pub(super) fn alloc(&mut self, dest: String, spans: &mut StmtSpans) -> PResult<Stmt> {
        self.bump();
        self.expect_punct("(")?;
        self.expect_punct("(").map_err(|e| {
            e.with_note("an allocation is written `empty((d0, d1, ...), dtype, device)`".into())
        })?;
        let dims = self.list(")", |p| p.expr())?;
        let (shape, mut exprs): (Vec<Expr>, Vec<ExprSpans>) = dims.into_iter().unzip();
        self.expect_punct(",")?;
        let dtype_span = self.span();
        let dtype = self.dtype()?.ok_or_else(|| {
            ParseError::new(
                dtype_span,
                "an allocation needs a concrete dtype, not `any`".to_owned(),
                vec![],
            )
        })?;
        self.expect_punct(",")?;
        let device = if self.is_kw(AllocDevice::PARTS_KEYWORD) && self.is_punct_at(1, "(") {
            self.bump();
            self.bump();
            let (device_type, s1) = self.expr()?;
            self.expect_punct(",")?;
            let (device_id, s2) = self.expr()?;
            self.expect_punct(")")?;
            exprs.extend([s1, s2]);
            AllocDevice::Parts {
                device_type,
                device_id,
            }
        } else {
            let (e, s) = self.expr()?;
            exprs.push(s);
            AllocDevice::Value(e)
        };
        self.expect_punct(")")?;
        spans.exprs = exprs;
        Ok(Stmt::Alloc(Box::new(Alloc {
            dest,
            shape,
            dtype,
            device,
        })))
    }
}
