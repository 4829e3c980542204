//! The verifier: everything the lowering relies on, checked once.
//!
//! [`verify`] returns every problem it finds as a [`VerifyError`] naming the function, the
//! place (parameter, constraint, or statement by [`StmtPath`] with its printed form) and what
//! is wrong. [`VerifiedModule`] wraps a module that passed, for APIs that want the proof in
//! the type. Errors render with `line:column` and a caret when the text and [`SourceMap`] of a
//! parsed module are at hand ([`VerifyError::render`]), and name the statement otherwise.
//!
//! What is checked, beyond the typing rules of [`typing`](mod@super::typing):
//! - names: identifiers, unique per function across parameters, tuple elements, symbolic
//!   variables, `let`s, loop variables and call/stream results (no shadowing, no reuse in
//!   sibling blocks); every use in scope (bound earlier in an enclosing block);
//! - symbolic variables: a constraint names an integer parameter or a symbolic variable with
//!   a divisor > 0; a symbolic variable that only optional parameters bind cannot be used;
//! - tensor specs: valid dtype, non-negative constant dims, explicit stride lists of length
//!   `ndim`, positive device type codes, power-of-two alignment; no `optional[optional[..]]`;
//! - statements: `let` binds POD values (scalars, devices, dtypes); assignment only to
//!   `let mut` with the same type; stores of the stored type through a `ptr`; bool conditions;
//!   loops with integer bounds of one type and a non-zero step that fits; assertion kinds are
//!   identifiers and interpolated values are scalars, devices or dtypes; extern calls match
//!   their declaration (a string literal is accepted for `ptr`); packed callees are `func`
//!   parameters or non-empty names (`import` only when the module imports something);
//!   returns match the return type; no statement after a return; every path of a function
//!   with a return type ends in a return; integer constants fit their type and `f32`
//!   constants are exact;
//! - module: unique function and extern names (C identifiers), `nonzero_is_raised` externs
//!   return an integer, imported modules with unique labels, non-empty kinds other than
//!   `_lib`, non-empty payloads, existing and acyclic imports; the system-library prefix is
//!   made of identifier characters.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Deref;

use safecall_runtime::dtype;

use super::diag;
use super::model::*;
use super::print::{print_constraint, print_stmt_head};
use super::source_map::*;
use super::syntax::{self, is_identifier};
use super::typing::{self, BindingKind, FunctionScope, Scope, SymSource, TypeErrorKind};

mod device;
pub use device::DeviceBinaryPart;

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

/// Where a [`VerifyError`] is.
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
        /// Index in [`Module::imported_modules`].
        index: usize,
        /// Which part.
        part: ImportedPart,
    },
    /// Entry `i` of [`Module::imports`].
    Import(usize),
    /// A part of device binary `index`.
    DeviceBinary {
        /// Index in [`Module::device_binaries`].
        index: usize,
        /// Which part.
        part: DeviceBinaryPart,
    },
    /// Something in function `index`.
    Function {
        /// Index in [`Module::functions`].
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
        let at = source.and_then(|s| self.location.span(s.map).map(|span| (s.file, s.text, span)));
        diag::render(
            "error",
            &self.message,
            at,
            &[format!("in {}", self.context())],
        )
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

/// A module that passed [`verify`]. It derefs to the [`Module`].
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// Verifies `module`.
    pub fn new(module: Module) -> Result<Self, Vec<VerifyError>> {
        verify(&module)?;
        Ok(VerifiedModule(module))
    }

    /// The module.
    pub fn into_inner(self) -> Module {
        self.0
    }
}

impl Deref for VerifiedModule {
    type Target = Module;
    fn deref(&self) -> &Module {
        &self.0
    }
}

/// Checks a module. `Ok(())` means the lowering may take it; otherwise every problem found.
pub fn verify(module: &Module) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        m: module,
        errors: Vec::new(),
    };
    v.module();
    v.device_binaries();
    for (i, f) in module.functions.iter().enumerate() {
        FnVerifier::new(&mut v, i, f).run();
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

struct Verifier<'m> {
    m: &'m Module,
    errors: Vec<VerifyError>,
}

impl<'m> Verifier<'m> {
    fn err(&mut self, subject: String, location: Location, message: String) {
        self.errors.push(VerifyError {
            function: None,
            subject,
            location,
            message,
        });
    }

    fn module(&mut self) {
        let m = self.m;
        // The name becomes the object file's name (a C string in its symbol table).
        if m.name.contains('\0') {
            self.err(
                "module".into(),
                Location::Module,
                format!(
                    "module name {} contains a NUL byte",
                    syntax::quote(&m.name, '`')
                ),
            );
        }
        if let Some(p) = &m.system_lib_prefix
            && !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.err(
                "system_lib_prefix".into(),
                Location::SystemLibPrefix,
                format!(
                    "system_lib_prefix {} may only hold letters, digits and `_`",
                    syntax::quote(p, '"')
                ),
            );
        }
        let mut externs: HashMap<&str, usize> = HashMap::new();
        for (i, e) in m.externs.iter().enumerate() {
            let subject = format!("extern `{}`", e.name);
            if !is_identifier(&e.name) {
                self.err(
                    subject.clone(),
                    Location::Extern(i),
                    format!("extern name `{}` is not a C identifier", e.name),
                );
            }
            if let Some(&j) = externs.get(e.name.as_str()) {
                self.err(
                    subject.clone(),
                    Location::Extern(i),
                    format!(
                        "duplicate extern `{}` (extern #{j} has the same name)",
                        e.name
                    ),
                );
            } else {
                externs.insert(&e.name, i);
            }
            if e.errors == ErrorConvention::NonZeroIsRaised
                && !matches!(e.ret, Some(ScalarType::Int(_)))
            {
                let ret = e.ret.map_or("void".to_owned(), |t| t.to_string());
                self.err(
                    subject,
                    Location::Extern(i),
                    format!("extern `{}` is `nonzero_is_raised` but returns {ret}; it must return an integer", e.name),
                );
            }
        }
        let mut labels: HashMap<&str, usize> = HashMap::new();
        for (i, im) in m.imported_modules.iter().enumerate() {
            let subject = format!("imported module `{}`", im.label);
            let loc = |part| Location::ImportedModule { index: i, part };
            if im.label.is_empty() {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Label),
                    "imported module label is empty".into(),
                );
            }
            if let Some(&j) = labels.get(im.label.as_str()) {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Label),
                    format!(
                        "duplicate imported module label `{}` (imported module #{j} has it)",
                        im.label
                    ),
                );
            } else {
                labels.insert(&im.label, i);
            }
            if im.kind.is_empty() {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Kind),
                    "imported module kind is empty".into(),
                );
            } else if im.kind == "_lib" {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Kind),
                    "imported module kind `_lib` is reserved for the library itself".into(),
                );
            } else if im.kind.contains('\0') {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Kind),
                    "imported module kind contains NUL".into(),
                );
            }
            if im.payload.is_empty() {
                self.err(
                    subject.clone(),
                    loc(ImportedPart::Payload),
                    "imported module payload is empty (a 0-byte payload does not load in TVM-FFI)"
                        .into(),
                );
            }
        }
        for (i, im) in m.imported_modules.iter().enumerate() {
            let subject = format!("imported module `{}`", im.label);
            let mut seen = HashSet::new();
            for (j, l) in im.imports.iter().enumerate() {
                let loc = Location::ImportedModule {
                    index: i,
                    part: ImportedPart::Import(j),
                };
                if !labels.contains_key(l.as_str()) {
                    self.err(
                        subject.clone(),
                        loc,
                        format!("imports `{l}`, which is not an imported module"),
                    );
                } else if !seen.insert(l) {
                    self.err(subject.clone(), loc, format!("imports `{l}` twice"));
                }
            }
        }
        self.import_cycles(&labels);
        let mut seen = HashSet::new();
        for (i, l) in m.imports.iter().enumerate() {
            if !labels.contains_key(l.as_str()) {
                self.err(
                    format!("import `{l}`"),
                    Location::Import(i),
                    format!("`import {l}` names no imported module"),
                );
            } else if !seen.insert(l) {
                self.err(
                    format!("import `{l}`"),
                    Location::Import(i),
                    format!("`{l}` is imported twice"),
                );
            }
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, f) in m.functions.iter().enumerate() {
            let loc = Location::Function {
                index: i,
                item: FnItem::Name,
            };
            if !is_identifier(&f.name) {
                self.errors.push(VerifyError {
                    function: Some(f.name.clone()),
                    subject: String::new(),
                    location: loc.clone(),
                    message: format!("function name `{}` is not an identifier", f.name),
                });
            }
            if let Some(&j) = names.get(f.name.as_str()) {
                self.errors.push(VerifyError {
                    function: Some(f.name.clone()),
                    subject: String::new(),
                    location: loc,
                    message: format!(
                        "duplicate function `{}` (function #{j} has the same name)",
                        f.name
                    ),
                });
            } else {
                names.insert(&f.name, i);
            }
        }
    }

    /// Reports each import cycle once, at the edge that closes it.
    fn import_cycles(&mut self, labels: &HashMap<&str, usize>) {
        let mods = &self.m.imported_modules;
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; mods.len()];
        let mut found = Vec::new();
        fn dfs(
            i: usize,
            mods: &[ImportedModule],
            labels: &HashMap<&str, usize>,
            state: &mut [u8],
            stack: &mut Vec<usize>,
            found: &mut Vec<(usize, usize, Vec<usize>)>,
        ) {
            state[i] = 1;
            stack.push(i);
            for (j, l) in mods[i].imports.iter().enumerate() {
                let Some(&t) = labels.get(l.as_str()) else {
                    continue;
                };
                match state[t] {
                    0 => dfs(t, mods, labels, state, stack, found),
                    1 => {
                        let from = stack.iter().position(|&s| s == t).unwrap_or(0);
                        let mut cycle = stack[from..].to_vec();
                        cycle.push(t);
                        found.push((i, j, cycle));
                    }
                    _ => {}
                }
            }
            stack.pop();
            state[i] = 2;
        }
        for i in 0..mods.len() {
            if state[i] == 0 {
                dfs(i, mods, labels, &mut state, &mut Vec::new(), &mut found);
            }
        }
        for (i, j, cycle) in found {
            let names: Vec<&str> = cycle.iter().map(|&c| mods[c].label.as_str()).collect();
            self.err(
                format!("imported module `{}`", mods[i].label),
                Location::ImportedModule {
                    index: i,
                    part: ImportedPart::Import(j),
                },
                format!("import cycle: {}", names.join(" -> ")),
            );
        }
    }
}

/// How a name in a function was introduced (for messages and assignment rules).
#[derive(Clone, Debug)]
struct Declared {
    what: String,
    mutable: bool,
}

struct Local {
    name: String,
    bound: bool,
}

struct FnVerifier<'v, 'm> {
    v: &'v mut Verifier<'m>,
    index: usize,
    f: &'m Function,
    scope: FunctionScope,
    declared: HashMap<String, Declared>,
    /// Every name bound by a statement anywhere in the function, with the first binder.
    binders: HashMap<String, StmtPath>,
    locals: Vec<Local>,
    poisoned: HashSet<String>,
    optional_only: HashMap<String, String>,
}

impl<'v, 'm> FnVerifier<'v, 'm> {
    fn new(v: &'v mut Verifier<'m>, index: usize, f: &'m Function) -> Self {
        let mut binders = HashMap::new();
        collect_binders(&f.body, &StmtPath::default(), Block::Body, &mut binders);
        FnVerifier {
            v,
            index,
            f,
            scope: FunctionScope::new(f),
            declared: HashMap::new(),
            binders,
            locals: Vec::new(),
            poisoned: HashSet::new(),
            optional_only: HashMap::new(),
        }
    }

    fn err(&mut self, item: FnItem, subject: String, message: String) {
        self.v.errors.push(VerifyError {
            function: Some(self.f.name.clone()),
            subject,
            location: Location::Function {
                index: self.index,
                item,
            },
            message,
        });
    }

    fn param_err(&mut self, path: &[usize], part: ParamPart, message: String) {
        let subject = format!("parameter `{}`", param_display_name(&self.f.params, path));
        self.err(
            FnItem::Param {
                path: path.to_vec(),
                part,
            },
            subject,
            message,
        );
    }

    fn stmt_err(&mut self, path: &StmtPath, focus: StmtFocus, message: String) {
        let text = path
            .resolve(&self.f.body)
            .map(print_stmt_head)
            .unwrap_or_default();
        self.err(
            FnItem::Stmt {
                path: path.clone(),
                focus,
            },
            format!("statement {path} `{text}`"),
            message,
        );
    }

    fn run(mut self) {
        self.params(&self.f.params, &[]);
        self.bindings();
        self.constraints();
        let returns = self.block(&self.f.body, &StmtPath::default(), Block::Body);
        if self.f.ret != RetType::None && !returns {
            let ret = self.f.ret.to_string();
            self.err(
                FnItem::End,
                String::new(),
                format!(
                    "missing return: `{}` returns {ret}, but the end of its body is reachable without a `return`",
                    self.f.name
                ),
            );
        }
    }

    // ---- parameters ----------------------------------------------------------------------

    fn params(&mut self, params: &'m [Param], prefix: &[usize]) {
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

    fn param_type(&mut self, ty: &'m ParamType, path: &[usize]) {
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
            _ => {}
        }
    }

    fn tensor_spec(&mut self, spec: &TensorSpec, path: &[usize]) {
        if let Some(d) = spec.dtype {
            let ok = dtype::format(d).is_ok() && d.bits != 0 && d.lanes != 0;
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
        for (i, d) in spec.shape.iter().enumerate() {
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
                _ => {}
            }
        }
        if let Strides::Exact(strides) = &spec.strides {
            if strides.len() != spec.shape.len() {
                self.param_err(
                    path,
                    ParamPart::Attr(TensorAttr::Strides),
                    format!(
                        "the stride list has {} but the tensor has {}",
                        plural(strides.len(), "entry", "entries"),
                        plural(spec.shape.len(), "dimension", "dimensions")
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
        if let Some(code) = spec.device_type
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

    /// Declares the parameter bindings, reporting clashes.
    fn bindings(&mut self) {
        for b in typing::param_bindings(self.f) {
            let what = match &b.kind {
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
            };
            if let Some(prev) = self.declared.get(&b.name) {
                let message = format!("duplicate name `{}`: it is already {}", b.name, prev.what);
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
                self.optional_only.insert(b.name.clone(), what.clone());
            }
            self.declared.insert(
                b.name.clone(),
                Declared {
                    what,
                    mutable: false,
                },
            );
        }
    }

    fn constraints(&mut self) {
        let bindings = typing::param_bindings(self.f);
        for (i, c) in self.f.constraints.iter().enumerate() {
            let Constraint::Divisible { var, divisor } = c;
            let subject = format!("constraint `{}`", print_constraint(c));
            if *divisor == 0 {
                self.err(
                    FnItem::Constraint(i),
                    subject.clone(),
                    "the divisor must be positive".into(),
                );
            }
            let problem = match bindings.iter().find(|b| &b.name == var) {
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
                self.err(FnItem::Constraint(i), subject, p);
            }
        }
    }

    // ---- statements ----------------------------------------------------------------------

    fn block(&mut self, stmts: &'m [Stmt], parent: &StmtPath, block: Block) -> bool {
        let mark = self.locals.len();
        let mut returns = false;
        for (i, s) in stmts.iter().enumerate() {
            let path = if block == Block::Body {
                StmtPath::root(i)
            } else {
                parent.child(block, i)
            };
            if returns {
                self.stmt_err(
                    &path,
                    StmtFocus::Whole,
                    "unreachable statement: every path before it returns".into(),
                );
                break;
            }
            returns = self.stmt(s, &path);
        }
        self.pop_locals(mark);
        returns
    }

    fn pop_locals(&mut self, mark: usize) {
        for l in self.locals.split_off(mark) {
            if l.bound {
                self.scope.unbind(&l.name);
            }
        }
    }

    /// Declares a name bound by a statement; `ty` is `None` when its value had no type.
    fn declare(&mut self, path: &StmtPath, name: &str, ty: Option<Type>, mutable: bool) {
        if !is_identifier(name) {
            self.stmt_err(
                path,
                StmtFocus::Name,
                format!("name `{name}` is not an identifier"),
            );
        }
        if let Some(prev) = self.declared.get(name) {
            let message = format!(
                "duplicate name `{name}`: it is already {} (names are unique in a function, even in separate blocks)",
                prev.what
            );
            self.stmt_err(path, StmtFocus::Name, message);
            self.locals.push(Local {
                name: name.to_owned(),
                bound: false,
            });
            return;
        }
        let text = path
            .resolve(&self.f.body)
            .map(print_stmt_head)
            .unwrap_or_default();
        self.declared.insert(
            name.to_owned(),
            Declared {
                what: format!("bound by {path} `{text}`"),
                mutable,
            },
        );
        match ty {
            Some(t) => {
                self.scope.bind(name, t);
                self.locals.push(Local {
                    name: name.to_owned(),
                    bound: true,
                });
            }
            None => {
                self.poisoned.insert(name.to_owned());
                self.locals.push(Local {
                    name: name.to_owned(),
                    bound: false,
                });
            }
        }
    }

    fn unbound_message(&self, name: &str, path: &StmtPath) -> Option<String> {
        if self.poisoned.contains(name) {
            return None;
        }
        Some(match self.binders.get(name) {
            Some(b) if b >= path => {
                format!("`{name}` is used before it is bound (by {b})")
            }
            Some(b) => format!(
                "`{name}` is not in scope here: it is bound by {b}, whose block does not enclose this use"
            ),
            None => format!(
                "`{name}` is not declared: no parameter, symbolic variable or earlier statement binds it"
            ),
        })
    }

    /// Types expression `index` of the statement at `path`, reporting problems.
    fn expr(&mut self, path: &StmtPath, index: usize, e: &Expr) -> Option<Type> {
        let mut ok = true;
        self.literals(path, &mut vec![index], e, &mut ok);
        match typing::expr_type(e, &self.scope) {
            Ok(t) => {
                let mut names = Vec::new();
                used_names(e, &mut vec![index], &mut names);
                for (n, at) in names {
                    if let Some(what) = self.optional_only.get(n).cloned() {
                        self.stmt_err(
                            path,
                            StmtFocus::Expr(at),
                            format!("{what} is bound only by optional parameters, so it may have no value here"),
                        );
                        ok = false;
                    }
                }
                ok.then_some(t)
            }
            Err(err) => {
                let mut p = vec![index];
                p.extend(&err.path);
                let message = match &err.kind {
                    TypeErrorKind::Unbound(n) => self.unbound_message(n, path),
                    TypeErrorKind::Invalid(m) => Some(m.clone()),
                };
                if let Some(m) = message {
                    self.stmt_err(path, StmtFocus::Expr(p), m);
                }
                None
            }
        }
    }

    /// Checks that integer constants fit and `f32` constants are exact.
    fn literals(&mut self, path: &StmtPath, at: &mut Vec<usize>, e: &Expr, ok: &mut bool) {
        match e {
            Expr::Int { value, ty } if !syntax::int_fits(*value, *ty) => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(at.clone()),
                    format!(
                        "constant {} does not fit {}",
                        if syntax::int_signed(*ty) {
                            value.to_string()
                        } else {
                            (*value as u64).to_string()
                        },
                        syntax::int_type(*ty)
                    ),
                );
                *ok = false;
            }
            Expr::Float {
                bits,
                ty: FloatType::F32,
            } if syntax::f64_bits_to_f32_exact(*bits).is_none() => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(at.clone()),
                    format!(
                        "f32 constant {} is not exactly representable as f32",
                        syntax::f64_literal(*bits)
                    ),
                );
                *ok = false;
            }
            _ => {
                for (i, c) in expr_children(e).into_iter().enumerate() {
                    at.push(i);
                    self.literals(path, at, c, ok);
                    at.pop();
                }
            }
        }
    }

    fn expect_type(&mut self, path: &StmtPath, index: usize, e: &Expr, want: &Type, what: &str) {
        if let Some(t) = self.expr(path, index, e)
            && &t != want
        {
            self.stmt_err(
                path,
                StmtFocus::Expr(vec![index]),
                format!("{what} must be {want}, found {t}"),
            );
        }
    }

    /// Checks a statement; returns whether every path through it returns.
    fn stmt(&mut self, s: &'m Stmt, path: &StmtPath) -> bool {
        let bool_t = Type::Scalar(ScalarType::Bool);
        match s {
            Stmt::Let {
                name,
                mutable,
                value,
            } => {
                let mut t = self.expr(path, 0, value);
                if let Some(ty) = &t
                    && !typing::bindable(ty)
                {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![0]),
                        format!("`let` binds scalars, devices and dtypes; this value is {ty}"),
                    );
                    t = None;
                }
                self.declare(path, name, t, *mutable);
            }
            Stmt::Assign { name, value } => {
                let t = self.expr(path, 0, value);
                match (self.scope.type_of(name), self.declared.get(name).cloned()) {
                    (Some(bt), Some(d)) => {
                        if !d.mutable {
                            self.stmt_err(
                                path,
                                StmtFocus::Name,
                                format!(
                                    "cannot assign to `{name}`: it is {}, not a `let mut` binding",
                                    d.what
                                ),
                            );
                        } else if let Some(t) = t
                            && t != bt
                        {
                            self.stmt_err(
                                path,
                                StmtFocus::Expr(vec![0]),
                                format!(
                                    "type mismatch: `{name}` is {bt}, the assigned value is {t}"
                                ),
                            );
                        }
                    }
                    _ => {
                        if let Some(m) = self.unbound_message(name, path) {
                            self.stmt_err(path, StmtFocus::Name, m);
                        }
                    }
                }
            }
            Stmt::Store { ty, ptr, value } => {
                self.expect_type(
                    path,
                    0,
                    ptr,
                    &Type::Scalar(ScalarType::Ptr),
                    "the address of `store`",
                );
                self.expect_type(path, 1, value, &Type::Scalar(*ty), "the stored value");
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                self.expect_type(path, 0, cond, &bool_t, "the condition of `if`");
                let a = self.block(then_body, path, Block::Then);
                let b = self.block(else_body, path, Block::Else);
                return a && b;
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let st = self.expr(path, 0, start);
                let et = self.expr(path, 1, end);
                let mut var_t = None;
                if let Some(st) = &st {
                    if let Type::Scalar(ScalarType::Int(it)) = st {
                        var_t = Some(st.clone());
                        let fits = if syntax::int_signed(*it) {
                            syntax::int_fits(*step, *it)
                        } else {
                            syntax::int_bits(*it) == 64
                                || step.unsigned_abs() < (1u64 << syntax::int_bits(*it))
                        };
                        if !fits {
                            self.stmt_err(
                                path,
                                StmtFocus::Whole,
                                format!("step {step} does not fit the loop type {st}"),
                            );
                        }
                        if let Some(et) = &et
                            && et != st
                        {
                            self.stmt_err(
                                path,
                                StmtFocus::Expr(vec![1]),
                                format!(
                                    "loop bounds have different types: start is {st}, end is {et}"
                                ),
                            );
                        }
                    } else {
                        self.stmt_err(
                            path,
                            StmtFocus::Expr(vec![0]),
                            format!("loop bounds must be integers, found {st}"),
                        );
                    }
                }
                if *step == 0 {
                    self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        "the loop step must be a non-zero constant".into(),
                    );
                }
                let mark = self.locals.len();
                self.declare(path, var, var_t, false);
                self.block(body, path, Block::Loop);
                self.pop_locals(mark);
            }
            Stmt::Assert {
                cond,
                kind,
                message,
            } => {
                self.expect_type(path, 0, cond, &bool_t, "the condition of `assert`");
                if !is_identifier(kind) {
                    self.stmt_err(
                        path,
                        StmtFocus::Name,
                        format!("error kind `{kind}` is not an identifier"),
                    );
                }
                let values = message.iter().filter_map(|p| match p {
                    MessagePart::Value(e) => Some(e),
                    MessagePart::Text(_) => None,
                });
                for (i, e) in values.enumerate() {
                    if let Some(t) = self.expr(path, i + 1, e)
                        && !typing::formattable(&t)
                    {
                        self.stmt_err(
                            path,
                            StmtFocus::Expr(vec![i + 1]),
                            format!("messages interpolate scalars, devices and dtypes, found {t}"),
                        );
                    }
                }
            }
            Stmt::CallExtern { dest, func, args } => {
                let decl = self.v.m.externs.iter().find(|e| &e.name == func);
                let arg_types: Vec<Option<Type>> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| self.expr(path, i, a))
                    .collect();
                let mut ret = None;
                match decl {
                    None => {
                        self.stmt_err(
                            path,
                            StmtFocus::Name,
                            format!("call to undeclared extern function `{func}`"),
                        );
                    }
                    Some(decl) => {
                        if decl.params.len() != args.len() {
                            self.stmt_err(
                                path,
                                StmtFocus::Whole,
                                format!(
                                    "wrong number of arguments: extern `{func}` takes {}, found {}",
                                    decl.params.len(),
                                    args.len()
                                ),
                            );
                        } else {
                            for (i, (p, t)) in decl.params.iter().zip(&arg_types).enumerate() {
                                let literal = matches!(&args[i], Expr::Str(_));
                                if let Expr::Str(s) = &args[i]
                                    && *p == ScalarType::Ptr
                                    && s.contains('\0')
                                {
                                    self.stmt_err(
                                        path,
                                        StmtFocus::Expr(vec![i]),
                                        "a string passed as a C string cannot contain NUL".into(),
                                    );
                                }
                                if let Some(t) = t
                                    && *t != Type::Scalar(*p)
                                    && !(literal && *p == ScalarType::Ptr)
                                {
                                    self.stmt_err(
                                        path,
                                        StmtFocus::Expr(vec![i]),
                                        format!("argument {i} of `{func}` must be {p}, found {t}"),
                                    );
                                }
                            }
                        }
                        match (dest, decl.ret) {
                            (Some(d), None) => self.stmt_err(
                                path,
                                StmtFocus::Name,
                                format!("extern `{func}` returns void; there is no result to bind to `{d}`"),
                            ),
                            (_, Some(r)) => ret = Some(Type::Scalar(r)),
                            _ => {}
                        }
                    }
                }
                if let Some(d) = dest {
                    self.declare(path, d, ret, false);
                }
            }
            Stmt::CallPacked { dest, callee, args } => {
                match callee {
                    Callee::Param(p) => match self.scope.type_of(p) {
                        Some(Type::Func) => {}
                        Some(t) => self.stmt_err(
                            path,
                            StmtFocus::Name,
                            format!("the callee `{p}` must be a `func` parameter, found {t}"),
                        ),
                        None => {
                            if let Some(m) = self.unbound_message(p, path) {
                                self.stmt_err(path, StmtFocus::Name, m);
                            }
                        }
                    },
                    Callee::Global(n) | Callee::Import(n) | Callee::Direct(n) => {
                        let what = match callee {
                            Callee::Global(_) => "global function",
                            Callee::Import(_) => "imported function",
                            _ => "direct symbol",
                        };
                        if n.is_empty() {
                            self.stmt_err(
                                path,
                                StmtFocus::Name,
                                format!("the {what} name is empty"),
                            );
                        } else if n.contains('\0') {
                            self.stmt_err(
                                path,
                                StmtFocus::Name,
                                format!("the {what} name contains NUL"),
                            );
                        }
                        if matches!(callee, Callee::Import(_)) && self.v.m.imports.is_empty() {
                            self.stmt_err(
                                path,
                                StmtFocus::Name,
                                "`call_packed import` needs the module to import a module (`import LABEL;`)".into(),
                            );
                        }
                    }
                }
                for (i, a) in args.iter().enumerate() {
                    self.expr(path, i, a);
                }
                if let Some(d) = dest {
                    self.declare(path, d, Some(Type::Any), false);
                }
            }
            Stmt::Launch(launch) => self.launch(path, launch),
            Stmt::GetStream {
                dest,
                device_type,
                device_id,
            } => {
                let i32_t = Type::Scalar(ScalarType::Int(IntType::I32));
                self.expect_type(path, 0, device_type, &i32_t, "the device type");
                self.expect_type(path, 1, device_id, &i32_t, "the device id");
                self.declare(path, dest, Some(Type::Scalar(ScalarType::Ptr)), false);
            }
            Stmt::Return(value) => {
                let ret = &self.f.ret;
                match value {
                    None if *ret != RetType::None => self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        format!("return type mismatch: `{}` returns {ret}, but this `return` has no value", self.f.name),
                    ),
                    None => {}
                    Some(_) if *ret == RetType::None => self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![0]),
                        format!("return type mismatch: `{}` returns none, but this `return` has a value", self.f.name),
                    ),
                    Some(e) => {
                        if let Some(t) = self.expr(path, 0, e) {
                            let want = match ret {
                                RetType::Scalar(s) => Type::Scalar(*s),
                                RetType::Device => Type::Device,
                                RetType::DType => Type::DType,
                                RetType::Str => Type::Str,
                                RetType::Tensor => Type::Tensor,
                                RetType::Any => Type::Any,
                                RetType::None => unreachable!(),
                            };
                            if t != want {
                                let hint = match ret {
                                    RetType::Tensor => " (a tensor return passes a tensor parameter through)",
                                    RetType::Str => " (a str return is a string literal or a str parameter)",
                                    RetType::Any => " (an any return is an any parameter, tuple or packed call result)",
                                    _ => "",
                                };
                                self.stmt_err(
                                    path,
                                    StmtFocus::Expr(vec![0]),
                                    format!("return type mismatch: `{}` returns {ret}, found {t}{hint}", self.f.name),
                                );
                            }
                        }
                    }
                }
                return true;
            }
        }
        false
    }
}

/// Records the first binder of each name bound by a statement.
fn collect_binders(
    stmts: &[Stmt],
    parent: &StmtPath,
    block: Block,
    out: &mut HashMap<String, StmtPath>,
) {
    for (i, s) in stmts.iter().enumerate() {
        let path = if block == Block::Body {
            StmtPath::root(i)
        } else {
            parent.child(block, i)
        };
        let name = match s {
            Stmt::Let { name, .. } => Some(name),
            Stmt::For { var, .. } => Some(var),
            Stmt::CallExtern { dest, .. } | Stmt::CallPacked { dest, .. } => dest.as_ref(),
            Stmt::GetStream { dest, .. } => Some(dest),
            _ => None,
        };
        if let Some(n) = name {
            out.entry(n.clone()).or_insert_with(|| path.clone());
        }
        match s {
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                collect_binders(then_body, &path, Block::Then, out);
                collect_binders(else_body, &path, Block::Else, out);
            }
            Stmt::For { body, .. } => collect_binders(body, &path, Block::Loop, out),
            _ => {}
        }
    }
}

/// Names an expression reads (variables, tensors of fields, `is_none` operands), each with
/// the path of the expression that reads it (`at` is the path of `e`).
fn used_names<'e>(e: &'e Expr, at: &mut Vec<usize>, out: &mut Vec<(&'e str, Vec<usize>)>) {
    match e {
        Expr::Var(n) | Expr::IsNone(n) => out.push((n, at.clone())),
        Expr::Field { tensor, .. } => out.push((tensor, at.clone())),
        _ => {
            for (i, c) in expr_children(e).into_iter().enumerate() {
                at.push(i);
                used_names(c, at, out);
                at.pop();
            }
        }
    }
}

fn param_display_name(params: &[Param], path: &[usize]) -> String {
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
            _ => &[],
        };
    }
    names.join(".")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
