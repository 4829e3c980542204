//! The names a function's parameters introduce ([`param_bindings`]), a [`Scope`] over them
//! that statements extend ([`FunctionScope`]), and the name a statement binds
//! ([`stmt_binding`]).

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use super::super::model::*;
use super::expr::{Scope, TypeError, at, expr_type, invalid, param_nullable, param_value_type};

/// Where a symbolic variable occurs in a tensor spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymSource {
    /// `shape[i]`.
    Shape(usize),
    /// `strides[i]`.
    Stride(usize),
    /// The device id.
    DeviceId,
}

/// What introduces a name (borrowing from the function, `'f`).
#[derive(Clone, Debug, PartialEq)]
pub enum BindingKind<'f> {
    /// A parameter (path `[i]`) or tuple element (`[i, j, ...]`).
    Param {
        /// Path of parameter indices through tuples.
        path: Vec<usize>,
        /// Its declared type.
        ty: &'f ParamType,
    },
    /// A symbolic variable, bound at its first occurrence.
    SymVar {
        /// Path of the tensor parameter of the first occurrence.
        param: Vec<usize>,
        /// Where in that tensor's spec.
        source: SymSource,
    },
}

/// A name introduced by a function's parameters (borrowing from the function, `'f`).
#[derive(Clone, Debug, PartialEq)]
pub struct Binding<'f> {
    /// The name.
    pub name: &'f str,
    /// Its type in the body.
    pub ty: Type,
    /// What introduces it.
    pub kind: BindingKind<'f>,
    /// Whether it is only present when an optional parameter is given: a parameter under an
    /// `optional[...]` (itself or an enclosing tuple), or a symbolic variable whose every
    /// occurrence is.
    pub optional: bool,
}

/// The names a function's parameters introduce, in parameter order: each parameter and tuple
/// element, and each symbolic variable at its first occurrence. Names are not deduplicated
/// across kinds (the verifier reports clashes); a symbolic variable appears once.
pub fn param_bindings(f: &Function) -> Vec<Binding<'_>> {
    let mut out: Vec<Binding> = Vec::with_capacity(2 * f.params.len());
    let mut syms: HashMap<&str, usize, FxBuildHasher> = HashMap::default();
    fn walk<'f>(
        params: &'f [Param],
        prefix: &[usize],
        optional: bool,
        out: &mut Vec<Binding<'f>>,
        syms: &mut HashMap<&'f str, usize, FxBuildHasher>,
    ) {
        for (i, p) in params.iter().enumerate() {
            let mut path = Vec::with_capacity(prefix.len() + 1);
            path.extend_from_slice(prefix);
            path.push(i);
            let mut ty = &p.ty;
            let mut opt = optional;
            while let ParamType::Optional(inner) = ty {
                opt = true;
                ty = inner;
            }
            out.push(Binding {
                name: &p.name,
                ty: param_value_type(&p.ty),
                kind: BindingKind::Param {
                    path: path.clone(),
                    ty: &p.ty,
                },
                optional: opt,
            });
            match ty {
                ParamType::Tuple(elems) => walk(elems, &path, opt, out, syms),
                ParamType::Tensor(spec) => {
                    let mut occurrences: Vec<(&str, SymSource)> =
                        Vec::with_capacity(2 * spec.shape.dims().len() + 1);
                    for (d, dim) in spec.shape.dims().iter().enumerate() {
                        if let Dim::Var(v) = dim {
                            occurrences.push((v, SymSource::Shape(d)));
                        }
                    }
                    if let Strides::Exact(strides) = &spec.strides {
                        for (d, dim) in strides.iter().enumerate() {
                            if let Dim::Var(v) = dim {
                                occurrences.push((v, SymSource::Stride(d)));
                            }
                        }
                    }
                    if let DeviceIdPolicy::Var(v) = &spec.device_id {
                        occurrences.push((v, SymSource::DeviceId));
                    }
                    for (v, source) in occurrences {
                        match syms.get(v) {
                            Some(&idx) => {
                                if !opt {
                                    out[idx].optional = false;
                                }
                            }
                            None => {
                                syms.insert(v, out.len());
                                out.push(Binding {
                                    name: v,
                                    ty: Type::Scalar(ScalarType::Int(IntType::I64)),
                                    kind: BindingKind::SymVar {
                                        param: path.clone(),
                                        source,
                                    },
                                    optional: opt,
                                });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    walk(&f.params, &[], false, &mut out, &mut syms);
    out
}

/// A [`Scope`] over a function's parameter bindings plus names bound by statements.
#[derive(Clone, Debug, Default)]
pub struct FunctionScope {
    names: HashMap<String, ScopeEntry, FxBuildHasher>,
}

#[derive(Clone, Debug)]
struct ScopeEntry {
    ty: Type,
    nullable: bool,
    /// For a tensor, its number of dimensions when fixed.
    ndim: Option<Option<usize>>,
}

impl FunctionScope {
    /// The names of `f`'s parameters (first binding wins when names clash).
    pub fn new(f: &Function) -> Self {
        Self::from_bindings(&param_bindings(f))
    }

    /// The names of parameter bindings made by [`param_bindings`] (first binding wins when
    /// names clash), for callers that need the bindings too.
    pub fn from_bindings(bindings: &[Binding<'_>]) -> Self {
        let mut names: HashMap<String, ScopeEntry, FxBuildHasher> = HashMap::default();
        for b in bindings {
            let (nullable, ndim) = match &b.kind {
                BindingKind::Param { ty, .. } => {
                    let mut inner: &ParamType = ty;
                    while let ParamType::Optional(i) = inner {
                        inner = i;
                    }
                    let ndim = match inner {
                        ParamType::Tensor(spec) => Some(spec.shape.rank()),
                        _ => None,
                    };
                    (param_nullable(ty), ndim)
                }
                BindingKind::SymVar { .. } => (false, None),
            };
            if !names.contains_key(b.name) {
                names.insert(
                    b.name.to_owned(),
                    ScopeEntry {
                        ty: b.ty.clone(),
                        nullable,
                        ndim,
                    },
                );
            }
        }
        FunctionScope { names }
    }

    /// Adds (or replaces) a name bound by a statement.
    pub fn bind(&mut self, name: &str, ty: Type) {
        let nullable = ty == Type::Any;
        self.names.insert(
            name.to_owned(),
            ScopeEntry {
                ty,
                nullable,
                ndim: None,
            },
        );
    }

    /// Adds (or replaces) a tensor bound by a statement ([`Stmt::Alloc`]) with `ndim`
    /// dimensions.
    pub fn bind_tensor(&mut self, name: &str, ndim: usize) {
        self.names.insert(
            name.to_owned(),
            ScopeEntry {
                ty: Type::Tensor,
                nullable: false,
                ndim: Some(Some(ndim)),
            },
        );
    }

    /// Removes a name (when leaving the block that bound it).
    pub fn unbind(&mut self, name: &str) {
        self.names.remove(name);
    }
}

impl Scope for FunctionScope {
    fn type_of(&self, name: &str) -> Option<Type> {
        self.names.get(name).map(|e| e.ty.clone())
    }

    fn is_nullable(&self, name: &str) -> bool {
        self.names.get(name).is_some_and(|e| e.nullable)
    }

    fn tensor_ndim(&self, name: &str) -> Option<usize> {
        self.names.get(name).and_then(|e| e.ndim.flatten())
    }

    fn tensor_any_rank(&self, name: &str) -> bool {
        self.names.get(name).is_some_and(|e| e.ndim == Some(None))
    }
}

/// The name a statement binds for the statements after it (or, for `for`, in its body) and
/// its type: `let` the value's type, `for` the type of `start`, `call` the extern's return
/// type, `call_packed` [`Type::Any`], `get_stream` `ptr`. `None` for statements that bind
/// nothing; `Some((name, Err(..)))` when the type cannot be determined.
pub fn stmt_binding<'s>(
    stmt: &'s Stmt,
    scope: &dyn Scope,
    externs: &[ExternFn],
) -> Option<(&'s str, Result<Type, TypeError>)> {
    match stmt {
        Stmt::Let { name, value, .. } => {
            Some((name, expr_type(value, scope).map_err(|e| at(0, e))))
        }
        Stmt::For { var, start, .. } => Some((var, expr_type(start, scope).map_err(|e| at(0, e)))),
        Stmt::CallExtern {
            dest: Some(d),
            func,
            ..
        } => {
            let ret = externs.iter().find(|e| &e.name == func).map(|e| e.ret);
            Some((
                d,
                match ret {
                    Some(Some(t)) => Ok(Type::Scalar(t)),
                    Some(None) => Err(invalid(format!(
                        "extern `{func}` returns void; its result cannot be bound"
                    ))),
                    None => Err(invalid(format!("extern `{func}` is not declared"))),
                },
            ))
        }
        Stmt::CallPacked { dest: Some(d), .. } => Some((d, Ok(Type::Any))),
        Stmt::GetStream { dest, .. } => Some((dest, Ok(Type::Scalar(ScalarType::Ptr)))),
        Stmt::Alloc(alloc) => Some((&alloc.dest, Ok(Type::Tensor))),
        _ => None,
    }
}
