//! `safecall inspect LIB`: what a TVM-FFI library exports, from any producer.
//!
//! The symbols and the import tree are read from the file ([`crate::library`]), so a library
//! whose imported modules have no loader in this process (or that cannot be loaded at all)
//! still shows them. Signatures and docs come from calling the library's
//! `__tvm_ffi__metadata_<name>` / `__tvm_ffi__doc_<name>` getters, which needs the library
//! loaded (`dlopen`, without building a module, so no import loader runs); `--no-load` skips
//! that and runs none of its code.

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType};
use safecall_runtime::library_bin::{BinModule, LibraryBin};
use safecall_runtime::{Any, String as FfiString};
use serde_json::json;

use crate::failure::Failure;
use crate::library::{self, DOC_PREFIX, LibraryFile, METADATA_PREFIX, PREFIX};
use crate::schema::{self, Metadata};

/// List the functions of a TVM-FFI library: signatures, docs, imports
///
/// Works on libraries of any producer (safecall, C or C++ against the TVM-FFI headers): the
/// `__tvm_ffi_<name>` functions of the dynamic symbol table, their signatures from
/// `__tvm_ffi__metadata_<name>` (the `type_schema`, with argument names when present), their
/// doc strings from `__tvm_ffi__doc_<name>`, the import tree decoded from
/// `__tvm_ffi__library_bin` (read from the file: imported modules are not loaded), what the
/// library needs at load time, and the functions of system libraries. Object files (`.o`)
/// are read the same way, without metadata.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Loading the library (to call its metadata and doc getters) runs its initializers; use
--no-load for a library you do not trust.

Exit codes: 0 inspected, 2 usage, 4 the file cannot be read or is not an object file.")]
pub struct InspectArgs {
    /// The shared library (`.so`) or object file (`.o`)
    #[arg(value_name = "LIB")]
    pub library: PathBuf,

    /// Only read the file: run none of its code (no signatures or docs)
    #[arg(long)]
    pub no_load: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// One function as shown.
struct FunctionInfo {
    /// Its name (for system libraries: with the prefix).
    name: String,
    /// The function it is an alias of (same address).
    alias_of: Option<String>,
    metadata: Option<Result<Metadata, String>>,
    doc: Option<Result<String, String>>,
}

/// Runs `safecall inspect`.
pub fn inspect(args: &InspectArgs) -> Result<(), Failure> {
    let path = &args.library;
    let bytes =
        std::fs::read(path).map_err(|e| crate::source::io_failure("cannot read", path, &e))?;
    let file = library::read(&bytes)
        .map_err(|e| Failure::failed(format!("`{}` is not a library: {e}", path.display())))?;
    let load = !args.no_load && !file.relocatable;
    let loaded = if load { Some(open(path)) } else { None };
    let getters = match &loaded {
        Some(Ok(lib)) => Some(Getters::Dynamic(lib)),
        _ => None,
    };
    let mut functions = exported_functions(&file, getters.as_ref());
    if let (Some(registered), Some(Ok(_))) = (&file.system_lib, &loaded) {
        functions.extend(system_functions(registered));
    } else if let Some(registered) = &file.system_lib {
        functions.extend(registered.iter().map(|f| FunctionInfo {
            name: f.full_name(),
            alias_of: None,
            metadata: None,
            doc: None,
        }));
    }
    let load_note = match &loaded {
        Some(Err(e)) => Some(format!("not loaded ({e}): no signatures or docs")),
        None if file.relocatable => Some("an object file: no signatures or docs".to_owned()),
        None => Some("not loaded (--no-load): no signatures or docs".to_owned()),
        Some(Ok(_)) => None,
    };
    if args.json {
        println!("{}", to_json(path, &file, &functions, load_note.as_deref()));
    } else {
        print!("{}", to_text(path, &file, &functions, load_note.as_deref()));
    }
    Ok(())
}

/// A library opened with `dlopen`, never closed: strings its getters return may have their
/// deleters in it.
struct Opened(std::mem::ManuallyDrop<libloading::os::unix::Library>);

fn open(path: &Path) -> Result<Opened, String> {
    let path = if path.components().count() == 1 && path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    };
    // SAFETY: loading runs the library's initializers; the user asked to inspect it (and can
    // opt out with --no-load).
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some(&path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(Opened(std::mem::ManuallyDrop::new(lib)))
}

/// Where getters are found.
enum Getters<'a> {
    /// `dlsym` in an opened library.
    Dynamic(&'a Opened),
}

impl Getters<'_> {
    fn symbol(&self, name: &str) -> *mut c_void {
        match self {
            // SAFETY: the symbol is only used as an address.
            Getters::Dynamic(lib) => match unsafe { lib.0.get::<*mut c_void>(name.as_bytes()) } {
                Ok(sym) => sym.into_raw(),
                Err(_) => std::ptr::null_mut(),
            },
        }
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

fn exported_functions(file: &LibraryFile, getters: Option<&Getters<'_>>) -> Vec<FunctionInfo> {
    let mut seen_addresses: Vec<(u64, String)> = Vec::new();
    // Aliases (same address) point at the first name in this order: `main` last.
    let mut names: Vec<&String> = file.functions.keys().filter(|n| *n != "main").collect();
    names.extend(file.functions.keys().filter(|n| *n == "main"));
    let mut out = Vec::new();
    for name in names {
        let address = file.functions[name];
        let alias_of = seen_addresses
            .iter()
            .find(|(a, _)| *a == address && !file.relocatable)
            .map(|(_, n)| n.clone());
        seen_addresses.push((address, name.clone()));
        let (metadata, doc) = match getters {
            Some(g) if alias_of.is_none() => (
                file.metadata.contains(name).then(|| {
                    call_getter(g.symbol(&format!("{METADATA_PREFIX}{name}")))
                        .map(|t| schema::parse(&t))
                }),
                file.docs
                    .contains(name)
                    .then(|| call_getter(g.symbol(&format!("{DOC_PREFIX}{name}")))),
            ),
            _ => (None, None),
        };
        out.push(FunctionInfo {
            name: name.clone(),
            alias_of,
            metadata,
            doc,
        });
    }
    out
}

/// The functions a loaded system library registered, with their metadata and docs (also
/// registered, as `<prefix>__tvm_ffi__metadata_<name>`).
fn system_functions(registered: &[library::SystemLibFunction]) -> Vec<FunctionInfo> {
    let lookup = |name: &str| {
        safecall_runtime::env::system_lib_symbol(name.as_bytes()).unwrap_or(std::ptr::null_mut())
    };
    registered
        .iter()
        .filter(|f| !lookup(&format!("{PREFIX}{}", f.full_name())).is_null())
        .map(|f| {
            let prefix = f.prefix.as_deref().unwrap_or_default();
            let meta = lookup(&format!("{prefix}{METADATA_PREFIX}{}", f.name));
            let doc = lookup(&format!("{prefix}{DOC_PREFIX}{}", f.name));
            FunctionInfo {
                name: f.full_name(),
                alias_of: None,
                metadata: (!meta.is_null()).then(|| call_getter(meta).map(|t| schema::parse(&t))),
                doc: (!doc.is_null()).then(|| call_getter(doc)),
            }
        })
        .collect()
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}").trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn to_text(
    path: &Path,
    file: &LibraryFile,
    functions: &[FunctionInfo],
    note: Option<&str>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}, {}", path.display(), file.kind, file.arch);
    if let Some(note) = note {
        let _ = writeln!(out, "  {note}");
    }
    let system = if file.system_lib.is_some() {
        " (system library: registered at load time)"
    } else {
        ""
    };
    let _ = writeln!(out, "\nfunctions ({}){system}:", functions.len());
    if functions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for f in functions {
        if let Some(target) = &f.alias_of {
            let _ = writeln!(out, "  {}: an alias of {target}", f.name);
            continue;
        }
        match &f.metadata {
            Some(Ok(meta)) => match schema::signature(&f.name, meta) {
                Some(sig) => {
                    let _ = writeln!(out, "  {sig}");
                }
                None => {
                    let _ = writeln!(out, "  {}", f.name);
                }
            },
            _ => {
                let _ = writeln!(out, "  {}", f.name);
            }
        }
        match &f.metadata {
            Some(Ok(meta)) => {
                if let Some(sig) = &meta.ir_signature {
                    let _ = writeln!(out, "    ir: {sig}");
                }
                if let Some(problem) = &meta.problem {
                    let _ = writeln!(out, "    metadata: {problem}");
                }
            }
            Some(Err(e)) => {
                let _ = writeln!(out, "    metadata: unavailable: {e}");
            }
            None if note.is_none() => {
                let _ = writeln!(out, "    metadata: none");
            }
            None => {}
        }
        match &f.doc {
            Some(Ok(doc)) => {
                let mut lines = doc.lines();
                let first = lines.next().unwrap_or_default();
                let _ = writeln!(out, "    doc: {first}");
                let rest: Vec<&str> = lines.collect();
                if !rest.is_empty() {
                    let _ = writeln!(out, "{}", indent(&rest.join("\n"), "         "));
                }
            }
            Some(Err(e)) => {
                let _ = writeln!(out, "    doc: unavailable: {e}");
            }
            None => {}
        }
    }

    let _ = write!(out, "\nimports");
    match &file.library_bin {
        None if file.system_lib.is_some() && file.stripped => {
            let _ = writeln!(
                out,
                ": unknown (a system library keeps {} local, and this one is stripped)",
                library::LIBRARY_BIN
            );
        }
        None => {
            let _ = writeln!(out, ": none (no {})", library::LIBRARY_BIN);
        }
        Some(Err(e)) => {
            let _ = writeln!(out, ": {e}");
        }
        Some(Ok((bin, size))) => {
            let _ = writeln!(out, " ({}, {size} bytes):", library::LIBRARY_BIN);
            out.push_str(&import_tree(bin));
        }
    }

    let _ = writeln!(out, "\nload time:");
    if file.needed.is_empty() {
        let _ = writeln!(out, "  needs no libraries");
    } else {
        let _ = writeln!(out, "  needs libraries: {}", file.needed.join(", "));
    }
    if file.capi.is_empty() {
        let _ = writeln!(out, "  uses no TVM-FFI C API functions");
    } else {
        let linked = file
            .needed
            .iter()
            .any(|n| n.contains("safecall_runtime") || n.contains("tvm_ffi"));
        let _ = writeln!(
            out,
            "  TVM-FFI C API ({}), {}: {}",
            plural(file.capi.len(), "function"),
            if linked {
                "from the linked runtime"
            } else {
                "from whichever runtime the process has"
            },
            file.capi.join(", ")
        );
    }
    if !file.externs.is_empty() {
        let _ = writeln!(out, "  other symbols: {}", file.externs.join(", "));
    }
    if file.has_library_ctx {
        let _ = writeln!(
            out,
            "  {}: the loader stores the module handle there (for import calls)",
            library::LIBRARY_CTX
        );
    }
    out
}

/// The import tree, depth first from module 0; a module reached again is not expanded twice.
fn import_tree(bin: &LibraryBin) -> String {
    fn describe(bin: &LibraryBin, i: usize) -> String {
        match &bin.modules[i] {
            BinModule::Lib => format!("[{i}] _lib: this library"),
            BinModule::Serialized { kind, payload } => format!(
                "[{i}] {kind}: {}, loaded by ffi.Module.load_from_bytes.{kind}",
                plural(payload.len(), "byte")
            ),
        }
    }
    fn walk(
        bin: &LibraryBin,
        i: usize,
        prefix: &str,
        out: &mut String,
        shown: &mut BTreeSet<usize>,
    ) {
        let children = &bin.imports[i];
        for (k, &child) in children.iter().enumerate() {
            let last = k + 1 == children.len();
            let branch = if last { "└─ " } else { "├─ " };
            let again = !shown.insert(child);
            let _ = writeln!(
                out,
                "{prefix}{branch}{}{}",
                describe(bin, child),
                if again { " (shown above)" } else { "" }
            );
            if !again {
                let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
                walk(bin, child, &deeper, out, shown);
            }
        }
    }
    let mut out = String::new();
    let mut shown = BTreeSet::from([0]);
    let _ = writeln!(out, "  {}", describe(bin, 0));
    walk(bin, 0, "  ", &mut out, &mut shown);
    for i in 1..bin.modules.len() {
        if !shown.contains(&i) {
            let _ = writeln!(out, "  {} (imported by no module)", describe(bin, i));
        }
    }
    out
}

fn to_json(
    path: &Path,
    file: &LibraryFile,
    functions: &[FunctionInfo],
    note: Option<&str>,
) -> String {
    let functions: Vec<serde_json::Value> = functions
        .iter()
        .map(|f| {
            let (metadata, signature, metadata_error) = match &f.metadata {
                Some(Ok(m)) => (
                    m.json.clone(),
                    schema::signature(&f.name, m),
                    m.problem.clone(),
                ),
                Some(Err(e)) => (serde_json::Value::Null, None, Some(e.clone())),
                None => (serde_json::Value::Null, None, None),
            };
            let (doc, doc_error) = match &f.doc {
                Some(Ok(d)) => (Some(d.clone()), None),
                Some(Err(e)) => (None, Some(e.clone())),
                None => (None, None),
            };
            json!({
                "name": f.name,
                "alias_of": f.alias_of,
                "signature": signature,
                "metadata": metadata,
                "metadata_error": metadata_error,
                "doc": doc,
                "doc_error": doc_error,
            })
        })
        .collect();
    let imports = match &file.library_bin {
        None => serde_json::Value::Null,
        Some(Err(e)) => json!({ "error": e.to_string() }),
        Some(Ok((bin, size))) => json!({
            "bytes": size,
            "modules": bin.modules.iter().enumerate().map(|(i, m)| json!({
                "index": i,
                "kind": m.kind(),
                "payload_bytes": match m { BinModule::Lib => None, BinModule::Serialized { payload, .. } => Some(payload.len()) },
                "imports": bin.imports[i],
            })).collect::<Vec<_>>(),
        }),
    };
    let value = json!({
        "file": path.display().to_string(),
        "kind": file.kind,
        "arch": file.arch,
        "loaded": note.is_none(),
        "note": note,
        "system_library": file.system_lib.is_some(),
        "functions": functions,
        "imports": imports,
        "needed": file.needed,
        "capi": file.capi,
        "other_undefined": file.externs,
        "library_ctx": file.has_library_ctx,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default()
}
