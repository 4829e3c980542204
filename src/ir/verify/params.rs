//! Parameters: parameter types, tensor specs, symbolic-variable bindings and constraints.

use safecall_runtime::dtype;

use super::super::model::*;
use super::super::print::print_constraint;
use super::super::source_map::*;
use super::super::syntax::{self, is_identifier};
use super::super::typing::{self, BindingKind, SymSource};
use super::error::param_display_name;
use super::{Declared, DeclaredBy, FnItem, FnVerifier, ParamPart};

impl<'m> FnVerifier<'_, 'm> {
    pub(super) fn params(&mut self, params: &'m [Param], prefix: &[usize]) {
        for (i, p) in params.iter().enumerate() {
            let mut path = prefix.to_vec();
            path.push(i);
            if !is_identifier(&p.name) {
                self.param_err(
                    &path,
                    ParamPart::Name,
                    format!("parameter name `{}` is not an identifier", p.name),
                );
            }
            self.param_type(&p.ty, &path);
        }
    }

    pub(super) fn param_type(&mut self, ty: &'m ParamType, path: &[usize]) {
        match ty {
            ParamType::Optional(inner) => {
                if matches!(**inner, ParamType::Optional(_)) {
                    self.param_err(
                        path,
                        ParamPart::Type,
                        "`optional[optional[...]]` is redundant; use one `optional`".into(),
                    );
                }
                self.param_type(inner, path);
            }
            ParamType::Tuple(elems) => self.params(elems, path),
            ParamType::Tensor(spec) => self.tensor_spec(spec, path),
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
            | ParamType::Const(_)
            | ParamType::DataPtr
            | ParamType::Stream => {}
        }
    }

    pub(super) fn tensor_spec(&mut self, spec: &TensorSpec, path: &[usize]) {
        if let Some(d) = spec.dtype {
            let ok = dtype::has_name(d) && d.bits != 0 && d.lanes != 0;
            if !ok {
                self.param_err(
                    path,
                    ParamPart::DType,
                    format!(
                        "invalid dtype {} (code {}, bits {}, lanes {})",
                        syntax::dtype(d),
                        d.code,
                        d.bits,
                        d.lanes
                    ),
                );
            }
        }
        if spec.shape == TensorShape::AnyRank {
            self.any_rank_spec(spec, path);
        }
        for (i, d) in spec.shape.dims().iter().enumerate() {
            match d {
                Dim::Const(c) if *c < 0 => {
                    self.param_err(
                        path,
                        ParamPart::Dim(i),
                        format!("dimension {i} is negative ({c})"),
                    );
                }
                Dim::Var(v) if !is_identifier(v) => {
                    self.param_err(
                        path,
                        ParamPart::Dim(i),
                        format!("symbolic variable `{v}` is not an identifier"),
                    );
                }
                Dim::Const(_) | Dim::Var(_) => {}
            }
        }
        if let Strides::Exact(strides) = &spec.strides {
            if let Some(rank) = spec.shape.rank()
                && strides.len() != rank
            {
                self.param_err(
                    path,
                    ParamPart::Attr(TensorAttr::Strides),
                    format!(
                        "the stride list has {} but the tensor has {}",
                        plural(strides.len(), "entry", "entries"),
                        plural(rank, "dimension", "dimensions")
                    ),
                );
            }
            for (i, d) in strides.iter().enumerate() {
                if let Dim::Var(v) = d
                    && !is_identifier(v)
                {
                    self.param_err(
                        path,
                        ParamPart::Stride(i),
                        format!("symbolic variable `{v}` is not an identifier"),
                    );
                }
            }
        }
        if let DeviceIdPolicy::Var(v) = &spec.device_id
            && !is_identifier(v)
        {
            self.param_err(
                path,
                ParamPart::Attr(TensorAttr::DeviceId),
                format!("symbolic variable `{v}` is not an identifier"),
            );
        }
        if let Some(code) = spec.device_type.code()
            && code <= 0
        {
            self.param_err(
                path,
                ParamPart::Attr(TensorAttr::Device),
                format!("invalid device type code {code}"),
            );
        }
        if let Some(a) = spec.alignment
            && !a.is_power_of_two()
        {
            self.param_err(
                path,
                ParamPart::Attr(TensorAttr::Align),
                format!("alignment {a} is not a power of two"),
            );
        }
    }

    /// What a tensor of any rank cannot ask for: strides other than `any` (compact and
    /// explicit strides need the dims) and an element-count limit.
    fn any_rank_spec(&mut self, spec: &TensorSpec, path: &[usize]) {
        let strides = match &spec.strides {
            Strides::Any => None,
            Strides::Compact => Some("compact strides (the default)"),
            Strides::Exact(_) => Some("an explicit stride list"),
        };
        if let Some(what) = strides {
            self.param_err(
                path,
                ParamPart::Attr(TensorAttr::Strides),
                format!("a tensor of any rank cannot require {what}; write `strides=any`"),
            );
        }
        if spec.index_type.is_some() {
            self.param_err(
                path,
                ParamPart::Attr(TensorAttr::Index),
                "a tensor of any rank cannot have an element-count limit (`index=`)".into(),
            );
        }
    }

    /// How parameter binding `b` introduces its name, for messages.
    pub(super) fn binding_description(&self, b: &typing::Binding) -> String {
        match &b.kind {
            BindingKind::Param { path, .. } if path.len() == 1 => {
                format!("parameter `{}`", b.name)
            }
            BindingKind::Param { .. } => format!("tuple element `{}`", b.name),
            BindingKind::SymVar { param, source } => {
                let t = param_display_name(&self.f.params, param);
                let at = match source {
                    SymSource::Shape(i) => format!("{t}.shape[{i}]"),
                    SymSource::Stride(i) => format!("{t}.strides[{i}]"),
                    SymSource::DeviceId => format!("{t}.device_id"),
                };
                format!("symbolic variable `{}` (bound by {at})", b.name)
            }
        }
    }

    /// Declares the parameter bindings, reporting clashes.
    pub(super) fn bindings(&mut self) {
        let bindings = std::mem::take(&mut self.bindings);
        for (i, b) in bindings.iter().enumerate() {
            if let Some(prev) = self.declared.get(b.name) {
                let message = format!(
                    "duplicate name `{}`: it is already {}",
                    b.name,
                    self.describe_in(&bindings, prev)
                );
                match &b.kind {
                    BindingKind::Param { path, .. } => {
                        self.param_err(path, ParamPart::Name, message)
                    }
                    BindingKind::SymVar { param, source } => {
                        let part = match source {
                            SymSource::Shape(i) => ParamPart::Dim(*i),
                            SymSource::Stride(i) => ParamPart::Stride(*i),
                            SymSource::DeviceId => ParamPart::Attr(TensorAttr::DeviceId),
                        };
                        self.param_err(param, part, message);
                    }
                }
                continue;
            }
            if b.optional && matches!(b.kind, BindingKind::SymVar { .. }) {
                let what = self.binding_description(b);
                self.optional_only.insert(b.name.to_owned(), what);
            }
            self.declared.insert(
                b.name.to_owned(),
                Declared {
                    by: DeclaredBy::Binding(i),
                    mutable: false,
                },
            );
        }
        self.bindings = bindings;
    }

    pub(super) fn constraints(&mut self) {
        let bindings = std::mem::take(&mut self.bindings);
        for (i, c) in self.f.constraints.iter().enumerate() {
            let Constraint::Divisible { var, divisor } = c;
            let subject = || format!("constraint `{}`", print_constraint(c));
            if *divisor == 0 {
                self.err(
                    FnItem::Constraint(i),
                    subject(),
                    "the divisor must be positive".into(),
                );
            }
            let problem = match bindings.iter().find(|b| b.name == var) {
                None => Some(format!(
                    "the constraint names `{var}`, which is neither a parameter nor a symbolic variable of `{}`",
                    self.f.name
                )),
                Some(b) if b.optional => Some(format!(
                    "the constraint names `{var}`, which may be absent (it is bound only under `optional[...]`)"
                )),
                Some(b) => match &b.kind {
                    BindingKind::SymVar { .. }
                    | BindingKind::Param {
                        ty: ParamType::Int(_),
                        ..
                    } => None,
                    BindingKind::Param { ty, .. } => Some(format!(
                        "the constraint names `{var}`, a parameter of type {ty}; constraints apply to integer parameters and symbolic variables"
                    )),
                },
            };
            if let Some(p) = problem {
                self.err(FnItem::Constraint(i), subject(), p);
            }
        }
        self.bindings = bindings;
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
