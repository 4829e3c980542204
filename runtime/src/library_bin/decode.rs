//! Reading a blob: a bounds-checked reader, [`decode`] and the import-cycle check.

use super::{BinModule, LIB_KIND, LibraryBin, LibraryBinError, LibraryBinErrorKind};

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
