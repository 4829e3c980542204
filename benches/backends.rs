//! Cranelift vs LLVM: compile latency, call overhead, and the quality of a CPU loop.
//!
//! - `compile/*`: `examples/ir/launcher.scir` to an object file (verify and lowering
//!   included), with Cranelift and with LLVM at O0 and O2; and JIT compilation of the same.
//! - `call/*`: the JIT-compiled `add_one` host function called through its raw safe-call
//!   pointer with two 4-element float32 DLTensor arguments (all argument checks included).
//! - `loop/*`: `add_one` over 1M float32 elements (y = x + 1) from the JIT with Cranelift and
//!   with LLVM O3, against the same C loop compiled by `cc -O3` into a shared library.
//!
//! `cargo bench --features llvm --bench backends` (LLVM rows need the `llvm` feature).

use std::ffi::c_void;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use safecall::Backend;
use safecall::backend::llvm::LlvmOptions;
use safecall::jit::{JitModule, JitOptions};
use safecall_runtime::abi::{
    DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFISafeCallType, TVMFFIValue, type_index,
};

fn example(name: &str) -> safecall::ir::Module {
    let path = format!("{}/examples/ir/{name}.scir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("example");
    safecall::ir::parse::parse(&text).unwrap_or_else(|e| panic!("{}", e.render(&path, &text)))
}

/// The configurations compared: a label, the backend and the LLVM optimization level.
fn configurations(levels: &[u8]) -> Vec<(String, Backend, u8)> {
    let mut out = vec![("cranelift".to_owned(), Backend::Cranelift, 0)];
    if safecall::backend::llvm::AVAILABLE {
        for &l in levels {
            out.push((format!("llvm_O{l}"), Backend::Llvm, l));
        }
    } else {
        eprintln!("LLVM rows skipped: built without the `llvm` feature");
    }
    out
}

/// Stands in for the launcher's kernel launch function.
#[allow(clippy::too_many_arguments)]
extern "C" fn matmul_kernel_launch(
    _a: *mut c_void,
    _b: *mut c_void,
    _bias: *mut c_void,
    _c: *mut c_void,
    _m: i64,
    _n: i64,
    _k: i64,
    _grid_x: i32,
    _grid_y: i32,
    _stream: *mut c_void,
) -> i32 {
    0
}

fn jit(module: &safecall::ir::Module, backend: Backend, opt_level: u8) -> JitModule {
    let mut options = JitOptions {
        backend,
        llvm: LlvmOptions::with_opt_level(opt_level),
        ..JitOptions::default()
    };
    options.symbols.insert(
        "matmul_kernel_launch".to_owned(),
        safecall::jit::SymbolAddress(matmul_kernel_launch as *const u8),
    );
    safecall::jit::compile(module, &options).expect("compiles")
}

fn compile(c: &mut Criterion) {
    let module = example("launcher");
    let mut group = c.benchmark_group("compile");
    for (label, backend, level) in configurations(&[0, 2]) {
        let options = safecall::Options {
            backend,
            llvm: LlvmOptions::with_opt_level(level),
            ..safecall::Options::default()
        };
        group.bench_function(format!("object/{label}"), |b| {
            b.iter(|| safecall::compile_object(black_box(&module), &options).expect("compiles"))
        });
        // Warm the per-process error helper before timing JIT compiles.
        drop(jit(&module, backend, level));
        group.bench_function(format!("jit/{label}"), |b| {
            b.iter(|| jit(black_box(&module), backend, level))
        });
    }
    group.finish();
}

/// Two compact CPU float32 DLTensors of `n` elements (owning their data and shapes).
struct Tensors {
    x: Vec<f32>,
    y: Vec<f32>,
    shape: Box<[i64; 1]>,
    dl: Box<[DLTensor; 2]>,
    args: [TVMFFIAny; 2],
}

impl Tensors {
    fn new(n: usize) -> Box<Self> {
        let dl = |data: *mut f32, shape: *mut i64| DLTensor {
            data: data.cast(),
            device: DLDevice {
                device_type: 1,
                device_id: 0,
            },
            ndim: 1,
            dtype: DLDataType {
                code: 2,
                bits: 32,
                lanes: 1,
            },
            shape,
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let mut t = Box::new(Tensors {
            x: (0..n).map(|i| i as f32).collect(),
            y: vec![0.0; n],
            shape: Box::new([n as i64]),
            dl: Box::new([dl(std::ptr::null_mut(), std::ptr::null_mut()); 2]),
            args: [TVMFFIAny::NONE; 2],
        });
        let shape = t.shape.as_mut_ptr();
        t.dl[0] = dl(t.x.as_mut_ptr(), shape);
        t.dl[1] = dl(t.y.as_mut_ptr(), shape);
        for i in 0..2 {
            t.args[i] = TVMFFIAny {
                type_index: type_index::DL_TENSOR_PTR,
                small_str_len: 0,
                value: TVMFFIValue {
                    v_ptr: (&mut t.dl[i] as *mut DLTensor).cast::<c_void>(),
                },
            };
        }
        t
    }

    /// Calls a safe-call function with the two tensors; panics unless it returns 0.
    fn call(&mut self, f: TVMFFISafeCallType) {
        let mut result = TVMFFIAny::NONE;
        // SAFETY: `f` is a generated add_one safe call; the arguments point to live tensors.
        let rc = unsafe { f(std::ptr::null_mut(), self.args.as_ptr(), 2, &mut result) };
        assert_eq!(rc, 0);
    }
}

fn call(c: &mut Criterion) {
    let module = example("add_one");
    let mut group = c.benchmark_group("call");
    for (label, backend, level) in configurations(&[2]) {
        let jit = jit(&module, backend, level);
        let f = jit.safe_call("add_one").expect("defined");
        let mut t = Tensors::new(4);
        t.call(f);
        assert_eq!(t.y, [1.0, 2.0, 3.0, 4.0]);
        group.bench_function(format!("add_one_4/{label}"), |b| {
            b.iter(|| t.call(black_box(f)))
        });
    }
    group.finish();
}

/// `y = x + 1` in C, compiled with `cc -O3 <flags>` into a shared library.
fn c_add_one(
    flags: &[&str],
) -> Option<(
    libloading::Library,
    unsafe extern "C" fn(*const f32, *mut f32, i64),
)> {
    let dir = std::env::temp_dir().join(format!("safecall-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("add_one.c");
    std::fs::write(
        &src,
        "void add_one(const float *x, float *y, long n) {\n    for (long i = 0; i < n; i++) y[i] = x[i] + 1.0f;\n}\n",
    )
    .ok()?;
    let lib: PathBuf = dir.join(format!(
        "libadd_one{}.so",
        flags.join("").replace(['-', '='], "_")
    ));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = std::process::Command::new(&cc)
        .args(["-O3", "-shared", "-fPIC"])
        .args(flags)
        .arg("-o")
        .arg(&lib)
        .arg(&src)
        .status()
        .ok()?;
    if !status.success() {
        eprintln!("`{cc}` failed: the C rows are skipped");
        return None;
    }
    // SAFETY: a library with one plain C function and no constructors.
    let lib = unsafe { libloading::Library::new(&lib) }.ok()?;
    // SAFETY: the symbol has this signature.
    let f = unsafe {
        *lib.get::<unsafe extern "C" fn(*const f32, *mut f32, i64)>(b"add_one")
            .ok()?
    };
    Some((lib, f))
}

fn cpu_loop(c: &mut Criterion) {
    const N: usize = 1 << 20;
    let module = example("add_one");
    let mut group = c.benchmark_group("loop");
    group.throughput(criterion::Throughput::Elements(N as u64));
    for (label, backend, level) in configurations(&[3]) {
        let jit = jit(&module, backend, level);
        let f = jit.safe_call("add_one").expect("defined");
        let mut t = Tensors::new(N);
        t.call(f);
        assert_eq!(t.y[N - 1], N as f32);
        group.bench_function(format!("add_one_1M/{label}"), |b| {
            b.iter(|| t.call(black_box(f)))
        });
    }
    for (label, flags) in [
        ("cc_O3", &[][..]),
        ("cc_O3_march_native", &["-march=native"][..]),
    ] {
        let Some((_lib, f)) = c_add_one(flags) else {
            continue;
        };
        let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
        let mut y = vec![0.0f32; N];
        group.bench_function(format!("add_one_1M/{label}"), |b| {
            // SAFETY: both buffers hold N floats.
            b.iter(|| unsafe { f(black_box(x.as_ptr()), y.as_mut_ptr(), N as i64) })
        });
        assert_eq!(y[N - 1], N as f32);
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = compile, call, cpu_loop
}
criterion_main!(benches);
