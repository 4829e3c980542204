//! What runs in the child process ([`crate::sandbox`]): loading a library and calling its
//! metadata and doc getters. Every function here runs a library's code.
//!
//! The answer of [`inspect`] is JSON: `{"error": null | "why it did not load", "getters":
//! {"<getter symbol>": {"ok": "<text>"} | {"err": "<why>"}}, "system": null | [{"name",
//! "metadata", "doc"}]}`, read back by `inspect`.

use std::ffi::c_void;
use std::path::Path;

use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType};
use safecall_runtime::{Any, String as FfiString};
use serde_json::{Map, Value, json};

use crate::library::{self, DOC_PREFIX, METADATA_PREFIX, PREFIX};

/// Opens a library with `dlopen` (`RTLD_NOW`, symbols global or local) and never closes it:
/// strings its getters return may have their deleters in it, and `--preload` keeps it.
fn dlopen(path: &Path, global: bool) -> Result<libloading::os::unix::Library, String> {
    // A bare file name would make dlopen search the library path instead of the file.
    let path = if path.components().count() == 1 && path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    };
    let scope = if global {
        libloading::os::unix::RTLD_GLOBAL
    } else {
        libloading::os::unix::RTLD_LOCAL
    };
    // SAFETY: loading runs the library's initializers: this runs in the child process made
    // for it, whose crash the parent reports.
    unsafe {
        libloading::os::unix::Library::open(Some(&path), libloading::os::unix::RTLD_NOW | scope)
    }
    .map_err(|e| e.to_string())
}

/// Loads a library for `--preload` (symbols global), for good.
pub fn open(path: &Path, global: bool) -> Result<(), String> {
    std::mem::forget(dlopen(path, global)?);
    Ok(())
}

/// Loads `path` and calls its getters: the answer described in the module docs.
pub fn inspect(path: &Path) -> Value {
    let file = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| library::read(&bytes))
    {
        Ok(file) => file,
        Err(e) => return json!({ "error": e }),
    };
    let lib = match dlopen(path, false) {
        Ok(lib) => std::mem::ManuallyDrop::new(lib),
        Err(e) => return json!({ "error": e }),
    };
    let symbol = |name: &str| -> *mut c_void {
        // SAFETY: the symbol is only used as an address.
        match unsafe { lib.get::<*mut c_void>(name.as_bytes()) } {
            Ok(sym) => sym.into_raw(),
            Err(_) => std::ptr::null_mut(),
        }
    };
    let mut getters = Map::new();
    for (name, alias_of) in crate::inspect::function_order(&file) {
        if alias_of.is_some() {
            continue;
        }
        for (set, prefix) in [(&file.metadata, METADATA_PREFIX), (&file.docs, DOC_PREFIX)] {
            if set.contains(name) {
                let getter = format!("{prefix}{name}");
                let result = call_getter(symbol(&getter));
                getters.insert(getter, encode(result));
            }
        }
    }
    let system = file.system_lib.as_ref().map(|registered| {
        let lookup = |name: &str| {
            safecall_runtime::env::system_lib_symbol(name.as_bytes())
                .unwrap_or(std::ptr::null_mut())
        };
        registered
            .iter()
            .filter(|f| !lookup(&format!("{PREFIX}{}", f.full_name())).is_null())
            .map(|f| {
                let prefix = f.prefix.as_deref().unwrap_or_default();
                let meta = lookup(&format!("{prefix}{METADATA_PREFIX}{}", f.name));
                let doc = lookup(&format!("{prefix}{DOC_PREFIX}{}", f.name));
                json!({
                    "name": f.full_name(),
                    "metadata": (!meta.is_null()).then(|| encode(call_getter(meta))),
                    "doc": (!doc.is_null()).then(|| encode(call_getter(doc))),
                })
            })
            .collect::<Vec<_>>()
    });
    json!({ "error": null, "getters": getters, "system": system })
}

/// A getter's result as JSON.
fn encode(result: Result<String, String>) -> Value {
    match result {
        Ok(text) => json!({ "ok": text }),
        Err(e) => json!({ "err": e }),
    }
}

/// A getter's result from JSON (`None` for null or anything else).
pub fn decode(value: &Value) -> Option<Result<String, String>> {
    if let Some(text) = value["ok"].as_str() {
        Some(Ok(text.to_owned()))
    } else {
        value["err"].as_str().map(|e| Err(e.to_owned()))
    }
}

/// Calls a string getter (a safe call with no arguments returning a string).
fn call_getter(address: *mut c_void) -> Result<String, String> {
    if address.is_null() {
        return Err("its getter is not found".to_owned());
    }
    // SAFETY: `__tvm_ffi__metadata_*` / `__tvm_ffi__doc_*` symbols follow the safe-call ABI.
    let getter = unsafe { std::mem::transmute::<*mut c_void, TVMFFISafeCallType>(address) };
    let mut result = TVMFFIAny::NONE;
    // SAFETY: no arguments; `result` is a writable None.
    let code = unsafe { getter(std::ptr::null_mut(), std::ptr::null(), 0, &mut result) };
    if code != 0 {
        let error = safecall_runtime::Error::take_raised_after_failure(code);
        return Err(format!(
            "its getter raised {}: {}",
            error.kind(),
            error.message()
        ));
    }
    // SAFETY: on success the callee wrote an owned value.
    let value = unsafe { Any::from_raw_owned_unchecked(result) };
    match value.cast::<FfiString>() {
        Ok(s) => Ok(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        Err(_) => Err(format!(
            "its getter returned a {}, not a string",
            safecall_runtime::registry::type_key_of(value.type_index())
        )),
    }
}
