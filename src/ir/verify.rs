//! The verifier: everything the lowering relies on, checked once.
//!
//! [`verify`] returns every problem it finds as a [`VerifyError`] naming the function, the
//! place (parameter, constraint, or statement by [`StmtPath`] with its printed form) and what
//! is wrong. [`VerifiedModule`] wraps a module that passed, for APIs that want the proof in
//! the type, with the type of every expression (recorded as the verifier types it, so that
//! the lowering reads types instead of deriving them again). Errors render with `line:column` and a caret when the text and [`SourceMap`] of a
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
//!   made of identifier characters;
//! - launches: arguments that match the kernel's parameter list (count, sizes, alignment and,
//!   for PTX, types) where the device binary tells it (`src/gpu_binary`); a binary whose
//!   table cannot be read is a warning ([`VerifiedModule::warnings`]), never an error.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Deref;

use rustc_hash::FxBuildHasher;

use super::model::*;
use super::print::print_stmt_head;
use super::source_map::*;
use super::typing::{Binding, ExprTypes, FunctionScope, param_bindings};
use crate::gpu_binary::KernelTables;
use binders::collect_binders;
use error::param_display_name;

mod alloc;
mod binders;
mod calls;
mod device;
mod error;
mod expr;
pub mod kernel_params;
mod module;
mod params;
mod returns;
mod scope;
mod stmt;
mod tdm;
mod tensormap;

pub use error::{
    DeviceBinaryPart, FnItem, ImportedPart, Location, ParamPart, Source, StmtFocus, VerifyError,
    VerifyWarning, render_errors, render_warnings,
};

/// A module that passed [`verify`], with the type of each of its expressions: the input of
/// the lowering. It derefs to the [`Module`], which it holds unchanged: borrowed from the
/// caller of [`verify`], or owned when made by [`VerifiedModule::new`].
pub struct VerifiedModule<'m> {
    module: Held<'m>,
    /// Recorded by the verifier for this module; keyed by the addresses of its expressions,
    /// which stay put because the module is never changed or moved out of its allocation.
    types: ExprTypes,
    /// What the verifier accepted but reports.
    warnings: Vec<VerifyWarning>,
}

/// How a [`VerifiedModule`] holds its module.
enum Held<'m> {
    Borrowed(&'m Module),
    /// Boxed before it is verified, so that its expressions keep the addresses recorded.
    Owned(Box<Module>),
}

impl VerifiedModule<'static> {
    /// Verifies `module`, taking it over ([`verify`] checks one in place).
    pub fn new(module: Module) -> Result<Self, Vec<VerifyError>> {
        let module = Box::new(module);
        let checked = check(&module);
        VerifiedModule::passed(Held::Owned(module), checked)
    }
}

impl<'m> VerifiedModule<'m> {
    /// The module `module` as verified when [`check`] found no error in it.
    fn passed(module: Held<'m>, checked: Checked) -> Result<Self, Vec<VerifyError>> {
        if checked.errors.is_empty() {
            Ok(VerifiedModule {
                module,
                types: checked.types,
                warnings: checked.warnings,
            })
        } else {
            Err(checked.errors)
        }
    }

    /// `module` as verified, whatever the verifier says of it, with the expression types it
    /// could record: for the tests of what the lowering does with IR that breaks the
    /// verifier's rules.
    #[cfg(test)]
    pub(crate) fn trust(module: &'m Module) -> Self {
        let checked = check(module);
        VerifiedModule {
            module: Held::Borrowed(module),
            types: checked.types,
            warnings: checked.warnings,
        }
    }

    /// The module.
    pub fn module(&self) -> &Module {
        match &self.module {
            Held::Borrowed(m) => m,
            Held::Owned(m) => m,
        }
    }

    /// The type the verifier gave `expr`, an expression of this module. An expression that
    /// spells its type ([`typing::spelled_type`](super::typing::spelled_type): literals,
    /// casts, loads, tensor fields...) has it wherever it comes from; for the others (names,
    /// operators, `select`) it is `None` when `expr` is not part of this module (a copy of
    /// one of its expressions included).
    pub fn expr_type(&self, expr: &Expr) -> Option<Type> {
        self.types.get(expr)
    }

    /// What the verifier accepted but reports (a launch it could not check against the
    /// kernel's parameters, and why), in the order found.
    pub fn warnings(&self) -> &[VerifyWarning] {
        &self.warnings
    }

    /// The whole table of expression types (for the lowering).
    pub(crate) fn expr_types(&self) -> &ExprTypes {
        &self.types
    }

    /// The module (a copy when it is borrowed).
    pub fn into_inner(self) -> Module {
        match self.module {
            Held::Borrowed(m) => m.clone(),
            Held::Owned(m) => *m,
        }
    }
}

impl Clone for VerifiedModule<'_> {
    fn clone(&self) -> Self {
        match &self.module {
            Held::Borrowed(m) => VerifiedModule {
                module: Held::Borrowed(m),
                types: self.types.clone(),
                warnings: self.warnings.clone(),
            },
            Held::Owned(m) => {
                // The copy's expressions live at new addresses: record their types again.
                let copy = m.clone();
                let types = check(&copy).types;
                VerifiedModule {
                    module: Held::Owned(copy),
                    types,
                    warnings: self.warnings.clone(),
                }
            }
        }
    }
}

impl PartialEq for VerifiedModule<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.module() == other.module()
    }
}

impl fmt::Debug for VerifiedModule<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedModule")
            .field("module", self.module())
            .field("typed_expressions", &self.types.len())
            .finish()
    }
}

impl Deref for VerifiedModule<'_> {
    type Target = Module;
    fn deref(&self) -> &Module {
        self.module()
    }
}

/// Checks a module: the module as a [`VerifiedModule`] (the lowering's input) if it passes,
/// otherwise every problem found.
pub fn verify(module: &Module) -> Result<VerifiedModule<'_>, Vec<VerifyError>> {
    VerifiedModule::passed(Held::Borrowed(module), check(module))
}

/// What [`check`] found.
struct Checked {
    types: ExprTypes,
    errors: Vec<VerifyError>,
    warnings: Vec<VerifyWarning>,
}

/// Runs every check: the expression types recorded, and the problems found.
fn check(module: &Module) -> Checked {
    // Room for a few recorded expressions per top-level statement: enough for most modules.
    let statements: usize = module.functions.iter().map(|f| f.body.len()).sum();
    let mut v = Verifier {
        m: module,
        errors: Vec::new(),
        warnings: Vec::new(),
        types: ExprTypes::with_capacity(4 * statements),
        kernel_tables: Vec::new(),
    };
    v.module();
    v.device_binaries();
    v.kernel_tables();
    for (i, f) in module.functions.iter().enumerate() {
        FnVerifier::new(&mut v, i, f).run();
    }
    Checked {
        types: v.types,
        errors: v.errors,
        warnings: v.warnings,
    }
}

struct Verifier<'m> {
    m: &'m Module,
    errors: Vec<VerifyError>,
    warnings: Vec<VerifyWarning>,
    /// The type of every expression typed so far.
    types: ExprTypes,
    /// The kernel parameter tables of each device binary (by index), read once; `None` when
    /// unreadable.
    kernel_tables: Vec<Option<KernelTables>>,
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
}

/// How a name in a function was introduced (for messages and assignment rules).
#[derive(Clone, Debug)]
struct Declared {
    by: DeclaredBy,
    mutable: bool,
}

/// What introduced a name; described ([`FnVerifier::describe`]) only when a message needs it.
#[derive(Clone, Debug)]
enum DeclaredBy {
    /// The function's parameter binding with this index (see [`param_bindings`]).
    Binding(usize),
    /// The statement at this path.
    Stmt(StmtPath),
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
    /// The names the parameters introduce (computed once, shared by the checks).
    bindings: Vec<Binding<'m>>,
    declared: HashMap<String, Declared, FxBuildHasher>,
    /// Every name bound by a statement anywhere in the function, with the first binder.
    binders: HashMap<String, StmtPath, FxBuildHasher>,
    locals: Vec<Local>,
    poisoned: HashSet<String, FxBuildHasher>,
    optional_only: HashMap<String, String, FxBuildHasher>,
    /// Reused for the path of the sub-expression being checked (one allocation per function
    /// rather than one per expression).
    expr_path: Vec<usize>,
}

impl<'v, 'm> FnVerifier<'v, 'm> {
    fn new(v: &'v mut Verifier<'m>, index: usize, f: &'m Function) -> Self {
        let mut binders = HashMap::default();
        collect_binders(&f.body, &StmtPath::default(), Block::Body, &mut binders);
        let bindings = param_bindings(f);
        FnVerifier {
            v,
            index,
            f,
            scope: FunctionScope::from_bindings(&bindings),
            bindings,
            declared: HashMap::default(),
            binders,
            locals: Vec::new(),
            poisoned: HashSet::default(),
            optional_only: HashMap::default(),
            expr_path: Vec::new(),
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

    /// How `d` introduced its name, for messages: `parameter `x``, `symbolic variable `n`
    /// (bound by x.shape[0])`, `bound by 2 `let y = ...``.
    fn describe(&self, d: &Declared) -> String {
        self.describe_in(&self.bindings, d)
    }

    /// [`Self::describe`] while the parameter bindings are taken out of `self` (`bindings`).
    fn describe_in(&self, bindings: &[Binding], d: &Declared) -> String {
        match &d.by {
            DeclaredBy::Binding(i) => self.binding_description(&bindings[*i]),
            DeclaredBy::Stmt(path) => {
                let text = path
                    .resolve(&self.f.body)
                    .map(print_stmt_head)
                    .unwrap_or_default();
                format!("bound by {path} `{text}`")
            }
        }
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
        self.ret_type();
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
}
