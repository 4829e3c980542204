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
use std::ops::Deref;

use rustc_hash::FxBuildHasher;

use super::model::*;
use super::print::print_stmt_head;
use super::source_map::*;
use super::typing::{Binding, FunctionScope, param_bindings};
use params::param_display_name;
use scope::collect_binders;

mod calls;
mod device;
mod error;
mod expr;
mod module;
mod params;
mod scope;
mod stmt;

pub use device::DeviceBinaryPart;
pub use error::{
    FnItem, ImportedPart, Location, ParamPart, Source, StmtFocus, VerifyError, render_errors,
};

/// A module that passed [`verify`]: the input of the lowering. It derefs to the [`Module`].
#[derive(Clone, Debug, PartialEq)]
#[repr(transparent)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// Verifies `module`, taking it over ([`verify`] checks one in place).
    pub fn new(module: Module) -> Result<Self, Vec<VerifyError>> {
        verify(&module)?;
        Ok(VerifiedModule(module))
    }

    /// `module` as verified, without checking it: for a module [`verify`] accepted, and for
    /// the tests of what the lowering does with IR that breaks the verifier's rules.
    pub(crate) fn trust(module: &Module) -> &VerifiedModule {
        // SAFETY: `VerifiedModule` is a `repr(transparent)` wrapper of `Module`, so the two
        // references have the same layout; the caller checked the module.
        unsafe { &*(module as *const Module).cast::<VerifiedModule>() }
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

/// Checks a module: the module as a [`VerifiedModule`] (the lowering's input) if it passes,
/// otherwise every problem found.
pub fn verify(module: &Module) -> Result<&VerifiedModule, Vec<VerifyError>> {
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
        Ok(VerifiedModule::trust(module))
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
    bindings: Vec<Binding>,
    declared: HashMap<String, Declared, FxBuildHasher>,
    /// Every name bound by a statement anywhere in the function, with the first binder.
    binders: HashMap<String, StmtPath, FxBuildHasher>,
    locals: Vec<Local>,
    poisoned: HashSet<String, FxBuildHasher>,
    optional_only: HashMap<String, String, FxBuildHasher>,
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
