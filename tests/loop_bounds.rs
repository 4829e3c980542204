//! `for` loops at the ends of their integer type: a loop that runs up to `i64::MAX`, down to
//! `i64::MIN`, or to the ends of `u64` runs exactly the iterations Rust's ranges give, with no
//! overflow of the loop variable, on every JIT tier and backend built in (unit steps take
//! the short latch form, `i ± 1` compared with the bound; other steps the distance form).
//! Each loop returns -1 after 100 iterations, so a loop that wraps past its bound fails the
//! test instead of running on.

use safecall::Backend;
use safecall::jit::{self, FirstTier, JitOptions};

const MODULE: &str = "module loops;\n\
    fn count_up(a: i64, b: i64) -> i64 {\n\
        let mut c = 0; let mut last = 0;\n\
        for i in a..b { c = c + 1; last = i; if c > 100 { return -1; } }\n\
        return c * 1000 + (b - last);\n\
    }\n\
    fn count_down(a: i64, b: i64) -> i64 {\n\
        let mut c = 0; let mut last = 0;\n\
        for i in a..b step -1 { c = c + 1; last = i; if c > 100 { return -1; } }\n\
        return c * 1000 + (last - b);\n\
    }\n\
    fn count_up_by_3(a: i64, b: i64) -> i64 {\n\
        let mut c = 0;\n\
        for i in a..b step 3 { c = c + 1; if c > 100 { return -1; } }\n\
        return c;\n\
    }\n\
    fn unsigned_top() -> i64 {\n\
        let mut c = 0;\n\
        for i in 18446744073709551612u64..18446744073709551615u64 { c = c + 1; if c > 100 { return -1; } }\n\
        return c;\n\
    }\n\
    fn unsigned_bottom() -> i64 {\n\
        let mut c = 0;\n\
        for i in 3u64..0u64 step -1 { c = c + 1; if c > 100 { return -1; } }\n\
        return c;\n\
    }\n";

/// Every JIT configuration this test binary can run: the baseline tier, Cranelift, and LLVM
/// when built in.
fn configurations() -> Vec<(&'static str, JitOptions)> {
    let mut all = vec![
        (
            "baseline",
            JitOptions {
                first_tier: FirstTier::Baseline,
                ..Default::default()
            },
        ),
        (
            "cranelift",
            JitOptions {
                first_tier: FirstTier::Backend,
                ..Default::default()
            },
        ),
    ];
    if safecall::backend::llvm::AVAILABLE {
        all.push((
            "llvm",
            JitOptions {
                first_tier: FirstTier::Backend,
                backend: Backend::Llvm,
                ..Default::default()
            },
        ));
    }
    all
}

#[test]
fn loops_at_the_ends_of_their_type_run_the_iterations_of_rusts_ranges() {
    let module = safecall::ir::parse::parse(MODULE).unwrap_or_else(|e| panic!("{e:?}"));
    for (name, options) in configurations() {
        // SAFETY: the IR is this test's own: it reads no memory and calls no symbol.
        let jit = unsafe { jit::compile(&module, &options) }.unwrap();
        let call = |f: &str, args: &[i64]| -> i64 {
            let args: Vec<safecall_runtime::AnyView<'_>> = args.iter().map(|&a| a.into()).collect();
            jit.function(f)
                .unwrap()
                .call(&args)
                .unwrap()
                .cast::<i64>()
                .unwrap()
        };
        // count * 1000 + the distance from the last value to the bound (1 for a unit step).
        for (a, b) in [
            (i64::MAX - 3, i64::MAX),
            (i64::MAX - 1, i64::MAX),
            (i64::MIN, i64::MIN + 2),
            (0, 5),
        ] {
            let want = (b - a) * 1000 + 1;
            assert_eq!(call("count_up", &[a, b]), want, "{name}: {a}..{b}");
        }
        for (a, b) in [(i64::MIN + 3, i64::MIN), (i64::MAX, i64::MAX - 2), (5, 0)] {
            let want = (a - b) * 1000 + 1;
            assert_eq!(
                call("count_down", &[a, b]),
                want,
                "{name}: {a}..{b} step -1"
            );
        }
        // An empty loop leaves the count and `last` at 0: the result is `b`.
        for (a, b) in [(i64::MAX, i64::MAX), (5, 0), (0, 0)] {
            assert_eq!(call("count_up", &[a, b]), b, "{name}: {a}..{b} is empty");
        }
        for (a, b) in [
            (i64::MAX - 7, i64::MAX),
            (0, 9),
            (0, 10),
            (i64::MIN, i64::MIN + 1),
        ] {
            let want = (a..b).step_by(3).count() as i64;
            assert_eq!(
                call("count_up_by_3", &[a, b]),
                want,
                "{name}: {a}..{b} step 3"
            );
        }
        assert_eq!(call("unsigned_top", &[]), 3, "{name}: near u64::MAX");
        assert_eq!(call("unsigned_bottom", &[]), 3, "{name}: down to 0u64");
    }
}
