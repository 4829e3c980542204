"""``safecall.triton`` against Triton 3.9's own launcher, side by side in one process, on the
CUDA driver double (tests/fake_cuda; no GPU needed, figures are host time only):

1. compiled kernel -> something that launches it: ``safecall.triton.function`` (IR built in
   Python, JIT-compiled) against Triton's ``CudaLauncher`` construction, warm (its C helper
   module already built) and cold (the C helper module, ``driver.c``, compiled with the system
   C compiler into an empty cache, as on a fresh machine or container);
2. host time per launch from Python, steady state: ``launch(grid, x, y, n, BLOCK)`` with
   ``tvm_ffi.Tensor`` arguments against ``CompiledKernel[grid](x, y, n, BLOCK, stream=0)`` with
   objects that have ``data_ptr()`` (what Triton reads from a ``torch.Tensor``) and with plain
   int addresses (Triton's fastest case, no checks at all).

Run it from the repository root with a release build of the package and the double built::

    cargo test --test gpu_launch --no-run          # builds target/debug/deps/libsafecall_fake_cuda.so
    cd python && maturin develop --release && cd ..
    .venv/bin/python benches/triton_adapter.py

Targets (issue 29): (1) at most 1 ms and at least 20x faster than Triton's cold launcher
creation; (2) at least 5x less host time per launch than ``CompiledKernel[grid](...)``.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOUBLE = ROOT / "target" / "debug" / "deps" / "libsafecall_fake_cuda.so"
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the DLPack producer of the check suite

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
from dlpack import RawTensor  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia import driver as nvidia  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import safecall.triton as sct  # noqa: E402


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


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
    # NVIDIA's driver; the double numbers devices from 100, as python/tests/fake_cuda.py says).
    properties = utils.get_device_properties
    utils.get_device_properties = lambda device: properties(device - 100)

    ours_build = median_of(lambda: sct.function(kernel, grid=1), 50)
    ir_only = median_of(lambda: sct.module([kernel], grid=1).text(), 50)
    warm = median_of(lambda: nvidia.CudaLauncher(kernel.src, kernel.metadata), 50)
    cold = statistics.median(cold_triton_helper() for _ in range(3))
    print("compiled kernel -> launcher (median):")
    print(f"  safecall.triton.function:             {ours_build * 1e3:8.3f} ms  (of which IR text {ir_only * 1e3:.3f} ms)")
    print(f"  Triton CudaLauncher, C module cached: {warm * 1e3:8.3f} ms")
    print(f"  Triton CudaLauncher, cold (cc):       {cold * 1e3:8.3f} ms  = {cold / ours_build:.0f}x safecall's")

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
