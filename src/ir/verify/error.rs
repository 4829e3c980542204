//! The verifier's errors: what is wrong and where, rendered with or without the source.

use std::fmt;

use super::super::diag;
use super::super::model::{Param, ParamType};
use super::super::source_map::*;

/// A problem found by the verifier.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyError {
    /// The function it is in, if any.
    pub function: Option<String>,
    /// What it is about, e.g. ``statement body[2] `let y = n + 1i32;` `` or ``parameter `x` ``.
    pub subject: String,
    /// Where it is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

/// Something the verifier accepts but reports, such as a device binary whose kernel parameter
/// table cannot be read (its launches go unchecked): [`VerifiedModule::warnings`](super::VerifiedModule::warnings).
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyWarning {
    /// What it is about, e.g. ``device_binary `kernels` ``.
    pub subject: String,
    /// Where it is.
    pub location: Location,
    /// What the verifier could not do, and why.
    pub message: String,
}

/// Where a [`VerifyError`] or [`VerifyWarning`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The module as a whole (its name).
    Module,
    /// The `system_lib_prefix`.
    SystemLibPrefix,
    /// Extern declaration `i`.
    Extern(usize),
    /// Imported module `index`.
    ImportedModule {
        /// Index in [`Module::imported_modules`](crate::ir::model::Module::imported_modules).
        index: usize,
        /// Which part.
        part: ImportedPart,
    },
    /// Entry `i` of [`Module::imports`](crate::ir::model::Module::imports).
    Import(usize),
    /// A part of device binary `index`.
    DeviceBinary {
        /// Index in [`Module::device_binaries`](crate::ir::model::Module::device_binaries).
        index: usize,
        /// Which part.
        part: DeviceBinaryPart,
    },
    /// Something in function `index`.
    Function {
        /// Index in [`Module::functions`](crate::ir::model::Module::functions).
        index: usize,
        /// What in it.
        item: FnItem,
    },
}

/// A part of an imported module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportedPart {
    /// Its label.
    Label,
    /// Its kind.
    Kind,
    /// Its payload.
    Payload,
    /// Entry `i` of its imports.
    Import(usize),
}

/// A place in a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FnItem {
    /// The function's name.
    Name,
    /// The end of its body.
    End,
    /// A parameter (path through tuples) and a part of it.
    Param {
        /// Parameter indices through tuples.
        path: Vec<usize>,
        /// Which part.
        part: ParamPart,
    },
    /// Constraint `i`.
    Constraint(usize),
    /// A statement and a part of it.
    Stmt {
        /// The statement.
        path: StmtPath,
        /// Which part.
        focus: StmtFocus,
    },
}

/// A part of a parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamPart {
    /// The name.
    Name,
    /// The type.
    Type,
    /// Dimension `i` of a tensor's shape.
    Dim(usize),
    /// Entry `i` of a tensor's explicit strides.
    Stride(usize),
    /// A tensor's dtype.
    DType,
    /// A tensor attribute.
    Attr(TensorAttr),
}

/// A part of a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StmtFocus {
    /// The whole statement.
    Whole,
    /// Its name part (bound name, assigned name, callee, error kind).
    Name,
    /// One of its expressions.
    Expr(ExprPath),
}

/// The text a module was parsed from, for rendering errors with positions.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// File name shown in `file:line:column`.
    pub file: &'a str,
    /// The text.
    pub text: &'a str,
    /// Its source map.
    pub map: &'a SourceMap,
}

impl Location {
    /// The span of this location in parsed text.
    pub fn span(&self, map: &SourceMap) -> Option<Span> {
        match self {
            Location::Module => Some(map.module_name),
            Location::SystemLibPrefix => map.system_lib_prefix,
            Location::Extern(i) => map.externs.get(*i).copied(),
            Location::Import(i) => map.imports.get(*i).copied(),
            Location::ImportedModule { index, part } => {
                let m = map.imported_modules.get(*index)?;
                Some(match part {
                    ImportedPart::Label => m.label,
                    ImportedPart::Kind => m.kind,
                    ImportedPart::Payload => m.payload,
                    ImportedPart::Import(j) => *m.imports.get(*j)?,
                })
            }
            Location::DeviceBinary { index, part } => {
                let b = map.device_binaries.get(*index)?;
                Some(match part {
                    DeviceBinaryPart::Name => b.name,
                    DeviceBinaryPart::Format => b.format,
                    DeviceBinaryPart::Data => b.data,
                    DeviceBinaryPart::Kernel(k) => *b.kernels.get(*k)?,
                })
            }
            Location::Function { index, item } => {
                let f = map.functions.get(*index)?;
                Some(match item {
                    FnItem::Name => f.name,
                    FnItem::End => f.end,
                    FnItem::Constraint(i) => *f.constraints.get(*i)?,
                    FnItem::Param { path, part } => {
                        let (first, rest) = path.split_first()?;
                        let p = f.params.get(*first)?.descend(rest)?;
                        let t = p.tensor.as_ref();
                        match part {
                            ParamPart::Name => p.name,
                            ParamPart::Type => p.ty,
                            ParamPart::Dim(i) => {
                                t.and_then(|t| t.dims.get(*i).copied()).unwrap_or(p.ty)
                            }
                            ParamPart::Stride(i) => t
                                .and_then(|t| t.strides.get(*i).copied())
                                .or_else(|| attr_span(t, TensorAttr::Strides))
                                .unwrap_or(p.ty),
                            ParamPart::DType => t.map_or(p.ty, |t| t.dtype),
                            ParamPart::Attr(a) => attr_span(t, *a).unwrap_or(p.ty),
                        }
                    }
                    FnItem::Stmt { path, focus } => {
                        let s = f.stmts.get(path)?;
                        match focus {
                            StmtFocus::Whole => s.span,
                            StmtFocus::Name => s.name.unwrap_or(s.span),
                            StmtFocus::Expr(p) => s.expr(p),
                        }
                    }
                })
            }
        }
    }
}

fn attr_span(t: Option<&TensorSpans>, a: TensorAttr) -> Option<Span> {
    t?.attrs.iter().find(|(k, _)| *k == a).map(|(_, s)| *s)
}

impl VerifyError {
    /// Where the error is, in words: ``function `f`, statement body[2] `...` ``.
    pub fn context(&self) -> String {
        match &self.function {
            Some(f) if self.subject.is_empty() => format!("function `{f}`"),
            Some(f) => format!("function `{f}`, {}", self.subject),
            None => self.subject.clone(),
        }
    }

    /// Renders the error: with `file:line:column` and a caret when `source` is given and
    /// covers the location, and always with a note naming the function and statement.
    pub fn render(&self, source: Option<Source<'_>>) -> String {
        render_at(
            "error",
            &self.message,
            &self.location,
            &self.context(),
            source,
        )
    }
}

impl VerifyWarning {
    /// Renders the warning as [`VerifyError::render`] renders an error, as `warning: ...`.
    pub fn render(&self, source: Option<Source<'_>>) -> String {
        render_at(
            "warning",
            &self.message,
            &self.location,
            &self.subject,
            source,
        )
    }
}

/// A diagnostic at `location`, with a note naming `context`.
fn render_at(
    severity: &str,
    message: &str,
    location: &Location,
    context: &str,
    source: Option<Source<'_>>,
) -> String {
    let at = source.and_then(|s| location.span(s.map).map(|span| (s.file, s.text, span)));
    diag::render(severity, message, at, &[format!("in {context}")])
}

/// Renders several warnings, separated by blank lines.
pub fn render_warnings(warnings: &[VerifyWarning], source: Option<Source<'_>>) -> String {
    warnings
        .iter()
        .map(|w| w.render(source))
        .collect::<Vec<_>>()
        .join("\n")
}

impl fmt::Display for VerifyWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in {}: {}", self.subject, self.message)
    }
}

/// Renders several errors, separated by blank lines.
pub fn render_errors(errors: &[VerifyError], source: Option<Source<'_>>) -> String {
    errors
        .iter()
        .map(|e| e.render(source))
        .collect::<Vec<_>>()
        .join("\n")
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in {}: {}", self.context(), self.message)
    }
}

impl std::error::Error for VerifyError {}

/// A part of a `device_binary` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceBinaryPart {
    /// The name.
    Name,
    /// The format.
    Format,
    /// The image (`data` or `file`).
    Data,
    /// Kernel name `i`.
    Kernel(usize),
}

/// A parameter's name for messages: the names along `path` (tuple elements, inside
/// `optional[...]` too), joined by dots.
pub(super) fn param_display_name(params: &[Param], path: &[usize]) -> String {
    let mut names = Vec::new();
    let mut ps = params;
    for &i in path {
        let Some(p) = ps.get(i) else { break };
        names.push(p.name.clone());
        let mut t = &p.ty;
        while let ParamType::Optional(inner) = t {
            t = inner;
        }
        ps = match t {
            ParamType::Tuple(e) => e,
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
            | ParamType::Optional(_)
            | ParamType::Const(_)
            | ParamType::DataPtr
            | ParamType::Stream => &[],
        };
    }
    names.join(".")
}
