"""A Triton kernel compiled once, launched from PyTorch through ``safecall.triton``: no C
compiler (Triton's own launcher compiles C on first use), the arguments checked on every call.

Run it on a machine with a GPU, PyTorch and triton 3.9::

    python examples/python/triton_add.py [LAUNCHES]

It checks ``out = x + y`` against PyTorch for several sizes, shows what a bad call raises, and
times launches through safecall against Triton's own launches of the same compiled kernel. The
test suite (python/tests/test_triton_example.py) runs :func:`compile_add`,
:func:`make_launcher` and :func:`show_rejected_calls` against the CUDA driver double.
"""

import sys
import time

import triton
import triton.language as tl
from triton.compiler import ASTSource

import safecall.triton as sct

BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def compile_add(target=None):
    """``add_kernel`` compiled for ``target`` (default: the GPU at hand) as Triton's JIT
    specializes it for 16-byte aligned tensors and ``n % 16 == 0``."""
    if target is None:
        target = triton.runtime.driver.active.get_current_target()
    divisible = {(i,): [["tt.divisibility", 16]] for i in range(4)}
    src = ASTSource(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": BLOCK}, attrs=divisible)
    return triton.compile(src, target=target)


def make_launcher(kernel):
    """``launch(x, y, out, n, BLOCK)``: the grid computed from ``n`` as Triton users write it."""
    return sct.function(kernel, grid=lambda META: (triton.cdiv(META["n"], META["BLOCK"]),))


def show_rejected_calls(launch, x, y, out, n, x_half):
    """Calls a Triton launch would take silently (or crash on), and what safecall says."""
    bad = {
        "n not a multiple of 16": (x, y, out, n - 1, BLOCK),
        "a float16 x": (x_half, y, out, n, BLOCK),
        "another BLOCK": (x, y, out, n, 128),
    }
    for what, args in bad.items():
        try:
            launch(*args)
        except (TypeError, ValueError) as e:
            print(f"{what}: {type(e).__name__}: {str(e).splitlines()[0]}")


def per_second(fn, n, sync):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return n / (time.perf_counter() - start)


def main(launches):
    import torch

    kernel = compile_add()
    launch = make_launcher(kernel)
    for n in [16, 1024, 4096 + 16, 1 << 20]:
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        out = torch.empty_like(x)
        launch(x, y, out, n, BLOCK)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), f"n={n}: wrong result"
        print(f"add n={n}: ok")
    show_rejected_calls(launch, x, y, out, n, x.half())

    n = 1 << 12
    x, y, out = (torch.rand(n, device="cuda") for _ in range(3))
    grid = (triton.cdiv(n, BLOCK), 1, 1)
    ours = per_second(lambda: launch(x, y, out, n, BLOCK), launches, torch.cuda.synchronize)
    theirs = per_second(lambda: kernel[grid](x, y, out, n, BLOCK), launches, torch.cuda.synchronize)
    print(f"safecall.triton: {ours:,.0f} launches/s ({1e6 / ours:.2f} us each)")
    print(f"CompiledKernel[grid](...): {theirs:,.0f} launches/s ({1e6 / theirs:.2f} us each)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
