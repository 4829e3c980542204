//! Writing a blob: [`encode`].

use super::{BinModule, LibraryBin};

pub(super) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(super) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes a blob, `nbytes` header included. [`decode`](super::decode()) of the result gives `bin` back when
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
