"""Side by side, in one process: IR text -> callable ``tvm_ffi.Function`` through the safecall
Python package, the Rust JIT's own compile time for the same IR, and ``tvm_ffi.cpp.load_inline``
of an equivalent hand-written C++ function (cold and cached); then the call overhead from
Python of a JIT function against the same function built as a ``.so`` and loaded with
``tvm_ffi.load_module``.

Run it with a release build of the package (figures from a debug build mean nothing)::

    cd python && maturin build --release --features llvm --auditwheel skip -o /tmp/wheels
    python -m venv /tmp/bvenv && /tmp/bvenv/bin/pip install /tmp/wheels/safecall-*.whl numpy ninja
    PATH=/tmp/bvenv/bin:$PATH nice /tmp/bvenv/bin/python benches/python_jit.py

(``ninja`` is what ``load_inline`` builds with.) Targets: the Python path adds at most 20% to
the Rust JIT's compile time for the same IR; the two call overheads are equal within noise.
"""

import ctypes
import pathlib
import statistics
import sys
import tempfile
import time
import timeit

import numpy as np
import tvm_ffi
import tvm_ffi.cpp

import safecall

ROOT = pathlib.Path(__file__).resolve().parent.parent
ROUNDS = 5
PER_ROUND = 60

# A flash-attention-style launcher: four 4-D float16 CUDA tensors with symbolic strides (only
# the head dimension contiguous), grouped-query heads, a grid and the device's stream.
ATTN_IR = """
module attn_launcher;

extern fn attn_fwd_launch(ptr, ptr, ptr, ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, i32, ptr) -> i32 nonzero_is_raised;

/// o = softmax(q k^T / sqrt(d)) v, (batch, seq, heads, head_dim) layout.
fn attn_fwd(
    q: tensor[(b, sq, h, d), float16, device=cuda, strides=(q_b, q_s, q_h, 1), align=16],
    k: tensor[(b, sk, hk, d), float16, device=cuda, strides=(k_b, k_s, k_h, 1), align=16],
    v: tensor[(b, sk, hk, d), float16, device=cuda, strides=(v_b, v_s, v_h, 1), align=16],
    o: tensor[(b, sq, h, d), float16, device=cuda, strides=(o_b, o_s, o_h, 1), align=16],
) where d % 8 == 0 {
    assert h % hk == 0 else ValueError("attn_fwd: ", h, " query heads are not a multiple of ", hk, " kv heads");
    let grid_x = cast<i32>(ceil_div(sq, 128));
    let grid_y = cast<i32>(b * h);
    let stream = get_stream(q.device_type, q.device_id);
    call attn_fwd_launch(q.data, k.data, v.data, o.data, b, sq, sk, h, hk, d, q_s, k_s, v_s, o_s, grid_x, grid_y, stream);
}
"""

ATTN_CPP = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

using tvm::ffi::TensorView;

extern "C" int attn_fwd_launch_stub(const void*, const void*, const void*, void*, int64_t,
    int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t,
    int32_t, void*) __attribute__((noinline));
extern "C" int attn_fwd_launch_stub(const void*, const void*, const void*, void*, int64_t,
    int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t,
    int32_t, void*) { return 0; }

static void check(const char* name, int index, const TensorView& t, int device_id) {
  if (t.ndim() != 4)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): ndim is " << t.ndim() << ", expected 4";
  DLDataType dt = t.dtype();
  if (dt.code != kDLFloat || dt.bits != 16 || dt.lanes != 1)
    TVM_FFI_THROW(TypeError) << "attn_fwd: argument '" << name << "' (#" << index
                             << "): dtype is not float16";
  if (t.device().device_type != kDLCUDA)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): expected a cuda tensor";
  if (t.device().device_id != device_id)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): device id differs";
  if (t.stride(3) != 1 && t.size(3) != 1)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): strides[3] is " << t.stride(3) << ", expected 1";
  if (t.byte_offset() != 0)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): byte_offset is not 0";
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): data is not 16-byte aligned";
}

static void same(const char* name, int index, int dim, int64_t got, int64_t want) {
  if (got != want)
    TVM_FFI_THROW(ValueError) << "attn_fwd: argument '" << name << "' (#" << index
                              << "): shape[" << dim << "] is " << got << ", expected " << want;
}

void attn_fwd(TensorView q, TensorView k, TensorView v, TensorView o) {
  int device_id = q.device().device_id;
  check("q", 0, q, device_id);
  check("k", 1, k, device_id);
  check("v", 2, v, device_id);
  check("o", 3, o, device_id);
  int64_t b = q.size(0), sq = q.size(1), h = q.size(2), d = q.size(3);
  int64_t sk = k.size(1), hk = k.size(2);
  same("k", 1, 0, k.size(0), b);
  same("k", 1, 3, k.size(3), d);
  for (int i = 0; i < 4; ++i) same("v", 2, i, v.size(i), k.size(i));
  for (int i = 0; i < 4; ++i) same("o", 3, i, o.size(i), q.size(i));
  if (d % 8 != 0) TVM_FFI_THROW(ValueError) << "attn_fwd: d = " << d << " is not a multiple of 8";
  if (hk == 0 || h % hk != 0)
    TVM_FFI_THROW(ValueError) << "attn_fwd: " << h << " query heads are not a multiple of "
                              << hk << " kv heads";
  int32_t grid_x = static_cast<int32_t>((sq + 127) / 128);
  int32_t grid_y = static_cast<int32_t>(b * h);
  void* stream = TVMFFIEnvGetStream(q.device().device_type, device_id);
  if (attn_fwd_launch_stub(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, sq, sk, h,
                           hk, d, q.stride(1), k.stride(1), v.stride(1), o.stride(1), grid_x,
                           grid_y, stream) != 0)
    TVM_FFI_THROW(RuntimeError) << "launch failed";
}
"""

MATMUL_CPP = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

using tvm::ffi::TensorView;

extern "C" int matmul_launch_stub(const void*, const void*, const void*, void*, int64_t, int64_t,
    int64_t, int32_t, int32_t, void*) __attribute__((noinline));
extern "C" int matmul_launch_stub(const void*, const void*, const void*, void*, int64_t, int64_t,
    int64_t, int32_t, int32_t, void*) { return 0; }

static void check(const char* name, int index, const TensorView& t, int ndim, uint8_t code,
                  int bits, int align, int device_id) {
  if (t.ndim() != ndim)
    TVM_FFI_THROW(ValueError) << "matmul: argument '" << name << "' (#" << index << "): ndim is "
                              << t.ndim() << ", expected " << ndim;
  DLDataType dt = t.dtype();
  if (dt.code != code || dt.bits != bits || dt.lanes != 1)
    TVM_FFI_THROW(TypeError) << "matmul: argument '" << name << "' (#" << index << "): dtype";
  if (t.device().device_type != kDLCUDA || t.device().device_id != device_id)
    TVM_FFI_THROW(ValueError) << "matmul: argument '" << name << "' (#" << index << "): device";
  if (!t.IsContiguous())
    TVM_FFI_THROW(ValueError) << "matmul: argument '" << name << "' (#" << index
                              << "): not compact";
  if (t.byte_offset() != 0 || (align && reinterpret_cast<uintptr_t>(t.data_ptr()) % align))
    TVM_FFI_THROW(ValueError) << "matmul: argument '" << name << "' (#" << index << "): align";
}

void matmul(TensorView a, TensorView b, TensorView bias, TensorView c) {
  int dev = a.device().device_id;
  check("a", 0, a, 2, kDLFloat, 16, 16, dev);
  check("b", 1, b, 2, kDLFloat, 16, 16, dev);
  check("bias", 2, bias, 1, kDLFloat, 32, 0, dev);
  check("c", 3, c, 2, kDLFloat, 32, 16, dev);
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k || bias.size(0) != n || c.size(0) != m || c.size(1) != n)
    TVM_FFI_THROW(ValueError) << "matmul: shapes do not match";
  if (m * n > INT32_MAX) TVM_FFI_THROW(ValueError) << "matmul: c is too large for i32 indices";
  if (k % 8 != 0) TVM_FFI_THROW(ValueError) << "matmul: k = " << k << " is not a multiple of 8";
  if (!(m > 0 && n > 0)) TVM_FFI_THROW(ValueError) << "matmul: empty output";
  void* stream = TVMFFIEnvGetStream(kDLCUDA, dev);
  if (matmul_launch_stub(a.data_ptr(), b.data_ptr(), bias.data_ptr(), c.data_ptr(), m, n, k,
                         static_cast<int32_t>((n + 127) / 128),
                         static_cast<int32_t>((m + 127) / 128), stream) != 0)
    TVM_FFI_THROW(RuntimeError) << "launch failed";
}
"""

# Stand-in launch functions: the JIT needs addresses; nothing calls them while compiling.
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int32)(lambda: 0)
LAUNCH_ADDRESS = ctypes.cast(LAUNCH, ctypes.c_void_p).value


def median_us(samples_ns):
    return statistics.median(samples_ns) / 1e3


def python_path_ns(text, name, symbols, backend):
    start = time.perf_counter_ns()
    fn = safecall.jit(safecall.parse(text), symbols=symbols, backend=backend)[name]
    elapsed = time.perf_counter_ns() - start
    assert isinstance(fn, tvm_ffi.Function)
    return elapsed


def compile_figures(label, text, name, extern, backend):
    symbols = {extern: LAUNCH_ADDRESS}
    python_ns, rust_ns = [], []
    for _ in range(3):  # warm up both paths (helper compile, allocator, caches)
        python_path_ns(text, name, symbols, backend)
    safecall._native.rust_jit_times(text, symbols, 3, backend)
    for _ in range(ROUNDS):  # interleaved rounds, so drift hits both alike
        python_ns += [python_path_ns(text, name, symbols, backend) for _ in range(PER_ROUND)]
        rust_ns += safecall._native.rust_jit_times(text, symbols, PER_ROUND, backend)
    py, rs = median_us(python_ns), median_us(rust_ns)
    print(
        f"{label:<34} {backend:<9} Python IR text -> tvm_ffi.Function {py:9.1f} us   "
        f"Rust parse+jit::compile {rs:9.1f} us   Python adds {100 * (py / rs - 1):+5.1f}%"
    )


def load_inline_figures(label, source, name):
    cold = []
    for i in range(3):
        with tempfile.TemporaryDirectory() as build:
            start = time.perf_counter_ns()
            module = tvm_ffi.cpp.load_inline(
                f"{name}_cold{i}", cpp_sources=source, functions=[name], build_directory=build
            )
            module[name]
            cold.append(time.perf_counter_ns() - start)
    with tempfile.TemporaryDirectory() as build:
        tvm_ffi.cpp.load_inline(f"{name}_cached", cpp_sources=source, functions=[name], build_directory=build)
        cached = []
        for _ in range(20):
            start = time.perf_counter_ns()
            module = tvm_ffi.cpp.load_inline(
                f"{name}_cached", cpp_sources=source, functions=[name], build_directory=build
            )
            module[name]
            cached.append(time.perf_counter_ns() - start)
    print(
        f"{label:<34} {'g++':<9} tvm_ffi.cpp.load_inline cold {median_us(cold) / 1e3:9.1f} ms "
        f"(median of 3)   cached {median_us(cached):9.1f} us (median of 20)"
    )


def per_call_ns(fn, args, number=100_000, repeat=7):
    runs = timeit.repeat(lambda: fn(*args), number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9, min(runs) / number * 1e9


def call_figures(tmp):
    cases = [
        ("twice(n: i64) -> i64", "module t; fn twice(n: i64) -> i64 { return n * 2; }", "twice",
         lambda: (21,)),
        ("add_one (2 float32[4] numpy)", (ROOT / "examples/ir/add_one.scir").read_text(), "add_one",
         lambda: (np.arange(4, dtype="float32"), np.zeros(4, dtype="float32"))),
    ]
    for label, text, name, make_args in cases:
        module = safecall.parse(text)
        jit_fn = safecall.jit(module)[name]
        lib = tmp / f"{name}.so"
        safecall.build(module, lib)
        so_fn = tvm_ffi.load_module(str(lib))[name]
        args = make_args()
        jit_fn(*args), so_fn(*args)
        # Interleave the measurements of the two functions.
        jit_runs, so_runs = [], []
        for _ in range(3):
            jit_runs.append(per_call_ns(jit_fn, args))
            so_runs.append(per_call_ns(so_fn, args))
        jm = statistics.median(r[0] for r in jit_runs)
        sm = statistics.median(r[0] for r in so_runs)
        print(
            f"{label:<34} call from Python: JIT {jm:7.1f} ns   .so via load_module {sm:7.1f} ns"
            f"   (min {min(r[1] for r in jit_runs):.1f} / {min(r[1] for r in so_runs):.1f} ns)"
        )


def main():
    print(f"python {sys.version.split()[0]}, tvm_ffi {tvm_ffi.__version__}, safecall package "
          f"({'with' if safecall.HAS_LLVM else 'without'} LLVM), {ROUNDS}x{PER_ROUND} compiles per median")
    launcher = (ROOT / "examples/ir/launcher.scir").read_text()
    backends = ["cranelift"] + (["llvm"] if safecall.HAS_LLVM else [])
    for backend in backends:
        compile_figures("examples/ir/launcher.scir", launcher, "matmul", "matmul_kernel_launch", backend)
        compile_figures("attn_fwd (four 4-D strided tensors)", ATTN_IR, "attn_fwd", "attn_fwd_launch", backend)
    load_inline_figures("matmul launcher (C++)", MATMUL_CPP, "matmul")
    load_inline_figures("attn_fwd launcher (C++)", ATTN_CPP, "attn_fwd")
    with tempfile.TemporaryDirectory() as tmp:
        call_figures(pathlib.Path(tmp))


if __name__ == "__main__":
    main()
