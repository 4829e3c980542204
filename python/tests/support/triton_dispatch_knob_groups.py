"""Part of ``triton_dispatch_run.py``: Triton's knob groups (``knobs.runtime``,
``knobs.compilation``) replaced after the dispatcher's table holds the key, as Triton's test
helper ``triton._internal_testing.fresh_knobs`` replaces them (``knobs.runtime =
knobs.runtime.copy().reset()``), then set on the new objects; and (where this release has it)
the ``fpsan_homomorphic_casts`` knob's descriptor replaced on its class. Each call goes through
Triton's own ``run`` and twice through the dispatch: the same kernel (a debug or fpsan one where
the new setting says so), the same launches, the same calls of a launch hook set on the new
``knobs.runtime``."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import safecall.triton
from triton import knobs

from support.triton_dispatch_forms import Context


def _calls(ctx: Context, hook_calls: List[Any]) -> List[Any]:
    """The call through Triton's run, then twice through the dispatch: each the kernel's
    ``debug`` and fpsan options, the launches, and the hook calls it made."""

    def one(path: str) -> Any:
        ctx.fake.safecall_fake_cuda_reset()
        hook_calls.clear()
        if path == "triton":
            kernel = ctx.original_run["run"](ctx.copy, ctx.x, ctx.y, 1000, grid=(4,), warmup=False, BLOCK=128)
        else:
            kernel = ctx.copy[(4,)](ctx.x, ctx.y, 1000, BLOCK=128)
        options = [getattr(kernel.metadata, "debug", None), getattr(kernel.metadata, "fpsan_homomorphic_casts", None)]
        return [id(kernel), options, ctx.launches(), len(hook_calls)]

    return [one(path) for path in ("triton", "dispatch", "dispatch")]


def _replaced(ctx: Context, change: Callable[[], Callable[[], None]], hook_calls: List[Any]) -> List[Any]:
    """``change()`` (which returns how to undo it) between a call that fills the table and
    the calls compared; then the dispatcher's counts for those calls."""
    ctx.copy[(4,)](ctx.x, ctx.y, 1000, BLOCK=128)
    before = dict(safecall.triton.jit(ctx.copy).stats())
    undo = change()
    try:
        outcomes = _calls(ctx, hook_calls)
    finally:
        undo()
    after = safecall.triton.jit(ctx.copy).stats()
    return outcomes + [{k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}]


def run_knob_groups(ctx: Context) -> Dict[str, Any]:
    hook_calls: List[Any] = []
    saved = {name: getattr(knobs, name) for name in ("runtime", "compilation")}

    def put_back() -> None:
        for name, group in saved.items():
            setattr(knobs, name, group)

    def fresh_debug() -> Callable[[], None]:
        knobs.runtime = knobs.runtime.copy().reset()
        knobs.compilation = knobs.compilation.copy().reset()
        knobs.runtime.debug = True
        return put_back

    def fresh_hook() -> Callable[[], None]:
        knobs.runtime = knobs.runtime.copy()
        knobs.runtime.launch_enter_hook = lambda metadata: hook_calls.append(1)
        return put_back

    out = {"fresh groups, debug": _replaced(ctx, fresh_debug, hook_calls),
           "fresh runtime, enter hook": _replaced(ctx, fresh_hook, hook_calls)}
    compilation_type = type(knobs.compilation)
    if "fpsan_homomorphic_casts" in vars(compilation_type):

        def fpsan_descriptor() -> Callable[[], None]:
            shipped = vars(compilation_type)["fpsan_homomorphic_casts"]
            compilation_type.fpsan_homomorphic_casts = property(lambda self: True)
            return lambda: setattr(compilation_type, "fpsan_homomorphic_casts", shipped)

        out["fpsan descriptor replaced"] = _replaced(ctx, fpsan_descriptor, hook_calls)
    return out
