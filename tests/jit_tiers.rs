//! The JIT's tiers (issue 18): the baseline compiler as the default first tier on x86-64, and
//! the background tier-up to Cranelift that keeps the functions callers hold valid.

use safecall::jit::{self, FirstTier, JitOptions, TierUp};
use safecall_runtime::{AnyView, Tensor};

fn parse(text: &str) -> safecall::ir::Module {
    safecall::ir::parse::parse(text).unwrap_or_else(|e| panic!("{}", e.render("test", text)))
}

const MODULE: &str = "module tiers;\n\
    /// The number of elements of x, which must be a multiple of 4.\n\
    fn len4(x: tensor[(n,), float32, device=cpu]) -> i64 where n % 4 == 0 { return n * 10; }\n";

/// Calls `len4` with a tensor of `len` elements: `Ok(result)` or `Err((kind, message))`.
fn call(f: &safecall_runtime::Function, len: i64) -> Result<i64, (String, String)> {
    let x = Tensor::cpu::<f32>(&[len]).unwrap();
    f.call(&[AnyView::from(&x)])
        .map(|r| r.cast::<i64>().unwrap())
        .map_err(|e| (e.kind().to_string(), e.message().to_string()))
}

#[test]
fn the_default_first_tier_is_the_baseline_compiler_on_x86_64_only() {
    let expected = if cfg!(target_arch = "x86_64") {
        FirstTier::Baseline
    } else {
        FirstTier::Backend
    };
    assert_eq!(JitOptions::default().first_tier, expected);
    assert_eq!(JitOptions::default().tier_up, TierUp::Never);
}

#[test]
fn every_tier_gives_the_same_results_and_errors() {
    let module = parse(MODULE);
    let tiers = [FirstTier::Baseline, FirstTier::Backend];
    let outcomes: Vec<_> = tiers
        .iter()
        .map(|&first_tier| {
            let options = JitOptions {
                first_tier,
                ..Default::default()
            };
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            let jit = unsafe { jit::compile(&module, &options) }.unwrap();
            let f = jit.function("len4").unwrap();
            (call(f, 8), call(f, 6))
        })
        .collect();
    assert_eq!(outcomes[0].0, Ok(80));
    let (kind, message) = outcomes[0].1.clone().unwrap_err();
    assert_eq!(kind, "ValueError");
    assert!(
        message.contains("n = 6 (bound by x.shape[0]) is not a multiple of 4"),
        "{message}"
    );
    assert_eq!(outcomes[0], outcomes[1], "baseline and Cranelift agree");
}

/// Waits (at most two minutes) for `jit`'s tier-up to switch its functions.
fn wait_tiered_up(jit: &jit::JitModule) {
    let start = std::time::Instant::now();
    while !jit.tiered_up() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "the tier-up never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `len4`, held from before a tier-up, passes and refuses as before it.
fn assert_upper_tier_checks(held: &safecall_runtime::Function) {
    assert_eq!(call(held, 16), Ok(160));
    let (kind, message) = call(held, 6).unwrap_err();
    assert_eq!(kind, "ValueError");
    assert!(message.contains("is not a multiple of 4"), "{message}");
}

#[test]
fn a_background_tier_up_switches_the_functions_callers_hold() {
    let options = JitOptions {
        tier_up: TierUp::Background,
        ..Default::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&parse(MODULE), &options) }.unwrap();
    // Held before the switch, through both the `Function` and the raw entry.
    let held = jit.function("len4").unwrap().clone();
    let entry = jit.safe_call("len4").unwrap();
    assert_eq!(call(&held, 12), Ok(120));
    if !cfg!(target_arch = "x86_64") {
        assert!(!jit.tiered_up(), "no baseline tier, nothing to tier up");
        return;
    }
    wait_tiered_up(&jit);
    assert_eq!(
        jit.safe_call("len4").map(|f| f as usize),
        Some(entry as usize),
        "the entry address stays"
    );
    assert_upper_tier_checks(&held);
    // The module can go: the held function keeps both tiers' code alive.
    drop(jit);
    assert_eq!(call(&held, 4), Ok(40));
}

#[test]
fn a_tier_up_on_request_waits_for_the_request() {
    let options = JitOptions {
        tier_up: TierUp::OnRequest,
        ..Default::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&parse(MODULE), &options) }.unwrap();
    let held = jit.function("len4").unwrap().clone();
    assert_eq!(call(&held, 12), Ok(120));
    if !cfg!(target_arch = "x86_64") {
        assert!(
            !jit.code().request_tier_up(),
            "no baseline tier, nothing to tier up"
        );
        return;
    }
    // A background tier-up of this size finishes in milliseconds; this one waits.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!jit.tiered_up(), "tiered up without a request");
    assert!(jit.code().request_tier_up(), "the first request starts it");
    assert!(
        !jit.code().request_tier_up(),
        "a second request has nothing to start"
    );
    wait_tiered_up(&jit);
    assert_upper_tier_checks(&held);
    // Never tiered up: a module compiled without a tier-up has nothing to request.
    // SAFETY: as above.
    let plain = unsafe { jit::compile(&parse(MODULE), &JitOptions::default()) }.unwrap();
    assert!(!plain.code().request_tier_up());
}

#[test]
fn a_module_dropped_before_its_tier_up_finishes_is_freed_cleanly() {
    let options = JitOptions {
        tier_up: TierUp::Background,
        ..Default::default()
    };
    // Compile and drop at once, many times: each tier-up thread finds its module gone (or
    // finishes first); either way nothing leaks into later modules' results.
    for _ in 0..20 {
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        drop(unsafe { jit::compile(&parse(MODULE), &options) }.unwrap());
    }
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&parse(MODULE), &JitOptions::default()) }.unwrap();
    assert_eq!(call(jit.function("len4").unwrap(), 8), Ok(80));
}
