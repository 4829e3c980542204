"""examples/python/triton_add.py: its kernel compiled for sm_90 here, its launcher and its
rejected calls run against the CUDA driver double (on a GPU with PyTorch, ``main`` runs the
same functions on torch tensors and checks the results against torch)."""

from __future__ import annotations

import importlib.util
import os

from support import ROOT, fake_cuda

os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from support.triton_fakes import CudaTensor, skip_unless_triton  # noqa: E402

skip_unless_triton()

from triton.backends.compiler import GPUTarget  # noqa: E402


def _example():
    spec = importlib.util.spec_from_file_location("triton_add", ROOT / "examples" / "python" / "triton_add.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_launches_and_rejects_on_the_double(capsys):
    fake = fake_cuda.load()
    example = _example()
    kernel = example.compile_add(GPUTarget("cuda", 90, 32))
    launch = example.make_launcher(kernel)
    n = 4096 + 16
    x, y, out = (CudaTensor(0x7F00_0000_0000 + k * 0x10_0000, shape=(n,)) for k in range(3))
    fake.safecall_fake_cuda_reset()
    launch(x, y, out, n, example.BLOCK)
    [record] = fake_cuda.launches(fake)
    assert (record["kernel"], record["grid"], record["block"]) == ("add_kernel", [5, 1, 1], [128, 1, 1])
    assert record["args"][:4] == [
        t.data_ptr().to_bytes(8, "little").hex() for t in (x, y, out)
    ] + [n.to_bytes(4, "little").hex()]

    example.show_rejected_calls(launch, x, y, out, n, CudaTensor(0x7F00_0000_0000, "float16", shape=(n,)))
    assert capsys.readouterr().out.splitlines() == [
        "n not a multiple of 16: ValueError: add_kernel: argument 'n' (#3): 4111 is not a multiple of 16",
        "a float16 x: TypeError: add_kernel: argument 'x_ptr' (#0): dtype is float16, expected float32",
        "another BLOCK: ValueError: add_kernel: argument 'BLOCK' (#4): expected the constant 1024, got 128",
    ]
    assert len(fake_cuda.launches(fake)) == 1
