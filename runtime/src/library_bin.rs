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

/// A bounds-checked reader over the blob.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn error(&self, kind: LibraryBinErrorKind) -> LibraryBinError {
        LibraryBinError {
            offset: self.pos as u64,
            kind,
        }
    }

    fn truncated(&self, what: &'static str, needed: u64) -> LibraryBinError {
        self.error(LibraryBinErrorKind::Truncated {
            what,
            needed,
            available: self.remaining() as u64,
        })
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, LibraryBinError> {
        let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) else {
            return Err(self.truncated(what, 8));
        };
        self.pos += 8;
        Ok(u64::from_le_bytes(chunk.try_into().expect("8 bytes")))
    }

    /// `n` bytes, checked against what remains before anything is taken.
    fn take(&mut self, what: &'static str, n: u64) -> Result<&'a [u8], LibraryBinError> {
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => {
                let out = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(out)
            }
            _ => Err(self.truncated(what, n)),
        }
    }

    /// `<len> <bytes>`.
    fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], LibraryBinError> {
        let len = self.u64(what)?;
        self.take(what, len)
    }

    /// `<len> <len u64s>`: the whole array is checked to be present before it is allocated.
    fn vec_u64(&mut self, what: &'static str) -> Result<Vec<u64>, LibraryBinError> {
        let len = self.u64(what)?;
        let raw = self.take(what, len.saturating_mul(8))?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}

/// Decodes a blob starting at its `nbytes` header. `bytes` may extend past the blob (the loader
/// passes everything up to the end of the mapped segment); only `8 + nbytes` bytes are read.
pub fn decode(bytes: &[u8]) -> Result<LibraryBin, LibraryBinError> {
    use LibraryBinErrorKind as K;
    let mut header = Reader { bytes, pos: 0 };
    let nbytes = header.u64("the nbytes header")?;
    let available = header.remaining() as u64;
    if nbytes > available {
        return Err(header.error(K::SizePastEnd { nbytes, available }));
    }
    let mut r = Reader {
        bytes: &bytes[..8 + nbytes as usize],
        pos: 8,
    };

    let indptr_at = r.pos as u64;
    let indptr = r.vec_u64("the import tree's indptr")?;
    let children_at = r.pos as u64;
    let children = r.vec_u64("the import tree's child indices")?;
    let at = |offset: u64, kind| LibraryBinError { offset, kind };
    let Some((&first, _)) = indptr.split_first() else {
        return Err(at(indptr_at, K::NoModules));
    };
    if first != 0 {
        return Err(at(indptr_at, K::IndptrStart(first)));
    }
    let num_modules = indptr.len() - 1;
    if num_modules == 0 {
        return Err(at(indptr_at, K::NoModules));
    }
    if let Some(module) = indptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(at(indptr_at, K::IndptrDecreasing { module }));
    }
    let last = indptr[num_modules];
    if last != children.len() as u64 {
        return Err(at(
            indptr_at,
            K::IndptrEnd {
                last,
                children: children.len() as u64,
            },
        ));
    }
    let mut imports = Vec::with_capacity(num_modules);
    for (module, range) in indptr.windows(2).enumerate() {
        // In range: indptr is non-decreasing and ends at children.len().
        let list = &children[range[0] as usize..range[1] as usize];
        let mut out = Vec::with_capacity(list.len());
        for &child in list {
            if child >= num_modules as u64 {
                return Err(at(
                    children_at,
                    K::ChildOutOfRange {
                        module,
                        child,
                        modules: num_modules,
                    },
                ));
            }
            if child == module as u64 {
                return Err(at(children_at, K::SelfImport(module)));
            }
            out.push(child as usize);
        }
        imports.push(out);
    }
    if let Some(cycle) = find_cycle(&imports) {
        return Err(at(children_at, K::Cycle(cycle)));
    }

    // Every module takes at least 8 bytes (its kind's length), which bounds the allocation.
    let mut modules = Vec::with_capacity(num_modules.min(r.remaining() / 8));
    let mut lib_seen = false;
    for module in 0..num_modules {
        let kind_at = r.pos as u64;
        let kind = r.bytes("a module kind")?;
        if kind.is_empty() {
            return Err(at(kind_at, K::EmptyKind(module)));
        }
        let kind = match core::str::from_utf8(kind) {
            Ok(k) if !k.contains('\0') => k,
            _ => return Err(at(kind_at, K::BadKind(module))),
        };
        if kind == LIB_KIND {
            if lib_seen {
                return Err(at(kind_at, K::DuplicateLib(module)));
            }
            lib_seen = true;
            modules.push(BinModule::Lib);
        } else {
            let payload_at = r.pos as u64;
            let payload = r.bytes("a module payload")?;
            if payload.is_empty() {
                return Err(at(
                    payload_at,
                    K::EmptyPayload {
                        module,
                        kind: kind.to_owned(),
                    },
                ));
            }
            modules.push(BinModule::Serialized {
                kind: kind.to_owned(),
                payload: payload.to_vec(),
            });
        }
    }
    if !lib_seen {
        return Err(r.error(K::NoLib));
    }
    if r.remaining() != 0 {
        return Err(r.error(K::TrailingBytes(r.remaining() as u64)));
    }
    Ok(LibraryBin { modules, imports })
}

/// A cycle in the import graph (as a path that starts and ends at the same module), found
/// without recursion so that deep chains cannot overflow the stack.
fn find_cycle(imports: &[Vec<usize>]) -> Option<Vec<usize>> {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; imports.len()];
    // (module, index of the next child to visit)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..imports.len() {
        if color[start] != WHITE {
            continue;
        }
        color[start] = GREY;
        stack.push((start, 0));
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            if let Some(&child) = imports[node].get(next) {
                top.1 += 1;
                match color[child] {
                    WHITE => {
                        color[child] = GREY;
                        stack.push((child, 0));
                    }
                    GREY => {
                        let from = stack
                            .iter()
                            .position(|&(n, _)| n == child)
                            .expect("grey nodes are on the stack");
                        let mut path: Vec<usize> = stack[from..].iter().map(|&(n, _)| n).collect();
                        path.push(child);
                        return Some(path);
                    }
                    _ => {}
                }
            } else {
                color[node] = BLACK;
                stack.pop();
            }
        }
    }
    None
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes a blob, `nbytes` header included. [`decode`] of the result gives `bin` back when
/// `bin` is valid (see the module docs); `imports` shorter than `modules` means no imports for
/// the rest.
pub fn encode(bin: &LibraryBin) -> Vec<u8> {
    let lists = |i: usize| bin.imports.get(i).map_or(&[][..], Vec::as_slice);
    let mut body = Vec::new();
    put_u64(&mut body, bin.modules.len() as u64 + 1);
    let mut offset = 0u64;
    put_u64(&mut body, offset);
    for i in 0..bin.modules.len() {
        offset += lists(i).len() as u64;
        put_u64(&mut body, offset);
    }
    put_u64(&mut body, offset);
    for i in 0..bin.modules.len() {
        for &child in lists(i) {
            put_u64(&mut body, child as u64);
        }
    }
    for m in &bin.modules {
        put_bytes(&mut body, m.kind().as_bytes());
        if let BinModule::Serialized { payload, .. } = m {
            put_bytes(&mut body, payload);
        }
    }
    let mut out = Vec::with_capacity(body.len() + 8);
    put_u64(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use LibraryBinErrorKind as K;

    fn serialized(kind: &str, payload: &[u8]) -> BinModule {
        BinModule::Serialized {
            kind: kind.to_owned(),
            payload: payload.to_vec(),
        }
    }

    fn sample() -> LibraryBin {
        LibraryBin {
            modules: vec![
                BinModule::Lib,
                serialized("cuda", b"fatbin"),
                serialized("helpers", b"h"),
            ],
            imports: vec![vec![1], vec![2], vec![]],
        }
    }

    /// Builds a blob from raw parts (no validation) for the malformation tests.
    struct Raw {
        indptr: Vec<u64>,
        children: Vec<u64>,
        modules: Vec<(&'static [u8], Option<&'static [u8]>)>,
        trailing: Vec<u8>,
    }

    impl Raw {
        fn ok() -> Raw {
            Raw {
                indptr: vec![0, 1, 1],
                children: vec![1],
                modules: vec![(b"_lib", None), (b"kind", Some(b"payload"))],
                trailing: Vec::new(),
            }
        }

        fn body(&self) -> Vec<u8> {
            let mut b = Vec::new();
            put_u64(&mut b, self.indptr.len() as u64);
            self.indptr.iter().for_each(|&v| put_u64(&mut b, v));
            put_u64(&mut b, self.children.len() as u64);
            self.children.iter().for_each(|&v| put_u64(&mut b, v));
            for (kind, payload) in &self.modules {
                put_bytes(&mut b, kind);
                if let Some(p) = payload {
                    put_bytes(&mut b, p);
                }
            }
            b.extend_from_slice(&self.trailing);
            b
        }

        fn blob(&self) -> Vec<u8> {
            let body = self.body();
            let mut out = Vec::new();
            put_u64(&mut out, body.len() as u64);
            out.extend_from_slice(&body);
            out
        }
    }

    fn error_of(bytes: &[u8]) -> LibraryBinErrorKind {
        decode(bytes).expect_err("malformed").kind
    }

    #[test]
    fn round_trip() {
        let bin = sample();
        let bytes = encode(&bin);
        assert_eq!(decode(&bytes).unwrap(), bin);
        // Extra bytes after the blob (the rest of a segment) are not read.
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0xff; 13]);
        assert_eq!(decode(&padded).unwrap(), bin);
        assert_eq!(decode(&Raw::ok().blob()).unwrap().modules.len(), 2);
    }

    #[test]
    fn layout_is_the_documented_one() {
        let bin = LibraryBin {
            modules: vec![BinModule::Lib, serialized("k", b"\x01")],
            imports: vec![vec![1], vec![]],
        };
        let mut want = Vec::new();
        for v in [3u64, 0, 1, 1, 1, 1] {
            put_u64(&mut want, v);
        }
        put_bytes(&mut want, b"_lib");
        put_bytes(&mut want, b"k");
        put_bytes(&mut want, b"\x01");
        let mut blob = Vec::new();
        put_u64(&mut blob, want.len() as u64);
        blob.extend_from_slice(&want);
        assert_eq!(encode(&bin), blob);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = encode(&sample());
        for len in 0..bytes.len() {
            let err = decode(&bytes[..len]).expect_err("truncated");
            assert!(
                matches!(
                    err.kind,
                    K::Truncated { .. } | K::SizePastEnd { .. } | K::NoLib
                ),
                "{len}: {err}"
            );
        }
        // A truncated body with a consistent header.
        for cut in 1..bytes.len() - 8 {
            let body = &bytes[8..bytes.len() - cut];
            let mut blob = Vec::new();
            put_u64(&mut blob, body.len() as u64);
            blob.extend_from_slice(body);
            assert!(decode(&blob).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn header_past_the_end() {
        let mut bytes = encode(&sample());
        bytes[..8].copy_from_slice(&(u64::MAX).to_le_bytes());
        let err = decode(&bytes).unwrap_err();
        assert!(matches!(
            err.kind,
            K::SizePastEnd {
                nbytes: u64::MAX,
                ..
            }
        ));
        assert!(err.to_string().contains("the header says"), "{err}");
    }

    #[test]
    fn lengths_past_the_end() {
        // An indptr longer than the blob.
        let mut raw = Raw::ok();
        let mut blob = raw.blob();
        blob[8..16].copy_from_slice(&1000u64.to_le_bytes());
        assert!(matches!(
            error_of(&blob),
            K::Truncated {
                what: "the import tree's indptr",
                ..
            }
        ));
        // A payload length past the end.
        raw.modules[1].1 = Some(b"p");
        let mut blob = raw.blob();
        let at = blob.len() - 9;
        blob[at..at + 8].copy_from_slice(&2u64.to_le_bytes());
        assert!(matches!(
            error_of(&blob),
            K::Truncated {
                what: "a module payload",
                needed: 2,
                available: 1
            }
        ));
    }

    #[test]
    fn absurd_counts_do_not_allocate() {
        for count in [u64::MAX, u64::MAX / 8 + 1, 1 << 61, 1 << 40] {
            let mut blob = Vec::new();
            put_u64(&mut blob, 8);
            put_u64(&mut blob, count);
            assert!(
                matches!(error_of(&blob), K::Truncated { .. }),
                "count {count}"
            );
        }
        // A huge kind length.
        let mut raw = Raw::ok();
        raw.modules.truncate(1);
        raw.indptr = vec![0, 0];
        raw.children.clear();
        let mut blob = raw.blob();
        let at = blob.len() - 12;
        blob[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            error_of(&blob),
            K::Truncated {
                what: "a module kind",
                ..
            }
        ));
    }

    #[test]
    fn bad_indptr() {
        let mut raw = Raw::ok();
        raw.indptr = vec![];
        assert_eq!(error_of(&raw.blob()), K::NoModules);
        raw.indptr = vec![0];
        raw.children = vec![];
        assert_eq!(error_of(&raw.blob()), K::NoModules);
        raw.indptr = vec![1, 1, 1];
        raw.children = vec![1];
        assert_eq!(error_of(&raw.blob()), K::IndptrStart(1));
        raw.indptr = vec![0, 1, 0];
        assert_eq!(error_of(&raw.blob()), K::IndptrDecreasing { module: 1 });
        raw.indptr = vec![0, 1, 2];
        assert_eq!(
            error_of(&raw.blob()),
            K::IndptrEnd {
                last: 2,
                children: 1
            }
        );
    }

    #[test]
    fn indices_out_of_range() {
        let mut raw = Raw::ok();
        raw.children = vec![2];
        assert_eq!(
            error_of(&raw.blob()),
            K::ChildOutOfRange {
                module: 0,
                child: 2,
                modules: 2
            }
        );
        raw.children = vec![u64::MAX];
        assert!(matches!(
            error_of(&raw.blob()),
            K::ChildOutOfRange {
                child: u64::MAX,
                ..
            }
        ));
    }

    #[test]
    fn cycles() {
        let mut raw = Raw::ok();
        raw.children = vec![0];
        assert_eq!(error_of(&raw.blob()), K::SelfImport(0));
        raw.indptr = vec![0, 1, 2];
        raw.children = vec![1, 0];
        assert_eq!(error_of(&raw.blob()), K::Cycle(vec![0, 1, 0]));
        // A longer cycle that does not go through the root.
        raw.indptr = vec![0, 1, 2, 3, 4];
        raw.children = vec![1, 2, 3, 1];
        raw.modules = vec![
            (b"_lib", None),
            (b"a", Some(b"1")),
            (b"b", Some(b"2")),
            (b"c", Some(b"3")),
        ];
        assert_eq!(error_of(&raw.blob()), K::Cycle(vec![1, 2, 3, 1]));
        // A diamond is not a cycle.
        raw.indptr = vec![0, 2, 3, 4, 4];
        raw.children = vec![1, 2, 3, 3];
        let bin = decode(&raw.blob()).unwrap();
        assert_eq!(bin.imports, vec![vec![1, 2], vec![3], vec![3], vec![]]);
    }

    #[test]
    fn deep_chains_do_not_overflow_the_stack() {
        let n = 200_000;
        let bin = LibraryBin {
            modules: std::iter::once(BinModule::Lib)
                .chain((1..n).map(|_| serialized("k", b"x")))
                .collect(),
            imports: (0..n)
                .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
                .collect(),
        };
        assert_eq!(decode(&encode(&bin)).unwrap().modules.len(), n);
    }

    #[test]
    fn kinds() {
        let mut raw = Raw::ok();
        raw.modules[1].0 = b"";
        assert_eq!(error_of(&raw.blob()), K::EmptyKind(1));
        raw.modules[1].0 = b"\xff\xfe";
        assert_eq!(error_of(&raw.blob()), K::BadKind(1));
        raw.modules[1].0 = b"a\0b";
        assert_eq!(error_of(&raw.blob()), K::BadKind(1));
    }

    #[test]
    fn empty_payload() {
        let mut raw = Raw::ok();
        raw.modules[1].1 = Some(b"");
        let err = decode(&raw.blob()).unwrap_err();
        assert_eq!(
            err.kind,
            K::EmptyPayload {
                module: 1,
                kind: "kind".to_owned()
            }
        );
        assert!(err.to_string().contains("at least one byte"), "{err}");
    }

    #[test]
    fn lib_exactly_once() {
        let mut raw = Raw::ok();
        raw.modules[0] = (b"other", Some(b"x"));
        assert_eq!(error_of(&raw.blob()), K::NoLib);
        raw.modules = vec![(b"_lib", None), (b"_lib", None)];
        assert_eq!(error_of(&raw.blob()), K::DuplicateLib(1));
    }

    #[test]
    fn trailing_bytes() {
        let mut raw = Raw::ok();
        raw.trailing = vec![0; 3];
        assert_eq!(error_of(&raw.blob()), K::TrailingBytes(3));
    }

    #[test]
    fn messages_name_the_offset() {
        let mut raw = Raw::ok();
        raw.children = vec![5];
        let err = decode(&raw.blob()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed __tvm_ffi__library_bin at byte 40: module 0 imports module 5, but there are only 2 modules"
        );
    }
}
