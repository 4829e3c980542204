"""Part of ``triton_dispatch_run.py``: Triton's knob groups (``knobs.runtime``,
``knobs.compilation``) replaced after the dispatcher's table holds the key, as Triton's test
helper ``triton._internal_testing.fresh_knobs`` replaces them (``knobs.runtime =
knobs.runtime.copy().reset()``), then set on the new objects. Each call goes through
Triton's own ``run`` and twice through the dispatch: the same kernel (a debug one where the new
setting says so), the same launches, the same calls of a launch hook set on the new
``knobs.runtime``."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import safecall.triton
from triton import knobs

from support.triton_dispatch_forms import Context


def _calls(ctx: Context, hook_calls: List[Any]) -> List[Any]:
    """The call through Triton's run, then twice through the dispatch: each the kernel's
    ``debug`` option, the launches, and the hook calls it made."""

    def one(path: str) -> Any:
        ctx.fake.safecall_fake_cuda_reset()
        hook_calls.clear()
        if path == "triton":
            kernel = ctx.original_run["run"](ctx.copy, ctx.x, ctx.y, 1000, grid=(4,), warmup=False, BLOCK=128)
        else:
            kernel = ctx.copy[(4,)](ctx.x, ctx.y, 1000, BLOCK=128)
        return [id(kernel), getattr(kernel.metadata, "debug", None), ctx.launches(), len(hook_calls)]

    return [one(path) for path in ("triton", "dispatch", "dispatch")]


def _replaced(ctx: Context, change: Callable[[], None], hook_calls: List[Any]) -> List[Any]:
    """``change()`` between a call that fills the table and the calls compared (the groups
    put back after them); then the dispatcher's counts for those calls."""
    ctx.copy[(4,)](ctx.x, ctx.y, 1000, BLOCK=128)
    before = dict(safecall.triton.jit(ctx.copy).stats())
    saved = {name: getattr(knobs, name) for name in ("runtime", "compilation")}
    change()
    try:
        outcomes = _calls(ctx, hook_calls)
    finally:
        for name, group in saved.items():
            setattr(knobs, name, group)
    after = safecall.triton.jit(ctx.copy).stats()
    return outcomes + [{k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}]


def _changed_during_a_miss(ctx: Context) -> List[Any]:
    """A miss whose ``data_ptr()`` turns ``knobs.runtime.debug`` on (Triton's run then chooses
    the debug kernel), then the same call with it off: the second call's kernel's ``debug``
    each time (the first miss must not be recorded under the key read before the change)."""

    class Flipping:
        dtype = ctx.f32
        armed = True

        def data_ptr(self) -> int:
            if Flipping.armed:
                knobs.runtime.debug = True
            return 0x7F00_0000_1000

    x = Flipping()
    out = []
    for _ in range(2):
        Flipping.armed = True
        ctx.copy[(4,)](x, ctx.y, 1000, BLOCK=32)
        knobs.runtime.debug = False
        Flipping.armed = False
        out.append(getattr(ctx.copy[(4,)](x, ctx.y, 1000, BLOCK=32).metadata, "debug", None))
    return out


def run_knob_groups(ctx: Context) -> Dict[str, Any]:
    hook_calls: List[Any] = []

    def fresh_debug() -> None:
        knobs.runtime = knobs.runtime.copy().reset()
        knobs.compilation = knobs.compilation.copy().reset()
        knobs.runtime.debug = True

    def fresh_hook() -> None:
        knobs.runtime = knobs.runtime.copy()
        knobs.runtime.launch_enter_hook = lambda metadata: hook_calls.append(1)

    out = {"fresh groups, debug": _replaced(ctx, fresh_debug, hook_calls),
           "fresh runtime, enter hook": _replaced(ctx, fresh_hook, hook_calls)}
    # Put back, the groups are Triton's again: served without looking them up.
    out["after"] = _calls(ctx, hook_calls)
    out["watched"] = type(knobs).__name__
    out["changed during a miss"] = _changed_during_a_miss(ctx)
    # A dispatcher made where the module's class is not safecall's to watch (another
    # library's module class): it looks the groups up on every call.
    from safecall import _triton_dispatch

    watch = _triton_dispatch._watch_knobs
    _triton_dispatch._watch_knobs = lambda module: None
    try:
        unwatched = _triton_dispatch.Dispatcher(ctx.copy)
    finally:
        _triton_dispatch._watch_knobs = watch
    unwatched[(4,)](ctx.x, ctx.y, 1000, BLOCK=128)
    saved = knobs.runtime
    # Bypasses the module's class: only a lookup sees it.
    vars(knobs)["runtime"] = knobs.runtime.copy()
    knobs.runtime.debug = True
    try:
        out["unwatched"] = [getattr(unwatched[(4,)](ctx.x, ctx.y, 1000, BLOCK=128).metadata, "debug", None)
                            for _ in range(2)]
    finally:
        knobs.runtime = saved
    return out
