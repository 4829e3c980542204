//! Names in scope: declaring statement binders, leaving blocks, and why a name is unbound.

use super::super::model::*;
use super::super::source_map::*;
use super::super::syntax::is_identifier;
use super::{Declared, DeclaredBy, FnVerifier, Local, StmtFocus};

impl<'m> FnVerifier<'_, 'm> {
    pub(super) fn pop_locals(&mut self, mark: usize) {
        for l in self.locals.split_off(mark) {
            if l.bound {
                self.scope.unbind(&l.name);
            }
        }
    }

    /// Declares a name bound by a statement; `ty` is `None` when its value had no type.
    pub(super) fn declare(&mut self, path: &StmtPath, name: &str, ty: Option<Type>, mutable: bool) {
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
                self.describe(prev)
            );
            self.stmt_err(path, StmtFocus::Name, message);
            self.locals.push(Local {
                name: name.to_owned(),
                bound: false,
            });
            return;
        }
        self.declared.insert(
            name.to_owned(),
            Declared {
                by: DeclaredBy::Stmt(path.clone()),
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

    pub(super) fn unbound_message(&self, name: &str, path: &StmtPath) -> Option<String> {
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
}
