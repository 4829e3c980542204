//! Cranelift vs LLVM: compile latency, call overhead, and the quality of a CPU loop.
//!
//! - `compile/*`: `examples/ir/launcher.scir` to an object file (verify and lowering
//!   included), with Cranelift and with LLVM at O0 and O2; and JIT compilation of the same.
//! - `compile/shared_library/*`: the same module to a shared library on disk, linked by each
//!   linker: in-process (the default) and `cc` (through an object file on disk); and
//!   `compile/link/*`, linking alone from the object's bytes.
//! - `ir_text_to_so/*`: `examples/ir/launcher.scir` from its IR text (parsing included) to a
//!   shared library on disk with the default settings, linked in-process (the default) and by
//!   `cc`, side by side: the ratio of the two is read from one run; the same without mid-end
//!   optimization (`launcher_opt_none/*`, `--opt none`); and the same with every function
//!   compiled by Cranelift (`launcher_all_cranelift/*`, the error paths included: the default
//!   before the baseline compiler took them, so `launcher_all_cranelift/cc` is the path through
//!   `cc` that issue 30 measures against).
//! - `call/*`: the JIT-compiled `add_one` host function called through its raw safe-call
//!   pointer with two 4-element float32 DLTensor arguments (all argument checks included).
//! - `loop/*`: `add_one` over 1M float32 elements (y = x + 1) from the JIT with Cranelift and
//!   with LLVM O3, against the same C loop compiled by `cc -O3` into a shared library.
//!
//! `cargo bench --features llvm,criterion --bench backends` (LLVM rows need the `llvm` feature).

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall::Backend;
use safecall::backend::cranelift::{ColdFunctions, CraneliftOptions, OptLevel};
use safecall::backend::llvm::LlvmOptions;
use safecall::jit::{JitModule, JitOptions};

/// The configurations compared: a label, the backend and the LLVM optimization level.
fn configurations(levels: &[u8]) -> Vec<(String, Backend, u8)> {
    let mut out = vec![("cranelift".to_owned(), Backend::Cranelift, 0)];
    if safecall::backend::llvm::AVAILABLE {
        for &l in levels {
            out.push((format!("llvm_O{l}"), Backend::Llvm, l));
        }
    } else {
        eprintln!("LLVM rows skipped: built without the `llvm` feature");
    }
    out
}

fn jit(module: &safecall::ir::Module, backend: Backend, opt_level: u8) -> JitModule {
    let options = JitOptions {
        backend,
        // The backend itself, not the baseline tier in front of Cranelift.
        first_tier: safecall::jit::FirstTier::Backend,
        llvm: LlvmOptions::with_opt_level(opt_level),
        ..support::launcher_options()
    };
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    unsafe { safecall::jit::compile(module, &options) }.expect("compiles")
}

fn compile(c: &mut Criterion) {
    let module = support::example("launcher");
    let mut group = c.benchmark_group("compile");
    // Cranelift at its fast-compile settings (the JIT's) too: what AOT output costs when it
    // is built for compile time rather than code quality.
    let mut rows = configurations(&[0, 2]);
    rows.insert(1, ("cranelift_fast".to_owned(), Backend::Cranelift, 0));
    for (label, backend, level) in rows {
        let options = safecall::Options {
            backend,
            llvm: LlvmOptions::with_opt_level(level),
            cranelift: if label == "cranelift_fast" {
                CraneliftOptions::fast_compile()
            } else {
                CraneliftOptions::default()
            },
            ..safecall::Options::default()
        };
        group.bench_function(format!("object/{label}"), |b| {
            b.iter(|| safecall::compile_object(black_box(&module), &options).expect("compiles"))
        });
        let dir = std::env::temp_dir().join(format!("safecall-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        for linker in safecall::aot::Linker::ALL {
            let link = safecall::aot::LinkOptions {
                linker,
                ..Default::default()
            };
            let output = dir.join(format!("launcher-{label}-{}.so", linker.keyword()));
            group.bench_function(
                format!("shared_library/{label}/{}", linker.keyword()),
                |b| {
                    b.iter(|| {
                        safecall::build_shared_library(black_box(&module), &output, &options, &link)
                            .expect("builds")
                    })
                },
            );
        }
        // Linking alone, from the object's bytes.
        let object = safecall::compile_object(&module, &options).expect("compiles");
        for linker in safecall::aot::Linker::ALL {
            let link = safecall::aot::LinkOptions {
                linker,
                ..Default::default()
            };
            let output = dir.join(format!("linked-{label}-{}.so", linker.keyword()));
            group.bench_function(format!("link/{label}/{}", linker.keyword()), |b| {
                b.iter(|| {
                    safecall::aot::link_object_bytes(black_box(&object), &output, &link)
                        .expect("links")
                })
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
        // Warm the per-process error helper before timing JIT compiles.
        drop(jit(&module, backend, level));
        group.bench_function(format!("jit/{label}"), |b| {
            b.iter(|| jit(black_box(&module), backend, level))
        });
    }
    group.finish();
}

/// `examples/ir/launcher.scir`, IR text to `.so` on disk, default settings, by each linker.
fn ir_text_to_so(c: &mut Criterion) {
    let path = support::root().join("examples/ir/launcher.scir");
    let text = std::fs::read_to_string(&path).expect("read the example");
    let dir = support::scratch_dir("ir_text_to_so");
    let mut group = c.benchmark_group("ir_text_to_so");
    // The default settings, the same without mid-end optimization, then every function by
    // Cranelift (the default before the baseline compiler took the error paths: "today's path"
    // of issue 30).
    let all_cranelift = safecall::Options {
        cranelift: CraneliftOptions {
            cold: ColdFunctions::Cranelift,
            ..Default::default()
        },
        ..Default::default()
    };
    let opt_none = safecall::Options {
        cranelift: CraneliftOptions {
            opt_level: OptLevel::None,
            ..Default::default()
        },
        ..Default::default()
    };
    for (label, options) in [
        ("launcher", safecall::Options::default()),
        ("launcher_opt_none", opt_none),
        ("launcher_all_cranelift", all_cranelift),
    ] {
        for linker in safecall::aot::Linker::ALL {
            let link = safecall::aot::LinkOptions {
                linker,
                ..Default::default()
            };
            let output = dir.join(format!("{label}-{}.so", linker.keyword()));
            group.bench_function(format!("{label}/{}", linker.keyword()), |b| {
                b.iter(|| {
                    let (module, _) =
                        safecall::ir::parse::parse_in_dir(black_box(&text), path.parent())
                            .expect("parses");
                    safecall::build_shared_library(&module, &output, &options, &link)
                        .expect("builds")
                })
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

fn call(c: &mut Criterion) {
    let module = support::example("add_one");
    let mut group = c.benchmark_group("call");
    for (label, backend, level) in configurations(&[2]) {
        let jit = jit(&module, backend, level);
        let f = jit.safe_call("add_one").expect("defined");
        let (mut x, mut y) = (support::Vector::new(4), support::Vector::new(4));
        let args = [x.arg(), y.arg()];
        support::call(f, &args);
        assert_eq!(y.data, [1.0, 2.0, 3.0, 4.0]);
        group.bench_function(format!("add_one_4/{label}"), |b| {
            b.iter(|| support::call(black_box(f), black_box(&args)))
        });
    }
    group.finish();
}

fn cpu_loop(c: &mut Criterion) {
    const N: usize = 1 << 20;
    let module = support::example("add_one");
    let mut group = c.benchmark_group("loop");
    group.throughput(criterion::Throughput::Elements(N as u64));
    for (label, backend, level) in configurations(&[3]) {
        let jit = jit(&module, backend, level);
        let f = jit.safe_call("add_one").expect("defined");
        let (mut x, mut y) = (support::Vector::new(N), support::Vector::new(N));
        let args = [x.arg(), y.arg()];
        support::call(f, &args);
        assert_eq!(y.data[N - 1], N as f32);
        group.bench_function(format!("add_one_1M/{label}"), |b| {
            b.iter(|| support::call(black_box(f), black_box(&args)))
        });
    }
    let dir = support::scratch_dir("backends");
    for (label, flags) in [
        ("cc_O3", &["-O3"][..]),
        ("cc_O3_march_native", &["-O3", "-march=native"][..]),
    ] {
        let lib = dir.join(format!("libadd_one_{label}.so"));
        support::build_c_library(
            &support::root().join("benches/c/add_one_loop.c"),
            &lib,
            flags,
        );
        let loaded: support::Loaded<unsafe extern "C" fn(*const f32, *mut f32, i64)> =
            support::load(&lib, "add_one");
        let f = loaded.f;
        let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
        let mut y = vec![0.0f32; N];
        // SAFETY: both buffers hold N floats.
        unsafe { f(x.as_ptr(), y.as_mut_ptr(), N as i64) };
        // Checked before timing: a filter that skips the row must not skip the check's input.
        assert_eq!(y[N - 1], N as f32);
        group.bench_function(format!("add_one_1M/{label}"), |b| {
            // SAFETY: both buffers hold N floats.
            b.iter(|| unsafe { f(black_box(x.as_ptr()), y.as_mut_ptr(), N as i64) })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = ir_text_to_so, compile, call, cpu_loop
}
criterion_main!(benches);
