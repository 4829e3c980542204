"""A kernel of ``benches/triton_launch_count.py``'s ``firsttma4``, in a file of its own:
``@triton.jit`` reads its function's source from the file that defines it."""

import triton
import triton.language as tl


@triton.jit
def four(a, b, c, d, M, BM: tl.constexpr, BN: tl.constexpr):
    """Adds three host TMA descriptors' tiles into a fourth's."""
    i = tl.program_id(0) * BM
    d.store([i, 0], a.load([i, 0]) + b.load([i, 0]) + c.load([i, 0]))
