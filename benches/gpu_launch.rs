//! The host-side cost of a GPU launch in steady state (driver found, binary loaded), against
//! the CUDA driver test double in benchmark mode (its entry points return at once), next to
//! the same host function without the launch, in the same run (`benches/ir/gpu_launch.scir`,
//! JIT-compiled with the default settings):
//!
//! - `checks_only`: decodes and checks its one argument;
//! - `launch_current_context`: the same plus a launch of an argument-less kernel while a
//!   context of the device is current (what PyTorch leaves): cuDeviceGet, cuCtxGetCurrent,
//!   cuCtxGetDevice, cuLaunchKernelEx;
//! - `launch_four_args`: four kernel arguments and a 3-D grid computed at run time;
//! - `launch_primary_switch`: no context current, so the primary context is made current
//!   for the launch and the previous one restored (two more cuCtxSetCurrent calls);
//! - `launch_cluster`: a launch in clusters of two blocks (one launch attribute);
//! - `launch_all_settings`: the same with PDL, a cooperative grid, the SPREAD policy, a
//!   preferred cluster and a priority (six attributes and a cached driver-version check).
//!
//! The difference to `checks_only` is what a launch adds beyond the argument checks;
//! `benches/gpu_launch_count.sh` counts the same in instructions.
//!
//! ```text
//! cargo bench --features criterion --bench gpu_launch
//! ```

mod support;

use std::ffi::c_int;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall_runtime::abi::{TVMFFIAny, TVMFFIValue, type_index};

fn bench(c: &mut Criterion) {
    let fake_path = std::env::current_exe()
        .expect("bench path")
        .with_file_name("libsafecall_fake_cuda.so");
    // SAFETY: set before any generated code runs (nothing else runs yet).
    unsafe { std::env::set_var("SAFECALL_LIBCUDA_PATH", &fake_path) };
    // SAFETY: the double's initializers do nothing.
    let fake = unsafe { libloading::Library::new(&fake_path) }.expect("the driver double");
    // SAFETY: the double exports these functions with these types.
    let (quiet, set_context) = unsafe {
        (
            *fake
                .get::<extern "C" fn(c_int)>(b"safecall_fake_cuda_quiet")
                .unwrap(),
            *fake
                .get::<extern "C" fn(c_int)>(b"safecall_fake_cuda_set_user_context")
                .unwrap(),
        )
    };
    quiet(1);

    let text = std::fs::read_to_string(support::root().join("benches/ir/gpu_launch.scir"))
        .expect("read the IR");
    let module = safecall::ir::parse::parse(&text).expect("valid IR");
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    let jit = unsafe { safecall::jit::compile(&module, &Default::default()) }.expect("compile");
    let [checks, empty, four, cluster, all] = [
        "checks_only",
        "launch_empty",
        "launch_four",
        "launch_cluster",
        "launch_all_settings",
    ]
    .map(|f| jit.safe_call(f).expect("defined"));
    let device = [TVMFFIAny {
        type_index: type_index::INT,
        small_str_len: 0,
        value: TVMFFIValue { v_int64: 0 },
    }];
    // Find the driver and load the binary once, outside the measurements.
    support::call(empty, &device);
    support::call(four, &device);
    support::call(cluster, &device);
    support::call(all, &device);

    let mut group = c.benchmark_group("gpu_launch");
    set_context(0);
    for (name, f) in [
        ("checks_only", checks),
        ("launch_current_context", empty),
        ("launch_four_args", four),
        ("launch_cluster", cluster),
        ("launch_all_settings", all),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| support::call(black_box(f), black_box(&device)))
        });
    }
    set_context(-1);
    group.bench_function("launch_primary_switch", |b| {
        b.iter(|| support::call(black_box(empty), black_box(&device)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
