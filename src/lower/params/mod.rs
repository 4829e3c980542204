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

use crate::ir::ParamType;
use crate::lir::{IntCC, Ty};

use super::context::{Binding, FnCtx};
use super::raise::{MsgPart, Tag};

use super::options::LowerError;
use constraint::lower_constraint;
use decode::{AnySrc, decode};
use safecall_runtime::abi::symbols::error_kind::TYPE_ERROR;
use syms::{SymKey, SymState, Syms, UNBOUND};
use tensor::check_tensor;

fn is_optional(ty: &ParamType) -> bool {
    matches!(ty, ParamType::Optional(_))
}

/// Whether a parameter is a tuple (optional or not), whose elements are named by position.
fn holds_tuple(ty: &ParamType) -> bool {
    match ty {
        ParamType::Tuple(_) => true,
        ParamType::Optional(inner) => holds_tuple(inner),
        ParamType::Int(_)
        | ParamType::Bool
        | ParamType::Float(_)
        | ParamType::Ptr
        | ParamType::Str
        | ParamType::Bytes
        | ParamType::Device
        | ParamType::DType
        | ParamType::Shape
        | ParamType::Func
        | ParamType::Any
        | ParamType::Tensor(_)
        | ParamType::Const(_)
        | ParamType::DataPtr
        | ParamType::Stream => false,
    }
}

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
    fx.check_count(ok, TYPE_ERROR, |_| {
        vec![
            MsgPart::text(format!(
                "{}: expected {n} argument{}, got ",
                func.name,
                if n == 1 { "" } else { "s" }
            )),
            MsgPart::Value(Tag::I64, num_args),
        ]
    });
    let mut tensors = Vec::new();
    for (i, param) in func.params.iter().enumerate() {
        let src = AnySrc {
            base: fx.args,
            offset: i * ANY_SIZE,
        };
        // The fast path names an argument only in the None checks of an optional one, and a
        // position only for tuple elements: the other texts are built when messages are.
        let named = fx.explaining() || fx.b.annotating() || is_optional(&param.ty);
        let label = if named {
            format!("'{}' (#{i})", param.name)
        } else {
            String::new()
        };
        let path = if named || holds_tuple(&param.ty) {
            format!("args[{i}]")
        } else {
            String::new()
        };
        decode(fx, param, src, label, &path, None, &mut tensors)?;
    }

    let mut syms = Syms {
        vars: HashMap::with_capacity_and_hasher(8, Default::default()),
        state: HashMap::with_capacity_and_hasher(8, Default::default()),
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
            SymKey::SameDevice | SymKey::SameDeviceType => None,
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
