//! Module-level checks: names of functions and externs, imported modules and import cycles.

use std::collections::{HashMap, HashSet};

use super::super::model::*;
use super::super::syntax::{self, is_identifier};
use super::{FnItem, ImportedPart, Location, Verifier, VerifyError};

impl<'m> Verifier<'m> {
    /// Checks everything at module level; functions are checked one by one afterwards.
    pub(super) fn module(&mut self) {
        self.module_name();
        self.externs();
        let labels = self.imported_modules();
        self.imported_module_imports(&labels);
        self.import_cycles(&labels);
        self.module_imports(&labels);
        self.function_names();
    }

    /// The module's name and system-library prefix.
    fn module_name(&mut self) {
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
    }

    /// Extern declarations: C identifiers, unique, no `f16`/`bf16` parameters or results,
    /// `nonzero_is_raised` ones return an integer.
    fn externs(&mut self) {
        let m = self.m;
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
            let halves = e.params.iter().chain(&e.ret).find(|t| is_half(**t));
            if let Some(t) = halves {
                self.err(
                    subject.clone(),
                    Location::Extern(i),
                    format!(
                        "extern `{}` takes or returns {t}: C passes half-precision floats in \
                         float registers, which extern calls do not support; pass the bits as \
                         u16 or the value as f32",
                        e.name
                    ),
                );
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
    }

    /// Imported modules: unique non-empty labels, usable kinds, non-empty payloads; returns
    /// the index of each label.
    fn imported_modules(&mut self) -> HashMap<&'m str, usize> {
        let m = self.m;
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
        labels
    }

    /// What each imported module imports: existing labels, each once.
    fn imported_module_imports(&mut self, labels: &HashMap<&str, usize>) {
        let m = self.m;
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
    }

    /// The module's own `import LABEL;` lines: existing labels, each once.
    fn module_imports(&mut self, labels: &HashMap<&str, usize>) {
        let m = self.m;
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
    }

    /// Function names: identifiers, unique.
    fn function_names(&mut self) {
        let m = self.m;
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
    pub(super) fn import_cycles(&mut self, labels: &HashMap<&str, usize>) {
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

/// Whether `t` is `f16` or `bf16`.
fn is_half(t: ScalarType) -> bool {
    matches!(t, ScalarType::Float(f) if f.is_half())
}
