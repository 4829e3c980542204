//! The JIT path (issue 5): functions callable at once, memory freed with the last function,
//! symbol resolution, and thread safety.

use std::sync::Arc;

use safecall::jit::{self, JitOptions, SymbolAddress, SymbolBinding};
use safecall_runtime::{Any, AnyView, Function, Tensor};

fn parse(text: &str) -> safecall::ir::Module {
    safecall::ir::parse::parse(text).unwrap_or_else(|e| panic!("{}", e.render("test.scir", text)))
}

fn add_one_module() -> safecall::ir::Module {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/ir/add_one.scir"
    ))
    .unwrap();
    parse(&text)
}

fn vector(values: &[f32]) -> Tensor {
    let t = Tensor::cpu::<f32>(&[values.len() as i64]).unwrap();
    // SAFETY: a fresh tensor owned by this test.
    unsafe { t.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(values);
    t
}

#[test]
fn compiled_functions_run_and_raise_precise_errors() {
    let module = parse(
        "module demo;\n\
         fn twice(n: i64) -> i64 { return n * 2; }\n\
         fn div(a: i64, b: i64) -> i64 { return a / b; }\n",
    );
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&module, &JitOptions::default()) }.unwrap();
    let mut names: Vec<_> = jit.names().collect();
    names.sort();
    assert_eq!(names, ["div", "twice"]);
    let twice = jit.function("twice").unwrap();
    assert_eq!(
        twice.call(&[21i64.into()]).unwrap().cast::<i64>().unwrap(),
        42
    );
    let text = Any::from("x");
    let err = twice.call(&[text.view()]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(
        err.message(),
        "twice: argument 'n' (#0): expected int, got ffi.String\n  when calling twice(n: i64)"
    );
    let err = jit
        .function("div")
        .unwrap()
        .call(&[1i64.into(), 0i64.into()])
        .unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(
        err.message(),
        "div: integer division by zero: `return a / b;` divides 1 by 0\n  \
         when calling div(a: i64, b: i64)"
    );
}

#[test]
fn checks_of_constants_decide_at_lowering_and_still_raise_when_they_fail() {
    // The lowering folds operations of constants: a check that cannot fail emits no code,
    // one that always fails still raises its message when the function runs.
    let module = parse(
        "module consts;\n\
         fn passes(n: i64) -> i64 { assert 128 - 1 < 1024 else ValueError(\"never\"); return n / (3 - 1); }\n\
         fn fails(n: i64) -> i64 { assert 1024 < 128 else ValueError(\"always, with \", n); return n; }\n\
         fn divides(n: i64) -> i64 { return n / (2 - 2); }\n",
    );
    // SAFETY: the IR is this test's own and calls nothing.
    let jit = unsafe { jit::compile(&module, &JitOptions::default()) }.unwrap();
    let call = |name: &str, n: i64| jit.function(name).unwrap().call(&[n.into()]);
    assert_eq!(call("passes", 9).unwrap().cast::<i64>().unwrap(), 4);
    let err = call("fails", 7).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.message(), "always, with 7");
    let err = call("divides", 5).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert!(
        err.message()
            .starts_with("divides: integer division by zero"),
        "{}",
        err.message()
    );
}

#[test]
fn tensors_are_checked_and_written() {
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&add_one_module(), &JitOptions::default()) }.unwrap();
    let add_one = jit.function("add_one").unwrap();
    let x = vector(&[1.0, 2.0, 3.0]);
    let y = vector(&[0.0; 3]);
    add_one.call(&[(&x).into(), (&y).into()]).unwrap();
    assert_eq!(y.as_slice::<f32>().unwrap(), [2.0, 3.0, 4.0]);
    let short = vector(&[0.0; 2]);
    let err = add_one.call(&[(&x).into(), (&short).into()]).unwrap_err();
    assert_eq!(
        err.message(),
        "add_one: argument 'y' (#1): shape[0] is 2, expected 3 (= n, bound by x.shape[0])\n  \
         when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])"
    );
}

#[test]
fn a_function_outlives_its_module_and_keeps_the_code_alive() {
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&add_one_module(), &JitOptions::default()) }.unwrap();
    let add_one = jit.function("add_one").unwrap().clone();
    let code = Arc::downgrade(jit.code());
    drop(jit);
    assert!(
        code.upgrade().is_some(),
        "the function still holds the code"
    );
    let x = vector(&[5.0]);
    let y = vector(&[0.0]);
    add_one.call(&[(&x).into(), (&y).into()]).unwrap();
    assert_eq!(y.as_slice::<f32>().unwrap(), [6.0]);
    drop(add_one);
    assert!(
        code.upgrade().is_none(),
        "the code is freed with the last function"
    );
}

/// Resident set size in bytes (Linux).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn repeated_compile_and_drop_does_not_grow_memory() {
    let module = add_one_module();
    let options = JitOptions::default();
    let round = |count: usize| {
        for _ in 0..count {
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            let jit = unsafe { jit::compile(&module, &options) }.unwrap();
            let f = jit.function("add_one").unwrap().clone();
            drop(jit);
            drop(f);
        }
    };
    round(200); // warm up allocator pools and the shared error helper
    // Each leaked module would keep at least a page of code and one of data: 2000 modules
    // would add ~16 MB, on every attempt. Allow allocator noise well below that; the RSS is
    // the whole process's, so a test compiling with LLVM on another thread at the same time
    // can add a few MB once: a leak fails all three attempts.
    let mut growths = Vec::new();
    for _ in 0..3 {
        let before = rss_bytes();
        round(2000);
        let growth = rss_bytes().saturating_sub(before);
        if growth < 4 << 20 {
            return;
        }
        growths.push(growth);
    }
    panic!("RSS grew by {growths:?} bytes over three rounds of 2000 compile/drop cycles");
}

extern "C" fn add_i64(a: i64, b: i64) -> i64 {
    a + b
}

extern "C" fn fails_with_raised_error(code: i32) -> i32 {
    if code != 0 {
        safecall_runtime::Error::new("KeyError", "raised by the extern").set_raised();
    }
    code
}

#[test]
fn externs_resolve_from_the_callers_table() {
    let module = parse(
        "module ext;\n\
         extern fn add_i64(i64, i64) -> i64;\n\
         extern fn fails_with_raised_error(i32) -> i32 nonzero_is_raised;\n\
         fn sum(a: i64, b: i64) -> i64 { let s = call add_i64(a, b); return s; }\n\
         fn check(code: i32) { call fails_with_raised_error(code); }\n",
    );
    let mut options = JitOptions::default();
    options.symbols.insert("add_i64".into(), {
        // SAFETY: a function of this program with the C signature the IR declares for it.
        unsafe { SymbolAddress::new(add_i64 as *const u8) }
    });
    options.symbols.insert("fails_with_raised_error".into(), {
        // SAFETY: a function of this program with the C signature the IR declares for it.
        unsafe { SymbolAddress::new(fails_with_raised_error as *const u8) }
    });
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&module, &options) }.unwrap();
    assert_eq!(
        jit.function("sum")
            .unwrap()
            .call(&[40i64.into(), 2i64.into()])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        42
    );
    jit.function("check").unwrap().call(&[0i64.into()]).unwrap();
    let err = jit
        .function("check")
        .unwrap()
        .call(&[1i64.into()])
        .unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("KeyError", "raised by the extern")
    );
}

#[test]
fn unresolved_externs_are_reported_by_name() {
    let module = parse(
        "module ext;\n\
         extern fn no_such_function_anywhere(i64) -> i64;\n\
         fn f(a: i64) -> i64 { let r = call no_such_function_anywhere(a); return r; }\n",
    );
    let options = JitOptions {
        process_symbols: false,
        ..JitOptions::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    match unsafe { jit::compile(&module, &options) } {
        Err(safecall::Error::Backend(safecall::backend::BackendError::UnresolvedSymbols(
            names,
        ))) => {
            assert_eq!(names, ["no_such_function_anywhere"])
        }
        other => panic!("expected unresolved symbols, got {other:?}"),
    }
}

#[test]
fn process_binding_resolves_the_c_api_of_the_process() {
    // This test binary exports safecall-runtime's C API (-rdynamic), so the process binding
    // finds the same runtime: calls and errors work exactly as with the default binding.
    let options = JitOptions {
        binding: SymbolBinding::Process,
        ..JitOptions::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&add_one_module(), &options) }.unwrap();
    let add_one = jit.function("add_one").unwrap();
    let x = vector(&[1.0]);
    let err = add_one.call(&[(&x).into()]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message()
            .starts_with("add_one: expected 2 arguments, got 1\n  when calling add_one("),
        "{}",
        err.message()
    );
}

#[test]
fn modules_compile_on_several_threads_at_once() {
    let module = Arc::new(add_one_module());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let module = module.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
                    // and calls only symbols it declares with their real signatures.
                    let jit = unsafe { jit::compile(&*module, &JitOptions::default()) }.unwrap();
                    let x = vector(&[t as f32, i as f32]);
                    let y = vector(&[0.0, 0.0]);
                    jit.function("add_one")
                        .unwrap()
                        .call(&[(&x).into(), (&y).into()])
                        .unwrap();
                    assert_eq!(
                        y.as_slice::<f32>().unwrap(),
                        [t as f32 + 1.0, i as f32 + 1.0]
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn one_function_called_from_two_threads_keeps_errors_on_their_thread() {
    const CALLS: usize = 1_000_000;
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&add_one_module(), &JitOptions::default()) }.unwrap();
    let add_one: Function = jit.function("add_one").unwrap().clone();
    let threads: Vec<_> = (0..2usize)
        .map(|t| {
            let add_one = add_one.clone();
            std::thread::spawn(move || {
                // Each thread's bad argument has its own length, so a message read on the
                // wrong thread would name the other length.
                let bad_len = 10 + t;
                let x = vector(&[1.0; 4]);
                let y = vector(&[0.0; 4]);
                let bad = vector(&vec![0.0; bad_len]);
                let expected = format!(
                    "add_one: argument 'y' (#1): shape[0] is {bad_len}, expected 4 (= n, bound by \
                     x.shape[0])\n  when calling add_one(x: Tensor[(n,), float32, cpu], y: \
                     Tensor[(n,), float32, cpu])"
                );
                let good: [AnyView<'_>; 2] = [(&x).into(), (&y).into()];
                let wrong: [AnyView<'_>; 2] = [(&x).into(), (&bad).into()];
                let mut errors = 0usize;
                for i in 0..CALLS {
                    if i % 2 == 0 {
                        add_one.call(&good).unwrap();
                    } else {
                        let err = add_one.call(&wrong).unwrap_err();
                        assert_eq!(err.message(), expected, "thread {t}");
                        errors += 1;
                    }
                }
                assert_eq!(y.as_slice::<f32>().unwrap(), [2.0; 4]);
                errors
            })
        })
        .collect();
    let errors: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(errors, CALLS);
}

#[test]
fn functions_compiled_on_several_threads_run_like_those_compiled_on_one() {
    // Eight functions, each calling a C API function on its error paths (relocations) and one
    // raising from its body.
    let mut text = String::from("module many;\n");
    for i in 1..=8 {
        text.push_str(&format!(
            "fn times_{i}(n: i64) -> i64 {{ assert n >= 0 else ValueError(\"negative: \", n); \
             return n * {i}; }}\n"
        ));
    }
    let module = parse(&text);
    for threads in [1, 2, 4] {
        let options = JitOptions {
            compile_threads: threads,
            ..JitOptions::default()
        };
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { jit::compile(&module, &options) }.unwrap();
        for i in 1..=8i64 {
            let f = jit.function(&format!("times_{i}")).unwrap();
            let out = f.call(&[5i64.into()]).unwrap().cast::<i64>().unwrap();
            assert_eq!(out, 5 * i, "{threads} thread(s)");
            let err = f.call(&[(-3i64).into()]).unwrap_err();
            assert_eq!(err.kind(), "ValueError", "{threads} thread(s)");
            assert_eq!(err.message(), "negative: -3", "{threads} thread(s)");
            let text = Any::from("x");
            let err = f.call(&[text.view()]).unwrap_err();
            assert_eq!(
                err.message(),
                format!(
                    "times_{i}: argument 'n' (#0): expected int, got ffi.String\n  \
                     when calling times_{i}(n: i64)"
                )
            );
        }
    }
}

#[test]
fn a_verified_module_compiles_without_a_second_verification() {
    let verified = safecall::ir::VerifiedModule::new(add_one_module()).unwrap();
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { jit::compile(&verified, &JitOptions::default()) }.unwrap();
    let add_one = jit.function("add_one").unwrap();
    let x = vector(&[1.0, 2.0]);
    let y = vector(&[0.0; 2]);
    add_one.call(&[(&x).into(), (&y).into()]).unwrap();
    assert_eq!(y.as_slice::<f32>().unwrap(), [2.0, 3.0]);
}

/// Converts every element of `src` (f64) to f16 and to bf16, and widens every element of
/// `halves` (the bits of f16 and bf16 values) back to f64: the generated conversions, run in
/// a loop so that one call checks many values.
const HALVES: &str = "module halves_bulk;\n\
    fn narrow(src: tensor[(n,), float64, device=cpu], f16s: tensor[(n,), uint16, device=cpu], \
              bf16s: tensor[(n,), uint16, device=cpu]) {\n\
        for i in 0..n {\n\
            let x = load<f64>(offset(src.data, i * 8));\n\
            store<f16>(offset(f16s.data, i * 2), cast<f16>(x));\n\
            store<bf16>(offset(bf16s.data, i * 2), cast<bf16>(x));\n\
        }\n\
    }\n\
    fn widen(halves: tensor[(m,), uint16, device=cpu], f16s: tensor[(m,), float64, device=cpu], \
             bf16s: tensor[(m,), float32, device=cpu]) {\n\
        for i in 0..m {\n\
            let p = offset(halves.data, i * 2);\n\
            store<f64>(offset(f16s.data, i * 8), cast<f64>(load<f16>(p)));\n\
            store<f32>(offset(bf16s.data, i * 4), cast<f32>(load<bf16>(p)));\n\
        }\n\
    }\n";

fn filled<T: safecall_runtime::Element>(values: &[T]) -> Tensor {
    let t = Tensor::cpu::<T>(&[values.len() as i64]).unwrap();
    // SAFETY: a fresh tensor owned by this test.
    unsafe { t.as_mut_slice::<T>() }
        .unwrap()
        .copy_from_slice(values);
    t
}

/// f64 inputs: every exponent a half can round to (and beyond), random fractions, and each
/// halfway point between neighbouring halves with its f64 neighbours.
fn half_inputs() -> Vec<f64> {
    use safecall::ir::{FloatType, half};
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let r = next();
        let exponent = 1023 - 160 + (r >> 52) % 300;
        out.push(f64::from_bits(
            (r & (1 << 63)) | exponent << 52 | (next() & ((1 << 52) - 1)),
        ));
    }
    for ty in [FloatType::F16, FloatType::BF16] {
        for h in (0..0x7f7fu16).step_by(3) {
            let mid = (f64::from_bits(half::half_to_f64_bits(h, ty))
                + f64::from_bits(half::half_to_f64_bits(h + 1, ty)))
                / 2.0;
            if mid.is_finite() {
                let m = mid.to_bits();
                out.extend([m - 1, m, m + 1].map(f64::from_bits));
            }
        }
    }
    out.extend([
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        -0.0,
        65520.0,
        1e-320,
        f64::from_bits(0x7ff0_0000_0000_0001),
    ]);
    out
}

#[test]
fn half_conversions_agree_with_the_host_reference_on_every_tier_and_backend() {
    use safecall::ir::{FloatType, half};
    let module = parse(HALVES);
    let inputs = half_inputs();
    let every_half: Vec<u16> = (0..=u16::MAX).collect();
    for (first_tier, backend) in crate::common::delivery::jit_tiers() {
        let options = JitOptions {
            first_tier,
            backend,
            ..Default::default()
        };
        // SAFETY: the IR is this test's own: it reads and writes only within its tensors.
        let jit = unsafe { jit::compile(&module, &options) }.unwrap();
        let (src, f16s, bf16s) = (
            filled(&inputs),
            filled(&vec![0u16; inputs.len()]),
            filled(&vec![0u16; inputs.len()]),
        );
        let narrow = jit.function("narrow").unwrap();
        narrow
            .call(&[
                AnyView::from(&src),
                AnyView::from(&f16s),
                AnyView::from(&bf16s),
            ])
            .unwrap();
        // SAFETY: the call has returned; nothing else uses the tensors.
        let (got16, gotb) = unsafe {
            (
                f16s.as_mut_slice::<u16>().unwrap(),
                bf16s.as_mut_slice::<u16>().unwrap(),
            )
        };
        for (k, &x) in inputs.iter().enumerate() {
            let bits = x.to_bits();
            let want = (
                half::round_f64_bits(bits, FloatType::F16),
                half::round_f64_bits(bits, FloatType::BF16),
            );
            assert_eq!(
                (got16[k], gotb[k]),
                want,
                "{first_tier:?} {backend:?}: {x:e} ({bits:#x})"
            );
        }
        let (halves, wide16, wideb) = (
            filled(&every_half),
            filled(&vec![0f64; every_half.len()]),
            filled(&vec![0f32; every_half.len()]),
        );
        let widen = jit.function("widen").unwrap();
        widen
            .call(&[
                AnyView::from(&halves),
                AnyView::from(&wide16),
                AnyView::from(&wideb),
            ])
            .unwrap();
        // SAFETY: as above.
        let (got64, got32) = unsafe {
            (
                wide16.as_mut_slice::<f64>().unwrap(),
                wideb.as_mut_slice::<f32>().unwrap(),
            )
        };
        for &h in &every_half {
            let k = usize::from(h);
            assert_eq!(
                got64[k].to_bits(),
                half::half_to_f64_bits(h, FloatType::F16),
                "{first_tier:?} {backend:?}: f16 {h:#x}"
            );
            assert_eq!(
                u64::from(got32[k].to_bits()),
                half::widen_bits(h, FloatType::BF16, FloatType::F32),
                "{first_tier:?} {backend:?}: bf16 {h:#x}"
            );
        }
    }
}
