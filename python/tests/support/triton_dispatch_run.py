"""The runner of ``test_triton_dispatch.py``: on safecall's installed driver and the CUDA driver
double, each call of a table goes once through Triton's own ``JITFunction.run`` and twice
through the kernel's dispatcher (``safecall.triton.jit``: a miss that records the kernel, then a
hit from its table); then the whole table again, interleaved, through the dispatcher alone. For
each it writes the compiled kernel each path chose and the launches the double recorded.

    python triton_dispatch_run.py OUT.json
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import sys

from support import fake_cuda  # python/tests is on PYTHONPATH

OUT = sys.argv[1]
fake = fake_cuda.load()
fake.safecall_fake_cuda_ordinal_handles(1)
os.environ["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, pathlib.Path(os.environ["TRITON_CACHE_DIR"]) / "libcuda"))

import triton as _triton_version  # noqa: E402

if tuple(int(p) for p in _triton_version.__version__.split(".")[:2]) < (3, 8):
    from support.triton_fakes import torch_stand_in

    torch_stand_in()
import safecall.triton  # noqa: E402

safecall.triton.install()
from triton.runtime.autotuner import Heuristics  # noqa: E402

_ORIGINAL_HEURISTICS_RUN = Heuristics.run

import triton  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from support.triton_fakes import DescriptorBase, ElementType  # noqa: E402
from support.triton_draws import mixed_call, mixed_classes  # noqa: E402
from support.triton_kernels import axpy, copy, host_desc_copy, metered, mixed, scalars  # noqa: E402

F32, F64 = ElementType("float32"), ElementType("float64")


class Tensor:
    """What Triton's JIT reads of a tensor: ``data_ptr()`` and ``dtype`` (one dtype object per
    type, as torch has)."""

    def __init__(self, address: int, dtype: ElementType = F32) -> None:
        self.address, self.dtype = address, dtype

    def data_ptr(self) -> int:
        return self.address


class Tuple2(tuple):
    """A tuple subclass (keyed as a tuple, its type included, as Triton keys named tuples)."""


class SubDescriptor(TensorDescriptor):
    """A descriptor type of its own (as Gluon's, which adds a layout): through Triton's path."""


def descriptor(address: int, shape, block, cls=TensorDescriptor, **fields):
    """A host ``TensorDescriptor`` of a float16 CUDA tensor at a fake address."""
    base = DescriptorBase(address, "float16", shape)
    return cls(base, base.shape, base.stride(), block, **fields)


X, Y, Z = Tensor(0x7F00_0000_1000), Tensor(0x7F00_0000_2000), Tensor(0x7F00_0000_3000, F64)
MISALIGNED = Tensor(0x7F00_0000_1004)
def autotuned():
    """An autotuned copy: two configs, a stand-in benchmarker that launches each once and
    finds them equal (Triton keeps the first)."""
    return triton.autotune(
        configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8)],
        key=["n"],
        do_bench=lambda kernel_call, quantiles: (kernel_call(), [1.0, 1.0, 1.0])[1],
    )(copy)


tuned, reference = autotuned(), autotuned()
N_ROWS = 4000


def closure_grid(m):
    """A grid over a closure cell, made anew on every call as in a wrapper function."""
    return lambda META: (triton.cdiv(m, META["BLOCK"]),)

#: name -> (kernel, grid, args, kwargs).
CASES = {
    "i32 not divisible": (copy, (8,), (X, Y, 1000), {"BLOCK": 128}),
    "i32 divisible by 16": (copy, (8,), (X, Y, 1024), {"BLOCK": 128}),
    "i32 equal to 1": (copy, (8,), (X, Y, 1), {"BLOCK": 128}),
    "misaligned pointer": (copy, (8,), (MISALIGNED, Y, 1000), {"BLOCK": 128}),
    # A float64 tensor where the cases around have a float32 one (the dispatcher remembers the
    # type and dtype last seen at each position).
    "x of float64": (copy, (8,), (Z, Y, 1000), {"BLOCK": 128}),
    "another constexpr": (copy, (4,), (X, Y, 1000), {"BLOCK": 256}),
    "num_warps=8": (copy, (8,), (X, Y, 1000), {"BLOCK": 128, "num_warps": 8}),
    "n by keyword": (copy, (8,), (X, Y), {"n": 1000, "BLOCK": 128}),
    "i32 max": (copy, (8,), (X, Y, 2**31 - 1), {"BLOCK": 128}),
    "i64 min of i64": (copy, (8,), (X, Y, 2**31), {"BLOCK": 128}),
    "negative i32 min": (copy, (8,), (X, Y, -(2**31)), {"BLOCK": 128}),
    "below i32": (copy, (8,), (X, Y, -(2**31) - 1), {"BLOCK": 128}),
    "None bias, i64, float": (axpy, (5, 2, 3), (X, Y, None, 2**33, 1, 1.5), {"BLOCK": 256}),
    "a bias pointer": (axpy, (4,), (X, Y, Z, 1000, 3, 2.0), {"BLOCK": 256}),
    "grid lambda": (axpy, lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), (X, Y, None, 5000, 16, -0.25), {"BLOCK": 256}),
    "scalar mix": (scalars, (1,), (Z, -5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**63 - 5, 0.1, -2.5e-300, True), {}),
    "u64 at 2^64 - 1": (scalars, (1,), (Z, 0, 0, 0, 0, 0, 0, 0, 2**64 - 1, 0.0, 0.0, False), {}),
    "empty grid": (copy, (0,), (X, Y, 1000), {"BLOCK": 128}),
    "grid lambda over a closure cell": (copy, closure_grid(3000), (X, Y, 3000), {"BLOCK": 128}),
    "grid lambda over a module-level int, 2 dims": (copy, lambda META: (triton.cdiv(N_ROWS, META["BLOCK"]), 2), (X, Y, 1000),
                                                    {"BLOCK": 64}),
    "host descriptors": (host_desc_copy, (4,), (descriptor(0x7F00_0006_0000, [256, 64], [64, 64]),
                                                descriptor(0x7F00_0007_0000, [256, 64], [64, 64]), 256), {"BM": 64, "BN": 64}),
    # The same specialization (dtype and block shape): the launch encodes the new shape, strides
    # and padding.
    "host descriptors, another shape, nan padding": (
        host_desc_copy, (2,), (descriptor(0x7F00_0008_0000, [128, 64], [64, 64], padding="nan"),
                               descriptor(0x7F00_0009_0000, [128, 64], [64, 64]), 128), {"BM": 64, "BN": 64}),
    "host descriptors, another block": (host_desc_copy, (8,), (descriptor(0x7F00_0006_0000, [256, 64], [32, 64]),
                                                               descriptor(0x7F00_0007_0000, [256, 64], [32, 64]), 256),
                                        {"BM": 32, "BN": 64}),
}


def launches():
    return [{k: v for k, v in r.items() if k != "call"} for r in fake_cuda.records(fake) if r["call"] == "cuLaunchKernelEx"]


def call(path, kernel, grid, args, kwargs):
    fake.safecall_fake_cuda_reset()
    if path == "triton":
        compiled = JITFunction.run(kernel, *args, grid=grid, warmup=False, **kwargs)
    else:
        compiled = safecall.triton.jit(kernel)[grid](*args, **kwargs)
    return id(compiled), launches()


results = {"cases": {}, "interleaved": {}}
for name, (kernel, grid, args, kwargs) in CASES.items():
    runs = [call(path, kernel, grid, args, kwargs) for path in ("triton", "dispatch", "dispatch")]
    results["cases"][name] = {"kernels": [r[0] for r in runs], "launches": [r[1] for r in runs]}
for name, (kernel, grid, args, kwargs) in reversed(list(CASES.items())):
    results["interleaved"][name] = {"kernel": call("dispatch", kernel, grid, args, kwargs)[0]}
results["stats"] = {k.fn.__name__: safecall.triton.jit(k).stats() for k in (copy, axpy, scalars, host_desc_copy)}
# clear(): the next call of a recorded key goes through Triton's run again (a miss), then hits.
d = safecall.triton.jit(axpy)
before = dict(d.stats())
d.clear()
kernel, grid, args, kwargs = CASES["a bias pointer"]
results["after clear"] = {"kernels": [call("dispatch", kernel, grid, args, kwargs)[0] for _ in range(2)],
                          "before": before, "after": dict(d.stats())}

# The kernel's own debug attribute is part of Triton's options, hence of the key: setting it
# selects (compiles) another specialization, as Triton's run does.
kernel, grid, args, kwargs = CASES["i32 not divisible"]
copy.debug = True
results["debug attribute"] = {"kernels": [call(path, kernel, grid, args, kwargs)[0] for path in ("triton", "dispatch")]}
copy.debug = None

# An environment-backed knob (3.9's TRITON_FPSAN_HOMOMORPHIC_CASTS, which Triton folds into the
# options on every call): setting the variable selects another specialization, as in Triton's
# run; unsetting it selects the first again; the knob's own override wins over the variable.
results["environment knob"] = None
if hasattr(triton.knobs.compilation, "fpsan_homomorphic_casts"):
    kernel, grid, args, kwargs = CASES["i32 not divisible"]
    d = safecall.triton.jit(copy)
    first = call("dispatch", kernel, grid, args, kwargs)[0]
    before = dict(d.stats())
    os.environ["TRITON_FPSAN_HOMOMORPHIC_CASTS"] = "1"
    set_by_triton = call("triton", kernel, grid, args, kwargs)[0]
    set_by_dispatch = [call("dispatch", kernel, grid, args, kwargs)[0] for _ in range(2)]
    os.environ["TRITON_FPSAN_HOMOMORPHIC_CASTS"] = "0"
    zero = call("dispatch", kernel, grid, args, kwargs)[0]
    triton.knobs.compilation.__dict__["fpsan_homomorphic_casts"] = True  # an override, the variable still "0"
    overridden = [call(path, kernel, grid, args, kwargs)[0] for path in ("triton", "dispatch")]
    del triton.knobs.compilation.fpsan_homomorphic_casts
    del os.environ["TRITON_FPSAN_HOMOMORPHIC_CASTS"]
    unset = call("dispatch", kernel, grid, args, kwargs)[0]
    results["environment knob"] = {"first": first, "set by triton": set_by_triton, "set": set_by_dispatch, "zero": zero,
                                   "overridden": overridden, "unset": unset, "before": before, "after": dict(d.stats())}

# A traced grid: a hit computes it without calling the grid (triton.cdiv, about 1.5 us from
# host code, is not called); a grid over a value that is no int, or a triton.cdiv replaced, is
# called as Triton calls it.
cdiv_calls = []
constexpr_function = type(triton.cdiv)
original_call = constexpr_function.__call__


def counting_call(self, *args, **kwargs):
    cdiv_calls.append(1)
    return original_call(self, *args, **kwargs)


constexpr_function.__call__ = counting_call
d = safecall.triton.jit(copy)
traced = {}
for name, m in (("int", 5000), ("float", 5000.0)):
    fake.safecall_fake_cuda_reset()
    before = len(cdiv_calls)
    errors = []
    for path in ("dispatch", "dispatch", "dispatch", "triton"):
        try:
            if path == "triton":
                JITFunction.run(copy, X, Y, 5000, grid=closure_grid(m), warmup=False, BLOCK=128)
            else:
                d[closure_grid(m)](X, Y, 5000, BLOCK=128)
            errors.append(None)
        except Exception as e:  # noqa: BLE001  (the error is the result)
            errors.append(f"{type(e).__name__}: {e}")
    traced[name] = {"cdiv calls": len(cdiv_calls) - before, "grids": [r["grid"] for r in launches()], "errors": errors}
real_cdiv = triton.cdiv
triton.cdiv = lambda a, b: 7
fake.safecall_fake_cuda_reset()
d[closure_grid(5000)](X, Y, 5000, BLOCK=128)
traced["cdiv replaced"] = {"grids": [r["grid"] for r in launches()]}
triton.cdiv = real_cdiv
constexpr_function.__call__ = original_call
results["traced grid"] = traced

# A @triton.heuristics layer: the dispatcher computes the heuristics as Triton's
# Heuristics.run does (the arguments by name, `grid` and `warmup` among them, earlier
# heuristics' values seen by later ones) and calls the kernel's dispatcher directly.
heur = triton.heuristics({
    "BLOCK": lambda args: 64 if args["n"] < 2000 and args["warmup"] is False and "grid" in args else 128,
    "stride": lambda args: args["BLOCK"] // 64,  # sees BLOCK's value: 1 or 2
})(axpy)
heuristics = {"calls": []}
for n in (1000, 5000, 1000, 5000):
    row = {}
    for path in ("triton", "dispatch"):
        fake.safecall_fake_cuda_reset()
        if path == "triton":
            kernel = _ORIGINAL_HEURISTICS_RUN(heur, X, Y, None, n, grid=(8,), warmup=False, alpha=1.5)
        else:
            kernel = safecall.triton.jit(heur)[(8,)](X, Y, None, n, alpha=1.5)
        row[path] = {"kernel": id(kernel), "launches": launches()}
    heuristics["calls"].append(row)
try:
    safecall.triton.jit(triton.heuristics({"BLOCK": lambda args: args["missing"]})(copy))[(8,)](X, Y, 1000)
    heuristics["error"] = None
except KeyError as e:
    heuristics["error"] = f"KeyError: {e}"
heuristics["stats"] = safecall.triton.jit(heur).stats()
results["heuristics"] = heuristics

# Equal dtypes that are distinct objects (``triton.language.dtype`` compares by name) are one
# key, as in a tuple key: the first call is a miss, the next ones hit without Triton's run.
def fp32(address):
    return Tensor(address, triton.language.dtype("fp32"))


d = safecall.triton.jit(copy)
before = dict(d.stats())
by_triton = id(JITFunction.run(copy, fp32(X.address), fp32(Y.address), 1000, grid=(8,), warmup=False, BLOCK=128))
results["equal dtypes"] = {
    "kernels": [by_triton] + [id(d[(8,)](fp32(X.address), fp32(Y.address), 1000, BLOCK=128)) for _ in range(3)],
    "before": before, "after": dict(d.stats()),
}

# Generated argument sets (seeded): each call goes through Triton's run, then twice through
# the dispatcher, which must choose Triton's compiled kernel every time.
def generated(rng):
    def pointer(dtype=F32):
        return Tensor(0x7F00_0010_0000 + rng.choice([0, 4, 8, 16, 32, 0x1000]), dtype)

    def integer():
        return rng.choice([1, 16, 17, 32, 1000, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40,
                           2**63 - 1, -1, 0, rng.randrange(-(2**40), 2**40)])

    if rng.random() < 0.5:
        return copy, (pointer(), pointer(), integer()), {"BLOCK": rng.choice([64, 128])}
    bias = rng.choice([None, pointer(F64)])
    args = (pointer(), pointer(), bias, integer(), rng.choice([1, 2, 16]), rng.choice([0.5, -0.0, 2.0]))
    kwargs = {"BLOCK": 256}
    if rng.random() < 0.2:
        kwargs["num_warps"] = rng.choice([2, 8])
    return axpy, args, kwargs


rng = random.Random(2026)
choices = []
for _ in range(60):
    kernel, args, kwargs = generated(rng)
    runs = [call(path, kernel, (4,), args, kwargs)[0] for path in ("triton", "dispatch", "dispatch")]
    choices.append(runs)
results["generated"] = {"choices": choices, "kernels": len({runs[0] for runs in choices})}
fake.safecall_fake_cuda_reset()

# Seeded draws over a kernel of many parameter kinds (`mixed`): each draw picks a class per
# argument (a pointer's dtype and alignment, an int's width class and whether it is 1 or
# divisible by 16, a float, a bool, None, a constexpr given or left to its default), which
# arguments go by keyword and in what order, the launch options and the grid's form, then values
# in those classes. A first pass calls each draw through Triton's run and twice through the
# dispatcher; a second pass draws new values in the first pass's classes, in another order, and
# calls each through Triton's run and once through the dispatcher (the keys the table holds:
# its key keeps an int's width, 1-ness and divisibility by 16 also for the `do_not_specialize`
# parameter `m`, where Triton's keeps its width only, and the int classes fix all three). Every
# call must choose Triton's compiled kernel and send its launch.
def compared(paths, grid, args, kwargs):
    runs = [call(path, mixed, grid, args, kwargs) for path in paths]
    return {"kernels": [r[0] for r in runs], "launches": [r[1] for r in runs]}


def tensor(address, dtype):
    return Tensor(address, ElementType(dtype))


rng = random.Random(20261129)
draws = [mixed_classes(rng) for _ in range(40)]
first = [compared(("triton", "dispatch", "dispatch"), *mixed_call(rng, draw, tensor)) for draw in draws]
stats_first = dict(safecall.triton.jit(mixed).stats())
again = list(range(len(draws)))
rng.shuffle(again)
second = []
for i in again:
    misses = safecall.triton.jit(mixed).stats().get("miss", 0)
    grid, args, kwargs = mixed_call(rng, draws[i], tensor)
    second.append(dict(compared(("triton", "dispatch"), grid, args, kwargs), draw=i,
                       missed=safecall.triton.jit(mixed).stats().get("miss", 0) - misses))
results["generated mixed"] = {
    "first": first, "second": second, "stats first": stats_first,
    "stats": dict(safecall.triton.jit(mixed).stats()),
    "kernels": len({run["kernels"][0] for run in first}),
}
fake.safecall_fake_cuda_reset()

# A hit reads each tensor's data_ptr() once: for the key's alignment and for the launch.
class Counted(Tensor):
    calls = 0

    def data_ptr(self) -> int:
        Counted.calls += 1
        return self.address


counted = (Counted(X.address), Counted(Y.address))
d[(8,)](*counted, 1000, BLOCK=128)  # a new argument type: a miss, through Triton's run
before = Counted.calls
d[(8,)](*counted, 1000, BLOCK=128)
results["data_ptr calls per hit"] = Counted.calls - before

# More argument types than the native side remembers by identity (1024 types, 4096 objects):
# each new type is a new key (a miss); after the caches started over, the first types' keys
# still hit the kernels recorded for them.
types = [type(f"Tensor{i}", (Tensor,), {}) for i in range(4200)]
before = dict(d.stats())
for t in types:
    fake.safecall_fake_cuda_reset()
    d[(8,)](t(X.address), Y, 1000, BLOCK=128)
middle = dict(d.stats())
again = [id(d[(8,)](t(X.address), Y, 1000, BLOCK=128)) for t in types[:10]]
results["many types"] = {"kernels": again, "before": before, "middle": middle, "after": dict(d.stats()),
                         "recorded": d._native.recorded}
fake.safecall_fake_cuda_reset()

# An autotuned kernel on Triton's own path, then the same with the dispatch installed: tuning
# is Triton's, then the tuned key is served natively and the best config's calls hit the
# kernel's table.
fake.safecall_fake_cuda_reset()
for _ in range(3):
    reference[(8,)](X, Y, 4000)
results["autotuned reference"] = {"launches": launches(), "best": str(reference.best_config)}
safecall.triton.install(dispatch=True)
results["kernel[grid] once installed"] = type(copy[(8,)]).__name__
# `kernel[grid]` with the same grid tuple object is the same callable (kept, not made per
# call); another tuple, another kernel, or a grid function each get their own, which launch
# their own grids.
GRID = (8,)
grid_fn = lambda META: (8,)  # noqa: E731
fake.safecall_fake_cuda_reset()
bound = [copy[GRID], copy[GRID], copy[(7,)], axpy[GRID], copy[grid_fn], copy[grid_fn]]
bound[2](X, Y, 1000, BLOCK=128)
bound[1](X, Y, 1000, BLOCK=128)
results["kept kernel[grid]"] = {
    "same": [bound[0] is bound[1], bound[2] is bound[0], bound[3] is bound[0], bound[4] is bound[5]],
    "grids": [launch["grid"] for launch in launches()],
}
results["heuristics kernel[grid] once installed"] = type(heur[(8,)]).__name__
before = dict(safecall.triton.jit(copy).stats())
fake.safecall_fake_cuda_reset()
for _ in range(3):
    tuned[(8,)](X, Y, 4000)
results["autotuned"] = {"launches": launches(), "stats_before": before, "stats_after": safecall.triton.jit(copy).stats(),
                        "best": str(tuned.best_config), "tuner stats": safecall.triton.jit(tuned).stats(),
                        "kernel[grid]": type(tuned[(8,)]).__name__}

# The tuned config changed after tuning (a launch option, then a kernel keyword): the dispatch
# follows as Triton's Autotuner.run does (it reads `config.all_kwargs()` on every call), still
# natively; compared with Triton's own Autotuner.run on the reference autotuner.
from safecall._triton_dispatch import _ORIGINAL_RUN  # noqa: E402

changed = {}
for what, change in (("num_warps", lambda c: setattr(c, "num_warps", 2)),
                     ("kwargs", lambda c: c.kwargs.update(BLOCK=256))):
    runs = {"misses before": safecall.triton.jit(copy).stats().get("miss", 0)}
    for label, tuner in (("triton", reference), ("dispatch", tuned)):
        change(tuner.best_config)
        fake.safecall_fake_cuda_reset()
        if label == "triton":
            _ORIGINAL_RUN["autotune"](tuner, X, Y, 4000, grid=(8,), warmup=False)
        else:
            tuner[(8,)](X, Y, 4000)
        runs[label] = launches()
    runs["misses after"] = safecall.triton.jit(copy).stats().get("miss", 0)
    changed[what] = runs
results["config changed after tuning"] = {"runs": changed, "tuner stats": safecall.triton.jit(tuned).stats()}
for tuner in (reference, tuned):
    tuner.best_config.num_warps, tuner.best_config.kwargs["BLOCK"] = 8, 128

# The autotune key as Triton builds it from keywords: the key arguments' values, then each
# dtype in the order of the keywords given (`y_ptr` first is another key than `x_ptr` first).
keyed = {}
for label, tuner in (("triton", reference), ("dispatch", tuned)):
    before_keys, before_stats = set(tuner.cache), dict(safecall.triton.jit(tuned).stats())
    fake.safecall_fake_cuda_reset()
    for kwargs in ({"x_ptr": X, "y_ptr": Z, "n": 4000}, {"y_ptr": Z, "x_ptr": X, "n": 4000}, {"y_ptr": Z, "x_ptr": X, "n": 4000}):
        if label == "triton":
            _ORIGINAL_RUN["autotune"](tuner, grid=(8,), warmup=False, **kwargs)
        else:
            tuner[(8,)](**kwargs)
    keyed[label] = {"keys": sorted(str(k) for k in set(tuner.cache) - before_keys), "launches": launches(),
                    "not tuned": safecall.triton.jit(tuned).stats().get("not tuned", 0) - before_stats.get("not tuned", 0)}
results["autotune key from keywords"] = keyed

# Once installed, `kernel[grid]` of a dispatched kernel, autotuned kernel and heuristics layer
# runs no Python frame: `DispatchedMethod` finds the dispatcher's native method on the kernel.
frames = []


def watch(frame, event, arg):
    if event == "call":
        frames.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}")


sys.setprofile(watch)
bound = copy[(8,)], tuned[(8,)], heur[(8,)]  # no comprehension: it would be a frame itself
copy.run(X, Y, 1000, grid=(8,), warmup=False, BLOCK=128)
sys.setprofile(None)
bound = [type(b).__name__ for b in bound]
try:
    copy.run(X, Y, 1000, grid=(8,), BLOCK=128)
    missing_warmup = "no error"
except TypeError as e:
    missing_warmup = str(e)
results["installed kernel[grid]"] = {
    "types": bound, "python frames": frames, "class attribute": type(JITFunction.__dict__["__getitem__"]).__name__,
    "class access": JITFunction.__getitem__.__name__, "run without warmup": missing_warmup,
}


# The active driver is read on every call: one set active later gives the launch its stream.
class Relay:
    """The installed driver with another current stream."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get_current_stream(self, device):
        return 0x5151


installed = triton.runtime.driver.active
hits = safecall.triton.jit(copy).stats().get("hit", 0)
triton.runtime.driver.set_active(Relay(installed))
fake.safecall_fake_cuda_reset()
copy[(8,)](X, Y, 1000, BLOCK=128)
triton.runtime.driver.set_active(installed)
copy[(8,)](X, Y, 1000, BLOCK=128)
results["set_active"] = {"streams": [launch["stream"] for launch in launches()],
                         "hits": safecall.triton.jit(copy).stats().get("hit", 0) - hits}

# Launch hooks (a profiler's): the first call through Triton's run (a miss), then from the
# table, each hook given what Triton's path gives it.
from safecall._triton_dispatch import _ORIGINAL_RUN  # noqa: E402

seen = []


def enter(metadata):
    seen.append(("enter", metadata.get()))


def leave(metadata):
    seen.append(("exit", metadata.get()["name"]))


hooked = safecall.triton.jit(metered)
before = hooked.stats()
fake.safecall_fake_cuda_reset()
triton.knobs.runtime.launch_enter_hook.add(enter)
triton.knobs.runtime.launch_exit_hook.add(leave)
for grid in ((8,), (8,), lambda META: (triton.cdiv(META["n"], META["BLOCK"]),)):
    metered[grid](X, Y, 1000, BLOCK=128)
triton.knobs.runtime.launch_enter_hook.remove(enter)
triton.knobs.runtime.launch_exit_hook.remove(leave)
metered[(8,)](X, Y, 1000, BLOCK=128)


def registering_grid(META):
    """A grid that registers the enter hook (not traced: it calls): Triton reads the hooks after
    the grid, so this launch calls it."""
    triton.knobs.runtime.launch_enter_hook.add(enter)
    return (8,)


metered[registering_grid](X, Y, 1000, BLOCK=128)
triton.knobs.runtime.launch_enter_hook.remove(enter)
after = hooked.stats()
results["hooks"] = {
    "seen": [[what, {k: (v if isinstance(v, (int, str, list)) else repr(v)) for k, v in md.items()}
              if isinstance(md, dict) else md] for what, md in seen],
    "function": next(iter(metered.device_caches[0][0].values())).function,
    "launches": launches(),
    "hits": after.get("hit", 0) - before.get("hit", 0),
    "misses": after.get("miss", 0) - before.get("miss", 0),
    "fallbacks": {k: v for k, v in after.items() if k.startswith("fallback")},
}


def failing(metadata):
    raise RuntimeError("the profiler failed")


# A hook that raises: the call raises it and launches nothing, from the table as in Triton's run.
triton.knobs.runtime.launch_enter_hook.add(failing)
raised = []
for call in (lambda: metered[(8,)](X, Y, 1000, BLOCK=128),
             lambda: _ORIGINAL_RUN["run"](metered, X, Y, 1000, grid=(8,), warmup=False, BLOCK=128)):
    fake.safecall_fake_cuda_reset()
    try:
        call()
        raised.append("nothing raised")
    except RuntimeError as e:
        raised.append(str(e))
    raised.append(len(launches()))
triton.knobs.runtime.launch_enter_hook.remove(failing)
results["hooks"]["raised"] = raised

# Fallbacks: each goes through Triton's run (and launches) and is counted.
fake.safecall_fake_cuda_reset()
copy.warmup(X, Y, 1000, BLOCK=128, grid=(1,))
try:
    # A str in a tuple: an element kind the dispatcher does not model.
    safecall.triton.jit(scalars)[(1,)](Z, Tuple2((1, "a str")), 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, False)
except Exception as e:  # noqa: BLE001  (Triton's own error is the result)
    results["tuple error"] = type(e).__name__
safecall.triton.jit(host_desc_copy)[(4,)](descriptor(0x7F00_0006_0000, [256, 64], [64, 64], SubDescriptor),
                                         descriptor(0x7F00_0007_0000, [256, 64], [64, 64]), 256, BM=64, BN=64)
results["fallback launches"] = len(launches())
results["final stats"] = {k.fn.__name__: safecall.triton.jit(k).stats() for k in (copy, scalars, host_desc_copy)}

# Arguments in other forms, each call through Triton's own run (the dispatch is installed by
# now) and twice through the dispatcher (`triton_dispatch_forms`).
from support.triton_dispatch_calls import run_calls  # noqa: E402
from support.triton_dispatch_forms import Context, run_forms  # noqa: E402

context = Context(fake, _ORIGINAL_RUN, launches, copy, scalars, CASES["scalar mix"][2], X, Y, F32)
results.update(run_forms(context))
# A kernel called again from inside its own call, without end (`triton_dispatch_reentry`).
from support.triton_dispatch_reentry import run_reentry  # noqa: E402

results["reentry"] = run_reentry(context)
# Kernels taking Gluon's host descriptors (`triton_dispatch_gluon`; Triton 3.8+).
from support.triton_dispatch_gluon import run_gluon  # noqa: E402

results["gluon"] = run_gluon(context)
# Triton's knob groups replaced, as its `fresh_knobs` test helper does (`triton_dispatch_knob_groups`).
from support.triton_dispatch_knob_groups import run_knob_groups  # noqa: E402

results["knob groups"] = run_knob_groups(context)
# How kernels are called (shapes, options, heuristics layers), the same way (`triton_dispatch_calls`).
results.update(run_calls(context))
# What `inspect.signature` reads of each `run`: Triton's method bound to the object, the
# dispatcher's, and the installed `kernel.run`.
import inspect  # noqa: E402

_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(copy)
_layer = triton.heuristics({"BLOCK": lambda args: 64})(copy)
results["run signatures"] = {
    name: [str(inspect.signature(_ORIGINAL_RUN[method].__get__(obj))), str(inspect.signature(safecall.triton.jit(obj).run)),
           str(inspect.signature(obj.run))]
    for name, method, obj in (("jit", "run", copy), ("autotuned", "autotune", _tuned), ("heuristics", "heuristics", _layer))
}
# A C caller's own keyword dictionary (`PyObject_Call(run, args, kwargs)`, through ctypes):
# the dispatcher's `run` takes `grid` and `warmup` from it and leaves it as it was.
import ctypes  # noqa: E402

_call = ctypes.pythonapi.PyObject_Call
_call.restype, _call.argtypes = ctypes.py_object, [ctypes.py_object] * 3
_given = {"grid": (4,), "warmup": False, "BLOCK": 128}
fake.safecall_fake_cuda_reset()
_kernel = _call(safecall.triton.jit(copy).run, (X, Y, 1000), _given)
results["C caller's dict"] = {"kept": _given == {"grid": (4,), "warmup": False, "BLOCK": 128}, "launches": len(launches()),
                              "kernel": type(_kernel).__name__}
# `run(..., grid=<a new function each call>, warmup=False)`: `grid` and `warmup` are the
# protocol's, not options in the key, so the calls after the first hit the one entry.
_d = safecall.triton.jit(copy)
_before, _recorded = dict(_d.stats()), _d._native.recorded
for _ in range(4):
    _d.run(X, Y, 1000, grid=lambda META: (4,), warmup=False, BLOCK=128)
results["run with a new grid each call"] = {
    "counts": {k: v - _before.get(k, 0) for k, v in _d.stats().items() if v != _before.get(k, 0)},
    "recorded": _d._native.recorded - _recorded}
results["triton"] = triton.__version__
pathlib.Path(OUT).write_text(json.dumps(results, indent=1, sort_keys=True))
