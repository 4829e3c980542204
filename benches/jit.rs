//! JIT figures (issues 5 and 18):
//! - compile-to-callable latency (IR already built; verification, lowering, code generation
//!   and finalization included) of a typical launcher (`examples/ir/launcher.scir`: 4 tensor
//!   parameters with symbolic dims, a stream query, an extern launch call) and of a module of
//!   50 such functions (compiled on the available threads, and on the calling thread only),
//!   with Cranelift's optimized and fast-compile settings;
//! - the baseline tier (the JIT's default on x86-64) against Cranelift's fast-compile settings
//!   side by side (`jit_compile_tiers`): the launcher, `examples/ir/launcher4d.scir` (four 4-D
//!   tensors with symbolic strides, an optional tensor, a constant, a packed call) and a module
//!   of 1000 launchers;
//! - call overhead of the JIT-compiled `add_one` (n = 4) called directly through its
//!   safe-call pointer (the JIT's default tier, Cranelift's fast-compile and optimized
//!   settings) and through `Function::call`, against a Rust closure registered as a `Function`
//!   doing the same work.
//!
//! ```text
//! cargo bench --features criterion --bench jit
//! ```

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall::jit::{FirstTier, JitOptions};
use safecall_runtime::{Any, AnyView, Function};

/// The launcher's function repeated `count` times under different names.
fn many_launchers(count: usize) -> safecall::ir::Module {
    let mut module = support::example("launcher");
    let template = module.functions[0].clone();
    module.functions = (0..count)
        .map(|i| {
            let mut f = template.clone();
            f.name = format!("{}_{i}", template.name);
            f
        })
        .collect();
    module
}

fn compile_latency(c: &mut Criterion) {
    let launcher = support::example("launcher");
    let fifty = many_launchers(50);
    let mut options = support::launcher_options();
    options.first_tier = FirstTier::Backend;
    options.cranelift = safecall::backend::cranelift::CraneliftOptions::default();
    // Warm the process-wide error helper (compiled once per process).
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile launcher"));
    let mut fast = support::launcher_options();
    fast.first_tier = FirstTier::Backend;
    fast.cranelift = safecall::backend::cranelift::CraneliftOptions::fast_compile();
    let mut group = c.benchmark_group("jit_compile");
    for (label, options) in [("optimized", &options), ("fast_compile", &fast)] {
        group.sample_size(50);
        group.bench_function(format!("launcher_{label}"), |b| {
            // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
            // only symbols it declares with their real signatures.
            b.iter(|| {
                unsafe { safecall::jit::compile(black_box(&launcher), options) }.expect("compile")
            })
        });
        group.sample_size(10);
        group.bench_function(format!("fifty_functions_{label}"), |b| {
            // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
            // only symbols it declares with their real signatures.
            b.iter(|| {
                unsafe { safecall::jit::compile(black_box(&fifty), options) }.expect("compile")
            })
        });
    }
    // The same module compiled on the calling thread only: the baseline of the threaded
    // compile above.
    let one_thread = safecall::jit::JitOptions {
        compile_threads: 1,
        ..fast.clone()
    };
    group.bench_function("fifty_functions_fast_compile_one_thread", |b| {
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        b.iter(|| {
            unsafe { safecall::jit::compile(black_box(&fifty), &one_thread) }.expect("compile")
        })
    });
    group.finish();

    // The baseline tier and Cranelift's fast-compile settings side by side.
    let mut group = c.benchmark_group("jit_compile_tiers");
    let baseline = support::launcher_options();
    let launcher4d = support::example("launcher4d");
    let thousand = many_launchers(1000);
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    drop(unsafe { safecall::jit::compile(&launcher, &baseline) }.expect("compile launcher"));
    for (label, options) in [("baseline", &baseline), ("cranelift_fast", &fast)] {
        group.sample_size(50);
        group.bench_function(format!("launcher_{label}"), |b| {
            // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
            // only symbols it declares with their real signatures.
            b.iter(|| {
                unsafe { safecall::jit::compile(black_box(&launcher), options) }.expect("compile")
            })
        });
        group.bench_function(format!("launcher4d_{label}"), |b| {
            // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
            // only symbols it declares with their real signatures.
            b.iter(|| {
                unsafe { safecall::jit::compile(black_box(&launcher4d), options) }.expect("compile")
            })
        });
        group.sample_size(10);
        group.bench_function(format!("thousand_functions_{label}"), |b| {
            // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
            // only symbols it declares with their real signatures.
            b.iter(|| {
                unsafe { safecall::jit::compile(black_box(&thousand), options) }.expect("compile")
            })
        });
    }
    group.finish();
}

fn call_overhead(c: &mut Criterion) {
    // The JIT's default tier's code, and Cranelift's fast-compile and optimized code.
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    let jit =
        unsafe { safecall::jit::compile(&support::example("add_one"), &JitOptions::default()) }
            .expect("compile add_one");
    let fast_options = JitOptions {
        first_tier: FirstTier::Backend,
        ..JitOptions::default()
    };
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    let fast = unsafe { safecall::jit::compile(&support::example("add_one"), &fast_options) }
        .expect("compile add_one");
    let raw_fast = fast.safe_call("add_one").expect("defined");
    let optimized_options = JitOptions {
        first_tier: FirstTier::Backend,
        cranelift: safecall::backend::cranelift::CraneliftOptions::default(),
        ..JitOptions::default()
    };
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    let optimized =
        unsafe { safecall::jit::compile(&support::example("add_one"), &optimized_options) }
            .expect("compile add_one");
    let raw = jit.safe_call("add_one").expect("defined");
    let raw_optimized = optimized.safe_call("add_one").expect("defined");
    let function = jit.function("add_one").expect("defined").clone();
    let closure = Function::from_closure(|args: &[AnyView<'_>]| {
        // The same work in Rust: read both DLTensor*s, check n, add one.
        let x = args[0].as_raw();
        let y = args[1].as_raw();
        // SAFETY: the bench passes two DLTensor* arguments of float32 vectors.
        unsafe {
            let x = &*(x.value.v_ptr as *const safecall_runtime::abi::DLTensor);
            let y = &*(y.value.v_ptr as *const safecall_runtime::abi::DLTensor);
            let n = *x.shape as usize;
            let xs = std::slice::from_raw_parts(x.data as *const f32, n);
            let ys = std::slice::from_raw_parts_mut(y.data as *mut f32, n);
            for (o, i) in ys.iter_mut().zip(xs) {
                *o = *i + 1.0;
            }
        }
        Ok(Any::default())
    });
    let mut x = support::Vector::new(4);
    let mut y = support::Vector::new(4);
    let raw_args = [x.arg(), y.arg()];
    // SAFETY: AnyView is a transparent view of TVMFFIAny; the tensors outlive the views.
    let views = unsafe { AnyView::slice_from_raw(raw_args.as_ptr(), 2) };
    let mut group = c.benchmark_group("jit_call_n4");
    group.bench_function("direct_safe_call", |b| {
        b.iter(|| support::call(black_box(raw), black_box(&raw_args)))
    });
    group.bench_function("direct_safe_call_cranelift_fast", |b| {
        b.iter(|| support::call(black_box(raw_fast), black_box(&raw_args)))
    });
    group.bench_function("direct_safe_call_optimized", |b| {
        b.iter(|| support::call(black_box(raw_optimized), black_box(&raw_args)))
    });
    group.bench_function("function_call", |b| {
        b.iter(|| function.call(black_box(views)).expect("ok"))
    });
    group.bench_function("rust_closure_function_call", |b| {
        b.iter(|| closure.call(black_box(views)).expect("ok"))
    });
    group.finish();
}

criterion_group!(benches, compile_latency, call_overhead);
criterion_main!(benches);
