"""Host time per launch from Python of a TMA kernel with two host tensor descriptors, side by
side in one process against the CUDA driver double (tests/fake_cuda) in benchmark mode:
Triton 3.9's own launcher (``CompiledKernel[grid](x_desc, y_desc, ...)`` with
``TensorDescriptor`` arguments: two ``cuTensorMapEncodeTiled`` calls per launch) against the
``safecall.triton.function`` of the same compiled kernel, which takes the two tensors and
builds their descriptors itself (cached per launch site, so no encode once warm), with all its
checks. The differential test (python/tests/test_triton_differential.py) shows the two launch
the same bytes.

Needs the test venv (``cargo xtask venv``: triton 3.9.0, numpy), the package built into it
(``cargo xtask python`` or ``maturin develop``) and the double (``cargo test --test
gpu`` builds it). Run::

    .venv/bin/python benches/python_tma.py

Target: safecall at least 10x less host time per launch. Figures depend on the machine; the
script prints both and their ratio and asserts nothing.
"""

import os
import pathlib
import statistics
import sys
import timeit

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The test tree's `support` package (the CUDA double, CUDA tensors at fake addresses), as
# pytest's `pythonpath` option gives it to the tests.
sys.path.insert(0, str(ROOT / "python" / "tests"))

from support import fake_cuda  # noqa: E402  (the double's path and helpers)

os.environ["TRITON_LIBCUDA_PATH"] = str(ROOT / "target" / "triton-libcuda")
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import tvm_ffi  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import safecall.triton as sct  # noqa: E402
from support.triton_fakes import DescriptorBase  # noqa: E402  (CUDA tensors at fake addresses)

ROUNDS = 7
PER_ROUND = 2000


@triton.jit
def host_desc_copy(x_desc, y_desc, M, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    y_desc.store([pid * BM, 0], x_desc.load([pid * BM, 0]))


def per_launch_us(fn):
    """Median over rounds of the time per call, in microseconds."""
    times = timeit.repeat(fn, number=PER_ROUND, repeat=ROUNDS)
    return statistics.median(times) / PER_ROUND * 1e6


def main():
    double = fake_cuda.load()
    fake_cuda.libcuda_dir(fake_cuda.PATH, ROOT / "target" / "triton-libcuda")
    utils = triton.runtime.driver.active.utils
    properties = utils.get_device_properties
    utils.get_device_properties = lambda device: properties(device - fake_cuda.DEVICE_HANDLE_BASE)

    signature = {
        "x_desc": "tensordesc<fp16[64, 64]>",
        "y_desc": "tensordesc<fp16[64, 64]>",
        "M": "i32",
        "BM": "constexpr",
        "BN": "constexpr",
    }
    constants = {"BM": 64, "BN": 64}
    src = ASTSource(host_desc_copy, signature=signature, constexprs=constants)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    x = DescriptorBase(0x7F00_0010_0000, "float16", (256, 64))
    y = DescriptorBase(0x7F00_0020_0000, "float16", (256, 64))
    xd, yd = TensorDescriptor.from_tensor(x, [64, 64]), TensorDescriptor.from_tensor(y, [64, 64])
    launcher = sct.function(kernel)
    # tvm_ffi tensors made once, as a caller holding torch tensors passes them.
    xt, yt = tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y)
    grid = (4, 1, 1)

    def triton_launch():
        kernel[grid](xd, yd, 256, 64, 64, stream=0)

    def safecall_launch():
        launcher(grid, xt, yt, 256, 64, 64)

    # Warm up (Triton builds its launcher; safecall loads the binary), then quiet the double.
    triton_launch()
    safecall_launch()
    encodes = double.safecall_fake_cuda_tensormap_encodes
    encodes.restype = __import__("ctypes").c_uint64
    double.safecall_fake_cuda_quiet(1)
    before = encodes()
    t_triton = per_launch_us(triton_launch)
    triton_encodes = encodes() - before
    before = encodes()
    t_safecall = per_launch_us(safecall_launch)
    safecall_encodes = encodes() - before
    double.safecall_fake_cuda_quiet(0)
    launches = ROUNDS * PER_ROUND
    print(f"triton {triton.__version__} CompiledKernel[grid](2 TensorDescriptors): {t_triton:.2f} us per launch, "
          f"{triton_encodes / launches:.1f} encodes per launch")
    print(f"safecall.triton.function (cached descriptors):      {t_safecall:.2f} us per launch, "
          f"{safecall_encodes / launches:.1f} encodes per launch")
    print(f"ratio triton / safecall: {t_triton / t_safecall:.1f}x")


if __name__ == "__main__":
    main()
