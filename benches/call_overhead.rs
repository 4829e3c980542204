//! Direct call cost of the generated `add_one` host function (two float32 tensors, every
//! check, n = 4) against the same function written by hand in C (`benches/c/add_one_baseline.c`,
//! `cc -O2`), measured in the same run. Both are called through their raw safe-call pointer
//! with `DLTensor*` arguments.
//!
//! ```text
//! cargo bench --features criterion --bench call_overhead
//! ```
//!
//! Timings this small move with the machine's load; `benches/instruction_count.sh` counts the
//! instructions per call of the same two functions with callgrind, which does not.

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let dir = support::scratch_dir("call-overhead");
    let generated = dir.join("add_one_safecall.so");
    safecall::build_shared_library(
        &support::example("add_one"),
        &generated,
        &safecall::Options::default(),
        &Default::default(),
    )
    .expect("compile add_one");
    let baseline = dir.join("add_one_c.so");
    support::build_c_library(
        &support::root().join("benches/c/add_one_baseline.c"),
        &baseline,
        &["-O2"],
    );
    let generated: support::Loaded = support::load(&generated, "__tvm_ffi_add_one");
    let baseline: support::Loaded = support::load(&baseline, "__tvm_ffi_add_one");

    let mut x = support::Vector::new(4);
    let mut y = support::Vector::new(4);
    let args = [x.arg(), y.arg()];
    let mut group = c.benchmark_group("add_one_call_n4");
    group.bench_function("safecall_cranelift", |b| {
        b.iter(|| support::call(black_box(generated.f), black_box(&args)))
    });
    group.bench_function("hand_written_c_O2", |b| {
        b.iter(|| support::call(black_box(baseline.f), black_box(&args)))
    });
    group.finish();
    assert_eq!(y.data, [1.0, 2.0, 3.0, 4.0]);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
