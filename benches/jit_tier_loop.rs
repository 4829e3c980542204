//! The JIT's tiers side by side, for `benches/jit_tier_count.sh` (callgrind counts, which do not
//! depend on the machine's load) and, run by `cargo bench`, as wall-clock means:
//!
//! - `jit_tier_loop compile TIER EXAMPLE N`: JIT-compiles `examples/ir/EXAMPLE.scir` N times
//!   (after one warm-up compile; EXAMPLE `thousand` is 1000 copies of the launcher, `quarter`
//!   250 of them);
//! - `jit_tier_loop call TIER FUNCTION N`: calls a JIT-compiled function N times through its
//!   safe-call pointer (FUNCTION `add_one_0`, `add_one_1024`, `launcher` or `launcher4d`).
//!
//! TIER is `baseline` (the JIT's default on x86-64), `cranelift` (Cranelift's fast-compile
//! settings, compiled directly) or `cranelift_opt` (Cranelift's optimized settings).

mod support;

use std::hint::black_box;
use std::time::Instant;

use safecall::jit::{FirstTier, JitOptions};
use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIValue, type_index};
use safecall_runtime::{AnyView, Function};

fn options(tier: &str) -> JitOptions {
    let mut options = support::launcher_options();
    options.first_tier = match tier {
        "baseline" => FirstTier::Baseline,
        "cranelift" | "cranelift_opt" => FirstTier::Backend,
        other => panic!("unknown tier `{other}`: use baseline, cranelift or cranelift_opt"),
    };
    if tier == "cranelift_opt" {
        options.cranelift = safecall::backend::cranelift::CraneliftOptions::default();
    }
    options
}

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

fn module(example: &str) -> safecall::ir::Module {
    match example {
        "thousand" => many_launchers(1000),
        "quarter" => many_launchers(250),
        name => support::example(name),
    }
}

/// Compiles `example` `n` times with `tier`; the mean time per compile.
fn compile(tier: &str, example: &str, n: u32) -> std::time::Duration {
    let (module, options) = (module(example), options(tier));
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    drop(unsafe { safecall::jit::compile(&module, &options) }.expect("compile"));
    let start = Instant::now();
    for _ in 0..n {
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        drop(unsafe { safecall::jit::compile(black_box(&module), &options) }.expect("compile"));
    }
    start.elapsed() / n.max(1)
}

/// A 16-byte aligned fake CUDA pointer (the launchers never dereference device memory).
const DEVICE_DATA: usize = 0x7000_0000;

/// A CUDA tensor of `dtype` with `shape` and `strides` (null: compact).
fn cuda_tensor(dtype: DLDataType, shape: &mut [i64], strides: *mut i64) -> DLTensor {
    DLTensor {
        data: DEVICE_DATA as *mut _,
        device: DLDevice {
            device_type: 2,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype,
        shape: shape.as_mut_ptr(),
        strides,
        byte_offset: 0,
    }
}

fn float(bits: u8) -> DLDataType {
    DLDataType {
        code: 2,
        bits,
        lanes: 1,
    }
}

fn tensor_arg(t: &mut DLTensor) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::DL_TENSOR_PTR,
        small_str_len: 0,
        value: TVMFFIValue {
            v_ptr: (t as *mut DLTensor).cast(),
        },
    }
}

/// Calls `function` of `example` (compiled with `tier`) `n` times; the mean time per call.
fn call(tier: &str, function: &str, n: u64) -> std::time::Duration {
    let options = options(tier);
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    let compile =
        |name: &str| unsafe { safecall::jit::compile(&support::example(name), &options) }.unwrap();
    let (jit, name, mut args): (_, &str, Vec<TVMFFIAny>);
    // Storage the arguments point into; kept alive until the calls are done.
    let mut vectors = Vec::new();
    let mut shapes: Vec<Vec<i64>> = Vec::new();
    let mut tensors: Vec<Box<DLTensor>> = Vec::new();
    let kernel = Function::from_closure(|_args: &[AnyView<'_>]| Ok(Default::default()));
    match function {
        "add_one_0" | "add_one_1024" => {
            let len = if function == "add_one_0" { 0 } else { 1024 };
            jit = compile("add_one");
            name = "add_one";
            vectors.push(support::Vector::new(len));
            vectors.push(support::Vector::new(len));
            args = vectors.iter_mut().map(|v| v.arg()).collect();
        }
        "launcher" => {
            jit = compile("launcher");
            name = "matmul";
            let (m, n, k) = (256i64, 512i64, 64i64);
            shapes = vec![vec![m, k], vec![k, n], vec![n], vec![m, n]];
            let dtypes = [float(16), float(16), float(32), float(32)];
            for (shape, dtype) in shapes.iter_mut().zip(dtypes) {
                tensors.push(Box::new(cuda_tensor(dtype, shape, std::ptr::null_mut())));
            }
            args = tensors.iter_mut().map(|t| tensor_arg(t)).collect();
        }
        "launcher4d" => {
            jit = compile("launcher4d");
            name = "attention";
            let (b, h, s, d) = (2i64, 8i64, 128i64, 64i64);
            // Padded rows: the row stride is 72 elements, not 64.
            for _ in 0..4 {
                shapes.push(vec![b, h, s, d]);
                shapes.push(vec![h * s * 72, s * 72, 72, 1]);
            }
            let mut pairs = shapes.chunks_mut(2);
            while let Some([shape, strides]) = pairs.next() {
                let strides = strides.as_mut_ptr();
                tensors.push(Box::new(cuda_tensor(float(16), shape, strides)));
            }
            args = tensors.iter_mut().map(|t| tensor_arg(t)).collect();
            args.push(TVMFFIAny::NONE);
            args.push(TVMFFIAny {
                type_index: type_index::INT,
                small_str_len: 0,
                value: TVMFFIValue { v_int64: 64 },
            });
            args.push(*AnyView::from(&kernel).as_raw());
        }
        other => panic!("unknown function `{other}`"),
    }
    let f = jit.safe_call(name).expect("defined");
    // SAFETY: AnyView is a transparent view of TVMFFIAny; the arguments outlive the views.
    let views = unsafe { AnyView::slice_from_raw(args.as_ptr(), args.len() as i32) };
    if let Err(e) = jit.function(name).expect("defined").call(views) {
        panic!(
            "{function} rejected its arguments: {}: {}",
            e.kind(),
            e.message()
        );
    }
    let start = Instant::now();
    for _ in 0..n {
        support::call(black_box(f), black_box(&args));
    }
    drop((vectors, shapes, tensors));
    start.elapsed() / n.max(1) as u32
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["compile", tier, example, n] => {
            compile(tier, example, n.parse().expect("a count"));
        }
        ["call", tier, function, n] => {
            call(tier, function, n.parse().expect("a count"));
        }
        _ => {
            // `cargo bench`: wall-clock means, both tiers side by side.
            for (example, n) in [
                ("launcher", 2000),
                ("launcher4d", 1000),
                ("quarter", 4),
                ("thousand", 2),
            ] {
                let b = compile("baseline", example, n);
                let c = compile("cranelift", example, n);
                println!(
                    "compile {example}: baseline {b:?}, cranelift fast {c:?}, ratio {:.1}",
                    c.as_secs_f64() / b.as_secs_f64()
                );
            }
            for (function, n) in [
                ("add_one_0", 1_000_000),
                ("add_one_1024", 20_000),
                ("launcher", 1_000_000),
                ("launcher4d", 1_000_000),
            ] {
                let b = call("baseline", function, n);
                let c = call("cranelift", function, n);
                let o = call("cranelift_opt", function, n);
                println!(
                    "call {function}: baseline {b:?}, cranelift fast {c:?}, cranelift optimized \
                     {o:?}; baseline / fast {:.2}, baseline / optimized {:.2}",
                    b.as_secs_f64() / c.as_secs_f64(),
                    b.as_secs_f64() / o.as_secs_f64()
                );
            }
        }
    }
}
