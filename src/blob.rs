//! `__tvm_ffi__library_bin`: the import tree and payloads of embedded modules.
//!
//! Layout (little-endian): `<nbytes: u64>` then `nbytes` bytes of
//! `<indptr: vec<u64>> <child_indices: vec<u64>>` (a CSR import tree) and, per module,
//! `<kind: str>` followed by `<payload: bytes>` unless the kind is `_lib`. A `vec`, `str` or
//! `bytes` is `<len: u64>` then its items. Module 0 is `_lib`, the library itself; modules
//! `1..` are [`ir::ImportedModule`]s in declaration order.

use crate::ir;

/// The kind that stands for the library itself.
pub const LIB_KIND: &str = "_lib";

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes the library blob of a verified module, or `None` when it imports nothing.
pub fn encode(module: &ir::Module) -> Option<Vec<u8>> {
    if module.imported_modules.is_empty() {
        return None;
    }
    let index_of = |label: &str| -> u64 {
        let i = module
            .imported_modules
            .iter()
            .position(|m| m.label == label)
            .expect("the verifier checks import labels");
        i as u64 + 1
    };
    let mut children: Vec<Vec<u64>> = vec![module.imports.iter().map(|l| index_of(l)).collect()];
    children.extend(
        module
            .imported_modules
            .iter()
            .map(|m| m.imports.iter().map(|l| index_of(l)).collect()),
    );

    let mut body = Vec::new();
    put_u64(&mut body, children.len() as u64 + 1);
    let mut offset = 0u64;
    put_u64(&mut body, offset);
    for c in &children {
        offset += c.len() as u64;
        put_u64(&mut body, offset);
    }
    put_u64(&mut body, offset);
    for c in &children {
        for &child in c {
            put_u64(&mut body, child);
        }
    }
    put_bytes(&mut body, LIB_KIND.as_bytes());
    for m in &module.imported_modules {
        put_bytes(&mut body, m.kind.as_bytes());
        put_bytes(&mut body, &m.payload);
    }
    let mut out = Vec::with_capacity(body.len() + 8);
    put_u64(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    Some(out)
}
