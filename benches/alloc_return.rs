//! The cost of returning an allocated tensor (issue 28): `alloc_add_one` (allocates its
//! output through `TVMFFIEnvTensorAlloc` with the runtime's CPU allocator installed, writes
//! x + 1 into it and returns it; the caller drops it) against `into_add_one` (the same loop
//! into a passed-in tensor), and the allocator's own cost (`TVMFFIEnvTensorAlloc` of the same
//! prototype and the release of the tensor, called directly), all in the same run, for
//! n = 4, on the JIT (Cranelift) and a shared library. The target: alloc_add_one costs at
//! most into_add_one + the allocator alone + 50 ns.
//!
//! ```text
//! cargo bench --features criterion --bench alloc_return
//! ```

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall_runtime::abi::{
    DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFISafeCallType, type_index,
};

const SOURCE: &str = r#"
module alloc_return;

/// y = x + 1 in a new tensor.
fn alloc_add_one(x: tensor[(n,), float32, device=cpu]) -> tensor {
    let y = empty((n,), float32, x.device);
    for i in 0..n {
        store<f32>(offset(y.data, i * 4), load<f32>(offset(x.data, i * 4)) + 1.0f32);
    }
    return y;
}

/// y = x + 1 into a passed-in tensor.
fn into_add_one(x: tensor[(n,), float32, device=cpu], y: tensor[(n,), float32, device=cpu]) {
    for i in 0..n {
        store<f32>(offset(y.data, i * 4), load<f32>(offset(x.data, i * 4)) + 1.0f32);
    }
}
"#;

/// Calls `f` and releases its result.
#[inline(always)]
fn call_and_drop(f: TVMFFISafeCallType, args: &[TVMFFIAny]) {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: arguments match the function's parameters; they outlive the call.
    let rc = unsafe {
        f(
            std::ptr::null_mut(),
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    assert_eq!(rc, 0);
    if result.type_index >= type_index::STATIC_OBJECT_BEGIN {
        // SAFETY: an owned object result.
        unsafe { safecall_runtime::capi::TVMFFIObjectDecRef(result.value.v_obj.cast()) };
    }
}

fn bench(c: &mut Criterion) {
    // SAFETY: installs a valid allocator on this thread.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            Some(safecall_runtime::tensor::cpu_allocator),
            0,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let module = safecall::ir::parse::parse(SOURCE).expect("parses");
    // SAFETY: the benchmark's IR dereferences only the tensors it checks or allocates.
    let jit = unsafe {
        safecall::jit::compile(
            &module,
            &safecall::jit::JitOptions {
                first_tier: safecall::jit::FirstTier::Backend,
                ..Default::default()
            },
        )
    }
    .expect("JIT");
    let dir = support::scratch_dir("alloc-return");
    let so = dir.join("alloc_return.so");
    safecall::build_shared_library(&module, &so, &Default::default(), &Default::default())
        .expect("build");
    let alloc_so: support::Loaded = support::load(&so, "__tvm_ffi_alloc_add_one");
    let into_so: support::Loaded = support::load(&so, "__tvm_ffi_into_add_one");

    let mut x = support::Vector::new(4);
    let mut y = support::Vector::new(4);
    let one = [x.arg()];
    let two = [x.arg(), y.arg()];
    let mut shape = [4i64];
    let mut prototype = DLTensor {
        data: std::ptr::null_mut(),
        device: DLDevice {
            device_type: 1,
            device_id: 0,
        },
        ndim: 1,
        dtype: DLDataType {
            code: 2,
            bits: 32,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let mut group = c.benchmark_group("alloc_return_n4");
    for (label, alloc, into) in [
        (
            "jit",
            jit.safe_call("alloc_add_one").unwrap(),
            jit.safe_call("into_add_one").unwrap(),
        ),
        ("so", alloc_so.f, into_so.f),
    ] {
        group.bench_function(format!("{label}_allocates_and_returns"), |b| {
            b.iter(|| call_and_drop(black_box(alloc), black_box(&one)))
        });
        group.bench_function(format!("{label}_writes_into_passed_tensor"), |b| {
            b.iter(|| call_and_drop(black_box(into), black_box(&two)))
        });
    }
    group.bench_function("allocator_alone", |b| {
        b.iter(|| {
            let mut out = std::ptr::null_mut();
            // SAFETY: a valid prototype and out slot.
            let rc = unsafe {
                safecall_runtime::capi::TVMFFIEnvTensorAlloc(black_box(&mut prototype), &mut out)
            };
            assert_eq!(rc, 0);
            // SAFETY: the fresh tensor's one reference.
            unsafe { safecall_runtime::capi::TVMFFIObjectDecRef(out) };
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
