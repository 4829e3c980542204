"""Part of ``triton_dispatch_run.py``: kernels taking Gluon's host descriptors (tiled, with
their shared-memory layout, and im2col; Triton 3.8 and later), each call through Triton's own
``run`` and twice through the dispatch (a miss, then a hit from its table): the same kernel
and the same launches, descriptors encoded on every launch (another base, shape or padding
with the same block and layout hits the same entry); another layout or block is another
specialization, in Triton's key and in the dispatcher's."""

from __future__ import annotations

from typing import Any, Dict, List

import safecall.triton

from support import triton_gluon_kernels as gluon
from support.triton_dispatch_forms import Context
from support.triton_fakes import DescriptorBase


def _calls(ctx: Context, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> List[Any]:
    def one(path: str) -> Any:
        ctx.fake.safecall_fake_cuda_reset()
        if path == "triton":
            compiled = ctx.original_run["run"](kernel, *args, grid=grid, warmup=False, **kwargs)
        else:
            compiled = kernel[grid](*args, **kwargs)
        return [id(compiled), ctx.launches()]

    return [one(path) for path in ("triton", "dispatch", "dispatch")]


def run_gluon(ctx: Context) -> Dict[str, Any]:
    """The outcomes by case, and the dispatchers' counts; empty where this Triton has no
    Gluon im2col descriptors."""
    if not gluon.AVAILABLE:
        return {}
    from triton.experimental.gluon import language as gl

    out = gl.float16

    def matrix(address: int, rows: int = 128) -> Any:
        return DescriptorBase(address, "float16", [rows, 64])

    def nhwc(address: int) -> Any:
        return DescriptorBase(address, "float16", [2, 8, 8, 32])

    target = DescriptorBase(0x7F00_0009_0000, "float16", [64, 32])
    cases = {
        "tiled": (gluon.tiled_copy, (1,), (gluon.tiled_descriptor(matrix(0x7F00_0001_0000)), target, 64, 32), {}),
        "tiled, another base and shape, nan padding": (
            gluon.tiled_copy, (1,), (gluon.tiled_descriptor(matrix(0x7F00_0002_0000, 256), padding="nan"), target, 64, 32), {}),
        "tiled, another block": (gluon.tiled_copy, (1,), (gluon.tiled_descriptor(matrix(0x7F00_0001_0000), (32, 32)), target, 32, 32),
                                 {}),
        "im2col": (gluon.im2col_copy, (1,), (gluon.im2col_descriptor(nhwc(0x7F00_0008_0000), pixel_box_lower_corner=[-1, -1],
                                                                     pixel_box_upper_corner=[1, 1]), target, 64, 32), {}),
        "im2col, other corners and strides": (
            gluon.im2col_copy, (2,), (gluon.im2col_descriptor(nhwc(0x7F00_000A_0000), pixel_box_lower_corner=[0, -2],
                                                              pixel_box_upper_corner=[2, 0], element_strides=[1, 2, 2, 1]),
                                      target, 64, 32), {}),
    }
    del out
    kernels = (gluon.tiled_copy, gluon.im2col_copy)
    before = {k.fn.__name__: dict(safecall.triton.jit(k).stats()) for k in kernels}
    results: Dict[str, Any] = {name: _calls(ctx, *case) for name, case in cases.items()}
    results["stats"] = {
        k.fn.__name__: {r: n - before[k.fn.__name__].get(r, 0) for r, n in safecall.triton.jit(k).stats().items()
                        if n != before[k.fn.__name__].get(r, 0)}
        for k in kernels
    }
    return results
