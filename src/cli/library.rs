//! What a library file says about itself, read from the file without running any of its code:
//! the `__tvm_ffi_` symbols, the import tree in `__tvm_ffi__library_bin`, what it needs at
//! load time, and, for system libraries, the names their constructor registers.

use std::collections::{BTreeMap, BTreeSet};

use cranelift_object::object::{
    self, Object, ObjectKind, ObjectSection, ObjectSymbol, SectionKind, elf,
};
use safecall_runtime::library_bin::{self, LibraryBin, LibraryBinError};

pub use safecall_runtime::abi::symbols::c_api::ENV_MOD_REGISTER_SYSTEM_LIB_SYMBOL as REGISTER_SYSTEM_LIB;
pub use safecall_runtime::abi::symbols::{
    DOC_PREFIX, EXPORT_PREFIX as PREFIX, LIBRARY_BIN_SYMBOL as LIBRARY_BIN,
    LIBRARY_CTX_SYMBOL as LIBRARY_CTX, METADATA_PREFIX,
};

/// A library (or object) file, as read.
#[derive(Debug, Default)]
pub struct LibraryFile {
    /// `shared library`, `object file`, ...
    pub kind: String,
    /// The architecture, as `object` names it.
    pub arch: String,
    /// Whether it is a relocatable object (nothing can be loaded).
    pub relocatable: bool,
    /// Host functions: name (without the prefix) -> symbol address.
    pub functions: BTreeMap<String, u64>,
    /// Names with a metadata getter.
    pub metadata: BTreeSet<String>,
    /// Names with a doc getter.
    pub docs: BTreeSet<String>,
    /// Whether `__tvm_ffi__library_ctx` is defined.
    pub has_library_ctx: bool,
    /// The decoded import tree with its size in bytes, or why it cannot be decoded.
    pub library_bin: Option<Result<(LibraryBin, u64), LibraryBinError>>,
    /// Undefined symbols of the TVM-FFI C API.
    pub capi: Vec<String>,
    /// Other undefined symbols that are not versioned (system libraries' are): externs the
    /// code calls, resolved at load time.
    pub externs: Vec<String>,
    /// Whether the file has no full symbol table (then a system library's local blob cannot
    /// be found).
    pub stripped: bool,
    /// `DT_NEEDED` libraries.
    pub needed: Vec<String>,
    /// System-library registrations found in the read-only data: `(prefix, name)`, when the
    /// file calls `TVMFFIEnvModRegisterSystemLibSymbol`.
    pub system_lib: Option<Vec<SystemLibFunction>>,
}

/// A function a system library registers at load time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SystemLibFunction {
    /// The registration prefix, when the getters' names reveal it.
    pub prefix: Option<String>,
    /// The function name (with the prefix, when it is not known).
    pub name: String,
}

impl SystemLibFunction {
    /// The name it is registered under, without `__tvm_ffi_`.
    pub fn full_name(&self) -> String {
        format!(
            "{}{}",
            self.prefix.as_deref().unwrap_or_default(),
            self.name
        )
    }
}

/// Reads `bytes` (an ELF shared library or object file).
pub fn read(bytes: &[u8]) -> Result<LibraryFile, String> {
    let file = object::File::parse(bytes).map_err(|e| format!("not an object file: {e}"))?;
    let mut lib = LibraryFile {
        kind: match file.kind() {
            ObjectKind::Dynamic => "shared library",
            ObjectKind::Relocatable => "object file",
            ObjectKind::Executable => "executable",
            _ => "file",
        }
        .to_owned(),
        arch: format!("{:?}", file.architecture()).to_lowercase(),
        relocatable: file.kind() == ObjectKind::Relocatable,
        ..LibraryFile::default()
    };
    let symbols: Vec<object::Symbol<'_, '_>> = if lib.relocatable {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    let mut undefined = BTreeSet::new();
    for sym in &symbols {
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        if sym.is_undefined() {
            // Weak references (`__gmon_start__`, ...) need nothing at load time.
            if !sym.is_weak() {
                undefined.insert(name.to_owned());
            }
            continue;
        }
        if !sym.is_global() {
            continue;
        }
        if let Some(rest) = name.strip_prefix(METADATA_PREFIX) {
            lib.metadata.insert(rest.to_owned());
        } else if let Some(rest) = name.strip_prefix(DOC_PREFIX) {
            lib.docs.insert(rest.to_owned());
        } else if name == LIBRARY_CTX {
            lib.has_library_ctx = true;
        } else if name == LIBRARY_BIN {
            lib.library_bin = Some(read_blob(&file, sym));
        } else if let Some(rest) = name.strip_prefix(PREFIX)
            && !rest.starts_with('_')
            && sym.kind() == object::SymbolKind::Text
        {
            lib.functions.insert(rest.to_owned(), sym.address());
        }
    }
    // A system library keeps these local (registered at load time instead): the full symbol
    // table has them unless the library is stripped.
    lib.stripped = file.symbols().next().is_none();
    if lib.library_bin.is_none() || !lib.has_library_ctx {
        for sym in file.symbols() {
            match sym.name() {
                Ok(LIBRARY_BIN) if lib.library_bin.is_none() && !sym.is_undefined() => {
                    lib.library_bin = Some(read_blob(&file, &sym));
                }
                Ok(LIBRARY_CTX) if !sym.is_undefined() => lib.has_library_ctx = true,
                _ => {}
            }
        }
    }
    let versioned = versioned_symbols(&file);
    for name in &undefined {
        if name.starts_with(safecall_runtime::abi::symbols::c_api::PREFIX) {
            lib.capi.push(name.clone());
        } else if !versioned.contains(name) && !name.starts_with("_GLOBAL_OFFSET_TABLE_") {
            lib.externs.push(name.clone());
        }
    }
    if let object::File::Elf64(elf_file) = &file
        && let Ok(table) = elf_file.elf_dynamic_table()
    {
        for d in table.iter() {
            if d.tag == elf::DT_NEEDED
                && let Ok(name) = table.string(d)
            {
                lib.needed.push(String::from_utf8_lossy(name).into_owned());
            }
        }
    }
    if undefined.contains(REGISTER_SYSTEM_LIB) {
        lib.system_lib = Some(system_lib_names(&file));
    }
    Ok(lib)
}

/// The dynamic symbols that carry a version (libc's, libstdc++'s do; a library's own
/// externs and the TVM-FFI C API do not).
fn versioned_symbols(file: &object::File<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let object::File::Elf64(elf_file) = file else {
        return out;
    };
    let endian = elf_file.endian();
    let Ok(Some(versions)) = elf_file
        .elf_section_table()
        .versions(endian, elf_file.data())
    else {
        return out;
    };
    let table = elf_file.elf_dynamic_symbol_table();
    for (index, sym) in table.enumerate() {
        if versions.version_index(endian, index).index() > elf::VER_NDX_GLOBAL
            && let Ok(name) = table.symbol_name(endian, sym)
        {
            out.insert(String::from_utf8_lossy(name).into_owned());
        }
    }
    out
}

/// The bytes at a symbol, to the end of its section, decoded as a library blob.
fn read_blob(
    file: &object::File<'_>,
    sym: &object::Symbol<'_, '_>,
) -> Result<(LibraryBin, u64), LibraryBinError> {
    let bytes = sym
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .and_then(|section| {
            let data = section.data().ok()?;
            let start = usize::try_from(sym.address().checked_sub(section.address())?).ok()?;
            data.get(start..)
        })
        .unwrap_or_default();
    library_bin::decode(bytes).map(|bin| {
        let nbytes = bytes
            .get(..8)
            .map_or(0, |h| u64::from_le_bytes(h.try_into().expect("8 bytes")));
        (bin, nbytes + 8)
    })
}

/// Names registered by a system library's constructor, recovered from the NUL-terminated
/// strings of its read-only data: `__tvm_ffi_<prefix><name>` for functions, and
/// `<prefix>__tvm_ffi__metadata_<name>` (when present) for where the prefix ends.
fn system_lib_names(file: &object::File<'_>) -> Vec<SystemLibFunction> {
    let mut strings = BTreeSet::new();
    for section in file.sections() {
        if !matches!(
            section.kind(),
            SectionKind::ReadOnlyData | SectionKind::ReadOnlyString | SectionKind::Data
        ) {
            continue;
        }
        let Ok(data) = section.data() else { continue };
        for piece in data.split(|&b| b == 0) {
            let text = String::from_utf8_lossy(piece);
            // Bytes without a terminator (payloads) may run into a name: every occurrence of
            // the prefix starts a candidate.
            for (at, _) in text.match_indices(PREFIX) {
                strings.insert(text[at..].to_owned());
            }
            if text.contains(METADATA_PREFIX) {
                strings.insert(text.into_owned());
            }
        }
    }
    // `<prefix>__tvm_ffi__metadata_<name>`: the text before is the prefix (possibly after
    // unrelated bytes), the text after the name.
    let splits: Vec<(String, String)> = strings
        .iter()
        .filter_map(|s| {
            let at = s.find(METADATA_PREFIX)?;
            Some((
                s[..at].to_owned(),
                s[at + METADATA_PREFIX.len()..].to_owned(),
            ))
        })
        .collect();
    let mut out: Vec<SystemLibFunction> = strings
        .iter()
        .filter_map(|s| {
            let full = s.strip_prefix(PREFIX)?;
            if full.starts_with('_')
                || full.is_empty()
                || full.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return None;
            }
            let split = splits.iter().find_map(|(p, n)| {
                let prefix = full.strip_suffix(n.as_str())?;
                (!n.is_empty() && p.ends_with(prefix)).then(|| (prefix.to_owned(), n.clone()))
            });
            Some(match split {
                Some((prefix, name)) => SystemLibFunction {
                    prefix: Some(prefix),
                    name,
                },
                None => SystemLibFunction {
                    prefix: None,
                    name: full.to_owned(),
                },
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}
