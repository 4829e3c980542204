"""Part of ``triton_dispatch_run.py``: arguments in other forms than the table's, each call made
through Triton's own ``run`` (``_ORIGINAL_RUN``: the dispatch is installed by then) and twice
through the dispatcher, which must choose the same kernel and launch the same, or raise the
same error:

- scalars of other Python types (``triton_fakes``: int and float subclasses, objects with only
  ``__index__`` or ``__float__``; a bool or a float for an int; an int subclass as a
  constexpr), with the dispatcher's counts for them;
- 300 pointer arguments in every form (``triton_fakes.random_pointer``; two of three
  ``data_ptr()`` objects given a dtype, as the JIT needs one), with the driver's pointer checks;
  200 more for a pointer in ``do_not_specialize``;
- 300 grids in every form: tuples and lists of 0 to 4 entries (ints at and beyond 32 and 64
  bits, negative, 0; int subclasses, ``__index__``-only objects, floats, bools, None, a str), a
  bare entry, a function returning a tuple, None;
- 80 tuple arguments (``tuple_copy``'s ``ptrs`` and ``sizes``: pointers in the forms above, a
  misaligned one, ``None``, named tuples, ints equal to 1, divisible by 16, at the i32, i64 and
  u64 edges and beyond,
  floats, bools, a str, a list, an element nested 40 deep), with the driver's pointer checks
  and each ``data_ptr()`` call counted;
- an autotuned kernel whose key argument comes as an int, an int subclass, a float or a bool
  of the same value (equal keys to Triton's autotuner): each key tuned by Triton's
  ``Autotuner.run`` and by the dispatcher's autotuner (benchmarkers that answer alike), then
  served from each.
"""

from __future__ import annotations

import collections
import dataclasses
import random
from typing import Any, Callable, Dict, List, Tuple

import safecall.triton
import triton
from triton.runtime.jit import JITFunction

from support import fake_cuda
from support.triton_fakes import FloatOnly, FloatSubclass, IndexOnly, IntSubclass, PointerLike, random_pointer
from support.triton_kernels import loose_copy, tuple_copy

PATHS = ("triton", "dispatch", "dispatch")


@dataclasses.dataclass
class Context:
    """What the runner has made: the double, Triton's own run methods, its launch reader, the
    kernels, the scalar mix's arguments, two float32 tensors and the float32 dtype."""

    fake: Any
    original_run: Dict[str, Callable[..., Any]]
    launches: Callable[[], List[Dict[str, Any]]]
    copy: Any
    scalars: Any
    scalar_mix: tuple
    x: Any
    y: Any
    f32: Any


def _call(ctx: Context, path: str, kernel: Any, grid: Any, args: tuple, kwargs: dict, message: bool,
          records: Callable[[], Any]) -> Any:
    """One call: the kernel's id and ``records()``; or, when it raises, with ``message`` the error
    (type and message) and ``records()``, else the error's type alone."""
    ctx.fake.safecall_fake_cuda_reset()
    try:
        if path == "triton":
            compiled = ctx.original_run["run"](kernel, *args, grid=grid, warmup=False, **kwargs)
        else:
            compiled = safecall.triton.jit(kernel)[grid](*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return [f"{type(e).__name__}: {e}", records()] if message else type(e).__name__
    return [id(compiled), records()]


def _foreign(ctx: Context) -> Dict[str, Any]:
    def mix_with(position: int, value: Any) -> tuple:
        return (ctx.scalars, (1,), ctx.scalar_mix[:position] + (value,) + ctx.scalar_mix[position + 1:], {})

    x, y = ctx.x, ctx.y
    cases = {
        "an int subclass for an i8": mix_with(1, IntSubclass(-5)),
        "an int subclass equal to 1": mix_with(2, IntSubclass(1)),
        "an int subclass divisible by 16": mix_with(3, IntSubclass(-70000 // 16 * 16)),
        "an __index__-only i32": mix_with(3, IndexOnly(-70000)),
        "an __index__-only u64": mix_with(8, IndexOnly(2**63 - 5)),
        "a float subclass for an fp32": mix_with(9, FloatSubclass(0.1)),
        "a __float__-only fp64": mix_with(10, FloatOnly(-2.5e-300)),
        "a bool for an i64": mix_with(4, True),
        "a float for an i16": mix_with(2, 2.0),
        "an int subclass n": (ctx.copy, (8,), (x, y, IntSubclass(1024)), {"BLOCK": 128}),
        "an __index__-only n": (ctx.copy, (8,), (x, y, IndexOnly(1000)), {"BLOCK": 128}),
        "an int subclass constexpr": (ctx.copy, (8,), (x, y, 1000), {"BLOCK": IntSubclass(128)}),
    }
    kernels = (ctx.copy, ctx.scalars)
    before = {k.fn.__name__: dict(safecall.triton.jit(k).stats()) for k in kernels}
    outcomes = {name: [_call(ctx, path, *case, False, ctx.launches) for path in PATHS] for name, case in cases.items()}
    after = {k.fn.__name__: dict(safecall.triton.jit(k).stats()) for k in kernels}
    stats = {name: {reason: n - before[name].get(reason, 0) for reason, n in counts.items() if n != before[name].get(reason, 0)}
             for name, counts in after.items()}
    return {"foreign": outcomes, "foreign stats": stats}


def _pointer_forms(ctx: Context, seed: int, count: int, kernel: Any,
                   args_of: Callable[[Any], tuple]) -> List[Tuple[Any, List[Any]]]:
    """``count`` seeded pointer forms (two of three ``data_ptr()`` objects given a dtype, as
    the JIT needs one), each launched through every path of :data:`PATHS` as
    ``kernel[(8,)](*args_of(form), BLOCK=128)``, with the driver's launches and pointer checks."""

    def records() -> List[Dict[str, Any]]:
        return [r for r in fake_cuda.records(ctx.fake) if r["call"] in ("cuLaunchKernelEx", "cuPointerGetAttribute")]

    rng = random.Random(seed)
    forms = []
    for i in range(count):
        form = random_pointer(rng)
        if isinstance(form, PointerLike) and i % 3:
            form.dtype = ctx.f32
        forms.append((form, [_call(ctx, path, kernel, (8,), args_of(form), {"BLOCK": 128}, True, records) for path in PATHS]))
    return forms


def _pointers(ctx: Context) -> List[Any]:
    return [outcomes for _, outcomes in _pointer_forms(ctx, 4040, 300, ctx.copy, lambda form: (form, ctx.y, 1000))]


def _loose_pointers(ctx: Context) -> List[Any]:
    """200 seeded forms for a pointer in ``do_not_specialize`` (``loose_copy``'s ``y_ptr``),
    which Triton's key does not read: its launcher calls ``data_ptr()``, with its errors."""
    forms = _pointer_forms(ctx, 5151, 200, loose_copy, lambda form: (ctx.x, form, 1000))
    return [[repr(form), *outcomes] for form, outcomes in forms]


class CountedPointer:
    """A tensor-like whose ``data_ptr()`` calls are counted (in ``calls``, shared by a draw)."""

    def __init__(self, address: int, dtype: Any, calls: List[int]) -> None:
        self.address, self.dtype, self.calls = address, dtype, calls

    def data_ptr(self) -> int:
        self.calls[0] += 1
        return self.address


Pair = collections.namedtuple("Pair", "first second")


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = (value,)
    return value


def _tuples(ctx: Context) -> List[Any]:
    """80 seeded calls of ``tuple_copy[(8,)](ptrs, sizes, BLOCK=128)`` with ``ptrs`` of the
    shape ``(x, (y, z))`` and ``sizes`` ``(n, a, b, ...)`` in many forms, each through every
    path of :data:`PATHS`: the chosen kernel, the launches, the pointer checks, or the error
    (message included), each with how often ``data_ptr()`` was called."""

    def records() -> List[Dict[str, Any]]:
        return [r for r in fake_cuda.records(ctx.fake) if r["call"] in ("cuLaunchKernelEx", "cuPointerGetAttribute")]

    rng = random.Random(8080)
    out = []
    for i in range(80):
        calls = [0]

        def pointer(aligned: int) -> Any:
            pick = rng.randrange(12)
            if pick == 0:
                form = random_pointer(rng)
                if isinstance(form, PointerLike) and i % 2:
                    form.dtype = ctx.f32
                return form
            if pick == 1:
                return CountedPointer(aligned + 4, ctx.f32, calls)
            if pick == 2:
                return None
            return CountedPointer(aligned, ctx.f32, calls)

        inner = (pointer(0x7F00_0000_2000), pointer(0x7F00_0000_3000))
        inner = Pair(*inner) if rng.randrange(4) == 0 else inner
        ptrs: Any = (pointer(0x7F00_0000_1000), inner)
        sizes: Any = (rng.choice((1000, 1024, 1, 2**33, -7)), rng.choice((2, 1, 32, 2.5, True)),
                      rng.choice((3, 16, -5, -32, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 2**64 - 16, 2**64)))
        sizes += tuple(rng.choice((0, 48, 1.0)) for _ in range(rng.randrange(2)))
        odd = rng.randrange(16)
        if odd == 0:
            sizes = list(sizes)  # a list: Triton's specializer refuses it
        elif odd == 1:
            sizes = sizes + ("a str",)
        elif odd == 2:
            # Deeper than the dispatcher keys; the str makes Triton's specializer refuse the call
            # (Triton 3.6 compiling a kernel for it takes tens of GiB).
            sizes = (_nested(sizes[0], 40),) + sizes[1:] + ("a str",)
        outcome = []
        # Triton's run first, uncounted: a call that compiles calls data_ptr() more often.
        _call(ctx, "triton", tuple_copy, (8,), (ptrs, sizes), {"BLOCK": 128}, True, records)
        for path in PATHS:
            calls[0] = 0
            result = _call(ctx, path, tuple_copy, (8,), (ptrs, sizes), {"BLOCK": 128}, True, records)
            outcome.append(result + [calls[0]])
        out.append([repr(ptrs)[:120], repr(sizes)[:120], outcome])
    return out


def _grid_entry(rng: random.Random) -> Any:
    value = rng.choice((0, 1, 2, 7, -1, 2**31 - 1, 2**31, 2**32 + 3, -(2**31), 2**63, 2**64 + 1))
    kind = rng.randrange(12)
    if kind >= 8:
        return rng.randrange(1, 64)
    if kind == 0:
        return IntSubclass(value)
    if kind == 1:
        return IndexOnly(value)
    if kind == 2:
        return float(value)
    if kind == 3:
        return rng.choice((True, False, None, "3"))
    if kind == 4:
        return FloatOnly(2.0)
    return value


def _grids(ctx: Context) -> List[Any]:
    rng = random.Random(7)
    forms = []
    for _ in range(300):
        entries = tuple(_grid_entry(rng) for _ in range(rng.randrange(0, 5)))
        form = rng.randrange(5)
        if form == 4:
            grid: Any = None
        elif form == 1:
            grid = list(entries)
        elif form == 2:
            grid = (lambda entries: lambda META: entries)(entries)
        elif form == 3 and entries:
            grid = entries[0]
        else:
            grid = entries
        forms.append([_call(ctx, path, ctx.copy, grid, (ctx.x, ctx.y, 1000), {"BLOCK": 128}, True, ctx.launches)
                      for path in PATHS])
    return forms


def _autotuned(ctx: Context) -> List[Any]:
    def tuner() -> Any:
        timings = iter([1.0, 0.5, 2.0] * 100)  # the second config wins every tuning

        def do_bench(kernel_call: Callable[[], Any], quantiles: Any) -> List[float]:
            kernel_call()
            return [next(timings), 1.0, 1.0]

        configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8), triton.Config({"BLOCK": 256})]
        return triton.autotune(configs=configs, key=["n"], do_bench=do_bench)(ctx.copy)

    reference, tuned = tuner(), tuner()
    dispatcher = safecall.triton.jit(tuned)

    def call(path: str, n: Any) -> Any:
        ctx.fake.safecall_fake_cuda_reset()
        # Triton's reference all Triton's: its `Autotuner.run` calls `fn.run`, which the installed
        # dispatch replaced; Triton's own `JITFunction.run` is put back for the call.
        patched = JITFunction.__dict__["run"]
        try:
            if path == "triton":
                JITFunction.run = ctx.original_run["run"]
                ctx.original_run["autotune"](reference, ctx.x, ctx.y, n, grid=(8,), warmup=False)
            else:
                dispatcher[(8,)](ctx.x, ctx.y, n)
        except Exception as e:  # noqa: BLE001  (the error is the result)
            return f"{type(e).__name__}: {e}"
        finally:
            JITFunction.run = patched
        return ctx.launches()

    rng = random.Random(11)
    out = []
    for _ in range(40):
        n = rng.choice((1000, 1024, 1, 7))
        value = rng.choice((n, IntSubclass(n), float(n), n == 1 or n))
        out.append([f"{type(value).__name__} {value!r}"] + [call(path, value) for path in ("triton", "triton", "dispatch", "dispatch")])
    return out + [dispatcher.stats()]


def run_forms(ctx: Context) -> Dict[str, Any]:
    """Every section's results, by name."""
    out = _foreign(ctx)
    out["pointer forms"] = _pointers(ctx)
    out["unspecialized pointer forms"] = _loose_pointers(ctx)
    out["grid forms"] = _grids(ctx)
    before = dict(safecall.triton.jit(tuple_copy).stats())
    out["tuple forms"] = _tuples(ctx)
    after = safecall.triton.jit(tuple_copy).stats()
    out["tuple stats"] = {reason: n - before.get(reason, 0) for reason, n in after.items() if n != before.get(reason, 0)}
    out["autotuned key forms"] = _autotuned(ctx)
    return out
