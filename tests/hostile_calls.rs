//! Hostile calls (see `tests/hostile/mod.rs`): a short run of every parameter kind on every
//! backend and delivery path (JIT memory and a loaded shared library). The long run is
//! `cargo bench --features llvm --bench hostile_calls -- 10000000`.

use safecall::Backend;

use crate::common::delivery::backends;
use crate::common::libs::run_dir;
use crate::common::skip::skip;
use crate::hostile::{Compiled, Unavailable, kinds, run_kind};

/// Calls per kind and path: enough to reach every generator branch, cheap enough for CI.
const CALLS: u64 = 3_000;

fn run(compiled: Result<Compiled, Unavailable>, seed: u64) {
    let compiled = match compiled {
        Ok(c) => c,
        Err(Unavailable::Backend(why)) => return skip(&why),
    };
    let mut failures = Vec::new();
    for (i, kind) in kinds().iter().enumerate() {
        let counts = run_kind(&compiled, kind, CALLS, seed + i as u64);
        eprintln!("[{}] {}", compiled.label, counts.line(kind));
        assert_eq!(counts.calls, CALLS);
        assert!(
            counts.accepted > 0 || counts.open_accepted > 0,
            "[{}] {kind}: no call was accepted (the generator never builds a valid call)",
            compiled.label
        );
        assert!(
            counts.rejected > 0,
            "[{}] {kind}: no call was rejected (the generator never builds a must-fail call)",
            compiled.label
        );
        failures.extend(counts.failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn hostile_calls_jit_cranelift() {
    run(Compiled::jit(Backend::Cranelift), 1);
}

#[test]
fn hostile_calls_library_cranelift() {
    run(Compiled::library(Backend::Cranelift, run_dir()), 2);
}

#[test]
fn hostile_calls_jit_llvm() {
    if !backends().contains(&Backend::Llvm) {
        return skip("built without the `llvm` feature");
    }
    run(Compiled::jit(Backend::Llvm), 3);
}

#[test]
fn hostile_calls_library_llvm() {
    if !backends().contains(&Backend::Llvm) {
        return skip("built without the `llvm` feature");
    }
    run(Compiled::library(Backend::Llvm, run_dir()), 4);
}
