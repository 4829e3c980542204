//! The long hostile-call run (the harness is `tests/hostile/mod.rs`): N calls per parameter
//! kind on each delivery path named, printing the counts per kind, and exiting non-zero on
//! any contract violation.
//!
//! `cargo bench --features llvm --bench hostile_calls -- [CALLS] [PATH...]` with PATH one of
//! `jit-cranelift`, `so-cranelift`, `jit-llvm`, `so-llvm` (default: `jit-cranelift`) and
//! CALLS per kind (default 10,000,000). Kinds run on `HOSTILE_THREADS` threads (default 2).
//! Run by plain `cargo bench` (no arguments after `--bench`), it makes 10M calls per kind.

#[allow(dead_code)] // the check suite's helpers: this uses the tensor, array and library ones
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/hostile/mod.rs"]
mod hostile;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use safecall::Backend;

use hostile::{Compiled, Counts, Unavailable, kinds, run_kind};

fn compiled(path: &str) -> Result<Compiled, Unavailable> {
    let dir = common::libs::run_dir();
    match path {
        "jit-cranelift" => Compiled::jit(Backend::Cranelift),
        "so-cranelift" => Compiled::library(Backend::Cranelift, dir),
        "jit-llvm" => Compiled::jit(Backend::Llvm),
        "so-llvm" => Compiled::library(Backend::Llvm, dir),
        other => panic!("unknown path {other:?} (jit-cranelift, so-cranelift, jit-llvm, so-llvm)"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut calls = 10_000_000u64;
    let mut paths = Vec::new();
    for a in args.by_ref() {
        match a.replace('_', "").parse::<u64>() {
            Ok(n) => calls = n,
            Err(_) => paths.push(a),
        }
    }
    if paths.is_empty() {
        paths.push("jit-cranelift".to_owned());
    }
    let threads: usize = std::env::var("HOSTILE_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let mut failed = false;
    for path in &paths {
        let compiled = match compiled(path) {
            Ok(c) => c,
            Err(Unavailable::Backend(why)) => {
                println!("{path}: skipped: {why}");
                continue;
            }
        };
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<(usize, Counts)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(kind) = kinds().get(i) else { break };
                        let counts = run_kind(&compiled, kind, calls, 0x5eed + i as u64);
                        println!("[{}] {}", compiled.label, counts.line(kind));
                        results.lock().unwrap().push((i, counts));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap();
        results.sort_by_key(|(i, _)| *i);
        let total: u64 = results.iter().map(|(_, c)| c.calls).sum();
        let failures: usize = results.iter().map(|(_, c)| c.failures.len()).sum();
        println!(
            "[{}] total: {total} calls over {} kinds, {failures} failures, {:.1} s",
            compiled.label,
            results.len(),
            start.elapsed().as_secs_f64()
        );
        for (_, c) in &results {
            for f in &c.failures {
                println!("FAILURE {f}");
            }
        }
        failed |= failures > 0;
    }
    if failed {
        std::process::exit(1);
    }
}
