"""``safecall.triton`` against Triton 3.9's own launcher, side by side in one process, on the
CUDA driver double (tests/fake_cuda; no GPU needed, figures are host time only):

1. compiled kernel -> something that launches it: ``safecall.triton.function`` (IR built in
   Python, JIT-compiled) against Triton's ``CudaLauncher`` construction, warm (its C helper
   module already built) and cold (the C helper module, ``driver.c``, compiled with the system
   C compiler into an empty cache, as on a fresh machine or container), for two kernels
   compiled for sm_90: ``copy`` (a 6 KB cubin) and a pipelined ``matmul`` (``num_warps=8``,
   ``num_stages=3``: a 134 KB cubin, as real kernels have), each with the steps of
   ``function`` timed apart (reading the kernel, building the IR, parsing and verifying it,
   lowering and JIT-compiling it, wrapping it);
2. host time per launch from Python, steady state: ``launch(grid, x, y, n, BLOCK)`` with
   ``tvm_ffi.Tensor`` arguments against ``CompiledKernel[grid](x, y, n, BLOCK, stream=0)`` with
   objects that have ``data_ptr()`` (what Triton reads from a ``torch.Tensor``) and with plain
   int addresses (Triton's fastest case, no checks at all).

Run it from the repository root with a release build of the package and the double built::

    cargo test --test gpu --no-run                 # builds target/debug/deps/libsafecall_fake_cuda.so
    cd python && maturin develop --release && cd ..
    .venv/bin/python benches/triton_adapter.py

docs/triton.md ("Measured") has the figures of the last run, with the machine's load.

Targets (issue 29): (1) at most 1 ms and at least 20x faster than Triton's cold launcher
creation; (2) at least 5x less host time per launch than ``CompiledKernel[grid](...)``.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import statistics
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOUBLE = ROOT / "target" / "debug" / "deps" / "libsafecall_fake_cuda.so"

# Before triton is imported: its launcher links the double as libcuda.so.1.
LIBCUDA_DIR = ROOT / "target" / "triton-libcuda"
LIBCUDA_DIR.mkdir(parents=True, exist_ok=True)
if not (LIBCUDA_DIR / "libcuda.so.1").exists():
    (LIBCUDA_DIR / "libcuda.so.1").symlink_to(DOUBLE)
os.environ["TRITON_LIBCUDA_PATH"] = str(LIBCUDA_DIR)
os.environ["SAFECALL_LIBCUDA_PATH"] = str(DOUBLE)
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
FAKE = ctypes.CDLL(str(DOUBLE))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import tvm_ffi  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia import driver as nvidia  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import safecall.triton as sct  # noqa: E402
from safecall.testing import RawTensor  # noqa: E402


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A realistic kernel: a pipelined fp16 matmul (its sm_90 cubin is about 130 KB)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        y = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def compile_matmul():
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    signature.update({name: "i32" for name in ["M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn"]})
    signature.update({"BM": "constexpr", "BN": "constexpr", "BK": "constexpr"})
    src = ASTSource(matmul, signature=signature, constexprs={"BM": 128, "BN": 256, "BK": 64})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 3})


def breakdown(label: str, kernel, grid: int) -> None:
    """Where ``safecall.triton.function`` spends its time (medians of 50): reading the kernel,
    building the IR in Python, parsing and verifying it, lowering and JIT-compiling it, and
    wrapping the entry points into ``tvm_ffi.Function``s."""
    import safecall
    from safecall import _native

    k = sct.from_compiled(kernel)
    builder = sct.module({k.name: k}, name="t", grid=grid)
    built = builder.build()
    code, addresses = _native.jit(built, {}, "cranelift", None, None, None, True)
    parts = [
        ("read the kernel (from_compiled)", lambda: sct.from_compiled(kernel)),
        ("build the IR in Python", lambda: sct.module({k.name: k}, name="t", grid=grid)),
        ("parse + verify (ModuleBuilder.build)", builder.build),
        ("lower + JIT-compile (baseline tier)", lambda: _native.jit(built, {}, "cranelift", None, None, None, True)),
        ("wrap into tvm_ffi.Functions", lambda: safecall.JitModule(built, code, addresses)),
    ]
    total = median_of(lambda: sct.function(kernel, grid=grid), 50)
    print(f"{label} ({len(k.cubin)} B cubin): safecall.triton.function {total * 1e3:.3f} ms, of which")
    for what, fn in parts:
        fn()
        print(f"  {what + ':':40s} {median_of(fn, 50) * 1e3:8.3f} ms")


class Pointer:
    """What Triton's launcher reads from a tensor: ``data_ptr()``."""

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def best_of(fn, number: int, repeat: int = 5) -> float:
    """The fastest of ``repeat`` runs of ``number`` calls, in seconds per call."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number)
    return min(runs)


def median_of(fn, times: int) -> float:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold_triton_helper() -> float:
    """Compiles Triton's C launcher module (``driver.c``) into an empty cache, as the first
    launch on a fresh machine does."""
    with tempfile.TemporaryDirectory() as cache:
        previous = triton.knobs.cache.dir
        triton.knobs.cache.dir = cache
        try:
            start = time.perf_counter()
            triton.runtime.build.compile_module_from_file(
                src_path=os.path.join(os.path.dirname(nvidia.__file__), "driver.c"),
                name="cuda_utils",
                library_dirs=nvidia.library_dirs(),
                include_dirs=nvidia.include_dirs,
                libraries=nvidia.libraries,
            )
            return time.perf_counter() - start
        finally:
            triton.knobs.cache.dir = previous


def main() -> None:
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    src = ASTSource(copy, signature=signature, constexprs={"BLOCK": 128})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    utils = triton.runtime.driver.active.utils  # Triton's helper module, built (or cached)
    # Triton passes the CUdevice from cuCtxGetDevice where it expects an ordinal (equal on
    # NVIDIA's driver; the double numbers devices from 100, as python/tests/support/fake_cuda.py says).
    properties = utils.get_device_properties
    utils.get_device_properties = lambda device: properties(device - 100)

    big = compile_matmul()
    breakdown("copy", kernel, 1)
    breakdown("matmul, num_warps=8, num_stages=3", big, 2)
    ours_build = median_of(lambda: sct.function(kernel, grid=1), 50)
    ours_big = median_of(lambda: sct.function(big, grid=2), 50)
    warm = median_of(lambda: nvidia.CudaLauncher(kernel.src, kernel.metadata), 50)
    cold = statistics.median(cold_triton_helper() for _ in range(3))
    print("compiled kernel -> launcher (median):")
    print(f"  safecall.triton.function, copy:       {ours_build * 1e3:8.3f} ms")
    print(f"  safecall.triton.function, matmul:     {ours_big * 1e3:8.3f} ms")
    print(f"  Triton CudaLauncher, C module cached: {warm * 1e3:8.3f} ms")
    print(f"  Triton CudaLauncher, cold (cc):       {cold * 1e3:8.3f} ms  = {cold / ours_build:.0f}x safecall's "
          f"(copy), {cold / ours_big:.0f}x (matmul)")

    launch = sct.function(kernel, grid=1)
    x_addr, y_addr, n = 0x7F00_0000_1000, 0x7F00_0000_2000, 1000
    fp32 = (2, 32, 1)
    x = tvm_ffi.from_dlpack(RawTensor(x_addr, (2, 0), fp32, [n], None, 0))
    y = tvm_ffi.from_dlpack(RawTensor(y_addr, (2, 0), fp32, [n], None, 0))
    grid, grid3 = (8,), (8, 1, 1)  # Triton's CompiledKernel[grid] takes 3 entries
    number = 20_000
    FAKE.safecall_fake_cuda_quiet(1)  # the double's benchmark mode: no records, no checks
    ours = best_of(lambda: launch(grid, x, y, n, 128), number)
    px, py = Pointer(x_addr), Pointer(y_addr)
    theirs_obj = best_of(lambda: kernel[grid3](px, py, n, 128, stream=0), number)
    theirs_int = best_of(lambda: kernel[grid3](x_addr, y_addr, n, 128, stream=0), number)
    print("host time per launch from Python (best of 5 x 20k, on the driver double in benchmark mode):")
    print(f"  safecall.triton launch(grid, x, y, n, BLOCK), tvm_ffi.Tensors: {ours * 1e6:6.2f} us")
    print(f"  CompiledKernel[grid](...), data_ptr() objects:                {theirs_obj * 1e6:6.2f} us  = {theirs_obj / ours:.1f}x")
    print(f"  CompiledKernel[grid](...), int addresses (unchecked):         {theirs_int * 1e6:6.2f} us  = {theirs_int / ours:.1f}x")


if __name__ == "__main__":
    main()
