"""Part of ``triton_dispatch_run.py``: a kernel called again, without end, from inside its own
call (from a ``data_ptr()``, from a grid function, from a launch enter hook), at Python's
default recursion limit, through Triton's own ``run`` and through the dispatch (the key in its
table by then): both raise ``RecursionError``. The dispatch counts each re-entry against the
recursion limit as the Python frames of Triton's path would, so that it raises before the C
stack runs out (uncounted, it went twice as deep as Triton's path and a raised limit crashed
the process). Afterwards the interpreter's recursion count is back where it was.

Also a grid function that writes into the ``META`` dictionary it is given: Triton's ``run``
launches with that dictionary's values (``grid(bound_args)``, then ``*bound_args.values()``),
and so does the dispatch, from its table too."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List

import safecall.triton
from triton import knobs

from support.triton_dispatch_forms import Context

ROUTES = ("data_ptr", "grid", "hook")
LIMIT = 1000


class _Reentrant:
    """A tensor-like whose ``data_ptr()`` calls ``again()`` while ``armed``."""

    def __init__(self, dtype: Any, again: Callable[[], Any]) -> None:
        self.dtype, self.again, self.armed = dtype, again, False

    def data_ptr(self) -> int:
        if self.armed:
            self.again()
        return 0x7F00_0000_1000


def _endless(ctx: Context, route: str, path: str) -> Dict[str, Any]:
    depth = [0]
    state = {"armed": False}

    def call() -> Any:
        grid = grid_function if route == "grid" else (1,)
        if path == "triton":
            return ctx.original_run["run"](ctx.copy, x, ctx.y, 1000, grid=grid, warmup=False, BLOCK=128)
        return ctx.copy[grid](x, ctx.y, 1000, BLOCK=128)

    def again(*_: Any) -> None:
        if state["armed"]:
            depth[0] += 1
            call()

    def grid_function(meta: Any) -> Any:
        again()
        return (1,)

    x = _Reentrant(ctx.f32, again)
    call()
    call()  # from the table, for the dispatch
    if route == "hook":
        knobs.runtime.launch_enter_hook.add(again)
    state["armed"] = True
    x.armed = route == "data_ptr"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(LIMIT)
    try:
        call()
        outcome = "nothing raised"
    except RecursionError:
        outcome = "RecursionError"
    finally:
        sys.setrecursionlimit(limit)
        state["armed"] = x.armed = False
        if route == "hook":
            knobs.runtime.launch_enter_hook.remove(again)
    return {"outcome": outcome, "depth": depth[0]}


def _recursion_count_restored() -> bool:
    """Whether plain Python recursion reaches near the limit again (a count left raised by
    the dispatch would stop it early)."""

    def down(n: int) -> int:
        return 0 if n == 0 else down(n - 1)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(LIMIT)
    try:
        down(LIMIT - 100)
        return True
    except RecursionError:
        return False
    finally:
        sys.setrecursionlimit(limit)


def _grid_writes_meta(ctx: Context) -> List[Any]:
    """``copy[grid](x, y, 1000)`` with a grid function that sets ``META["n"] = 5`` and puts
    another tensor in ``META["x_ptr"]``: through Triton's run, then twice through the dispatch
    (a miss, then a hit), each the launches; then the dispatcher's counts."""
    class Other:
        dtype = ctx.f32

        def data_ptr(self) -> int:
            return 0x7F00_0000_5000

    other = Other()

    def grid(meta: Any) -> Any:
        meta["n"], meta["x_ptr"] = 5, other
        return (2,)

    def one(path: str) -> Any:
        ctx.fake.safecall_fake_cuda_reset()
        if path == "triton":
            ctx.original_run["run"](ctx.copy, ctx.x, ctx.y, 1000, grid=grid, warmup=False, BLOCK=64)
        else:
            ctx.copy[grid](ctx.x, ctx.y, 1000, BLOCK=64)
        return ctx.launches()

    before = dict(safecall.triton.jit(ctx.copy).stats())
    outcomes = [one(path) for path in ("triton", "dispatch", "dispatch")]
    after = safecall.triton.jit(ctx.copy).stats()
    return outcomes + [{k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}]


def run_reentry(ctx: Context) -> Dict[str, Any]:
    """Each route's outcome and depth through Triton's run and through the dispatch."""
    out: Dict[str, Any] = {f"{route} {path}": _endless(ctx, route, path) for route in ROUTES for path in ("triton", "dispatch")}
    out["count restored"] = _recursion_count_restored()
    out["grid writes META"] = _grid_writes_meta(ctx)
    return out
