//! GPU kernel launches (`launch` statements) against the CUDA driver test double, on every
//! delivery path (JIT, `.so`, `.o`) and backend: what reaches the driver (context, kernel,
//! grid, block, cluster, shared memory, stream, argument bytes), the driver calls made once
//! and on each launch, and every error with its exact message.

use crate::support::{
    Arg, Delivery, build, call, call_err, call_err_full, cuda_tensor, deliveries, fake, hex, module,
};
use serde_json::json;

/// Runs `test` on a fresh build of the launch module for every delivery path, with this
/// thread's driver state reset first.
pub(crate) fn each(test: impl Fn(Delivery, &crate::support::Built)) {
    let m = module();
    for how in deliveries() {
        fake().reset();
        let built = build(&m, how);
        test(how, &built);
    }
}

#[test]
fn add_one_launches_on_the_primary_context_of_the_tensors_device() {
    each(|how, built| {
        let f = built.function("add_one");
        let (mut sx, mut sy) = ([1000i64], [1000i64]);
        let x = cuda_tensor(0x7000_0000, 1, &mut sx);
        let y = cuda_tensor(0x7100_0000, 1, &mut sy);
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        let first = fake().calls();
        // Once per module: the driver's entry points, cuInit, the image and its kernels.
        assert_eq!(
            first.iter().filter(|c| *c == "cuGetProcAddress_v2").count(),
            19,
            "{how:?}: {first:?}"
        );
        for once in ["cuInit", "cuLibraryLoadData", "cuDevicePrimaryCtxRetain"] {
            assert_eq!(
                first.iter().filter(|c| *c == once).count(),
                1,
                "{how:?}: {once}"
            );
        }
        let log = fake().log();
        let load = log
            .iter()
            .find(|r| r["call"] == "cuLibraryLoadData")
            .unwrap();
        assert_eq!(load["options"], 0);
        assert!(
            load["image"]
                .as_str()
                .unwrap()
                .starts_with(".visible .entry add_one")
        );
        let launches = fake().launches();
        assert_eq!(launches.len(), 1, "{how:?}");
        let l = &launches[0];
        assert_eq!(l["kernel"], "add_one");
        assert_eq!(l["ctx"], "primary:1", "{how:?}: no context was current");
        assert_eq!(l["grid"], json!([4, 1, 1]));
        assert_eq!(l["block"], json!([256, 1, 1]));
        assert_eq!(l["cluster"], json!(null));
        assert_eq!(l["shared_mem"], 0);
        assert_eq!(l["stream"], 0, "the environment stream (none set)");
        assert_eq!(
            l["args"],
            json!([
                hex(&0x7000_0000u64.to_le_bytes()),
                hex(&0x7100_0000u64.to_le_bytes()),
                hex(&1000u32.to_le_bytes())
            ])
        );
        assert_eq!(
            fake().current(),
            "none",
            "{how:?}: the previous context is restored"
        );

        // Steady state: no loading, no retain, the device handle cached; switch to the
        // primary context and back.
        fake().reset();
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        assert_eq!(
            fake().calls(),
            [
                "cuCtxGetCurrent",
                "cuCtxSetCurrent",
                "cuLaunchKernelEx",
                "cuCtxSetCurrent"
            ],
            "{how:?}"
        );
    });
}

/// The calls `f` made to the double after the first `skip` of this thread's records.
fn calls_after(skip: usize) -> Vec<String> {
    fake().calls()[skip..].to_vec()
}

#[test]
fn an_active_primary_context_is_learned_once_and_then_recognised() {
    each(|how, built| {
        let f = built.function("add_one");
        let (mut sx, mut sy) = ([10i64], [10i64]);
        let x = cuda_tensor(0x1000, 1, &mut sx);
        let y = cuda_tensor(0x2000, 1, &mut sy);
        // Device 1's primary context current, as PyTorch leaves it: the first launch asks for
        // its device, finds the primary context active and retains it into the cache.
        fake().set_primary_context(1);
        let skip = fake().calls().len();
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        let once = [
            "cuGetProcAddress_v2",
            "cuInit",
            "cuLibraryLoadData",
            "cuLibraryGetKernel",
        ];
        let first: Vec<String> = calls_after(skip)
            .into_iter()
            .filter(|c| !once.contains(&c.as_str()))
            .collect();
        assert_eq!(
            first,
            [
                "cuDeviceGet",
                "cuCtxGetCurrent",
                "cuCtxGetDevice",
                "cuDevicePrimaryCtxGetState",
                "cuDevicePrimaryCtxRetain",
                "cuLaunchKernelEx"
            ],
            "{how:?}"
        );
        // Then each launch is two driver calls: the current context is the known primary one.
        let skip = fake().calls().len();
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        assert_eq!(
            calls_after(skip),
            ["cuCtxGetCurrent", "cuLaunchKernelEx"],
            "{how:?}"
        );
        assert_eq!(fake().launches().last().unwrap()["ctx"], "primary:1");
    });
}

#[test]
fn a_user_context_beside_an_inactive_primary_is_not_made_to_create_one() {
    each(|how, built| {
        let f = built.function("add_one");
        let (mut sx, mut sy) = ([10i64], [10i64]);
        let x = cuda_tensor(0x1000, 0, &mut sx);
        let y = cuda_tensor(0x2000, 0, &mut sy);
        fake().set_user_context(0);
        for round in 0..2 {
            let skip = fake().calls().len();
            call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
            let calls = calls_after(skip);
            // Asked once whether the primary context is active; never retained.
            let asked = calls
                .iter()
                .filter(|c| *c == "cuDevicePrimaryCtxGetState")
                .count();
            assert_eq!(asked, usize::from(round == 0), "{how:?}: {calls:?}");
            assert!(
                !calls.contains(&"cuDevicePrimaryCtxRetain".to_owned()),
                "{how:?}: {calls:?}"
            );
            assert_eq!(fake().launches().last().unwrap()["ctx"], "user:0");
        }
    });
}

#[test]
fn a_current_context_on_the_launch_device_is_kept() {
    each(|how, built| {
        let f = built.function("add_one");
        let (mut sx, mut sy) = ([10i64], [10i64]);
        let x = cuda_tensor(0x1000, 0, &mut sx);
        let y = cuda_tensor(0x2000, 0, &mut sy);
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        fake().reset();
        fake().set_user_context(0);
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        assert_eq!(
            fake().calls(),
            ["cuCtxGetCurrent", "cuCtxGetDevice", "cuLaunchKernelEx"],
            "{how:?}"
        );
        assert_eq!(fake().launches()[0]["ctx"], "user:0");
        assert_eq!(fake().current(), "user:0");

        // A context of another device is replaced for the launch, then restored.
        fake().reset();
        fake().set_user_context(1);
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        assert_eq!(fake().launches()[0]["ctx"], "primary:0", "{how:?}");
        assert_eq!(fake().current(), "user:1", "{how:?}");
    });
}

/// Arguments of `configured`: grid (gx, gy), block (bx, by, bz), shared memory, device.
fn configured_args(g: (i64, i64), b: (i64, i64, i64), smem: i64, dev: i64) -> Vec<Arg<'static>> {
    vec![
        Arg::Ptr(0xdead_beef),
        Arg::Int(g.0),
        Arg::Int(g.1),
        Arg::Int(b.0),
        Arg::Int(b.1),
        Arg::Int(b.2),
        Arg::Int(smem),
        Arg::Int(dev),
        Arg::Ptr(0x5eed),
        Arg::Float(1.5),
        Arg::Bool(true),
        Arg::Float(-2.25),
        Arg::Int(0xabcd),
    ]
}

#[test]
fn every_setting_and_argument_width_reaches_the_driver() {
    each(|how, built| {
        let f = built.function("configured");
        call(&f, &configured_args((3, 2), (32, 4, 2), 1024, 1)).unwrap();
        let l = &fake().launches()[0];
        assert_eq!(l["kernel"], "scale");
        assert_eq!(l["grid"], json!([3, 2, 1]), "{how:?}");
        assert_eq!(l["block"], json!([32, 4, 2]));
        assert_eq!(l["shared_mem"], 1024);
        assert_eq!(l["stream"], 0x5eed);
        assert_eq!(l["ctx"], "primary:1");
        assert_eq!(
            l["args"],
            json!([
                hex(&0xdead_beefu64.to_le_bytes()),
                hex(&1.5f32.to_le_bytes()),
                "01",
                hex(&(-2.25f64).to_le_bytes()),
                hex(&0xabcdu16.to_le_bytes())
            ]),
            "{how:?}"
        );
    });
}

#[test]
fn half_arguments_reach_the_driver_as_two_bytes_rounded_to_nearest_even() {
    each(|how, built| {
        let f = built.function("half_args");
        // 0.1 rounds to f16 0x2e66 and to bf16 0x3dcd (truncation would give 0x3dcc);
        // 1 + 2^-8 + 2^-20 rounds up to bf16 0x3f81 (Triton truncates it to 0x3f80);
        // 65520 is the halfway point above the largest f16, so it rounds to infinity.
        for (h, g, z, want) in [
            (0.1, 0.1, 65520.0, ["662e", "cd3d", "01", "007c"]),
            (
                -0.0,
                1.0 + 2f64.powi(-8) + 2f64.powi(-20),
                f64::NAN,
                ["0080", "813f", "01", "007e"],
            ),
        ] {
            fake().reset();
            call(&f, &[Arg::Float(h), Arg::Float(g), Arg::Float(z)]).unwrap();
            let l = &fake().launches()[0];
            assert_eq!(l["kernel"], "halves");
            assert_eq!(l["args"], json!(want), "{how:?} ({h}, {g}, {z})");
        }
    });
}

#[test]
fn large_dynamic_shared_memory_is_allowed_once_per_kernel_and_device() {
    each(|how, built| {
        let f = built.function("configured");
        call(&f, &configured_args((1, 1), (1, 1, 1), 100_000, 0)).unwrap();
        call(&f, &configured_args((1, 1), (1, 1, 1), 90_000, 0)).unwrap();
        call(&f, &configured_args((1, 1), (1, 1, 1), 120_000, 0)).unwrap();
        call(&f, &configured_args((1, 1), (1, 1, 1), 100_000, 1)).unwrap();
        let sets: Vec<(i64, i64)> = fake()
            .log()
            .iter()
            .filter(|r| r["call"] == "cuKernelSetAttribute")
            .map(|r| {
                assert_eq!(r["attr"], 8);
                assert_eq!(r["kernel"], "scale");
                (r["value"].as_i64().unwrap(), r["device"].as_i64().unwrap())
            })
            .collect();
        assert_eq!(
            sets,
            [(100_000, 100), (120_000, 100), (100_000, 101)],
            "{how:?}"
        );
        assert_eq!(fake().launches().len(), 4);
    });
}

#[test]
fn clusters_go_in_a_launch_attribute() {
    each(|how, built| {
        let f = built.function("clustered");
        call(&f, &[Arg::Int(8), Arg::Int(2)]).unwrap();
        let l = &fake().launches()[0];
        assert_eq!(l["cluster"], json!([2, 1, 1]), "{how:?}");
        assert_eq!(l["grid"], json!([8, 1, 1]));
        assert_eq!(
            call_err(&f, &[Arg::Int(8), Arg::Int(0)]),
            "ValueError: clustered: launch of kernels.empty: cluster is (0, 1, 1), but cluster[0] must be at least 1"
        );
    });
}

#[test]
fn bad_grids_blocks_memory_and_devices_are_value_errors_before_any_driver_call() {
    /// Grid, block, shared memory, device, and the message.
    type Case = ((i64, i64), (i64, i64, i64), i64, i64, &'static str);
    let cases: Vec<Case> = vec![
        (
            (0, 1),
            (1, 1, 1),
            0,
            0,
            "grid is (0, 1, 1), but grid[0] must be 1 to 2147483647",
        ),
        (
            (1, 70000),
            (1, 1, 1),
            0,
            0,
            "grid is (1, 70000, 1), but grid[1] must be 1 to 65535",
        ),
        (
            (-5, 1),
            (1, 1, 1),
            0,
            0,
            "grid is (-5, 1, 1), but grid[0] must be 1 to 2147483647",
        ),
        (
            (1, 1),
            (2048, 1, 1),
            0,
            0,
            "block is (2048, 1, 1), but block[0] must be 1 to 1024",
        ),
        (
            (1, 1),
            (1, 1, 65),
            0,
            0,
            "block is (1, 1, 65), but block[2] must be 1 to 64",
        ),
        (
            (1, 1),
            (64, 32, 1),
            0,
            0,
            "block is (64, 32, 1), which is 2048 threads; a block has at most 1024",
        ),
        (
            (1, 1),
            (1, 1, 1),
            -1,
            0,
            "shared_mem is -1 bytes, expected 0 to 4294967295",
        ),
        (
            (1, 1),
            (1, 1, 1),
            0,
            -1,
            "device is -1, expected a CUDA device ordinal (0 to 2147483647)",
        ),
    ];
    each(|how, built| {
        let f = built.function("configured");
        for (grid, block, smem, dev, message) in &cases {
            fake().reset();
            let got = call_err(&f, &configured_args(*grid, *block, *smem, *dev));
            assert_eq!(
                got,
                format!("ValueError: configured: launch of kernels.scale: {message}"),
                "{how:?}"
            );
            assert!(
                fake().log().is_empty(),
                "{how:?}: the driver was called for {message}"
            );
        }
    });
}

#[test]
fn driver_failures_are_runtime_errors_with_the_drivers_words() {
    let prefix = "RuntimeError: configured: launch of kernels.scale";
    each(|how, built| {
        let f = built.function("configured");
        let ok = configured_args((2, 1), (64, 1, 1), 0, 1);
        call(&f, &ok).unwrap();

        fake().fail("cuLaunchKernelEx", 719);
        assert_eq!(
            call_err(&f, &ok),
            format!(
                "{prefix} failed on CUDA device 1 with grid (2, 1, 1), block (64, 1, 1), shared_mem 0: \
                 cuLaunchKernelEx returned CUDA_ERROR_LAUNCH_FAILED (error 719: unspecified launch failure)"
            ),
            "{how:?}"
        );
        assert_eq!(
            fake().current(),
            "none",
            "{how:?}: restored after a failed launch"
        );

        // Messages raised at the launch end with the call context, like every message a host
        // function composes.
        fake().fail("cuLaunchKernelEx", 719);
        assert!(
            call_err_full(&f, &ok).ends_with(
                "error 719: unspecified launch failure)\n  when calling configured(p: ptr, gx: i64, \
                 gy: i32, bx: i32, by: u16, bz: i64, smem: i64, dev: i32, s: ptr, a: f32, flag: bool, \
                 b: f64, h: u16)"
            ),
            "{how:?}"
        );

        fake().fail("cuLaunchKernelEx", 9999);
        assert!(
            call_err(&f, &ok).ends_with(
                "cuLaunchKernelEx returned CUDA_ERROR_UNKNOWN_CODE (error 9999: no description)"
            ),
            "{how:?}"
        );

        assert_eq!(
            call_err(&f, &configured_args((1, 1), (1, 1, 1), 0, 5)),
            format!(
                "{prefix}: CUDA device 5 is not available: cuDeviceGet returned \
                 CUDA_ERROR_INVALID_DEVICE (error 101: invalid device ordinal)"
            )
        );

        fake().fail("cuKernelSetAttribute", 1);
        assert_eq!(
            call_err(&f, &configured_args((1, 1), (1, 1, 1), 60_000, 0)),
            format!(
                "{prefix}: cannot allow 60000 bytes of dynamic shared memory on CUDA device 0: \
                 cuKernelSetAttribute returned CUDA_ERROR_INVALID_VALUE (error 1: invalid argument)"
            )
        );

        fake().fail("cuCtxGetCurrent", 3);
        assert_eq!(
            call_err(&f, &ok),
            format!(
                "{prefix}: cuCtxGetCurrent returned CUDA_ERROR_NOT_INITIALIZED (error 3: initialization error)"
            )
        );

        fake().fail("cuCtxSetCurrent", 201);
        assert_eq!(
            call_err(&f, &ok),
            format!(
                "{prefix}: cannot make the primary context of CUDA device 1 current: \
                 cuCtxSetCurrent returned CUDA_ERROR_INVALID_CONTEXT (error 201: invalid device context)"
            )
        );
        // After every failure the next launch works.
        call(&f, &ok).unwrap();
    });
}

#[test]
fn a_failed_primary_context_retain_is_reported_and_retried() {
    each(|how, built| {
        let f = built.function("twice");
        fake().fail("cuDevicePrimaryCtxRetain", 2);
        assert_eq!(
            call_err(&f, &[Arg::Int(0)]),
            "RuntimeError: twice: launch of kernels.empty: cannot retain the primary context of \
             CUDA device 0: cuDevicePrimaryCtxRetain returned CUDA_ERROR_OUT_OF_MEMORY (error 2: out of memory)",
            "{how:?}"
        );
        assert_eq!(call(&f, &[Arg::Int(0)]).unwrap().cast::<i64>().unwrap(), 7);
        let grids: Vec<_> = fake()
            .launches()
            .iter()
            .map(|l| l["grid"].clone())
            .collect();
        assert_eq!(grids, [json!([1, 1, 1]), json!([2, 1, 1])]);
    });
}

#[test]
fn loading_failures_name_the_binary_and_kernel() {
    each(|how, built| {
        assert_eq!(
            call_err(&built.function("bad_image"), &[]),
            "RuntimeError: cannot load device binary 'broken' (cubin, 18 bytes): cuLibraryLoadData \
             returned CUDA_ERROR_INVALID_IMAGE (error 200: device kernel image is invalid)",
            "{how:?}"
        );
        fake().reset();
        assert_eq!(
            call_err(&built.function("bad_kernel"), &[]),
            "RuntimeError: device binary 'partial' (fatbin, 17 bytes): cannot get kernel 'absent': \
             cuLibraryGetKernel returned CUDA_ERROR_NOT_FOUND (error 500: named symbol not found)",
            "{how:?}"
        );
        assert!(fake().calls().contains(&"cuLibraryUnload".to_owned()));
        assert!(fake().launches().is_empty());
    });
}

#[test]
fn driver_start_up_failures_are_reported_and_retried() {
    each(|how, built| {
        let f = built.function("twice");
        fake().fail("cuInit", 100);
        assert_eq!(
            call_err(&f, &[Arg::Int(0)]),
            "RuntimeError: cannot launch CUDA kernels: cuInit failed: CUDA_ERROR_NO_DEVICE \
             (error 100: no CUDA-capable device is detected)",
            "{how:?}"
        );
        assert!(fake().launches().is_empty());
        call(&f, &[Arg::Int(0)]).unwrap();
        assert_eq!(
            fake().launches().len(),
            2,
            "{how:?}: the driver is found on the next call"
        );
    });
    each(|how, built| {
        fake().hide("cuLaunchKernelEx");
        assert_eq!(
            call_err(&built.function("twice"), &[Arg::Int(0)]),
            "RuntimeError: cannot launch CUDA kernels: the CUDA driver has no `cuLaunchKernelEx` \
             for CUDA 12.0 (cuGetProcAddress_v2 returned 500)",
            "{how:?}"
        );
    });
}

#[test]
fn threads_launch_concurrently_with_their_own_contexts() {
    let m = module();
    for how in deliveries() {
        let built = build(&m, how);
        let f = built.function("twice");
        std::thread::scope(|s| {
            for t in 0..4 {
                let f = f.clone();
                s.spawn(move || {
                    fake().reset();
                    fake().set_user_context(t % 2);
                    for _ in 0..50 {
                        call(&f, &[Arg::Int(i64::from(t % 2))]).unwrap();
                    }
                    let launches = fake().launches();
                    assert_eq!(launches.len(), 100, "{how:?}");
                    let ctx = format!("user:{}", t % 2);
                    assert!(launches.iter().all(|l| l["ctx"] == ctx.as_str()));
                });
            }
        });
    }
}
