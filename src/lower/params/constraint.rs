//! Call-time constraints (divisibility) on integer parameters and symbolic variables.

use crate::ir::{Constraint, ScalarType, Type, typing};
use crate::lir::{BinOp, IntCC, Ty};

use crate::lower::context::{Binding, FnCtx};
use crate::lower::raise::{MsgPart, Tag};

use super::syms::{BOUND, SymKey, SymState, Syms, bound_by_text};
use crate::lower::options::LowerError;
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

/// A divisibility constraint on an integer parameter or symbolic variable.
pub(super) fn lower_constraint(
    fx: &mut FnCtx<'_, '_>,
    constraint: &Constraint,
    syms: &Syms,
) -> Result<(), LowerError> {
    let Constraint::Divisible { var: name, divisor } = constraint;
    if *divisor == 0 {
        return Err(LowerError::internal(format!(
            "constraint `{name} % 0 == 0`: the divisor must be positive"
        )));
    }
    let divisor_i64 = i64::try_from(*divisor).map_err(|_| {
        LowerError::limit(format!(
            "constraint `{name} % {divisor} == 0`: the divisor is larger than i64::MAX"
        ))
    })?;
    if fx.b.annotating() {
        fx.b.source(format!("check constraint {name} % {divisor} == 0"));
    }
    let (value, present, before, after) = match fx.lookup(name)? {
        Binding::Scalar { var, guard } => {
            // The verifier accepts constraints on integer parameters (tuple elements included).
            let value_type = fx
                .func
                .param_named(name)
                .map(|p| typing::param_value_type(&p.ty));
            let Some(Type::Scalar(ScalarType::Int(t))) = value_type else {
                return Err(LowerError::internal(format!(
                    "constraint on `{name}`, which is not an integer parameter or symbolic variable"
                )));
            };
            let wide = fx.b.resize(var, Ty::I64, t.is_signed());
            let label = fx
                .func
                .params
                .iter()
                .position(|p| &p.name == name)
                .map(|i| format!("'{name}' (#{i})"))
                .unwrap_or_else(|| format!("'{name}'"));
            let present = guard.map(|g| {
                let zero = fx.b.iconst(Ty::I8, 0);
                fx.b.icmp(IntCC::Eq, g.is_none, zero)
            });
            (wide, present, fx.arg_prefix(&label), String::new())
        }
        Binding::Sym { var, .. } => {
            // Checked only when an occurrence that counts bound the variable.
            let (binder, present) = match syms.state.get(&SymKey::Named(name.clone())) {
                Some(SymState::Bound { binder }) => (format!(" (bound by {binder})"), None),
                Some(SymState::Dynamic { flag, binders }) => {
                    let bound = fx.b.icmp_imm(IntCC::Eq, *flag, BOUND);
                    let text = match bound_by_text(binders).strip_prefix(", ") {
                        Some(text) => format!(" ({text})"),
                        None => String::new(),
                    };
                    (text, Some(bound))
                }
                None => (String::new(), None),
            };
            (var, present, format!("{}: {name} = ", fx.func.name), binder)
        }
        Binding::Device { .. }
        | Binding::DType { .. }
        | Binding::Ref { .. }
        | Binding::Tensor(_)
        | Binding::StrLit(_)
        | Binding::Unit => {
            return Err(LowerError::internal(format!(
                "constraint on `{name}`, which is not an integer parameter or symbolic variable"
            )));
        }
    };
    // The divisor is positive, so the signed remainder is never the trapping MIN % -1.
    let rem = fx.b.binary_imm(BinOp::Srem, value, divisor_i64);
    let mut ok = fx.b.icmp_imm(IntCC::Eq, rem, 0);
    if let Some(present) = present {
        let absent = {
            let one = fx.b.iconst(Ty::I8, 1);
            fx.b.binary(BinOp::Xor, present, one)
        };
        ok = fx.b.binary(BinOp::Or, ok, absent);
    }
    fx.check_arg(ok, VALUE_ERROR, |_| {
        vec![
            MsgPart::Text(before),
            MsgPart::Value(Tag::I64, value),
            MsgPart::text(format!("{after} is not a multiple of {divisor}")),
        ]
    });
    Ok(())
}
