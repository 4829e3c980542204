//! A launch with three `tensormap(..)` arguments: a failure of the third descriptor after
//! two cache hits releases both held entries and restores the caller's context once.

use safecall::ir;
use safecall_runtime::abi::DLTensor;

use super::tensormap::{F16, encodes, tensor};
use crate::support::{self, Arg, call, call_err, fake};

/// Three descriptors of one launch (the shared failure exit of the third must release both
/// entries held before it).
const THREE: &str = r#"module gpu_tensormap_three;
device_binary tma3 {
    format ptx;
    data b".visible .entry copy3(.param .align 64 .b8 a[128], .param .align 64 .b8 b[128], .param .align 64 .b8 c[128], .param .u32 n) { ret; }\n";
    kernels [copy3];
}
fn copy3(
    a: tensor[(m, k), float16, device=cuda],
    b: tensor[(m, k), float16, device=cuda],
    c: tensor[(m, k), float16, device=cuda, byte_offset=any],
    bk: i32,
) {
    launch tma3.copy3[grid=(1), block=(128)](tensormap(a, box=(64, 64)), tensormap(b, box=(64, 64)), tensormap(c, box=(bk, 64)), cast<u32>(m));
}
"#;

#[test]
fn a_failure_of_the_third_descriptor_releases_both_held_entries_and_restores_once() {
    let m = ir::parse::parse(THREE).unwrap_or_else(|e| panic!("{}", e.render("three", THREE)));
    for how in support::deliveries() {
        fake().reset();
        let built = support::build(&m, how);
        let f = built.function("copy3");
        let (mut sa, mut sb, mut sc) = ([128i64, 64], [128i64, 64], [128i64, 64]);
        let a = tensor(0x10_0000, F16, &mut sa, None);
        let b = tensor(0x20_0000, F16, &mut sb, None);
        let c = tensor(0x30_0000, F16, &mut sc, None);
        let encodes_of = |c: &DLTensor, bk: i64| {
            fake().reset();
            call(
                &f,
                &[
                    Arg::Tensor(&a),
                    Arg::Tensor(&b),
                    Arg::Tensor(c),
                    Arg::Int(bk),
                ],
            )
            .unwrap();
            encodes().len()
        };
        assert_eq!(encodes_of(&c, 64), 3, "{how:?}");
        assert_eq!(encodes_of(&c, 64), 0, "{how:?}: all three hit");
        let set_current = || {
            fake()
                .calls()
                .iter()
                .filter(|c| *c == "cuCtxSetCurrent")
                .count()
        };
        // `a` and `b` hit (their entries locked), then `c` fails a rule: both are released
        // and the caller's context (none) restored, once.
        fake().reset();
        assert_eq!(
            call_err(
                &f,
                &[
                    Arg::Tensor(&a),
                    Arg::Tensor(&b),
                    Arg::Tensor(&c),
                    Arg::Int(300)
                ]
            ),
            "ValueError: copy3: launch of tma3.copy3: kernel argument 2 (tensormap of 'c'): \
             box[0] is 300; it must be 1 to 256",
            "{how:?}"
        );
        assert_eq!(fake().current(), "none", "{how:?}");
        assert_eq!(set_current(), 2, "{how:?}: switched and restored once");
        assert_eq!(
            encodes_of(&c, 64),
            0,
            "{how:?}: a's and b's entries were released"
        );
        // The encoder fails for `c` after `a` and `b` hit: the driver's words, read before
        // the exit releases and restores.
        let mut sc2 = [128i64, 64];
        let other = tensor(0x40_0000, F16, &mut sc2, None);
        fake().reset();
        fake().fail("cuTensorMapEncodeTiled", 1);
        assert_eq!(
            call_err(
                &f,
                &[
                    Arg::Tensor(&a),
                    Arg::Tensor(&b),
                    Arg::Tensor(&other),
                    Arg::Int(64)
                ]
            ),
            "RuntimeError: copy3: launch of tma3.copy3: kernel argument 2 (tensormap of 'c'): \
             cuTensorMapEncodeTiled returned CUDA_ERROR_INVALID_VALUE (error 1: invalid argument)",
            "{how:?}"
        );
        assert_eq!(fake().current(), "none", "{how:?}");
        assert_eq!(set_current(), 2, "{how:?}");
        assert_eq!(encodes_of(&c, 64), 0, "{how:?}");
        // The workaround's driver version fails for `c` after its encode, through the same
        // exit as the encode's check.
        let mut sc3 = [128i64, 64];
        let third = tensor(0x50_0000, F16, &mut sc3, None);
        fake().reset();
        fake().fail("cuDriverGetVersion", 3);
        assert_eq!(
            call_err(
                &f,
                &[
                    Arg::Tensor(&a),
                    Arg::Tensor(&b),
                    Arg::Tensor(&third),
                    Arg::Int(64)
                ]
            ),
            "RuntimeError: copy3: launch of tma3.copy3: kernel argument 2 (tensormap of 'c'): \
             cannot read the driver's version: cuDriverGetVersion returned \
             CUDA_ERROR_NOT_INITIALIZED (error 3: initialization error)",
            "{how:?}"
        );
        assert_eq!(fake().current(), "none", "{how:?}");
        assert_eq!(set_current(), 2, "{how:?}");
        assert_eq!(encodes_of(&c, 64), 0, "{how:?}");
        // With the caller's primary context current nothing is switched or restored.
        fake().reset();
        fake().set_primary_context(0);
        assert!(
            call_err(
                &f,
                &[
                    Arg::Tensor(&a),
                    Arg::Tensor(&b),
                    Arg::Tensor(&c),
                    Arg::Int(0)
                ]
            )
            .starts_with("ValueError: copy3: launch of tma3.copy3: kernel argument 2"),
            "{how:?}"
        );
        assert_eq!(fake().current(), "primary:0", "{how:?}");
        assert_eq!(set_current(), 1, "{how:?}: only the test's own");
        fake().set_user_context(-1);
        assert_eq!(encodes_of(&c, 64), 0, "{how:?}");
    }
}
