//! `safecall inspect LIB`: what a TVM-FFI library exports, from any producer.
//!
//! The symbols and the import tree are read from the file ([`crate::library`]), so a library
//! whose imported modules have no loader in this process (or that cannot be loaded at all)
//! still shows them. Before anything loads it, the file's consistency is checked
//! ([`crate::elf_check`]): a damaged file is shown from the file and reported (exit 4), never
//! loaded. Signatures and docs come from calling the library's `__tvm_ffi__metadata_<name>` /
//! `__tvm_ffi__doc_<name>` getters, which needs the library loaded (`dlopen`, without building
//! a module, so no import loader runs): that runs the library's code, so it happens in a child
//! process under a time limit ([`crate::sandbox`], [`crate::probe`]), whose crash or hang is
//! reported (exit 4) after what the file says. `--no-load` runs none of its code.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use safecall_runtime::library_bin::{BinModule, LibraryBin};
use serde_json::json;

use crate::elf_check::{self, Verdict};
use crate::failure::Failure;
use crate::library::{self, DOC_PREFIX, LibraryFile, METADATA_PREFIX};
use crate::probe;
use crate::sandbox::{self, Mode, Outcome};
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
The file is checked before anything loads it (section and segment bounds, the dynamic
section, symbol, hash and version tables, relocations, initializers): a damaged file is shown
from the file and reported, never loaded. Loading the library (to call its metadata and doc
getters) runs its code: that happens in a child process, under --load-timeout; a crash or a
hang there is reported after what the file says. --no-load runs none of its code.

Exit codes: 0 inspected, 2 usage, 4 the file cannot be read, is not an object file, is
damaged, or crashed or hung when loaded.")]
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

    /// Seconds the child process that loads the library may take
    #[arg(long, value_name = "SECONDS", default_value_t = sandbox::DEFAULT_TIMEOUT.as_secs_f64(),
          value_parser = parse_timeout)]
    pub load_timeout: f64,
}

/// A time limit: a positive number of seconds.
fn parse_timeout(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!(
            "`{text}` is not a number of seconds between 0 and 86400"
        )),
    }
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
    let mut failure = None;
    let mut answer = None;
    let note = match elf_check::check_bytes(&bytes) {
        Err(damage) => {
            failure = Some(sandbox::damaged(path, &damage));
            Some("not loaded: the file is damaged (see the error)".to_owned())
        }
        Ok(_) if file.relocatable => Some("an object file: no signatures or docs".to_owned()),
        Ok(Verdict::NotLoadable(why)) => Some(format!("not loaded ({why}): no signatures or docs")),
        Ok(Verdict::Loadable) if args.no_load => {
            Some("not loaded (--no-load): no signatures or docs".to_owned())
        }
        Ok(Verdict::Loadable) => {
            let limit = Duration::from_secs_f64(args.load_timeout);
            let outcome = sandbox::run_child(Mode::Inspect, &[path], limit)?;
            failure = sandbox::not_finished(&outcome, path);
            match (sandbox::note(&outcome), outcome) {
                (Some(why), _) => Some(format!("not loaded ({why}): no signatures or docs")),
                (None, Outcome::Answered(mut values)) if !values.is_empty() => {
                    let value = values.swap_remove(0);
                    match value["error"].as_str() {
                        Some(e) => Some(format!("not loaded ({e}): no signatures or docs")),
                        None => {
                            answer = Some(value);
                            None
                        }
                    }
                }
                (None, _) => {
                    failure = Some(Failure::failed(format!(
                        "loading {} ended without an answer: the library is damaged or not a \
                         TVM-FFI library",
                        path.display()
                    )));
                    Some("not loaded (loading ended without an answer)".to_owned())
                }
            }
        }
    };
    let mut functions = exported_functions(&file, answer.as_ref());
    match (&file.system_lib, answer.as_ref().map(|a| &a["system"])) {
        (Some(_), Some(serde_json::Value::Array(registered))) => {
            functions.extend(registered.iter().map(|f| FunctionInfo {
                name: f["name"].as_str().unwrap_or_default().to_owned(),
                alias_of: None,
                metadata: probe::decode(&f["metadata"]).map(|r| r.map(|t| schema::parse(&t))),
                doc: probe::decode(&f["doc"]),
            }));
        }
        (Some(registered), _) => {
            functions.extend(registered.iter().map(|f| FunctionInfo {
                name: f.full_name(),
                alias_of: None,
                metadata: None,
                doc: None,
            }));
        }
        (None, _) => {}
    }
    if args.json {
        println!("{}", to_json(path, &file, &functions, note.as_deref()));
    } else {
        print!("{}", to_text(path, &file, &functions, note.as_deref()));
    }
    failure.map_or(Ok(()), Err)
}

/// The functions in the order shown (`main` last), each with the function it is an alias of
/// (same address; none in object files).
pub fn function_order(file: &LibraryFile) -> Vec<(&String, Option<String>)> {
    let mut seen_addresses: Vec<(u64, &String)> = Vec::new();
    let mut names: Vec<&String> = file.functions.keys().filter(|n| *n != "main").collect();
    names.extend(file.functions.keys().filter(|n| *n == "main"));
    names
        .into_iter()
        .map(|name| {
            let address = file.functions[name];
            let alias_of = seen_addresses
                .iter()
                .find(|(a, _)| *a == address && !file.relocatable)
                .map(|(_, n)| (*n).clone());
            seen_addresses.push((address, name));
            (name, alias_of)
        })
        .collect()
}

/// The exported functions, with their metadata and docs from the child's answer.
fn exported_functions(file: &LibraryFile, answer: Option<&serde_json::Value>) -> Vec<FunctionInfo> {
    function_order(file)
        .into_iter()
        .map(|(name, alias_of)| {
            let getter = |prefix: &str| {
                answer.and_then(|a| probe::decode(&a["getters"][format!("{prefix}{name}")]))
            };
            let (metadata, doc) = match answer {
                Some(_) if alias_of.is_none() => (
                    file.metadata
                        .contains(name)
                        .then(|| getter(METADATA_PREFIX))
                        .flatten()
                        .map(|r| r.map(|t| schema::parse(&t))),
                    file.docs
                        .contains(name)
                        .then(|| getter(DOC_PREFIX))
                        .flatten(),
                ),
                _ => (None, None),
            };
            FunctionInfo {
                name: name.clone(),
                alias_of,
                metadata,
                doc,
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
