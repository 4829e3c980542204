//! The host-side cost of a GPU launch in steady state (driver found, binary loaded), against
//! the CUDA driver test double in benchmark mode (its entry points return at once), next to
//! the same host function without the launch, in the same run:
//!
//! - `checks_only`: `fn f(dev: i32)` that only decodes and checks its argument;
//! - `launch_current_context`: the same plus `launch` of an argument-less kernel while a
//!   context of the device is current (what PyTorch leaves): cuDeviceGet, cuCtxGetCurrent,
//!   cuCtxGetDevice, cuLaunchKernelEx;
//! - `launch_primary_switch`: no context current, so the primary context is made current
//!   for the launch and the previous one restored (two more cuCtxSetCurrent calls);
//! - `launch_four_args`: four kernel arguments and a 3-D grid computed from parameters.
//!
//! The difference to `checks_only` is what a launch adds beyond the argument checks.
//!
//! ```text
//! cargo bench --bench gpu_launch
//! ```

use std::ffi::c_int;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType, TVMFFIValue, type_index};

const IR: &str = r#"module bench;

device_binary kernels {
    format ptx;
    data b".visible .entry empty() { ret; }\n.visible .entry four(.param .u64 a, .param .u64 b, .param .u32 n, .param .f32 s) { ret; }\n";
    kernels [empty, four];
}

fn checks_only(dev: i32) {
}

fn launch_empty(dev: i32) {
    launch kernels.empty[grid=(1), block=(1), device=dev]();
}

fn launch_four(dev: i32, a: ptr, b: ptr, n: i64, s: f32) {
    launch kernels.four[grid=(ceil_div(n, 128), 2, 1), block=(128), device=dev](a, b, cast<u32>(n), s);
}
"#;

fn int(v: i64) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::INT,
        small_str_len: 0,
        value: TVMFFIValue { v_int64: v },
    }
}

fn call(f: TVMFFISafeCallType, args: &[TVMFFIAny]) {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a generated safe-call function with valid POD arguments.
    let rc = unsafe {
        f(
            std::ptr::null_mut(),
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    assert_eq!(rc, 0, "the call failed");
}

fn bench(c: &mut Criterion) {
    let deps = std::env::current_exe().unwrap();
    let fake_path = deps.with_file_name("libsafecall_fake_cuda.so");
    // SAFETY: set before any generated code runs (nothing else runs yet).
    unsafe { std::env::set_var("SAFECALL_LIBCUDA_PATH", &fake_path) };
    // SAFETY: the double's initializers do nothing; the symbols have these types.
    let fake = unsafe { libloading::Library::new(&fake_path) }.expect("the driver double");
    let quiet = unsafe {
        *fake
            .get::<extern "C" fn(c_int)>(b"safecall_fake_cuda_quiet")
            .unwrap()
    };
    let set_context = unsafe {
        *fake
            .get::<extern "C" fn(c_int)>(b"safecall_fake_cuda_set_user_context")
            .unwrap()
    };
    quiet(1);

    let module = safecall::ir::parse::parse(IR).expect("valid IR");
    let jit = safecall::jit::compile(&module, &Default::default()).expect("compile");
    let checks = jit.safe_call("checks_only").unwrap();
    let empty = jit.safe_call("launch_empty").unwrap();
    let four = jit.safe_call("launch_four").unwrap();
    let ptr = |p: usize| TVMFFIAny {
        type_index: type_index::OPAQUE_PTR,
        small_str_len: 0,
        value: TVMFFIValue { v_ptr: p as *mut _ },
    };
    let float = TVMFFIAny {
        type_index: type_index::FLOAT,
        small_str_len: 0,
        value: TVMFFIValue { v_float64: 0.5 },
    };
    let one = [int(0)];
    let four_args = [int(0), ptr(0x1000), ptr(0x2000), int(100_000), float];
    // Load the driver and the binary once, outside the measurements.
    call(empty, &one);
    call(four, &four_args);

    let mut group = c.benchmark_group("gpu_launch");
    set_context(0);
    group.bench_function("checks_only", |b| {
        b.iter(|| call(black_box(checks), black_box(&one)))
    });
    group.bench_function("launch_current_context", |b| {
        b.iter(|| call(black_box(empty), black_box(&one)))
    });
    group.bench_function("launch_four_args", |b| {
        b.iter(|| call(black_box(four), black_box(&four_args)))
    });
    set_context(-1);
    group.bench_function("launch_primary_switch", |b| {
        b.iter(|| call(black_box(empty), black_box(&one)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
