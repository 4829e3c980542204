"""The runner of ``test_triton_dispatch_overrides.py``: ``run`` methods that are not Triton's (a
subclass of ``JITFunction``, ``Autotuner`` or ``Heuristics`` overriding ``run``, an instance
given its own with ``unittest.mock.patch.object``, ``JITFunction.run`` wrapped on the class
after the install) and a kernel compiled under ``AsyncCompileMode``, called as users call
them. MODE ``stock`` runs Triton's own driver and path, ``dispatch`` safecall's driver with
``install(dispatch=True)``; each call writes what it returned, the calls of the overriding
``run`` methods it made, and the launches the CUDA driver double recorded. MODE
``wrapped-first`` wraps ``JITFunction.run`` before ``install(dispatch=True)`` and writes the
install's error.

    python triton_dispatch_overrides.py MODE OUT.json
"""

from __future__ import annotations

import concurrent.futures
import copy as stdlib_copy
import json
import os
import pathlib
import sys
from typing import Any, Callable, List
from unittest import mock

from support import fake_cuda  # python/tests is on PYTHONPATH

MODE, OUT = sys.argv[1], sys.argv[2]
fake = fake_cuda.load()
fake.safecall_fake_cuda_ordinal_handles(1)
os.environ["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, pathlib.Path(os.environ["TRITON_CACHE_DIR"]) / "libcuda"))

import triton  # noqa: E402

if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 8):
    from support.triton_fakes import torch_stand_in

    torch_stand_in()
import safecall.triton  # noqa: E402
from triton.runtime.autotuner import Autotuner, Heuristics  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from support.triton_kernels import copy  # noqa: E402

LOG: List[str] = []


def wrap_class_run() -> Any:
    """``JITFunction.run`` wrapped on the class, as a tracer does; returns what it replaced."""
    original = vars(JITFunction)["run"]
    inner = JITFunction.run

    def traced_run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        LOG.append("traced_run")
        return inner(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run = traced_run
    return original


if MODE == "wrapped-first":
    wrap_class_run()
    try:
        safecall.triton.install(dispatch=True)
        error = None
    except RuntimeError as e:
        error = str(e)
    pathlib.Path(OUT).write_text(json.dumps({"error": error}))
    raise SystemExit
# An instance given its own `run` before the install.
EARLY = JITFunction(copy.fn)


def early_spy(*args: Any, **kwargs: Any) -> Any:
    LOG.append("early_spy")
    return JITFunction.run(EARLY, *args, **kwargs)


EARLY.run = early_spy
if MODE == "dispatch":
    safecall.triton.install(dispatch=True)


class Tensor:
    """What Triton's JIT reads of a tensor."""

    dtype = triton.language.float32

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


X, Y = Tensor(0x7F00_0000_1000), Tensor(0x7F00_0000_2000)
OUTCOMES: List[Any] = []


def call(label: str, f: Callable[[], Any]) -> None:
    fake.safecall_fake_cuda_reset()
    LOG.clear()
    try:
        returned = type(f()).__name__
    except Exception as e:  # noqa: BLE001 (the error is the outcome compared)
        returned = f"{type(e).__name__}: {e}"
    launches = [[r["kernel"], r["grid"], r["block"], r["args"]]
                for r in fake_cuda.records(fake) if r["call"] == "cuLaunchKernelEx"]
    OUTCOMES.append([label, returned, list(LOG), launches])


def bench(kernel_call: Callable[[], Any], quantiles: Any) -> List[float]:
    """A stand-in benchmarker: launches the config once, finds every config equal."""
    kernel_call()
    return [1.0, 1.0, 1.0]


class LoggingJIT(JITFunction):
    def run(self, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        LOG.append("LoggingJIT.run")
        kwargs.setdefault("num_warps", 8)  # a library's default, changing the launch
        return super().run(*args, grid=grid, warmup=warmup, **kwargs)


class LoggingAutotuner(Autotuner):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        LOG.append("LoggingAutotuner.run")
        return super().run(*args, **kwargs)


class LoggingHeuristics(Heuristics):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        LOG.append("LoggingHeuristics.run")
        return super().run(*args, **kwargs)


def autotuned(fn: Any) -> Any:
    return triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8)],
                           key=["n"], do_bench=bench)(fn)


def with_class(obj: Any, cls: type) -> Any:
    obj.__class__ = cls
    return obj


# A subclass of each Triton class overriding `run`, and layers over an overriding kernel.
subclassed = LoggingJIT(copy.fn)
tuner = with_class(autotuned(JITFunction(copy.fn)), LoggingAutotuner)
layer = with_class(triton.heuristics({"BLOCK": lambda args: 32})(JITFunction(copy.fn)), LoggingHeuristics)
tuner_over_subclass = autotuned(LoggingJIT(copy.fn))
layer_over_subclass = triton.heuristics({"BLOCK": lambda args: 32})(LoggingJIT(copy.fn))
for i in range(3):
    call(f"subclass kernel[grid] {i}", lambda: subclassed[(4,)](X, Y, 1000, BLOCK=128))
    call(f"subclass autotuner[grid] {i}", lambda: tuner[(4,)](X, Y, 1000))
    call(f"subclass heuristics[grid] {i}", lambda: layer[(4,)](X, Y, 1000))
    call(f"autotuner over a subclass {i}", lambda: tuner_over_subclass[(4,)](X, Y, 1000))
    call(f"heuristics over a subclass {i}", lambda: layer_over_subclass[(4,)](X, Y, 1000))
call("subclass kernel.run", lambda: subclassed.run(X, Y, 1000, grid=(4,), warmup=False, BLOCK=128))

# An instance given its own `run` by mock.patch.object, after it was dispatched, then its
# own taken away again; and the kernel under a heuristics layer patched alike.
plain = JITFunction(copy.fn)
over_plain = triton.heuristics({"BLOCK": lambda args: 32})(JITFunction(copy.fn))
for label, obj, target, kwargs in (("kernel", plain, plain, {"BLOCK": 128}),
                                   ("kernel under heuristics", over_plain, over_plain.fn, {})):
    call(f"{label} before the patch", lambda: obj[(4,)](X, Y, 1000, **kwargs))
    original_run = target.run

    def spy(*args: Any, _run: Any = original_run, **kw: Any) -> Any:
        LOG.append("spy")
        return _run(*args, **kw)

    with mock.patch.object(target, "run", spy):
        for i in range(2):
            call(f"{label} patched {i}", lambda: obj[(4,)](X, Y, 1000, **kwargs))
    call(f"{label} after the patch", lambda: obj[(4,)](X, Y, 1000, **kwargs))

# The instance given its own `run` before the install, then its own taken away.
for i in range(2):
    call(f"own run from before {i}", lambda: EARLY[(4,)](X, Y, 1000, BLOCK=128))
OUTCOMES.append(["own run from before, read", EARLY.run is early_spy, [], []])
del EARLY.run
call("own run from before, taken away", lambda: EARLY[(4,)](X, Y, 1000, BLOCK=128))

# A copy of a dispatched kernel given its own `run` (the original keeps the class's); a `run`
# of `None`.
original = JITFunction(copy.fn)
call("original before the copy", lambda: original[(4,)](X, Y, 1000, BLOCK=128))
duplicate = stdlib_copy.copy(original)


def copy_spy(*args: Any, **kwargs: Any) -> Any:
    LOG.append("copy_spy")
    return JITFunction.run(duplicate, *args, **kwargs)


duplicate.run = copy_spy
call("copy with its own run", lambda: duplicate[(4,)](X, Y, 1000, BLOCK=128))
call("original after the copy", lambda: original[(4,)](X, Y, 1000, BLOCK=128))
original.run = None
call("run set to None", lambda: original[(4,)](X, Y, 1000, BLOCK=128))
del original.run

# `JITFunction.run` wrapped on the class after the install: a kernel first called after it.
replaced = wrap_class_run()
try:
    later = JITFunction(copy.fn)
    for i in range(2):
        call(f"class run wrapped {i}", lambda: later[(4,)](X, Y, 1000, BLOCK=128))
finally:
    JITFunction.run = replaced

# A kernel compiled under AsyncCompileMode: a FutureKernel until the mode's exit, then the
# CompiledKernel in its place.
if hasattr(triton.runtime, "_async_compile"):
    asynchronous = JITFunction(copy.fn)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with triton.runtime._async_compile.AsyncCompileMode(pool):
            call("async first call", lambda: asynchronous[(4,)](X, Y, 1000, BLOCK=64))
    for i in range(2):
        call(f"async later call {i}", lambda: asynchronous[(4,)](X, Y, 1000, BLOCK=64))

stats = {}
if MODE == "dispatch":
    for name, obj in (("subclass", subclassed), ("tuner inner", tuner_over_subclass.fn), ("plain", plain)):
        stats[name] = dict(safecall.triton.jit(obj).stats())
pathlib.Path(OUT).write_text(json.dumps({"outcomes": OUTCOMES, "stats": stats, "version": triton.__version__}))
