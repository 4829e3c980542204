//! The launch settings beyond grid, block and stream, on every delivery path and backend:
//! the attributes that reach `cuLaunchKernelEx` (PDL, cooperative, cluster dimensions and
//! policy, preferred cluster, priority), what is allowed once per kernel and device first
//! (shared memory counting the kernel's static size, non-portable cluster sizes), and the
//! errors for what a driver would refuse.

use serde_json::{Value, json};

use crate::launch::each;
use crate::support::{Arg, call, call_err, fake};

/// `CUlaunchAttributeID` values (cudarc's `CUlaunchAttributeID_enum`).
const COOPERATIVE: u32 = 2;
const CLUSTER_DIMENSION: u32 = 4;
const CLUSTER_SCHEDULING_POLICY: u32 = 5;
const PDL: u32 = 6;
const PRIORITY: u32 = 8;
const PREFERRED_CLUSTER_DIMENSION: u32 = 11;

fn ids(launch: &Value) -> Vec<u32> {
    launch["attrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

/// The recorded calls of `name`, as (attr, value) pairs.
fn set_attributes() -> Vec<(i64, i64, i64)> {
    fake()
        .log()
        .iter()
        .filter(|r| r["call"] == "cuKernelSetAttribute")
        .map(|r| {
            (
                r["attr"].as_i64().unwrap(),
                r["value"].as_i64().unwrap(),
                r["device"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn pdl_and_cooperative_literals_pass_their_attributes() {
    each(|how, built| {
        let f = built.function("pdl_cooperative");
        call(&f, &[Arg::Int(264)]).unwrap();
        let l = &fake().launches()[0];
        assert_eq!(ids(l), [PDL, COOPERATIVE], "{how:?}");
        assert_eq!((&l["pdl"], &l["cooperative"]), (&json!(1), &json!(1)));
        // The double fits 2 blocks per multiprocessor on its 132: one more is too large.
        assert_eq!(
            call_err(&f, &[Arg::Int(265)]),
            "RuntimeError: pdl_cooperative: launch of kernels.empty failed on CUDA device 0 \
             with grid (265, 1, 1), block (128, 1, 1), shared_mem 0: cuLaunchKernelEx returned \
             CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (error 720: too many blocks in \
             cooperative launch)",
            "{how:?}"
        );
    });
}

#[test]
fn flags_decided_at_call_time_pass_their_value_and_false_literals_pass_nothing() {
    each(|how, built| {
        let f = built.function("flags");
        call(&f, &[Arg::Bool(true), Arg::Bool(false)]).unwrap();
        call(&f, &[Arg::Bool(false), Arg::Bool(true)]).unwrap();
        let launches = fake().launches();
        assert_eq!(launches.len(), 4, "{how:?}");
        assert_eq!(ids(&launches[0]), [PDL, COOPERATIVE]);
        assert_eq!(
            (&launches[0]["pdl"], &launches[0]["cooperative"]),
            (&json!(1), &json!(0))
        );
        assert_eq!(ids(&launches[1]), Vec::<u32>::new(), "{how:?}");
        assert_eq!(
            (&launches[2]["pdl"], &launches[2]["cooperative"]),
            (&json!(0), &json!(1))
        );
        assert_eq!(ids(&launches[3]), Vec::<u32>::new());
    });
}

#[test]
fn clusters_carry_policy_and_priority_and_large_ones_are_allowed_once_per_device() {
    each(|how, built| {
        let f = built.function("spread");
        call(&f, &[Arg::Int(2), Arg::Int(-3)]).unwrap();
        let l = &fake().launches()[0];
        assert_eq!(
            ids(l),
            [CLUSTER_DIMENSION, CLUSTER_SCHEDULING_POLICY, PRIORITY],
            "{how:?}"
        );
        assert_eq!(l["cluster"], json!([2, 1, 1]));
        assert_eq!(
            l["cluster_policy"], 1,
            "CU_CLUSTER_SCHEDULING_POLICY_SPREAD"
        );
        assert_eq!(l["priority"], -3);
        call(&f, &[Arg::Int(8), Arg::Int(0)]).unwrap();
        assert_eq!(set_attributes(), [], "{how:?}: 8 blocks are portable");
        // 16 blocks: the kernel is allowed non-portable sizes on device 0, once.
        call(&f, &[Arg::Int(16), Arg::Int(0)]).unwrap();
        call(&f, &[Arg::Int(16), Arg::Int(0)]).unwrap();
        assert_eq!(set_attributes(), [(14, 1, 100)], "{how:?}");
        assert_eq!(fake().launches().len(), 4);
        // More than the double's 16 is refused by the driver, in its words.
        assert_eq!(
            call_err(&f, &[Arg::Int(32), Arg::Int(0)]),
            "RuntimeError: spread: launch of kernels.empty failed on CUDA device 0 with grid \
             (16, 1, 1), block (128, 1, 1), cluster (32, 1, 1), shared_mem 0: \
             cuLaunchKernelEx returned CUDA_ERROR_INVALID_CLUSTER_SIZE (error 912: invalid \
             cluster size)"
        );
    });
}

#[test]
fn a_preferred_cluster_is_a_multiple_of_the_cluster_on_a_new_enough_driver() {
    each(|how, built| {
        let f = built.function("preferred");
        call(&f, &[Arg::Int(2), Arg::Int(4)]).unwrap();
        let l = &fake().launches()[0];
        assert_eq!(
            ids(l),
            [CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION],
            "{how:?}"
        );
        assert_eq!(l["preferred_cluster"], json!([4, 1, 1]));
        assert_eq!(
            call_err(&f, &[Arg::Int(2), Arg::Int(3)]),
            "ValueError: preferred: launch of kernels.empty: preferred_cluster is (3, 1, 1), \
             but preferred_cluster[0] must be a multiple of cluster[0] (cluster is (2, 1, 1))",
            "{how:?}"
        );
    });
}

#[test]
fn a_preferred_cluster_on_an_old_driver_names_the_attribute_and_the_version() {
    each(|how, built| {
        fake().set_driver_version(12060);
        let f = built.function("preferred");
        assert_eq!(
            call_err(&f, &[Arg::Int(2), Arg::Int(4)]),
            "RuntimeError: preferred: launch of kernels.empty: preferred_cluster \
             (CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION) needs a CUDA 12.8 driver \
             (version 12080), but the driver's version is 12060",
            "{how:?}"
        );
        assert!(fake().launches().is_empty());
    });
}

#[test]
fn a_priority_must_fit_in_an_i32() {
    each(|how, built| {
        let f = built.function("prioritized");
        call(&f, &[Arg::Int(i64::from(i32::MIN))]).unwrap();
        assert_eq!(fake().launches()[0]["priority"], i32::MIN, "{how:?}");
        assert_eq!(
            call_err(&f, &[Arg::Int(1 << 40)]),
            "ValueError: prioritized: launch of kernels.empty: priority is 1099511627776, \
             expected -2147483648 to 2147483647"
        );
    });
}

#[test]
fn the_shared_memory_opt_in_counts_the_kernels_static_shared_memory() {
    each(|how, built| {
        let f = built.function("static_shared");
        let args = |smem: i64| [Arg::Ptr(0x1000), Arg::Int(smem), Arg::Int(0)];
        // 1 KiB static + 47 KiB dynamic: the default 48 KiB, no opt-in.
        call(&f, &args(47 * 1024)).unwrap();
        assert_eq!(set_attributes(), [], "{how:?}");
        // One byte more needs the opt-in, which a 48 KiB-dynamic-only rule would miss.
        call(&f, &args(47 * 1024 + 1)).unwrap();
        assert_eq!(set_attributes(), [(8, 47 * 1024 + 1, 100)], "{how:?}");
        // Asked once: later launches within what is allowed make no attribute calls.
        fake().reset();
        call(&f, &args(47 * 1024 + 1)).unwrap();
        call(&f, &args(1000)).unwrap();
        let calls = fake().calls();
        assert!(
            !calls.iter().any(|c| c.contains("Attribute")),
            "{how:?}: {calls:?}"
        );
        // The device allows 227 KiB in all: 226 KiB of dynamic memory fits, one byte more
        // does not, and that is a ValueError before the launch.
        call(&f, &args(226 * 1024)).unwrap();
        fake().reset();
        assert_eq!(
            call_err(&f, &args(226 * 1024 + 1)),
            "ValueError: static_shared: launch of kernels.staticky: shared_mem is 231425 \
             bytes, but CUDA device 0 allows at most 232448 bytes of shared memory per block \
             and the kernel uses 1024 of them statically (at most 231424 dynamic bytes)",
            "{how:?}"
        );
        assert!(fake().launches().is_empty());
    });
}
