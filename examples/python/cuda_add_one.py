"""Launch a real CUDA kernel from a library safecall generated: no nvcc, no C source, no
runtime library (the system ``cc`` links the ``.so``). The module embeds hand-written PTX (examples/ir/cuda_add_one.ptx) that the
CUDA driver compiles for the GPU at hand; the host function checks its tensors and launches.

Build the library anywhere (the GPU machine needs only the .so, PyTorch and tvm_ffi)::

    cargo run -- build examples/ir/cuda_add_one.scir -o /tmp/cuda_add_one.so
    python examples/python/cuda_add_one.py /tmp/cuda_add_one.so [LAUNCHES]

It checks y = x + 1 for several sizes on PyTorch CUDA tensors, shows the errors of bad
calls, then times launches of an empty kernel from Python (the host path: tvm_ffi's call,
the argument checks, the driver's cuLaunchKernelEx) against PyTorch launching its own
smallest kernel.
"""

import sys
import time

import torch
import tvm_ffi


def per_second(fn, n):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return n / (time.perf_counter() - start)


def main(path, launches):
    if "/" not in path:
        path = "./" + path
    module = tvm_ffi.load_module(path)

    for n in [1, 255, 256, 1000, 1 << 20]:
        x = torch.arange(n, dtype=torch.float32, device="cuda")
        y = torch.empty_like(x)
        module.add_one(x, y)
        torch.cuda.synchronize()
        assert torch.equal(y, x + 1), f"n={n}: wrong result"
        print(f"add_one n={n}: ok")

    # The stream PyTorch uses is the one the kernel runs on.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.ones(4096, device="cuda")
        y = torch.empty_like(x)
        module.add_one(x, y)
    side.synchronize()
    assert torch.equal(y, x + 1)
    print("add_one on a side stream: ok")

    for args in [
        (torch.ones(4, device="cuda"), torch.ones(3, device="cuda")),
        (torch.ones(4), torch.ones(4)),
    ]:
        try:
            module.add_one(*args)
        except (TypeError, ValueError) as e:
            print(f"{type(e).__name__}: {e}")

    x = torch.zeros(1, device="cuda")
    ours = per_second(lambda: module.empty(x), launches)
    # PyTorch's own launch of a tiny kernel (fill of one element) for comparison.
    theirs = per_second(lambda: x.fill_(0.0), launches)
    print(f"empty kernel through safecall: {ours:,.0f} launches/s ({1e6 / ours:.2f} us each)")
    print(f"x.fill_(0) through PyTorch:    {theirs:,.0f} launches/s ({1e6 / theirs:.2f} us each)")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
