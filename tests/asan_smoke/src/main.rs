//! JIT compile/call/drop smoke run, meant to run under AddressSanitizer with leak detection
//! (`cargo xtask asan`): modules compiled and dropped over and over, good and bad calls through
//! the raw safe-call entry and `Function::call`, packed calls into Rust closures (one of which
//! raises), results and errors released, and calls from several threads at once. Exits
//! non-zero when a call does not do what it must.
//!
//! `safecall-asan-smoke [CYCLES]` (default 1000 compile/drop cycles).

use safecall::jit::{self, JitOptions};
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType, type_index as ti};
use safecall_runtime::{Any, AnyView, Error, Function, Tensor};

const SOURCE: &str = r#"
module smoke;

/// Sums a float32 vector, or raises when it has more than 4 elements.
fn sum(x: tensor[(n,), float32, device=cpu]) -> f64 {
    assert n <= 4 else ValueError("too long: ", n);
    let mut acc = 0.0;
    for i in 0..n {
        acc = acc + cast<f64>(load<f32>(offset(x.data, i * 4)));
    }
    return acc;
}

/// Calls f(k, s) and returns its result.
fn relay(f: func, k: i64, s: str) -> any {
    let r = call_packed f(k, s);
    return r;
}

/// Echoes a string.
fn echo(s: str) -> str {
    return s;
}

/// Allocates an (n, 4) output and a scratch tensor per loop iteration, raises after
/// allocating when fail is true, else returns the output and n.
fn make(n: i64, fail: bool) -> (tensor, i64) {
    let y = empty((n, 4), float32, device(1i32, 0i32));
    for i in 0..3 {
        let scratch = empty((n + i,), int8, y.device);
        store<i8>(scratch.data, 1i8);
    }
    assert !fail else RuntimeError("failing after allocating ", y.shape[0]);
    return (y, n);
}
"#;

/// Returns its first argument, raising for odd ones.
fn closure() -> Function {
    Function::from_closure(|args| {
        let k: i64 = args[0].cast()?;
        if k % 2 == 1 {
            Err(Error::new("ValueError", &format!("odd {k}")))
        } else {
            Any::from_view(args[1])
        }
    })
}

fn raw_call(entry: TVMFFISafeCallType, args: &[Any]) -> Result<Any, Error> {
    let raw: Vec<TVMFFIAny> = args.iter().map(|a| *a.as_raw()).collect();
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a safe-call entry; `args` keeps the arguments alive.
    let rc = unsafe {
        entry(
            std::ptr::null_mut(),
            raw.as_ptr(),
            raw.len() as i32,
            &mut result,
        )
    };
    if rc == 0 {
        // SAFETY: on success the callee wrote an owned value.
        Ok(unsafe { Any::from_raw_owned_unchecked(result) })
    } else {
        assert_eq!(rc, -1);
        assert_eq!(result.type_index, ti::NONE, "a failed call wrote `result`");
        Ok(Err(Error::take_raised().expect("an error is raised"))?)
    }
}

/// Installs the runtime's CPU allocator on this thread (generated code allocates with it).
fn install_cpu_allocator() {
    // SAFETY: a valid allocator; no out slot.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            Some(safecall_runtime::tensor::cpu_allocator),
            0,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
}

/// One round of calls: good and bad, raw and through `Function::call`.
fn calls(m: &jit::JitModule, round: u64) {
    install_cpu_allocator();
    let make = m.safe_call("make").expect("make");
    let n = 1 + (round % 5) as i64;
    let got = raw_call(make, &[Any::from(n), Any::from(false)]).expect("make");
    assert_eq!(got.as_raw().type_index, ti::ARRAY);
    drop(got);
    let err = raw_call(make, &[Any::from(n), Any::from(true)]).unwrap_err();
    assert_eq!(err.message(), format!("failing after allocating {n}"));
    let err = raw_call(make, &[Any::from(-n), Any::from(false)]).unwrap_err();
    assert_eq!(err.kind(), "ValueError");

    let x = Tensor::cpu::<f32>(&[3]).expect("tensor");
    let long = Tensor::cpu::<f32>(&[9]).expect("tensor");
    let sum = m.safe_call("sum").expect("sum");
    let got = raw_call(sum, &[Any::from(x.clone())]).expect("sum of 3");
    assert_eq!(got.cast::<f64>().expect("a float"), 0.0);
    let err = raw_call(sum, &[Any::from(long)]).unwrap_err();
    assert_eq!(err.message(), "too long: 9");
    let err = raw_call(sum, &[Any::from("not a tensor")]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    let err = raw_call(sum, &[]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");

    let relay = m.function("relay").expect("relay");
    let f = Any::from(closure());
    let text = format!("a string longer than seven bytes, round {round}");
    let k = (round * 2) as i64;
    let s = Any::from(text.as_str());
    let back = relay
        .call(&[f.view(), AnyView::from(k), s.view()])
        .expect("even k");
    assert_eq!(back.cast::<String>().expect("a string"), text);
    let odd = Any::from(k + 1);
    let err = relay.call(&[f.view(), odd.view(), s.view()]).unwrap_err();
    assert_eq!(err.message(), format!("odd {}", k + 1));

    let echo = m.function("echo").expect("echo");
    let short = Any::from("short");
    assert_eq!(
        echo.call(&[short.view()])
            .expect("echo")
            .cast::<String>()
            .expect("a string"),
        "short"
    );
}

fn main() {
    let cycles: u64 = std::env::args()
        .nth(1)
        .map_or(1000, |a| a.parse().expect("a number of cycles"));
    let module = safecall::ir::parse::parse(SOURCE).expect("the smoke module parses");
    let options = JitOptions::default();
    for round in 0..cycles {
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let m = unsafe { jit::compile(&module, &options) }.expect("JIT compile");
        calls(&m, round);
        drop(m);
    }
    // Threads sharing one module, each calling it many times.
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let m = unsafe { jit::compile(&module, &options) }.expect("JIT compile");
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let m = &m;
            s.spawn(move || {
                for round in 0..cycles {
                    calls(m, t * 1_000_000 + round);
                }
            });
        }
    });
    drop(m);
    println!(
        "asan smoke: {cycles} compile/call/drop cycles and 4 threads x {cycles} rounds of calls: ok"
    );
}
