//! [`FunctionTable`]: a module built in Rust from named functions.

use std::collections::HashMap;

use crate::rust_api::{Error, Function, Module};

use super::ModuleImpl;

/// A module of a given kind whose functions (and optional metadata and documentation) are
/// fixed when it is built.
pub struct FunctionTable {
    kind: String,
    functions: HashMap<String, Function>,
    metadata: HashMap<String, String>,
    docs: HashMap<String, String>,
}

impl FunctionTable {
    /// A table of `kind` holding `functions`.
    pub fn new(kind: &str, functions: impl IntoIterator<Item = (String, Function)>) -> Self {
        FunctionTable {
            kind: kind.to_owned(),
            functions: functions.into_iter().collect(),
            metadata: HashMap::new(),
            docs: HashMap::new(),
        }
    }

    /// Adds metadata (JSON text) for the function `name`.
    pub fn with_metadata(mut self, name: &str, metadata: &str) -> Self {
        self.metadata.insert(name.to_owned(), metadata.to_owned());
        self
    }

    /// Adds documentation for the function `name`.
    pub fn with_doc(mut self, name: &str, doc: &str) -> Self {
        self.docs.insert(name.to_owned(), doc.to_owned());
        self
    }
}

impl ModuleImpl for FunctionTable {
    fn kind(&self) -> &str {
        &self.kind
    }

    fn get_function(&self, name: &str, _module: &Module) -> Result<Option<Function>, Error> {
        Ok(self.functions.get(name).cloned())
    }

    fn function_metadata(&self, name: &str) -> Result<Option<String>, Error> {
        Ok(self.metadata.get(name).cloned())
    }

    fn function_doc(&self, name: &str) -> Result<Option<String>, Error> {
        Ok(self.docs.get(name).cloned())
    }
}
