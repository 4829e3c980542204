//! Symbolic variables: the first occurrence that counts binds, later ones must match.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::lir::{BinOp, IntCC, Ty, Var};

use crate::lower::context::FnCtx;
use crate::lower::raise::{MsgPart, Tag};
use safecall_runtime::abi::symbols::error_kind::VALUE_ERROR;

/// What identifies a symbolic binding: a named variable, "the common device id" or "the
/// common device type".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum SymKey {
    Named(String),
    SameDevice,
    SameDeviceType,
}

/// How far a symbolic variable is bound at the current point of the checks.
#[derive(Clone, Debug)]
pub(super) enum SymState {
    /// Bound on every path, by this occurrence.
    Bound { binder: String },
    /// Bound at run time by the first of `binders` that counted (its argument was present,
    /// and for a stride, its dim was not of extent 1 in a non-empty tensor). `flag` (`I8`) is
    /// [`UNBOUND`], [`BOUND`], or [`FALLBACK`].
    Dynamic { flag: Var, binders: Vec<String> },
}

/// No occurrence has given the variable a value.
pub(super) const UNBOUND: i64 = 0;
/// An occurrence that counts has bound the variable.
pub(super) const BOUND: i64 = 1;
/// Only occurrences that do not count were seen: the variable holds the first one's value
/// (a stride of an extent-1 dim), which nothing is checked against.
pub(super) const FALLBACK: i64 = 2;

/// How messages name where a dynamically bound variable got its value.
pub(super) fn bound_by_text(binders: &[String]) -> String {
    match binders {
        [] => String::new(),
        [one] => format!(", bound by {one}"),
        [init @ .., last] => format!(", bound by {} or {last}", init.join(", ")),
    }
}

pub(super) struct Syms {
    pub(super) vars: HashMap<SymKey, Var, FxBuildHasher>,
    pub(super) state: HashMap<SymKey, SymState, FxBuildHasher>,
}

/// An occurrence of a symbolic variable: the first binds it, later ones must match.
/// `skip` (an `I8`) makes the occurrence not count at run time (strides of extent-1 dims and
/// of empty tensors): it is not compared, and binds only a fallback value.
#[allow(clippy::too_many_arguments)]
pub(super) fn bind_or_compare(
    fx: &mut FnCtx<'_, '_>,
    syms: &mut Syms,
    key: SymKey,
    value: Var,
    guarded: bool,
    prefix: &str,
    what: &str,
    shown: &str,
    binder: &str,
    skip: Option<Var>,
) {
    let var = match syms.vars.get(&key) {
        Some(&var) => var,
        None => {
            // A first occurrence that binds it directly assigns it on every path to its uses.
            let direct = !guarded && skip.is_none() && !syms.state.contains_key(&key);
            let var = fx.decoded_var(Ty::I64, 0, !direct);
            syms.vars.insert(key.clone(), var);
            var
        }
    };
    // Messages (built only by the explain function) name the binders.
    let explaining = fx.explaining();
    let compare = |fx: &mut FnCtx<'_, '_>, bound_by: String| {
        let key = &key;
        let mut ok = fx.b.icmp(IntCC::Eq, value, var);
        if let Some(s) = skip {
            ok = fx.b.binary(BinOp::Or, ok, s);
        }
        // The common device id and type name their tensors: `(the device id of x)`.
        let common = match key {
            SymKey::Named(_) => None,
            SymKey::SameDevice => Some("device id"),
            SymKey::SameDeviceType => Some("device type"),
        };
        fx.check_arg(ok, VALUE_ERROR, |_| {
            // `(= n, bound by x.shape[0])`; for the common device id, `(the device id of x)`.
            let source = match common {
                Some(what) => match bound_by.strip_prefix(", bound by ") {
                    Some(binders) => {
                        format!(" (the {what} of {})", binders.replace(".device", ""))
                    }
                    None => String::new(),
                },
                None => format!(" (= {shown}{bound_by})"),
            };
            vec![
                MsgPart::text(format!("{prefix}{what} is ")),
                MsgPart::Value(Tag::I64, value),
                MsgPart::text(", expected "),
                MsgPart::Value(Tag::I64, var),
                MsgPart::Text(source),
            ]
        });
    };
    match syms.state.get(&key) {
        Some(SymState::Bound { binder: first }) => {
            let bound_by = if explaining {
                format!(", bound by {first}")
            } else {
                String::new()
            };
            compare(fx, bound_by)
        }
        state @ (None | Some(SymState::Dynamic { .. })) => {
            let state = state.cloned();
            if state.is_none() && !guarded && skip.is_none() {
                fx.b.assign(var, value);
                syms.state.insert(
                    key,
                    SymState::Bound {
                        binder: binder.to_owned(),
                    },
                );
                return;
            }
            // Dynamic: bound by the first occurrence that counts.
            let (flag, mut binders) = match state {
                Some(SymState::Dynamic { flag, binders }) => (flag, binders),
                Some(SymState::Bound { .. }) | None => (fx.entry_var(Ty::I8, UNBOUND), Vec::new()),
            };
            let bound_by = if explaining {
                bound_by_text(&binders)
            } else {
                String::new()
            };
            let compare_block = fx.b.new_block();
            let bind_block = fx.b.new_block();
            let join = fx.b.new_block();
            let is_bound = fx.b.icmp_imm(IntCC::Eq, flag, BOUND);
            fx.branch(is_bound, compare_block, bind_block);
            fx.b.switch_to(compare_block);
            compare(fx, bound_by);
            fx.jump(join);
            fx.b.switch_to(bind_block);
            match skip {
                None => {
                    fx.b.assign(var, value);
                    fx.b.assign_iconst(flag, BOUND);
                }
                Some(skip) => {
                    // Not counting: keep an earlier fallback, else take this value as one.
                    let had_fallback = fx.b.icmp_imm(IntCC::Eq, flag, FALLBACK);
                    let keep = fx.b.binary(BinOp::And, skip, had_fallback);
                    let new_value = fx.b.select(keep, var, value);
                    fx.b.assign(var, new_value);
                    let bound = fx.b.iconst(Ty::I8, BOUND);
                    let fallback = fx.b.iconst(Ty::I8, FALLBACK);
                    let new_flag = fx.b.select(skip, fallback, bound);
                    fx.b.assign(flag, new_flag);
                }
            }
            fx.jump(join);
            fx.b.switch_to(join);
            let new_state = if guarded || skip.is_some() {
                binders.push(binder.to_owned());
                SymState::Dynamic { flag, binders }
            } else {
                SymState::Bound {
                    binder: binder.to_owned(),
                }
            };
            syms.state.insert(key, new_state);
        }
    }
}
