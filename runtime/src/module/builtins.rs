//! The global functions for modules that the Python package of the real runtime calls
//! (`ffi.ModuleLoadFromFile`, `ffi.SystemLib`, `ffi.ModuleGetFunction`, ...), registered in the
//! global registry before its first use, plus two of our own for listing imports
//! (`safecall.ModuleNumImports`, `safecall.ModuleGetImport`): the real runtime lists them
//! through the reflected field `imports_`, an `ffi.Array`, which this runtime does not have.

use std::sync::{Mutex, Once};

use crate::abi::symbols::error_kind::{INDEX_ERROR, RUNTIME_ERROR, TYPE_ERROR};
use crate::rust_api::{Any, AnyView, Error, Function, Module};

/// Registers the module functions (once, before anything else touches the registry).
pub(crate) fn ensure() {
    static ONCE: Once = Once::new();
    ONCE.call_once(register_all);
}

/// Modules kept alive for the rest of the process (`ffi.ModuleGlobalsAdd`).
fn globals() -> &'static Mutex<Vec<Module>> {
    static GLOBALS: Mutex<Vec<Module>> = Mutex::new(Vec::new());
    &GLOBALS
}

/// `ffi.ModuleGlobalsAdd`.
pub(crate) fn pin(module: &Module) {
    let mut table = globals().lock().unwrap_or_else(|p| p.into_inner());
    if !table.contains(module) {
        table.push(module.clone());
    }
}

/// `ffi.ModuleGlobalsRemove`.
fn unpin(module: &Module) {
    let removed = {
        let mut table = globals().lock().unwrap_or_else(|p| p.into_inner());
        let position = table.iter().position(|m| m == module);
        position.map(|i| table.swap_remove(i))
    };
    drop(removed); // outside the lock: unloading a library may run arbitrary code
}

fn arity<'v, 'a>(
    name: &str,
    args: &'v [AnyView<'a>],
    min: usize,
    max: usize,
) -> Result<&'v [AnyView<'a>], Error> {
    if (min..=max).contains(&args.len()) {
        Ok(args)
    } else {
        let expected = if min == max {
            min.to_string()
        } else {
            format!("{min} to {max}")
        };
        Err(Error::new(
            TYPE_ERROR,
            &format!(
                "{name} expects {expected} arguments, but {} were given",
                args.len()
            ),
        ))
    }
}

/// The optional `query_imports` flag (false when absent).
fn flag(args: &[AnyView<'_>], index: usize) -> Result<bool, Error> {
    args.get(index).map_or(Ok(false), |a| a.cast::<bool>())
}

fn text_or_none(text: Option<String>) -> Any {
    text.map_or_else(Any::none, Any::from)
}

type Builtin = fn(&[AnyView<'_>]) -> Result<Any, Error>;

const BUILTINS: &[(&str, Builtin)] = &[
    // Not a module function, but the constructor generated code calls to return several
    // values (`-> (tensor, tensor)`), as libtvm_ffi registers it.
    ("ffi.Array", |args| {
        let items = args
            .iter()
            .map(|a| Any::from_view(*a))
            .collect::<Result<Vec<Any>, Error>>()?;
        Ok(crate::rust_api::Array::new(items).into())
    }),
    ("ffi.ModuleLoadFromFile", |args| {
        let args = arity("ffi.ModuleLoadFromFile", args, 1, 1)?;
        let path: std::string::String = args[0].cast()?;
        super::library::load_from_file(&path).map(Any::from)
    }),
    ("ffi.Module.load_from_file.so", |args| {
        let args = arity("ffi.Module.load_from_file.so", args, 1, 2)?;
        let path: std::string::String = args[0].cast()?;
        super::load_library(path.as_ref()).map(Any::from)
    }),
    ("ffi.SystemLib", |args| {
        let args = arity("ffi.SystemLib", args, 0, 1)?;
        let prefix: std::string::String = match args.first() {
            Some(p) => p.cast()?,
            None => std::string::String::new(),
        };
        super::system_lib(&prefix).map(Any::from)
    }),
    ("ffi.ModuleGetFunction", |args| {
        let args = arity("ffi.ModuleGetFunction", args, 2, 3)?;
        let (m, name): (Module, std::string::String) = (args[0].cast()?, args[1].cast()?);
        Ok(m.get_function_with_imports(&name, flag(args, 2)?)?
            .map_or_else(Any::none, Any::from))
    }),
    ("ffi.ModuleImplementsFunction", |args| {
        let args = arity("ffi.ModuleImplementsFunction", args, 2, 3)?;
        let (m, name): (Module, std::string::String) = (args[0].cast()?, args[1].cast()?);
        Ok(m.implements_function(&name, flag(args, 2)?)?.into())
    }),
    ("ffi.ModuleGetFunctionMetadata", |args| {
        let args = arity("ffi.ModuleGetFunctionMetadata", args, 2, 3)?;
        let (m, name): (Module, std::string::String) = (args[0].cast()?, args[1].cast()?);
        Ok(text_or_none(m.function_metadata(&name, flag(args, 2)?)?))
    }),
    ("ffi.ModuleGetFunctionDoc", |args| {
        let args = arity("ffi.ModuleGetFunctionDoc", args, 2, 3)?;
        let (m, name): (Module, std::string::String) = (args[0].cast()?, args[1].cast()?);
        Ok(text_or_none(m.function_doc(&name, flag(args, 2)?)?))
    }),
    ("ffi.ModuleGetPropertyMask", |args| {
        let m: Module = arity("ffi.ModuleGetPropertyMask", args, 1, 1)?[0].cast()?;
        Ok(m.property_mask().into())
    }),
    ("ffi.ModuleGetKind", |args| {
        let m: Module = arity("ffi.ModuleGetKind", args, 1, 1)?[0].cast()?;
        Ok(Any::from(m.kind()))
    }),
    ("ffi.ModuleInspectSource", |args| {
        let _: Module = arity("ffi.ModuleInspectSource", args, 1, 2)?[0].cast()?;
        Ok(Any::from(""))
    }),
    ("ffi.ModuleWriteToFile", |args| {
        let m: Module = arity("ffi.ModuleWriteToFile", args, 1, 3)?[0].cast()?;
        Err(Error::new(
            RUNTIME_ERROR,
            &format!("Module[{}] does not support WriteToFile", m.kind()),
        ))
    }),
    ("ffi.ModuleImportModule", |args| {
        let args = arity("ffi.ModuleImportModule", args, 2, 2)?;
        let (m, other): (Module, Module) = (args[0].cast()?, args[1].cast()?);
        m.import_module(&other).map(|()| Any::none())
    }),
    ("ffi.ModuleClearImports", |args| {
        let m: Module = arity("ffi.ModuleClearImports", args, 1, 1)?[0].cast()?;
        m.clear_imports();
        Ok(Any::none())
    }),
    ("ffi.ModuleGlobalsAdd", |args| {
        let m: Module = arity("ffi.ModuleGlobalsAdd", args, 1, 1)?[0].cast()?;
        pin(&m);
        Ok(Any::none())
    }),
    ("ffi.ModuleGlobalsRemove", |args| {
        let m: Module = arity("ffi.ModuleGlobalsRemove", args, 1, 1)?[0].cast()?;
        unpin(&m);
        Ok(Any::none())
    }),
    ("safecall.ModuleNumImports", |args| {
        let m: Module = arity("safecall.ModuleNumImports", args, 1, 1)?[0].cast()?;
        Ok(Any::from(m.imports().len() as i64))
    }),
    ("safecall.ModuleGetImport", |args| {
        let args = arity("safecall.ModuleGetImport", args, 2, 2)?;
        let (m, index): (Module, i64) = (args[0].cast()?, args[1].cast()?);
        let imports = m.imports();
        usize::try_from(index)
            .ok()
            .and_then(|i| imports.get(i).cloned())
            .map(Any::from)
            .ok_or_else(|| {
                Error::new(
                    INDEX_ERROR,
                    &format!(
                        "import index {index} is out of range: the module has {} imports",
                        imports.len()
                    ),
                )
            })
    }),
];

fn register_all() {
    for &(name, f) in BUILTINS {
        let function = Function::from_closure(f);
        // A name someone registered before us stays theirs.
        let _ = crate::function::set_global(name.as_bytes(), Any::from(function), false);
    }
}
