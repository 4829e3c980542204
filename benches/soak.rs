//! Soak runs.
//!
//! `cargo bench --features llvm --bench soak -- calls [CALLS_PER_THREAD] [THREADS]`: THREADS
//! threads (default 8) each make CALLS_PER_THREAD (default 1,000,000) mixed calls of one JIT
//! function and of the same function in a loaded shared library (`soak/soak.scir`): valid
//! calls, every error kind (argument type, integer range, tensor shape, a failed assertion, a
//! packed call into a Rust closure that raises), half through the raw safe-call entry and half
//! through `Function::call`. Every error is read back on the thread that made the call and
//! must be that call's own (its message names a number unique to the call); a success leaves
//! no error behind.
//!
//! `cargo bench --features llvm --bench soak -- memory [MODULES]`: JIT-compiles and drops
//! `examples/ir/launcher.scir` MODULES times (default 20,000), printing the resident memory
//! after 1, 2, 10 and 100 compiles and then every 1,000.
//!
//! `cargo bench --features llvm --bench soak -- alloc [CALLS]`: CALLS (default 1,000,000)
//! calls of `soak_alloc` (two allocations through the environment allocator, the runtime's
//! CPU allocator; half the calls raise after allocating, the other half return a tensor that
//! is dropped at once), on the JIT and on a loaded shared library, printing the resident memory
//! after 1, 1,000, 10,000, 100,000 calls and then every 100,000: it stays flat after warm-up
//! when every allocation is released exactly once.
//!
//! Plain `cargo bench` runs all three with their defaults.

mod support;

use std::time::Instant;

use safecall::jit::{JitModule, JitOptions};
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType, type_index as ti};
use safecall_runtime::{Any, AnyView, Error, Function, Tensor};

const SOURCE: &str = include_str!("soak/soak.scir");

/// The closure `soak` calls: returns k, raising for k = 3 (mod 7).
fn closure() -> Function {
    Function::from_closure(|args| {
        let k: i64 = args[0].cast()?;
        if k % 7 == 3 {
            Err(Error::new("ValueError", &format!("closure raised for {k}")))
        } else {
            Ok(Any::from(k))
        }
    })
}

/// What a call must do.
enum Want {
    Returns(i64),
    Raises(&'static str, String),
}

/// One call of the mix: the arguments and the outcome they must have. `i` is the call's
/// number on thread `t`.
fn case(t: u64, i: u64, f: &Function, x: &Tensor, x2: &Tensor) -> (Vec<Any>, Want) {
    // Unique per call (up to 16M calls a thread) and a multiple of 35 = 5 * 7, so adding 3 or
    // 4 picks the outcome; under 2^31 for 8 threads.
    let base = ((t * 2_000_000 + i / 8) * 35) as i64;
    let f = Any::from(f.clone());
    let x_any = Any::from(x.clone());
    match i % 8 {
        0..=2 => (vec![f, x_any, Any::from(base)], Want::Returns(base)),
        3 => {
            let k = base + 4;
            (
                vec![f, x_any, Any::from(k)],
                Want::Raises("RuntimeError", format!("k = {k} is 4 mod 5")),
            )
        }
        4 => {
            let k = base + 3;
            (
                vec![f, x_any, Any::from(k)],
                Want::Raises("ValueError", format!("closure raised for {k}")),
            )
        }
        5 => {
            let k = base + (1 << 32);
            (
                vec![f, x_any, Any::from(k)],
                Want::Raises(
                    "ValueError",
                    format!(
                        "soak(f: Function, x: Tensor[(n,), float32, cpu], k: i32): \
                         argument 'k' (#2): {k} is out of range for i32 [-2147483648, 2147483647]"
                    ),
                ),
            )
        }
        6 => (
            vec![f, x_any, Any::from(format!("k{base}"))],
            Want::Raises(
                "TypeError",
                "soak(f: Function, x: Tensor[(n,), float32, cpu], k: i32): argument 'k' \
                 (#2): expected int, got ffi.String"
                    .to_owned(),
            ),
        ),
        _ => (
            vec![f, Any::from(x2.clone()), Any::from(base)],
            Want::Raises(
                "ValueError",
                "soak(f: Function, x: Tensor[(n,), float32, cpu], k: i32): argument 'x' \
                 (#1): ndim is 2, expected 1"
                    .to_owned(),
            ),
        ),
    }
}

/// Checks one outcome against what it must be.
fn check(want: &Want, got: Result<Any, Error>) -> Result<(), String> {
    match (want, got) {
        (Want::Returns(k), Ok(v)) if v.as_raw().type_index == ti::INT => {
            let got: i64 = v.cast().map_err(|e| e.to_string())?;
            (got == *k)
                .then_some(())
                .ok_or_else(|| format!("returned {got}, expected {k}"))
        }
        (Want::Returns(k), Ok(_)) => Err(format!("returned a non-int, expected {k}")),
        (Want::Returns(k), Err(e)) => Err(format!("expected {k}, raised {e}")),
        (Want::Raises(kind, msg), Ok(_)) => Err(format!("expected {kind}: {msg}, returned")),
        (Want::Raises(kind, msg), Err(e)) => {
            if e.kind() == *kind && e.message() == msg.as_str() {
                Ok(())
            } else {
                Err(format!(
                    "expected {kind}: {msg}\n  raised {}: {}",
                    e.kind(),
                    e.message()
                ))
            }
        }
    }
}

/// Calls the raw entry; the error of a failed call is taken on this thread.
fn call_raw(entry: TVMFFISafeCallType, args: &[Any]) -> Result<Result<Any, Error>, String> {
    let raw: Vec<TVMFFIAny> = args.iter().map(|a| *a.as_raw()).collect();
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a safe-call entry; `args` keeps every argument alive.
    let rc = unsafe {
        entry(
            std::ptr::null_mut(),
            raw.as_ptr(),
            raw.len() as i32,
            &mut result,
        )
    };
    match rc {
        // SAFETY: on success the callee wrote an owned value.
        0 => Ok(Ok(unsafe { Any::from_raw_owned_unchecked(result) })),
        -1 => {
            if result.type_index != ti::NONE {
                return Err("a failed call wrote `result`".to_owned());
            }
            Error::take_raised()
                .map(Err)
                .ok_or_else(|| "returned -1 without an error on this thread".to_owned())
        }
        other => Err(format!("returned {other}")),
    }
}

/// Tallies of one thread.
#[derive(Default)]
struct Tally {
    ok: u64,
    errors: u64,
    failures: Vec<String>,
}

fn soak_thread(t: u64, calls: u64, entry: TVMFFISafeCallType, function: &Function) -> Tally {
    let f = closure();
    let x = Tensor::cpu::<f32>(&[5]).expect("a tensor");
    let x2 = Tensor::cpu::<f32>(&[2, 3]).expect("a tensor");
    let mut tally = Tally::default();
    for i in 0..calls {
        let (args, want) = case(t, i, &f, &x, &x2);
        let outcome = if i % 16 < 8 {
            call_raw(entry, &args)
        } else {
            let views: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
            Ok(function.call(&views))
        };
        let checked = outcome.and_then(|got| {
            if got.is_ok() {
                tally.ok += 1;
            } else {
                tally.errors += 1;
            }
            check(&want, got)
        });
        // Nothing is left raised on this thread after a call.
        let stray = Error::take_raised().map(|e| format!("a stray raised error: {e}"));
        if let Some(e) = checked.err().or(stray)
            && tally.failures.len() < 10
        {
            tally
                .failures
                .push(format!("thread {t} call {i} (case {}): {e}", i % 8));
        }
    }
    tally
}

fn soak_path(label: &str, entry: TVMFFISafeCallType, threads: u64, calls: u64) -> bool {
    // SAFETY: the entry stays valid while the code is loaded, for the whole run.
    let function = unsafe { Function::from_safe_call(entry, std::ptr::null_mut(), None) };
    let start = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let function = &function;
                s.spawn(move || soak_thread(t, calls, entry, function))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok: u64 = tallies.iter().map(|t| t.ok).sum();
    let errors: u64 = tallies.iter().map(|t| t.errors).sum();
    let failures: Vec<&String> = tallies.iter().flat_map(|t| &t.failures).collect();
    println!(
        "soak [{label}]: {threads} threads x {calls} calls = {} calls: {ok} returned, {errors} \
         raised (each read back on its own thread), {} failures, {:.1} s",
        threads * calls,
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    for f in &failures {
        println!("FAILURE {f}");
    }
    failures.is_empty()
}

fn calls(threads: u64, calls: u64) -> bool {
    let module = safecall::ir::parse::parse(SOURCE).expect("soak.scir parses");
    let jit: JitModule =
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        unsafe { safecall::jit::compile(&module, &JitOptions::default()) }.expect("JIT-compile soak");
    let mut ok = soak_path("jit", jit.safe_call("soak").expect("soak"), threads, calls);
    let dir = support::scratch_dir("soak");
    let path = dir.join("soak.so");
    safecall::build_shared_library(&module, &path, &Default::default(), &Default::default())
        .expect("build soak.so");
    // SAFETY: a library safecall generated.
    let lib = unsafe { libloading::Library::new(&path) }.expect("load soak.so");
    // SAFETY: exported `__tvm_ffi_*` symbols are safe-call functions.
    let entry = *unsafe { lib.get::<TVMFFISafeCallType>(b"__tvm_ffi_soak") }.expect("symbol");
    ok &= soak_path("so", entry, threads, calls);
    let _ = std::fs::remove_dir_all(&dir);
    ok
}

/// Resident memory in KiB (`/proc/self/statm`).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * region::page::size() as u64 / 1024
}

fn memory(modules: u64) {
    let launcher = support::example("launcher");
    let options = support::launcher_options();
    let start = Instant::now();
    println!("compiles,rss_kib");
    println!("0,{}", rss_kib());
    for i in 1..=modules {
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile launcher"));
        if i % 1000 == 0 || matches!(i, 1 | 2 | 10 | 100) {
            println!("{i},{}", rss_kib());
        }
    }
    println!(
        "# {modules} compile/drop cycles in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// `soak -- alloc`: the allocating function called `calls` times through `entry`.
fn alloc_path(label: &str, entry: TVMFFISafeCallType, calls: u64) -> bool {
    let mut failures = 0u64;
    let start = Instant::now();
    println!("# soak alloc [{label}]\ncalls,rss_kib");
    for k in 0..calls {
        let arg = Any::from(k as i64);
        let raw = [*arg.as_raw()];
        let mut result = TVMFFIAny::NONE;
        // SAFETY: a safe-call entry; the argument is a POD int.
        let rc = unsafe { entry(std::ptr::null_mut(), raw.as_ptr(), 1, &mut result) };
        match (rc, k % 2) {
            (0, 0) if result.type_index == ti::TENSOR => {
                // SAFETY: on success the callee wrote an owned value; dropped here.
                drop(unsafe { Any::from_raw_owned_unchecked(result) });
            }
            (-1, 1) => {
                let e = Error::take_raised().expect("an error is raised");
                if e.kind() != "ValueError" {
                    failures += 1;
                }
            }
            _ => failures += 1,
        }
        let n = k + 1;
        if n % 100_000 == 0 || matches!(n, 1 | 1000 | 10_000) {
            println!("{n},{}", rss_kib());
        }
    }
    println!(
        "# {calls} calls in {:.1} s, {failures} failures",
        start.elapsed().as_secs_f64()
    );
    failures == 0
}

fn alloc(calls: u64) -> bool {
    // SAFETY: installs a valid allocator on this thread.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            Some(safecall_runtime::tensor::cpu_allocator),
            0,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let module = safecall::ir::parse::parse(SOURCE).expect("soak.scir parses");
    // SAFETY: the benchmark's IR dereferences only the memory it allocates.
    let jit = unsafe { safecall::jit::compile(&module, &JitOptions::default()) }
        .expect("JIT-compile soak");
    let mut ok = alloc_path(
        "jit",
        jit.safe_call("soak_alloc").expect("soak_alloc"),
        calls,
    );
    let dir = support::scratch_dir("soak-alloc");
    let path = dir.join("soak.so");
    safecall::build_shared_library(&module, &path, &Default::default(), &Default::default())
        .expect("build soak.so");
    // SAFETY: a library safecall generated.
    let lib = unsafe { libloading::Library::new(&path) }.expect("load soak.so");
    // SAFETY: exported `__tvm_ffi_*` symbols are safe-call functions.
    let entry = *unsafe { lib.get::<TVMFFISafeCallType>(b"__tvm_ffi_soak_alloc") }.expect("symbol");
    ok &= alloc_path("so", entry, calls);
    let _ = std::fs::remove_dir_all(&dir);
    ok
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let num = |i: usize, default: u64| {
        args.get(i)
            .map_or(default, |a| a.replace('_', "").parse().expect("a number"))
    };
    let ok = match args.first().map(String::as_str) {
        Some("calls") => calls(num(2, 8), num(1, 1_000_000)),
        Some("memory") => {
            memory(num(1, 20_000));
            true
        }
        Some("alloc") => alloc(num(1, 1_000_000)),
        None => {
            let ok = calls(8, 1_000_000);
            memory(20_000);
            ok & alloc(1_000_000)
        }
        Some(other) => panic!("unknown soak {other:?}: `calls`, `memory` or `alloc`"),
    };
    if !ok {
        std::process::exit(1);
    }
}
