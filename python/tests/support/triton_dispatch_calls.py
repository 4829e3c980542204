"""Part of ``triton_dispatch_run.py``: seeded draws of how a kernel is called, each call made
through Triton's own code (``JITFunction.run`` and ``Heuristics.run`` put back for the call: the
dispatch is installed by then) and twice through the dispatcher, which must choose the same
kernel and launch the same, or raise the same error, message included:

- call shapes of a ``@triton.jit`` kernel: arguments by position and by keyword, a missing,
  an extra or a repeated argument, an unknown keyword, launch options of every value (valid and
  not), constexprs of other types equal or not to their defaults;
- ``@triton.heuristics`` layers (one or two deep) whose heuristics compute constexprs, runtime
  arguments, launch options, unknown names, ``grid``, or raise, each logging what it was given
  (compared too: the names in Triton's order and the values' reprs);
- ``@triton.autotune`` kernels: configs, keys and call shapes, four calls each, with the
  autotuner's state after each (its tuned keys, best config and ``nargs``); heuristics layers
  over autotuned kernels, three calls each;
- launch hooks (a profiler's): chains of hooks that record the launch metadata they are given,
  raise, register another hook or are replaced by a plain function, ``None``, a ``HookChain``
  subclass with a ``__call__`` of its own or an object with an empty ``calls``, with grids that
  register a hook, each hook's log compared.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Dict, List, Tuple

import safecall.triton
import triton
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.knobs import HookChain
from triton.runtime.jit import JITFunction

from support.triton_fakes import ElementType, FloatSubclass, IntSubclass
from support.triton_kernels import copy, metered, mixed

PATHS = ("triton", "dispatch", "dispatch")


def _outcome(call: Callable[[], Any], ctx: Any, log: List[Any]) -> List[Any]:
    """The kernel's id or the error (type and message), the launches and the heuristics' log."""
    ctx.fake.safecall_fake_cuda_reset()
    log.clear()
    try:
        result: Any = id(call())
    except Exception as e:  # noqa: BLE001  (the error is the result)
        # An object's address in a message (a compiler pass manager's repr) differs call by call.
        result = re.sub(r" at 0x[0-9a-f]+", " at 0x...", f"{type(e).__name__}: {e}")
    return [result, ctx.launches(), list(log)]


def _with_runs(ctx: Any, path: str, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` as it is (``path`` a dispatcher's), or with Triton's own ``run`` methods put
    back for it (``path == "triton"``: the dispatch installed by then replaced them)."""
    if path != "triton":
        return call

    def with_tritons() -> Any:
        saved = JITFunction.__dict__["run"], Heuristics.__dict__["run"], Autotuner.__dict__["run"]
        JITFunction.run, Heuristics.run, Autotuner.run = (ctx.original_run[name] for name in ("run", "heuristics", "autotune"))
        try:
            return call()
        finally:
            JITFunction.run, Heuristics.run, Autotuner.run = saved

    return with_tritons


def _through(ctx: Any, path: str, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> Callable[[], Any]:
    """The call ``kernel[grid](*args, **kwargs)`` by Triton's own code (``path == "triton"``:
    what Triton's ``__getitem__`` calls, with its own run methods) or by the dispatcher."""
    if path != "triton":
        return lambda: safecall.triton.jit(kernel)[grid](*args, **kwargs)
    return _with_runs(ctx, path, lambda: kernel.run(*args, grid=grid, warmup=False, **kwargs))


#: Values of the launch options a caller may pass by keyword (valid and not, of other types),
#: for a CUDA target.
OPTIONS = {
    "num_warps": [1, 2, 4, 8, 3, 0, 4.0, True, IntSubclass(8), None],
    "num_stages": [1, 2, 3, 0, "2", None],
    "num_ctas": [1, 2],
    "maxnreg": [None, 128, 255],
    "enable_fp_fusion": [True, False],
    "debug": [True, False, None],
}
#: The same for an AMD target (``HIPOptions``): its own options (a string ``waves_per_eu`` fails
#: in the compiler, ``num_ctas=2`` in ``parse_options`` on gfx942) and one it does not have.
AMD_OPTIONS = {
    "num_warps": [1, 2, 4, 8, 3, 0, 4.0, True, IntSubclass(8), None],
    "num_stages": [1, 2, 3, 0, "2", None],
    "num_ctas": [1, 2, None],
    "waves_per_eu": [0, 1, 2, None, "2", 2.5],
    "matrix_instr_nonkdim": [0, 16, None],
    "kpack": [1, 2, None],
    "maxnreg": [None, 128],
    "enable_fp_fusion": [True, False],
    "debug": [True, False, None],
    "launch_cooperative_grid": [True, False],
}
#: Values of ``mixed``'s constexpr ``SCALE`` (default 2.0): equal to it in other types and not.
SCALES = [2.0, 2, IntSubclass(2), FloatSubclass(2.0), True, 3, 3.0, -1.5, None, "2.0"]
#: Values of ``copy``'s constexpr ``BLOCK``.
BLOCKS = [64, 128, 128, IntSubclass(128), True, 128.0, None, 48]


def _shape(rng: random.Random, names: List[str], values: Dict[str, Any]) -> Tuple[tuple, dict, str]:
    """``values`` as a call: the first few by position, the rest by keyword in a shuffled
    order; then one change of shape, named: none, one argument left out, one too many, one
    given twice, an unknown keyword."""
    given = [n for n in names if n in values]
    positional = rng.randrange(0, len(given) + 1)
    # Positions are positions: only a prefix of the parameters goes by position.
    while positional and given[:positional] != names[:positional]:
        positional -= 1
    args = [values[n] for n in given[:positional]]
    keywords = given[positional:]
    rng.shuffle(keywords)
    kwargs = {n: values[n] for n in keywords}
    kwargs.update((n, v) for n, v in values.items() if n not in names)
    change = rng.choice(["none"] * 6 + ["missing", "extra", "twice", "unknown"])
    if change == "missing" and given:
        gone = rng.choice(given)
        if gone in kwargs:
            del kwargs[gone]
        elif args:
            args.pop()
    elif change == "extra":
        args = [values[n] for n in given] + [7]
        kwargs = {n: v for n, v in kwargs.items() if n not in names}
    elif change == "twice" and args:
        kwargs[names[rng.randrange(len(args))]] = args[0]
    elif change == "unknown":
        kwargs[rng.choice(["foo", "BLOCK_SIZE", "stream", "grid"])] = 1
    return tuple(args), kwargs, change


def _jit_draw(rng: random.Random, ctx: Any, options: Dict[str, List[Any]]) -> Tuple[Any, Any, tuple, dict, str]:
    if rng.random() < 0.5:
        kernel, names = copy, ["x_ptr", "y_ptr", "n", "BLOCK"]
        values = {"x_ptr": ctx.x, "y_ptr": ctx.y, "n": rng.choice([1000, 1024, 1]), "BLOCK": rng.choice(BLOCKS)}
    else:
        kernel, names = mixed, ["x_ptr", "y_ptr", "n", "m", "a", "b", "flag", "BLOCK", "SCALE"]
        values = {"x_ptr": ctx.x, "y_ptr": ctx.y, "n": 1000, "m": rng.choice([1, 16, 5]), "a": 1.5, "b": None,
                  "flag": rng.choice([True, 0]), "BLOCK": 64}
        if rng.random() < 0.7:
            values["SCALE"] = rng.choice(SCALES)
    for name, choices in options.items():
        if rng.random() < 0.15:
            values[name] = rng.choice(choices)
    args, kwargs, change = _shape(rng, names, values)
    return kernel, (rng.randrange(1, 9),), args, kwargs, change


def _heuristic(rng: random.Random, name: str, log: List[Any]) -> Callable[[Dict[str, Any]], Any]:
    """A heuristic for ``name`` that logs what it is given: its argument names in order and
    the reprs of their values (the grid's and the ids of objects left out)."""

    def logged(value: Callable[[Dict[str, Any]], Any]) -> Callable[[Dict[str, Any]], Any]:
        def heuristic(args: Dict[str, Any]) -> Any:
            log.append([name, [(k, repr(v) if isinstance(v, (int, float, str, bool, tuple, type(None))) else "object")
                               for k, v in args.items()]])
            return value(args)

        return heuristic

    menu: Dict[str, List[Callable[[Dict[str, Any]], Any]]] = {
        "BLOCK": [lambda a: 64, lambda a: 64 if a["n"] < 1010 else 128, lambda a: IntSubclass(128),
                  lambda a: a.get("BLOCK", 32) * 2, lambda a: a["missing"]],
        "n": [lambda a: a["n"] + 1, lambda a: 1],
        "num_warps": [lambda a: 8, lambda a: 2 if a["BLOCK"] == 64 else 4],
        "SCALE": [lambda a: 3.0, lambda a: 2],
        "flag": [lambda a: not a["flag"]],
        "EXTRA": [lambda a: 1],
        "grid": [lambda a: (3,)],
        # Any object, read by Triton's `if not warmup` (a true one compiles without launching).
        "warmup": [lambda a: 0, lambda a: None, lambda a: 1, lambda a: 2.0],
        "num_stages": [lambda a: 1 // 0, lambda a: 2, lambda a: 3],
    }
    return logged(rng.choice(menu[name]))


def _heuristics_draw(rng: random.Random, ctx: Any, log: List[Any]) -> Tuple[Any, Any, tuple, dict, str]:
    kernel = rng.choice([copy, mixed])
    if kernel is copy:
        names, values = ["x_ptr", "y_ptr", "n", "BLOCK"], {"x_ptr": ctx.x, "y_ptr": ctx.y, "n": rng.choice([1000, 1024])}
        menu = ["BLOCK", "BLOCK", "BLOCK", "n", "num_warps", "num_warps", "EXTRA", "grid", "warmup", "num_stages", "num_stages"]
    else:
        names = ["x_ptr", "y_ptr", "n", "m", "a", "b", "flag", "BLOCK", "SCALE"]
        values = {"x_ptr": ctx.x, "y_ptr": ctx.y, "n": 1000, "m": 5, "a": 1.5, "b": None, "flag": True}
        menu = ["BLOCK", "BLOCK", "BLOCK", "SCALE", "flag", "num_warps", "n", "warmup"]
    layers = []
    for _ in range(rng.choice([1, 1, 2])):
        chosen = rng.sample(menu, rng.randrange(1, 3))
        layers.append({name: _heuristic(rng, name, log) for name in chosen})
    if "BLOCK" not in [n for layer in layers for n in layer] or rng.random() < 0.2:
        values["BLOCK"] = rng.choice([64, 128])
    for layer in layers:
        kernel = triton.heuristics(layer)(kernel)
    args, kwargs, change = _shape(rng, names, values)
    return kernel, (rng.randrange(1, 9),), args, kwargs, change


#: Configs an autotuned ``copy`` draws from (one gives no ``BLOCK``: the caller's, if any).
AUTOTUNE_CONFIGS = (
    lambda: triton.Config({"BLOCK": 64}),
    lambda: triton.Config({"BLOCK": 128}, num_warps=8),
    lambda: triton.Config({"BLOCK": 256}, num_stages=2),
    lambda: triton.Config({}, num_warps=2),
)


def _tuner(configs: List[Any], key: List[str], seed: int, fn: Any = copy) -> Any:
    """An autotuned ``fn`` (``copy``, or a layer over it) whose benchmarker answers from a
    seeded stream (two tuners made with one seed answer alike) after launching the config
    once."""
    rng = random.Random(seed)

    def do_bench(kernel_call: Callable[[], Any], quantiles: Any) -> List[float]:
        kernel_call()
        return [rng.choice([0.5, 1.0, 2.0]), 1.0, 1.0]

    return triton.autotune(configs=configs, key=key, do_bench=do_bench)(fn)


def _named_as_triton(outcome: List[Any]) -> List[Any]:
    """``outcome`` with the documented difference undone: a keyword given both by the caller
    and an autotuner's config is Python's ``TypeError`` naming the callable, Triton's
    ``JITFunction.run`` or, where the dispatch is installed, the dispatcher's."""
    if isinstance(outcome[0], str):
        outcome[0] = outcome[0].replace("TypeError: TritonDispatch.run() got multiple values",
                                        "TypeError: triton.runtime.jit.JITFunction.run() got multiple values")
    return outcome


def _tuner_state(tuner: Any) -> List[Any]:
    """What a call leaves on an autotuner: its tuned keys, best config and ``nargs``."""
    nargs = tuner.__dict__.get("nargs", "unset")
    return [sorted(str(k) for k in tuner.cache), str(getattr(tuner, "best_config", None)),
            sorted(nargs) if isinstance(nargs, dict) else repr(nargs)]


def _autotune_draw(rng: random.Random, ctx: Any, draw: int) -> List[Any]:
    """One autotuned kernel, as Triton's ``Autotuner.run`` and the dispatcher each serve it:
    four calls (the first tunes; the third with another ``n``), after the second a warm-up
    (``Autotuner.warmup``, which sets ``nargs`` itself and leaves it set where it raises, as
    it does here for configs with a ``BLOCK``), each one's outcome and the autotuner's state
    after it."""
    picks = rng.sample(range(3), rng.randrange(1, 4)) if rng.random() < 0.8 else [3]
    key = rng.sample(["n", "x_ptr", "y_ptr", "BLOCK"], rng.randrange(0, 3))
    y = rng.choice([ctx.y, type(ctx.x)(0x7F00_0000_3000, ElementType("float64"))])
    values = {"x_ptr": ctx.x, "y_ptr": y, "n": rng.choice([1000, 1024, 1])}
    if (picks == [3] and rng.random() < 0.9) or rng.random() < 0.1:
        values["BLOCK"] = 128
    if rng.random() < 0.15:
        values["num_warps"] = 4
    calls = []
    for i in range(4):
        if i == 2:
            values = dict(values, n=rng.choice([7, 2048, 1000]))
        calls.append(_shape(rng, ["x_ptr", "y_ptr", "n", "BLOCK"], values)[:2] if i != 3 else calls[-1])
    out = []
    for path in ("triton", "dispatch"):
        tuner = _tuner([AUTOTUNE_CONFIGS[p]() for p in picks], key, draw)
        runs = []
        for i, (args, kwargs) in enumerate(calls):
            if i == 2:
                warmup = _with_runs(ctx, path, lambda: tuner.warmup(ctx.x, ctx.y, 1000, grid=(4,), BLOCK=3))
                runs.append(_outcome(warmup, ctx, [])[:2] + [_tuner_state(tuner)])
            outcome = _named_as_triton(_outcome(_through(ctx, path, tuner, (4,), args, kwargs), ctx, []))
            runs.append(outcome[:2] + [_tuner_state(tuner)])
        out.append(runs)
    return [{"configs": picks, "key": key}, *out]


def _heuristics_over_autotune(rng: random.Random, ctx: Any, draw: int, log: List[Any]) -> List[Any]:
    """A heuristics layer over an autotuned ``copy``, or an autotuned heuristics layer over
    it, as Triton's ``Heuristics.run`` and ``Autotuner.run`` and as the dispatcher serve it:
    three calls each (the first tunes), each call's outcome, the heuristics' log and the
    autotuner's state after it."""
    # Mostly heuristics that launch (a launch option or a BLOCK from a heuristic collide with
    # the configs', which Triton refuses): `n`, or `BLOCK` over the config without one.
    layer_names = [rng.choice(["n", "n", "n", "EXTRA", "BLOCK", "num_warps"])]
    picks = [3] if "BLOCK" in layer_names or rng.random() < 0.2 else rng.sample(range(3), rng.randrange(1, 4))
    layer = {name: _heuristic(rng, name, log) for name in layer_names}
    values = {"x_ptr": ctx.x, "y_ptr": ctx.y, "n": rng.choice([1000, 1024])}
    if picks == [3] and "BLOCK" not in layer:
        values["BLOCK"] = 128
    calls = [_shape(rng, ["x_ptr", "y_ptr", "n", "BLOCK"], values)[:2] for _ in range(3)]
    outermost = rng.choice(["heuristics", "autotune"])
    out = []
    for path in ("triton", "dispatch"):
        if outermost == "heuristics":
            tuner = _tuner([AUTOTUNE_CONFIGS[p]() for p in picks], ["n"], draw)
            kernel = triton.heuristics(layer)(tuner)
        else:
            kernel = tuner = _tuner([AUTOTUNE_CONFIGS[p]() for p in picks], ["n"], draw, triton.heuristics(layer)(copy))
        runs = []
        for args, kwargs in calls:
            call = _through(ctx, path, kernel, (4,), args, kwargs)
            if path != "triton" and outermost == "autotune":
                # Not a dispatcher of its own (`safecall.triton.jit` refuses it): the installed
                # dispatch serves its heuristics layer under Triton's `Autotuner.run`.
                call = (lambda args, kwargs: lambda: kernel[(4,)](*args, **kwargs))(args, kwargs)
            outcome = _named_as_triton(_outcome(call, ctx, log))
            runs.append(outcome + [_tuner_state(tuner)])
        out.append(runs)
    return [{"configs": picks, "heuristics": layer_names, "outermost": outermost}, *out]


def _runs_without_grid_or_warmup(ctx: Any, log: List[Any]) -> Dict[str, Any]:
    """A kernel's, an autotuned kernel's and a heuristics layer's ``run`` called without
    ``grid``, without ``warmup``, without either, then with both, through Triton's own methods
    and through the dispatcher's ``run``: each call's outcome, the heuristics' log and the
    autotuner's state."""
    layer = {"BLOCK": _heuristic(random.Random(1), "BLOCK", log)}
    forms = [{"grid": (4,)}, {"warmup": False}, {}, {"grid": (4,), "warmup": False}]
    out: Dict[str, Any] = {}
    for name in ("jit", "autotuned", "heuristics"):
        runs = []
        for path in ("triton", "dispatch"):
            kernel = {"jit": lambda: copy, "autotuned": lambda: _tuner([AUTOTUNE_CONFIGS[0](), AUTOTUNE_CONFIGS[1]()], ["n"], 9),
                      "heuristics": lambda: triton.heuristics(layer)(copy)}[name]()
            target = kernel if path == "triton" else safecall.triton.jit(kernel)
            calls = []
            for form in forms:
                # The plain kernel takes its constexpr from the caller.
                given = dict(form, BLOCK=128) if name == "jit" else form
                call = _with_runs(ctx, path, (lambda given: lambda: target.run(ctx.x, ctx.y, 1000, **given))(given))
                outcome = _outcome(call, ctx, log)
                calls.append(outcome + ([_tuner_state(kernel)] if name == "autotuned" else []))
            runs.append(calls)
        out[name] = runs
    return out


def _hook_draw(rng: random.Random, log: List[Any]) -> Tuple[List[Any], List[Any], Any, Any]:
    """Launch hooks for one call: each knob a chain of zero to two hooks (recording what they
    are given, raising, registering another hook, removing themselves), a plain function, or
    ``None``; and the grid (a tuple, a function, one that registers a hook)."""

    def recorder(name: str) -> Callable[[Any], None]:
        def hook(metadata: Any) -> None:
            data = metadata.get() if metadata is not None else None
            log.append([name, sorted((k, v if isinstance(v, (int, str, list)) else type(v).__name__)
                                     for k, v in data.items()) if isinstance(data, dict) else repr(data)])
        hook.__name__ = name
        return hook

    def raiser(metadata: Any) -> None:
        log.append(["raiser"])
        raise RuntimeError("the profiler failed")

    def adder(metadata: Any) -> None:
        log.append(["adder"])
        triton.knobs.runtime.launch_exit_hook.add(late)

    late = recorder("late")

    class LoudChain(HookChain):
        """A HookChain subclass with a ``__call__`` of its own, holding no calls."""

        def __call__(self, metadata: Any) -> None:
            recorder("loud")(metadata)

    class OwnHook:
        """A hook of its own class whose ``calls`` is an empty list."""

        calls: List[Any] = []

        def __call__(self, metadata: Any) -> None:
            recorder("own")(metadata)

    def chain() -> Any:
        pick = rng.randrange(10)
        if pick == 6:
            return recorder("plain")
        if pick == 7:
            return None
        if pick == 8:
            return LoudChain()
        if pick == 9:
            return OwnHook()
        menu = [recorder("first"), recorder("second"), raiser, adder]
        return [rng.choice(menu) for _ in range(rng.choice([0, 1, 1, 2]))]

    def registering(META: Any) -> Any:
        triton.knobs.runtime.launch_enter_hook.add(late)
        return (2,)

    grid = rng.choice([(8,), (3, 2), lambda META: (triton.cdiv(META["n"], META["BLOCK"]),), registering])
    return chain(), chain(), grid, rng.choice([copy, metered])


def _shipped_hooks() -> None:
    """Fails unless the knobs' launch hooks are as Triton ships them, empty ``HookChain``s (each
    hook draw starts and ends so: a hook left behind would run in later launches)."""
    chains = triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook
    assert all(type(chain) is HookChain and not chain.calls for chain in chains), chains


def _with_hooks(enter: Any, leave: Any, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` with the knobs' hooks set (a list: the shipped chain holding those hooks), then
    the chains put back empty."""
    runtime = triton.knobs.runtime

    def hooked() -> Any:
        chains = runtime.launch_enter_hook, runtime.launch_exit_hook
        for name, hooks, chain in (("launch_enter_hook", enter, chains[0]), ("launch_exit_hook", leave, chains[1])):
            if isinstance(hooks, list):
                for hook in hooks:
                    chain.add(hook)
            else:
                setattr(runtime, name, hooks)
        try:
            return call()
        finally:
            runtime.launch_enter_hook, runtime.launch_exit_hook = chains
            for chain in chains:
                chain.calls.clear()

    return hooked


def run_calls(ctx: Any, options: Dict[str, List[Any]] = OPTIONS) -> Dict[str, Any]:
    """Each section's draws: ``[change, [triton, dispatch, dispatch]]`` per draw, each an
    outcome of :func:`_outcome`; and the dispatchers' counts. ``options``: the launch options
    the call shapes draw from (the target's: :data:`OPTIONS` for CUDA)."""
    log: List[Any] = []
    out: Dict[str, Any] = {}
    rng = random.Random(2929)
    draws = []
    before = {k.fn.__name__: dict(safecall.triton.jit(k).stats()) for k in (copy, mixed)}
    for _ in range(160):
        kernel, grid, args, kwargs, change = _jit_draw(rng, ctx, options)
        draws.append([change, [_outcome(_through(ctx, path, kernel, grid, args, kwargs), ctx, log) for path in PATHS]])
    out["call shapes"] = draws
    # The same shapes through `kernel.run(*args, grid=, warmup=False, **kwargs)` (Inductor's and
    # Helion's call): Python's own argument errors there name the dispatcher's native `run`.
    rng = random.Random(2930)
    through_run = []
    for _ in range(80):
        kernel, grid, args, kwargs, change = _jit_draw(rng, ctx, options)
        calls = [_through(ctx, "triton", kernel, grid, args, kwargs)]
        calls += [(lambda k, g, a, kw: lambda: safecall.triton.jit(k).run(*a, grid=g, warmup=False, **kw))(kernel, grid, args, kwargs)] * 2
        outcomes = [_outcome(call, ctx, log) for call in calls]
        for outcome in outcomes[1:]:
            if isinstance(outcome[0], str):
                outcome[0] = outcome[0].replace("TypeError: TritonDispatch.run() got multiple values",
                                                "TypeError: triton.runtime.jit.JITFunction.run() got multiple values")
        through_run.append([change, outcomes])
    out["call shapes through run"] = through_run
    out["call shapes stats"] = {
        k.fn.__name__: {reason: n - before[k.fn.__name__].get(reason, 0) for reason, n in safecall.triton.jit(k).stats().items()
                        if n != before[k.fn.__name__].get(reason, 0)}
        for k in (copy, mixed)}
    rng = random.Random(3131)
    draws, stats = [], {}
    for _ in range(120):
        kernel, grid, args, kwargs, change = _heuristics_draw(rng, ctx, log)
        draws.append([change, [_outcome(_through(ctx, path, kernel, grid, args, kwargs), ctx, log) for path in PATHS]])
        for reason, n in safecall.triton.jit(kernel).stats().items():
            stats[reason] = stats.get(reason, 0) + n
    out["heuristics forms"] = draws
    out["heuristics forms stats"] = stats
    rng = random.Random(3737)
    out["autotune forms"] = [_autotune_draw(rng, ctx, i) for i in range(60)]
    rng = random.Random(4747)
    out["heuristics over autotune"] = [_heuristics_over_autotune(rng, ctx, i, log) for i in range(40)]
    out["runs without grid or warmup"] = _runs_without_grid_or_warmup(ctx, log)
    rng = random.Random(4343)
    draws = []
    before = {k.fn.__name__: dict(safecall.triton.jit(k).stats()) for k in (copy, metered)}
    for _ in range(100):
        _shipped_hooks()
        enter, leave, grid, kernel = _hook_draw(rng, log)
        described = [[f.__name__ for f in h] if isinstance(h, list) else h and getattr(h, "__name__", type(h).__name__)
                     for h in (enter, leave)]
        calls = [_with_hooks(enter, leave, _through(ctx, path, kernel, grid, (ctx.x, ctx.y, 1000), {"BLOCK": 128}))
                 for path in PATHS]
        draws.append([described + [kernel.fn.__name__], [_outcome(call, ctx, log) for call in calls]])
    _shipped_hooks()
    out["hook forms"] = draws
    out["hook forms stats"] = {k.fn.__name__: {r: n - before[k.fn.__name__].get(r, 0) for r, n in safecall.triton.jit(k).stats().items()
                                               if n != before[k.fn.__name__].get(r, 0)} for k in (copy, metered)}
    return out
