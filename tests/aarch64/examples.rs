//! The example modules the examples driver (`examples.c`) loads: every `examples/ir/*.scir`,
//! the module `examples/jit.rs` builds (built here with the same builder calls, ahead of time
//! instead of JIT-compiled), and a stand-in for the CUDA module `imports.scir` imports; and
//! the lines the driver must print.

use std::path::{Path, PathBuf};

use cranelift_object::object::{self, Object};
use safecall::ir::Module;

use super::suite::Want;
use super::toolchain::Arch;

/// What `imports.scir`'s loader of the `cuda` kind returns in the driver: a module with the
/// `add_bias` that `forward` finds in the imports (a CPU stand-in that reads no data).
const BIAS_KERNELS: &str = "module bias_kernels;

/// Stands in for the imported CUDA module's add_bias: returns n + bias.
fn add_bias(x: tensor[(n,), float32, device=cuda], bias: f64) -> f64 {
    return cast<f64>(n) + bias;
}
";

/// The variable naming the CUDA driver library generated code loads.
pub const LIBCUDA: &str = "SAFECALL_LIBCUDA_PATH";

/// The module of `examples/jit.rs` (the same builder calls).
#[path = "../../examples/shared/jit_demo.rs"]
mod jit_demo;

fn parse(text: &str, file: &Path) -> Module {
    let dir = file.parent();
    let (module, _) = safecall::ir::parse::parse_in_dir(text, dir)
        .unwrap_or_else(|e| panic!("{}", e.render(&file.to_string_lossy(), text)));
    module
}

/// Every example module as (library name, module).
fn modules() -> Vec<(String, Module)> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "scir"))
        .collect();
    files.sort();
    let mut all: Vec<(String, Module)> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, parse(&text, file))
        })
        .collect();
    all.push(("jit_demo".to_owned(), jit_demo::jit_demo()));
    all.push((
        "bias_kernels".to_owned(),
        parse(BIAS_KERNELS, &examples.join("bias_kernels.scir")),
    ));
    all
}

/// Builds every example module into `dir` with `options`, checking each library is for
/// `arch`; returns how many were built.
pub fn build_all(
    dir: &Path,
    options: &safecall::Options,
    link: &safecall::aot::LinkOptions,
    arch: &Arch,
) -> usize {
    let want = match arch.name {
        "aarch64" => object::Architecture::Aarch64,
        _ => object::Architecture::X86_64,
    };
    let all = modules();
    for (name, module) in &all {
        let so = dir.join(format!("{name}.so"));
        safecall::build_shared_library(module, &so, options, link)
            .unwrap_or_else(|e| panic!("{:?} for {}: {name}: {e}", options.backend, arch.name));
        let bytes = std::fs::read(&so).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        assert_eq!(file.architecture(), want, "{name}.so for {}", arch.name);
    }
    all.len()
}

/// The lines the examples driver must print, with the example each belongs to.
pub fn expected() -> Vec<(String, Want)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in EXPECTED.lines() {
        if let Some(name) = line.strip_prefix("== ") {
            section = name.to_owned();
        }
        out.push((format!("example {section}"), Want::Line(line.to_owned())));
    }
    out
}

/// What the examples driver prints (the same on x86-64 and aarch64, for both backends).
const EXPECTED: &str = r#"== add_one
x = [0.0, 1.0, 2.0, 3.0, 4.0]
y = [1.0, 2.0, 3.0, 4.0, 5.0]
add_one(x, short) -> ValueError: add_one: argument 'y' (#1): shape[0] is 3, expected 5 (= n, bound by x.shape[0])
  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])
== kernels
scale_in_place(x) returned 4; x = [3.0, 6.0, 9.0, 12.0]
== calls
loading calls.so -> RuntimeError: Library binary was created using {example_kernels} but a loader of that name is not registered. Make sure to have runtime that registers ffi.Module.load_from_bytes.example_kernels
  loader example_kernels: payload b"factor=3" -> kernels.so
  example.log: scaling 4 elements
scale(x) returned 4; x = [3.0, 6.0, 9.0, 12.0]
scale(float64 tensor) -> TypeError: scale: argument 'x' (#0): dtype is float64, expected float32
  when calling scale(x: Tensor[(n,), float32, cpu])
== launcher
launched: m = 256, n = 384, k = 64, grid = (3, 2), stream = 0x5eed
the launcher got the tensors' data pointers: true
k = 60 (not a multiple of 8) -> ValueError: matmul: k = 60 (bound by a.shape[1]) is not a multiple of 8
  when calling matmul(a: Tensor[(m, k), float16, cuda, align=16], b: Tensor[(k, n), float16, cuda, align=16], bias: Tensor[(n,), float32, cuda], c: Tensor[(m, n), float32, cuda, align=16, index=i32])
c on the CPU -> ValueError: matmul: argument 'c' (#3): device is cpu:0, expected a cuda tensor
  when calling matmul(a: Tensor[(m, k), float16, cuda, align=16], b: Tensor[(k, n), float16, cuda, align=16], bias: Tensor[(n,), float32, cuda], c: Tensor[(m, n), float32, cuda, align=16, index=i32])
c on another GPU -> ValueError: matmul: argument 'c' (#3): device id is 1, expected 0 (the device id of a)
  when calling matmul(a: Tensor[(m, k), float16, cuda, align=16], b: Tensor[(k, n), float16, cuda, align=16], bias: Tensor[(n,), float32, cuda], c: Tensor[(m, n), float32, cuda, align=16, index=i32])
m = 2048 -> RuntimeError: matmul_kernel_launch: grid (3, 16) exceeds 8 blocks in y
launches recorded after the rejected calls: 0
== jit_demo
  kernel launched: n = 3, grid = 1
scale(x) returned 3; x = [2.0, 4.0, 6.0]
scale(int32 tensor) -> TypeError: scale: argument 'x' (#0): dtype is int32, expected float32
  when calling scale(x: Tensor[(n,), float32, cpu])
  kernel launched: n = 3, grid = 1
through the global registry, after dropping the module: x = [4.0, 8.0, 12.0]
== call_global
echo_positive(5) returned int 5
echo_positive(-2) -> ValueError: echo_positive: x must be positive, got -2
  callback got 3 arguments: tensor float 4008000000000000 raw_str scaled
apply(show, t, 1.5) returned int 3
apply(echo, t, 1.5) returned t
apply(fail, t, 1.5) -> ValueError: callback failed
== imports
  loader test_helpers: payload b"helpers v1\x00" -> kernels.so
  loader cuda: payload b"\x7fELF\x02\x01\x01\x00fatbin" -> bias_kernels.so
forward(x, 0.5) returned float 4016000000000000
forward(cpu tensor, 0.5) -> ValueError: forward: argument 'x' (#0): device is cpu:0, expected a cuda tensor
  when calling forward(x: Tensor[(n,), float32, cuda], bias: f32)
== all_params
everything() -> TypeError: everything: expected 32 arguments, got 0
  when calling everything(a: i8, b: i16, c: i32, d: i64, e: u8, f: u16, g: u32, h: u64, flag: bool, x32: f32, x64: f64, p: ptr, s: str, raw: bytes, dev: Device, dt: DataType, sh: Shape, cb: Function, anything: Any, maybe_n: Optional[i64], maybe_t: Optional[Tensor[(n,), float32]], block: Literal[128], fast: Literal[True], eps: Literal[1e-5], nothing: Literal[None], pair: Tuple[lo: i64, hi: Tensor[(k,), int8x4, cpu]], data: DataPtr, st: Stream, t: Tensor[(n, m), any, strided, byte_offset=any], u: Tensor[(rows, cols), bfloat16, cuda, strides=(row_stride, 1), device_id=dev_id, align=16, index=i32], v: Tensor[(4, cols), float8_e4m3fn, cuda, device_id=free], w: Tensor[(), bool])
== launcher4d
  callback got 8 arguments: tensor tensor tensor tensor int 8 int 2 int 128 ptr 0x5eed
attention(d = 64) returned
attention(d = 32) -> ValueError: attention: head size 32 is not the specialized 64
== cuda_add_one
empty(x) -> RuntimeError: cannot launch CUDA kernels: SAFECALL_LIBCUDA_PATH is `/nonexistent/libcuda.so.1`, which could not be loaded: /nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory
"#;
