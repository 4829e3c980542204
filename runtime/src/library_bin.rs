//! `__tvm_ffi__library_bin`: the import tree and serialized payloads a library embeds, in the
//! one place that both writes it (the compiler) and reads it (the module loader).
//!
//! Layout, all integers little-endian `u64`:
//!
//! ```text
//! <nbytes> then nbytes bytes of:
//!   <indptr: vec<u64>> <child_indices: vec<u64>>      a CSR import tree over N = len(indptr) - 1 modules
//!   N times: <kind: str> [<payload: bytes>]           no payload when kind is `_lib`
//! vec<T> = <len: u64> <len items>;  str = bytes = <len: u64> <len bytes>
//! ```
//!
//! Module `i` imports `child_indices[indptr[i]..indptr[i + 1]]`. The kind `_lib` stands for the
//! library itself; any other kind is rebuilt by the global function
//! `ffi.Module.load_from_bytes.<kind>` from its payload. Module 0 is the root the loader returns.
//!
//! [`decode`] treats its input as hostile: every length is checked against the bytes that are
//! actually there before anything is allocated or read, so a malformed blob is an
//! [`LibraryBinError`], never a panic, an out-of-bounds read or a huge allocation. Beyond
//! well-formedness it enforces what a loader needs: exactly one `_lib`, child indices in range,
//! no module importing itself or any cycle, non-empty UTF-8 kinds without NUL, payloads of at
//! least one byte (the real runtime cannot load empty ones), and nothing left over.

use core::fmt;

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use decode::decode;
pub use encode::encode;

/// The kind that stands for the library itself.
pub const LIB_KIND: &str = "_lib";

/// One module of the import tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinModule {
    /// The library itself (`_lib`).
    Lib,
    /// A module rebuilt by `ffi.Module.load_from_bytes.<kind>` from `payload`.
    Serialized {
        /// The module kind.
        kind: String,
        /// The serialized module (at least one byte).
        payload: Vec<u8>,
    },
}

impl BinModule {
    /// The kind as written in the blob (`_lib` for the library).
    pub fn kind(&self) -> &str {
        match self {
            BinModule::Lib => LIB_KIND,
            BinModule::Serialized { kind, .. } => kind,
        }
    }
}

/// A decoded (or to-be-encoded) library blob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LibraryBin {
    /// The modules; module 0 is the root.
    pub modules: Vec<BinModule>,
    /// `imports[i]` lists the indices of the modules module `i` imports, in order.
    pub imports: Vec<Vec<usize>>,
}

/// What is wrong with a blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LibraryBinErrorKind {
    /// Fewer bytes remain than a field needs.
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// The `nbytes` header claims more bytes than there are.
    SizePastEnd {
        /// The header's value.
        nbytes: u64,
        /// Bytes after the header.
        available: u64,
    },
    /// `indptr` is empty, so there is not even one module.
    NoModules,
    /// `indptr` does not start at 0.
    IndptrStart(u64),
    /// `indptr` decreases at module `module`.
    IndptrDecreasing {
        /// The module whose range ends before it starts.
        module: usize,
    },
    /// `indptr`'s last entry differs from the number of child indices.
    IndptrEnd {
        /// The last entry.
        last: u64,
        /// The number of child indices.
        children: u64,
    },
    /// A child index names no module.
    ChildOutOfRange {
        /// The importing module.
        module: usize,
        /// The child index.
        child: u64,
        /// The number of modules.
        modules: usize,
    },
    /// A module imports itself.
    SelfImport(usize),
    /// The import graph has a cycle through these modules.
    Cycle(Vec<usize>),
    /// A kind is empty.
    EmptyKind(usize),
    /// A kind is not UTF-8 or contains NUL.
    BadKind(usize),
    /// A payload has zero bytes.
    EmptyPayload {
        /// The module.
        module: usize,
        /// Its kind.
        kind: String,
    },
    /// No module is `_lib`.
    NoLib,
    /// More than one module is `_lib`.
    DuplicateLib(usize),
    /// Bytes remain after the last module.
    TrailingBytes(u64),
}

/// A malformed blob: what is wrong and the byte offset (from the start of the blob, i.e. the
/// `nbytes` header) where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryBinError {
    /// Byte offset from the start of the blob.
    pub offset: u64,
    /// What is wrong.
    pub kind: LibraryBinErrorKind,
}

impl fmt::Display for LibraryBinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LibraryBinErrorKind as K;
        write!(
            f,
            "malformed __tvm_ffi__library_bin at byte {}: ",
            self.offset
        )?;
        match &self.kind {
            K::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "{what} needs {needed} bytes, but only {available} remain"
            ),
            K::SizePastEnd { nbytes, available } => write!(
                f,
                "the header says {nbytes} bytes follow, but only {available} do"
            ),
            K::NoModules => f.write_str("the import tree's indptr is empty (no modules)"),
            K::IndptrStart(v) => write!(f, "indptr starts at {v}, not 0"),
            K::IndptrDecreasing { module } => {
                write!(f, "indptr decreases at module {module}")
            }
            K::IndptrEnd { last, children } => write!(
                f,
                "indptr ends at {last}, but there are {children} child indices"
            ),
            K::ChildOutOfRange {
                module,
                child,
                modules,
            } => write!(
                f,
                "module {module} imports module {child}, but there are only {modules} modules"
            ),
            K::SelfImport(m) => write!(f, "module {m} imports itself"),
            K::Cycle(path) => {
                let path: Vec<String> = path.iter().map(usize::to_string).collect();
                write!(f, "the import tree has a cycle: {}", path.join(" -> "))
            }
            K::EmptyKind(m) => write!(f, "module {m} has an empty kind"),
            K::BadKind(m) => write!(f, "module {m}'s kind is not UTF-8 or contains NUL"),
            K::EmptyPayload { module, kind } => write!(
                f,
                "module {module} (kind `{kind}`) has an empty payload; payloads need at least one byte"
            ),
            K::NoLib => write!(f, "no module is `{LIB_KIND}` (the library itself)"),
            K::DuplicateLib(m) => write!(
                f,
                "module {m} is a second `{LIB_KIND}`; the library appears exactly once"
            ),
            K::TrailingBytes(n) => write!(f, "{n} bytes follow the last module"),
        }
    }
}

impl std::error::Error for LibraryBinError {}
