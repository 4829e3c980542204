//! A JIT tier-up of a module that launches kernels: the recompiled code uses the first tier's
//! loaded GPU module, kernel handles and caches, so the driver (or HIP runtime) sees no second
//! load, only the launches, and the launches are the same as before the switch.

use std::time::{Duration, Instant};

use safecall::jit::{self, FirstTier, JitOptions, TierUp};

use crate::hip_double::{hip, rocm_tensor};
use crate::support::{Arg, call, call_err, cuda_tensor, fake};

/// The baseline compiler first, Cranelift's tier-up when asked for.
fn on_request() -> JitOptions {
    JitOptions {
        first_tier: FirstTier::Baseline,
        tier_up: TierUp::OnRequest,
        ..Default::default()
    }
}

/// Starts `jit`'s tier-up and waits (at most two minutes) for its functions to switch.
fn tier_up(jit: &jit::JitModule) {
    assert!(jit.code().request_tier_up(), "a tier-up was pending");
    let start = Instant::now();
    while !jit.tiered_up() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the tier-up never finished"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_cuda_launch_after_a_tier_up_reuses_the_loaded_kernel() {
    fake().reset();
    // SAFETY: the test's own IR: it dereferences only the tensors it checks and launches the
    // kernel of its PTX with that kernel's parameters.
    let jit = unsafe { jit::compile(&crate::support::module(), &on_request()) }.expect("JIT");
    let f = jit.function("add_one").expect("defined").clone();
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = cuda_tensor(0x7000_0000, 1, &mut sx);
    let y = cuda_tensor(0x7100_0000, 1, &mut sy);
    let args = [Arg::Tensor(&x), Arg::Tensor(&y)];
    call(&f, &args).unwrap();
    let before = fake().launches();
    assert_eq!(
        fake()
            .calls()
            .iter()
            .filter(|c| *c == "cuLibraryLoadData")
            .count(),
        1
    );

    tier_up(&jit);
    fake().reset();
    call(&f, &args).unwrap();
    assert_eq!(
        fake().calls(),
        [
            "cuCtxGetCurrent",
            "cuCtxSetCurrent",
            "cuLaunchKernelEx",
            "cuCtxSetCurrent"
        ],
        "the upper tier launches with the first tier's kernel: nothing loaded again"
    );
    assert_eq!(
        fake().launches(),
        before,
        "the same launch as the first tier's"
    );
    // A bad argument is refused by the upper tier's checks as by the first tier's.
    let mut short = [999i64];
    let bad = cuda_tensor(0x7100_0000, 1, &mut short);
    let err = call_err(&f, &[Arg::Tensor(&x), Arg::Tensor(&bad)]);
    assert!(err.starts_with("ValueError: "), "{err}");
}

#[test]
fn a_hip_launch_after_a_tier_up_reuses_the_loaded_module() {
    hip().reset();
    // SAFETY: the test's own IR: it dereferences only the tensors it checks and launches the
    // kernel of its code object with that kernel's parameters.
    let jit = unsafe { jit::compile(&crate::hip_launch::module(), &on_request()) }.expect("JIT");
    let f = jit.function("add_one").expect("defined").clone();
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = rocm_tensor(0x7000_0000, 1, &mut sx);
    let y = rocm_tensor(0x7100_0000, 1, &mut sy);
    let args = [Arg::Tensor(&x), Arg::Tensor(&y)];
    call(&f, &args).unwrap();
    let before = hip().launches();
    assert_eq!(
        hip()
            .calls()
            .iter()
            .filter(|c| *c == "hipModuleLoadData")
            .count(),
        1
    );

    tier_up(&jit);
    hip().reset();
    call(&f, &args).unwrap();
    let calls = hip().calls();
    assert!(
        !calls
            .iter()
            .any(|c| c == "hipModuleLoadData" || c == "hipModuleGetFunction"),
        "the upper tier launches with the first tier's module: {calls:?}"
    );
    assert_eq!(
        hip().launches(),
        before,
        "the same launch as the first tier's"
    );
}
