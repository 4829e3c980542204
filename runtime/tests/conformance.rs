//! The differential conformance test: each C program under `tests/c/` is compiled against the
//! real TVM-FFI headers, linked once against the real `libtvm_ffi.so` and once against
//! `libsafecall_runtime.so`, and both must print exactly the same thing.

mod support;

use support::{Runtime, compile, our_libdir, peer, run};

/// Runs `tests/c/<name>.c` against both runtimes and compares the outputs line by line.
fn differential(name: &str) {
    let Some(peer) = peer(name) else { return };
    let ours_dir = our_libdir();
    let real = compile(&peer, name, Runtime::Real, &ours_dir);
    let ours = compile(&peer, name, Runtime::Ours, &ours_dir);
    let (real_code, real_out) = run(&real);
    let (our_code, our_out) = run(&ours);
    assert_eq!(
        real_code,
        Some(0),
        "{name} against libtvm_ffi exited with {real_code:?}:\n{real_out}"
    );
    assert!(
        real_out.lines().count() > 5,
        "{name} printed almost nothing against libtvm_ffi"
    );
    for (i, (r, o)) in real_out.lines().zip(our_out.lines()).enumerate() {
        assert_eq!(
            o,
            r,
            "{name}.c line {}: safecall-runtime (left) differs from libtvm_ffi (right)",
            i + 1
        );
    }
    assert_eq!(
        our_out.lines().count(),
        real_out.lines().count(),
        "{name}.c: safecall-runtime printed a different number of lines (exit {our_code:?})"
    );
    assert_eq!(our_code, real_code, "{name}.c exit code");
}

#[test]
fn objects() {
    differential("objects");
}

#[test]
fn errors() {
    differential("errors");
}

#[test]
fn strings() {
    differential("strings");
}

#[test]
fn dtypes() {
    differential("dtypes");
}

#[test]
fn functions() {
    differential("functions");
}

#[test]
fn tensors() {
    differential("tensors");
}

#[test]
fn env() {
    differential("env");
}

#[test]
fn registry() {
    differential("registry");
}

#[test]
fn bigint() {
    differential("bigint");
}

#[test]
fn modules() {
    differential("modules");
}
