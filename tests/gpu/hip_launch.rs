//! Launches of AMDGPU kernels (`format hsaco`) against the HIP runtime test double, on every
//! delivery path (JIT, `.so`, `.o`) and backend: what reaches the runtime (device, kernel,
//! grid, block, shared memory, stream, argument bytes), the calls made once per process, once
//! per device and on each launch, and every error with its exact message.

use std::path::Path;

use crate::hip_double::{hip, rocm_tensor};
use crate::support::{Arg, Delivery, build, call, call_err, deliveries, hex};
use serde_json::json;

/// The module of `tests/hip/launch.scir`.
pub(crate) fn module() -> safecall::ir::Module {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hip");
    let text = std::fs::read_to_string(dir.join("launch.scir")).expect("read launch.scir");
    safecall::ir::parse::parse_in_dir(&text, Some(&dir))
        .map(|(m, _)| m)
        .unwrap_or_else(|e| panic!("{}", e.render("launch.scir", &text)))
}

/// Runs `test` on a fresh build of the launch module for every delivery path, with this
/// thread's runtime state reset first.
pub(crate) fn each(test: impl Fn(Delivery, &crate::support::Built)) {
    let m = module();
    for how in deliveries() {
        hip().reset();
        let built = build(&m, how);
        test(how, &built);
    }
}

/// `configured`'s arguments: grid, block, shared memory, device, stream, cooperative.
fn configured_args(
    g: (i64, i64),
    b: (i64, i64, i64),
    smem: i64,
    dev: i64,
    coop: bool,
) -> Vec<Arg<'static>> {
    vec![
        Arg::Ptr(0xdead_0000),
        Arg::Int(g.0),
        Arg::Int(g.1),
        Arg::Int(b.0),
        Arg::Int(b.1),
        Arg::Int(b.2),
        Arg::Int(smem),
        Arg::Int(dev),
        Arg::Ptr(0x5000),
        Arg::Float(1.5),
        Arg::Bool(true),
        Arg::Float(-2.25),
        Arg::Int(-3),
        Arg::Bool(coop),
    ]
}

#[test]
fn add_one_loads_its_module_per_device_and_launches_on_the_tensors_device() {
    each(|how, built| {
        let f = built.function("add_one");
        let (mut sx, mut sy) = ([1000i64], [1000i64]);
        let x = rocm_tensor(0x7000_0000, 1, &mut sx);
        let y = rocm_tensor(0x7100_0000, 1, &mut sy);
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        let first = hip().calls();
        assert_eq!(
            first.iter().filter(|c| *c == "hipInit").count(),
            1,
            "{how:?}"
        );
        let log = hip().log();
        let loads: Vec<_> = log
            .iter()
            .filter(|r| r["call"] == "hipModuleLoadData")
            .collect();
        assert_eq!(loads.len(), 1, "{how:?}: {first:?}");
        assert_eq!(
            loads[0]["device"], 1,
            "{how:?}: loaded on the launch device"
        );
        let lookups = first
            .iter()
            .filter(|c| *c == "hipModuleGetFunction")
            .count();
        assert_eq!(lookups, 7, "{how:?}: every kernel the binary lists");
        let launches = hip().launches();
        assert_eq!(launches.len(), 1, "{how:?}");
        let l = &launches[0];
        assert_eq!(l["call"], "hipModuleLaunchKernel");
        assert_eq!(l["kernel"], "add_one");
        assert_eq!(l["device"], 1, "{how:?}");
        assert_eq!(l["grid"], json!([4, 1, 1]));
        assert_eq!(l["block"], json!([256, 1, 1]));
        assert_eq!(l["shared_mem"], 0);
        assert_eq!(l["stream"], 0, "the environment stream (none set)");
        assert_eq!(l["extra"], false);
        assert_eq!(
            l["args"],
            json!([
                hex(&0x7000_0000u64.to_le_bytes()),
                hex(&0x7100_0000u64.to_le_bytes()),
                hex(&1000i32.to_le_bytes())
            ])
        );
        assert_eq!(
            hip().current_device(),
            0,
            "{how:?}: the caller's device is restored"
        );

        // Steady state on device 1: no loading; switch to device 1 and back.
        hip().reset();
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
        assert_eq!(
            hip().calls(),
            [
                "hipGetDevice",
                "hipSetDevice",
                "hipModuleLaunchKernel",
                "hipSetDevice"
            ],
            "{how:?}"
        );

        // Device 0, current: its own module, loaded once, and no switch.
        let x0 = rocm_tensor(0x1000, 0, &mut sx);
        let y0 = rocm_tensor(0x2000, 0, &mut sy);
        hip().reset();
        call(&f, &[Arg::Tensor(&x0), Arg::Tensor(&y0)]).unwrap();
        let loads: Vec<_> = hip()
            .log()
            .into_iter()
            .filter(|r| r["call"] == "hipModuleLoadData")
            .collect();
        assert_eq!(loads.len(), 1, "{how:?}");
        assert_eq!(loads[0]["device"], 0);
        hip().reset();
        call(&f, &[Arg::Tensor(&x0), Arg::Tensor(&y0)]).unwrap();
        assert_eq!(
            hip().calls(),
            ["hipGetDevice", "hipModuleLaunchKernel"],
            "{how:?}"
        );
        assert_eq!(hip().launches()[0]["device"], 0);
    });
}

#[test]
fn every_setting_and_argument_width_reaches_the_runtime() {
    each(|how, built| {
        let f = built.function("configured");
        call(&f, &configured_args((7, 3), (64, 2, 2), 4096, 1, false)).unwrap();
        let l = &hip().launches()[0];
        assert_eq!(l["call"], "hipModuleLaunchKernel", "{how:?}");
        assert_eq!(l["kernel"], "scale");
        assert_eq!(l["device"], 1);
        assert_eq!(l["grid"], json!([7, 3, 1]));
        assert_eq!(l["block"], json!([64, 2, 2]));
        assert_eq!(l["shared_mem"], 4096);
        assert_eq!(l["stream"], 0x5000);
        assert_eq!(
            l["args"],
            json!([
                hex(&0xdead_0000u64.to_le_bytes()),
                hex(&1.5f32.to_le_bytes()),
                "01",
                hex(&(-2.25f64).to_le_bytes()),
                hex(&(-3i16).to_le_bytes()),
            ])
        );
        hip().reset();
        call(&f, &configured_args((2, 1), (64, 1, 1), 0, 0, true)).unwrap();
        let l = &hip().launches()[0];
        assert_eq!(l["call"], "hipModuleLaunchCooperativeKernel", "{how:?}");
        assert_eq!(l["device"], 0);
    });
}

/// `clustered`'s arguments: grid x, cluster x, cooperative, device (stream 0x5000).
fn clustered_args(g: i64, c: i64, coop: bool, dev: i64) -> Vec<Arg<'static>> {
    vec![
        Arg::Ptr(0xdead_0000),
        Arg::Int(g),
        Arg::Int(c),
        Arg::Bool(coop),
        Arg::Ptr(0x5000),
        Arg::Int(dev),
    ]
}

#[test]
fn a_cluster_launches_through_hip_drv_launch_kernel_ex_with_tritons_attributes() {
    each(|how, built| {
        let f = built.function("clustered");
        call(&f, &clustered_args(8, 2, false, 1)).unwrap();
        let l = &hip().launches()[0];
        assert_eq!(l["call"], "hipDrvLaunchKernelEx", "{how:?}");
        assert_eq!(l["kernel"], "scale");
        assert_eq!(l["device"], 1);
        assert_eq!(l["grid"], json!([8, 2, 1]));
        assert_eq!(l["block"], json!([64, 1, 1]));
        assert_eq!(l["shared_mem"], 256);
        assert_eq!(l["stream"], 0x5000);
        assert_eq!(l["extra"], false);
        // The cluster's dimensions, then the cooperative flag, as Triton's AMD launcher.
        assert_eq!(l["attrs"], json!([4, 2]));
        assert_eq!(l["cluster"], json!([2, 1, 1]));
        assert_eq!(l["cooperative"], 0);
        assert_eq!(
            l["args"],
            json!([
                hex(&0xdead_0000u64.to_le_bytes()),
                hex(&0.5f32.to_le_bytes()),
                "00",
                hex(&2.0f64.to_le_bytes()),
                hex(&7i16.to_le_bytes()),
            ])
        );
        assert_eq!(hip().current_device(), 0, "{how:?}: restored");

        hip().reset();
        call(&f, &clustered_args(4, 4, true, 0)).unwrap();
        let l = &hip().launches()[0];
        assert_eq!(l["call"], "hipDrvLaunchKernelEx", "{how:?}");
        assert_eq!(l["cluster"], json!([4, 1, 1]));
        assert_eq!(l["cooperative"], 1);

        hip().reset();
        hip().fail("hipDrvLaunchKernelEx", 1);
        let err = call_err(&f, &clustered_args(8, 2, false, 1));
        assert!(
            err.starts_with(
                "RuntimeError: clustered: launch of kernels.scale failed on HIP device 1 with \
                 grid (8, 2, 1), block (64, 1, 1), cluster (2, 1, 1), shared_mem 256 (the \
                 kernel's static LDS: 0 bytes; the device's LDS per block: 65536 bytes): \
                 hipDrvLaunchKernelEx returned hipErrorInvalidValue (error 1: "
            ),
            "{how:?}: {err}"
        );
        assert_eq!(
            hip().current_device(),
            0,
            "{how:?}: restored after the failure"
        );

        // The cooperative attribute is always passed: 0 without the setting, 1 with `true`.
        hip().reset();
        call(&built.function("clustered_static"), &[Arg::Ptr(0x10)]).unwrap();
        let got: Vec<_> = hip()
            .launches()
            .iter()
            .map(|l| {
                (
                    l["call"].clone(),
                    l["cluster"].clone(),
                    l["cooperative"].clone(),
                )
            })
            .collect();
        let ex = json!("hipDrvLaunchKernelEx");
        assert_eq!(
            got,
            [
                (ex.clone(), json!([2, 1, 1]), json!(0)),
                (ex, json!([4, 1, 1]), json!(1)),
            ],
            "{how:?}"
        );
    });
}

#[test]
fn half_arguments_reach_the_runtime_as_two_bytes() {
    each(|how, built| {
        let f = built.function("half_args");
        call(&f, &[Arg::Float(1.0), Arg::Float(-2.0), Arg::Float(0.5)]).unwrap();
        let l = &hip().launches()[0];
        assert_eq!(
            l["args"],
            json!(["003c", "00c0", "01", "0038"]),
            "{how:?}: f16 1.0, bf16 -2.0, true, f16 0.5"
        );
    });
}

#[test]
fn bad_grids_blocks_and_devices_are_value_errors_before_any_runtime_call() {
    each(|how, built| {
        let f = built.function("configured");
        let cases = [
            (
                configured_args((0, 1), (1, 1, 1), 0, 0, false),
                "ValueError: configured: launch of kernels.scale: grid is (0, 1, 1), but grid[0] must be 1 to 4294967295",
            ),
            (
                configured_args((1, 1), (1, 1, 2048), 0, 0, false),
                "ValueError: configured: launch of kernels.scale: block is (1, 1, 2048), but block[2] must be 1 to 1024",
            ),
            (
                configured_args((1, 1), (64, 32, 1), 0, 0, false),
                "ValueError: configured: launch of kernels.scale: block is (64, 32, 1), which is 2048 threads; a block has at most 1024",
            ),
            (
                configured_args((1 << 31, 1), (2, 1, 1), 0, 0, false),
                "ValueError: configured: launch of kernels.scale: grid (2147483648, 1, 1) with block (2, 1, 1) has 4294967296 threads in dimension 0; HIP allows at most 4294967295",
            ),
            (
                configured_args((1, 1), (1, 1, 1), 0, 64, false),
                "ValueError: configured: launch of kernels.scale: device is 64, but HIP kernels launch on devices 0 to 63",
            ),
            (
                configured_args((1, 1), (1, 1, 1), 0, -1, false),
                "ValueError: configured: launch of kernels.scale: device is -1, expected a HIP device ordinal (0 to 2147483647)",
            ),
        ];
        for (args, message) in cases {
            hip().reset();
            let err = call_err(&f, &args);
            assert_eq!(err, message, "{how:?}");
            assert!(hip().calls().is_empty(), "{how:?}: {message}");
        }
    });
}

#[test]
fn runtime_failures_are_runtime_errors_with_hips_words() {
    each(|how, built| {
        let f = built.function("configured");
        // The first launch loads on device 1: a failed load names the binary and device,
        // and the next call loads again.
        hip().fail("hipModuleLoadData", 200);
        let err = call_err(&f, &configured_args((1, 1), (64, 1, 1), 0, 1, false));
        assert!(
            err.starts_with(
                "RuntimeError: cannot load device binary 'kernels' (hsaco, 15880 bytes) on HIP \
                 device 1: hipModuleLoadData returned hipErrorInvalidImage (error 200: "
            ),
            "{how:?}: {err}"
        );
        assert_eq!(
            hip().current_device(),
            0,
            "{how:?}: restored after the failure"
        );
        hip().reset();
        call(&f, &configured_args((1, 1), (64, 1, 1), 0, 1, false)).unwrap();

        hip().reset();
        hip().fail("hipModuleLaunchKernel", 1);
        let err = call_err(&f, &configured_args((3, 1), (64, 1, 1), 128, 1, false));
        assert!(
            err.starts_with(
                "RuntimeError: configured: launch of kernels.scale failed on HIP device 1 with \
                 grid (3, 1, 1), block (64, 1, 1), shared_mem 128 (the kernel's static LDS: 0 \
                 bytes; the device's LDS per block: 65536 bytes): hipModuleLaunchKernel \
                 returned hipErrorInvalidValue (error 1: "
            ),
            "{how:?}: {err}"
        );
        assert_eq!(
            hip().current_device(),
            0,
            "{how:?}: restored after the failure"
        );

        // A device the runtime does not have (the double has two).
        hip().reset();
        let err = call_err(&f, &configured_args((1, 1), (64, 1, 1), 0, 5, false));
        assert!(
            err.starts_with(
                "RuntimeError: cannot load device binary 'kernels' (hsaco, 15880 bytes): HIP \
                 device 5 is not available: hipSetDevice returned hipErrorInvalidDevice (error 101: "
            ),
            "{how:?}: {err}"
        );
        assert_eq!(hip().current_device(), 0, "{how:?}");
    });
}

#[test]
fn too_much_shared_memory_is_reported_with_the_limits() {
    each(|how, built| {
        let f = built.function("lds");
        call(&f, &[Arg::Ptr(0x10), Arg::Int(64 * 1024 - 1024)]).unwrap();
        let err = call_err(&f, &[Arg::Ptr(0x10), Arg::Int(64 * 1024)]);
        assert!(
            err.starts_with(
                "RuntimeError: lds: launch of kernels.staticky failed on HIP device 0 with grid \
                 (1, 1, 1), block (64, 1, 1), shared_mem 65536 (the kernel's static LDS: 1024 \
                 bytes; the device's LDS per block: 65536 bytes): hipModuleLaunchKernel returned \
                 hipErrorInvalidValue"
            ),
            "{how:?}: {err}"
        );
    });
}

#[test]
fn a_bad_image_and_a_failed_start_are_reported_and_retried() {
    each(|how, built| {
        let f = built.function("bad");
        let err = call_err(&f, &[Arg::Int(0)]);
        assert!(
            err.starts_with(
                "RuntimeError: cannot load device binary 'broken' (hsaco, 18 bytes) on HIP \
                 device 0: hipModuleLoadData returned hipErrorInvalidImage"
            ),
            "{how:?}: {err}"
        );
    });
    let m = module();
    for how in deliveries() {
        hip().reset();
        let built = build(&m, how);
        let f = built.function("cooperative");
        hip().fail("hipInit", 100);
        let err = call_err(&f, &[Arg::Int(4)]);
        assert!(
            err.starts_with(
                "RuntimeError: cannot launch HIP kernels: hipInit failed: hipErrorNoDevice (error 100: "
            ),
            "{how:?}: {err}"
        );
        hip().reset();
        call(&f, &[Arg::Int(4)]).unwrap();
        assert_eq!(
            hip().launches()[0]["call"],
            "hipModuleLaunchCooperativeKernel"
        );
    }
}

#[test]
fn threads_launch_concurrently_on_their_own_devices() {
    let m = module();
    for how in deliveries() {
        let built = build(&m, how);
        let f = built.function("add_one");
        std::thread::scope(|s| {
            for t in 0..4 {
                let f = f.clone();
                s.spawn(move || {
                    hip().reset();
                    let dev = t % 2;
                    let (mut sx, mut sy) = ([256i64 * (t as i64 + 1)], [256i64 * (t as i64 + 1)]);
                    let x = rocm_tensor(0x1000 * (t + 1), dev as i32, &mut sx);
                    let y = rocm_tensor(0x2000 * (t + 1), dev as i32, &mut sy);
                    for _ in 0..50 {
                        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y)]).unwrap();
                    }
                    let launches = hip().launches();
                    assert_eq!(launches.len(), 50, "{how:?}");
                    assert!(
                        launches
                            .iter()
                            .all(|l| l["device"] == dev && l["grid"] == json!([t + 1, 1, 1]))
                    );
                    assert_eq!(hip().current_device(), 0);
                });
            }
        });
    }
}
