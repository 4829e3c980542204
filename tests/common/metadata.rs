//! Checking `__tvm_ffi__metadata_<name>` and `__tvm_ffi__doc_<name>` of a loaded library.

use serde_json::Value;

use super::aot::Library;
use super::cases::MetadataCase;

/// Checks one function's metadata and doc against the case.
pub fn check(lib: &Library, case: &MetadataCase) -> Result<(), String> {
    let text = lib.string_of(&format!("__tvm_ffi__metadata_{}", case.func))?;
    let outer: Value =
        serde_json::from_str(&text).map_err(|e| format!("metadata is not JSON ({e}): {text}"))?;
    let schema_text = outer["type_schema"]
        .as_str()
        .ok_or_else(|| format!("metadata has no type_schema string: {text}"))?;
    let schema: Value = serde_json::from_str(schema_text)
        .map_err(|e| format!("type_schema is not JSON ({e}): {schema_text}"))?;
    if schema != case.type_schema {
        return Err(format!(
            "type_schema is {schema}\n      expected {}",
            case.type_schema
        ));
    }
    let names: Vec<&str> = outer["arg_names"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if names != case.arg_names {
        return Err(format!(
            "arg_names are {names:?}, expected {:?}",
            case.arg_names
        ));
    }
    let doc = lib.string_of(&format!("__tvm_ffi__doc_{}", case.func))?;
    if doc != case.doc {
        return Err(format!("doc is {doc:?}, expected {:?}", case.doc));
    }
    Ok(())
}
