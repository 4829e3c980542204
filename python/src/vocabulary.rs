//! The IR's words as the Rust side owns them, for the Python package to use rather than spell
//! again (docs/STYLE: lexical rules exist once, in src/ir/syntax.rs and the model's types):
//! `_native.RESERVED` (words a name must be quoted to use), `_native.SCALAR_TYPES`,
//! `_native.CLUSTER_POLICIES`, `_native.BINARY_FORMATS`, each a tuple in the order the Rust
//! side lists them, and `_native.LAUNCH_SETTINGS`: one `(keyword, shape, required, words)`
//! per launch setting in `LaunchSettingKind::ALL` order (the printer's), `shape` one of
//! `"dims"`, `"expr"`, `"keyword"`, `words` the keywords a `"keyword"` setting takes.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use safecall::ir::model::{
    BinaryFormat, ClusterPolicy, LaunchSettingKind, ScalarType, SettingShape,
};
use safecall::ir::syntax;

/// Adds the vocabulary to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RESERVED", PyTuple::new(py, syntax::RESERVED)?)?;
    let scalars: Vec<&str> = ScalarType::all().map(syntax::scalar_type).collect();
    m.add("SCALAR_TYPES", PyTuple::new(py, scalars)?)?;
    m.add(
        "CLUSTER_POLICIES",
        PyTuple::new(py, ClusterPolicy::KEYWORDS)?,
    )?;
    m.add("BINARY_FORMATS", PyTuple::new(py, BinaryFormat::KEYWORDS)?)?;
    let mut settings = Vec::new();
    for kind in LaunchSettingKind::ALL {
        let (shape, words): (&str, &[&str]) = match kind.shape() {
            SettingShape::Dims => ("dims", &[]),
            SettingShape::Expr => ("expr", &[]),
            SettingShape::Keyword(words) => ("keyword", words),
        };
        let entry = (
            kind.keyword(),
            shape,
            kind.required(),
            PyTuple::new(py, words)?,
        );
        settings.push(entry.into_pyobject(py)?);
    }
    m.add("LAUNCH_SETTINGS", PyTuple::new(py, settings)?)?;
    Ok(())
}
