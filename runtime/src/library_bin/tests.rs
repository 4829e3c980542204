//! Tests of the blob format: round trips, the documented layout, and malformed blobs.

use super::encode::{put_bytes, put_u64};
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
