//! Argument decoding and checks, in the order of docs/abi.md ("Checks, in order"):
//! 1. the argument count;
//! 2. per parameter (tuple elements after their tuple), the type index, and the value;
//! 3. per tensor: ndim, dtype, device type, constant dims, symbolic dims, strides,
//!    byte_offset, alignment, non-NULL data, device id, element-count limit;
//! 4. constraints (divisibility).

mod constraint;
mod decode;
mod syms;
mod tensor;

use std::collections::HashMap;

use safecall_runtime::abi::ANY_SIZE;

use crate::lir::{IntCC, Ty};

use super::context::{Binding, FnCtx};
use super::raise::{MsgPart, Tag};

use super::options::LowerError;
use constraint::lower_constraint;
use decode::{AnySrc, decode};
use safecall_runtime::abi::symbols::error_kind::TYPE_ERROR;
use syms::{SymKey, SymState, Syms, UNBOUND};
use tensor::check_tensor;

/// Lowers the whole argument prologue and binds every parameter name.
pub(crate) fn lower_params(fx: &mut FnCtx<'_, '_>) -> Result<(), LowerError> {
    let func = fx.func;
    let n = func.params.len();

    if fx.b.annotating() {
        fx.b.source(format!("check: {} takes {n} argument(s)", func.name));
    }
    let expected = fx.b.iconst(Ty::I32, n as i64);
    let ok = fx.b.icmp(IntCC::Eq, fx.num_args, expected);
    let num_args = fx.num_args;
    fx.check_arg(ok, TYPE_ERROR, |_| {
        vec![
            MsgPart::text(format!(
                "{}: expected {n} argument{}, got ",
                func.name,
                if n == 1 { "" } else { "s" }
            )),
            MsgPart::Value(Tag::I64, num_args),
        ]
    });
    // Safety boundary: the argument array is read below.
    fx.flush_checks();

    let mut tensors = Vec::new();
    for (i, param) in func.params.iter().enumerate() {
        let src = AnySrc {
            base: fx.args,
            offset: i * ANY_SIZE,
        };
        let label = format!("'{}' (#{i})", param.name);
        decode(
            fx,
            param,
            src,
            label,
            &format!("args[{i}]"),
            None,
            &mut tensors,
        )?;
    }

    let mut syms = Syms {
        vars: HashMap::default(),
        state: HashMap::default(),
    };
    for leaf in &tensors {
        check_tensor(fx, leaf, &mut syms);
    }
    // By name, so that the lowered code does not depend on the map's iteration order.
    let mut named: Vec<(&String, &SymState, &SymKey)> = syms
        .state
        .iter()
        .filter_map(|(key, state)| match key {
            SymKey::Named(name) => Some((name, state, key)),
            SymKey::SameDevice => None,
        })
        .collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    for (name, state, key) in named {
        let var = syms.vars[key];
        let unbound_check = match state {
            SymState::Bound { .. } => None,
            SymState::Dynamic { flag, .. } => {
                let has_value = fx.b.icmp_imm(IntCC::Ne, *flag, UNBOUND);
                Some((has_value, name.clone()))
            }
        };
        fx.bind(name, Binding::Sym { var, unbound_check });
    }
    for constraint in &func.constraints {
        lower_constraint(fx, constraint, &syms)?;
    }
    fx.flush_checks();
    Ok(())
}
