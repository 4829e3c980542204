"""Runs Triton kernels for AMD GPUs the everyday way, ``kernel[grid](...)``, against the HIP
runtime double, and writes what the double recorded as JSON: the runner of
``test_triton_hip_driver.py``.

    python triton_hip_driver_run.py (stock|safecall|auto|dispatch) OUT.json

``stock`` uses Triton 3.9's own AMD driver (``HIPUtils`` compiles ``driver.c`` with ``cc``;
made active without ``GPUDriver.__init__``, which needs torch: device 0, the null stream);
``safecall`` installs safecall's (``safecall.triton.install(backend="hip")``) before anything
touches ``triton.runtime.driver.active``; ``auto`` the same with the backend left for
``install()`` to choose (no torch, no CUDA driver: the HIP runtime); ``dispatch`` installs it
with the dispatch (``install(backend="hip", dispatch=True)``) and runs every case twice (the
second time from the dispatchers' tables), then calls with tensors inside and beyond 2 GiB
(AMD's pointer-range specialization) through the dispatch and through Triton's own ``run``. Every run launches the same
kernels with the same arguments (tensors are objects with ``data_ptr()`` and ``dtype`` at fake
addresses: the double touches no memory), with a launch hook registered.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from support import ROOT, fake_hip  # python/tests is on PYTHONPATH

MODE, OUT = sys.argv[1], sys.argv[2]
fake = fake_hip.load()
os.environ["TRITON_LIBHIP_PATH"] = str(fake_hip.libhip_dir(fake_hip.PATH, ROOT / "target" / "triton-libhip") / "libamdhip64.so")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

if MODE in ("safecall", "auto", "dispatch"):
    import safecall.triton

    safecall.triton.install(**{"safecall": {"backend": "hip"}, "auto": {}, "dispatch": {"backend": "hip", "dispatch": True}}[MODE])
else:
    from support.triton_hip import _activate_hip_driver

    _activate_hip_driver()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton import knobs  # noqa: E402
from support.triton_fakes import ElementType  # noqa: E402
from support.triton_hip import _kernels  # noqa: E402
from support.triton_fakes import DescriptorBase  # noqa: E402
from support.triton_kernels import host_desc_copy, tdm3_copy, wide  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


class Tensor:
    """What Triton's JIT reads of a tensor: ``data_ptr()`` and ``dtype``."""

    def __init__(self, address: int, dtype: Any = "float32") -> None:
        # A dtype by name, or an `ElementType` (the seeded draws make tensors of `type(X)`).
        self.address, self.dtype = address, ElementType(dtype) if isinstance(dtype, str) else dtype

    def data_ptr(self) -> int:
        return self.address


def descriptor(address, shape, block, **fields):
    return TensorDescriptor.from_tensor(DescriptorBase(address, "float16", shape), block, **fields)


X, Y, Z = Tensor(0x7F00_0000_1000), Tensor(0x7F00_0000_2000), Tensor(0x7F00_0000_3000)
F64 = Tensor(0x7F00_0000_4000, "float64")
A, B = Tensor(0x7F00_0001_0000, "float16"), Tensor(0x7F00_0002_0000, "float16")
K = _kernels()
add, scalars, matmul, axpy = K["add"], K["scalars"], K["matmul"], K["axpy"]
hook_calls = []


def hook(metadata):
    hook_calls.append(type(metadata).__name__)


RECORDED = (*fake_hip.LAUNCH_CALLS, "hipPointerGetAttribute")


@triton.jit
def add_clustered(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``add`` as a kernel of its own: its first call sets the target it compiles for (Triton
    keeps one per device and kernel), here gfx1250's."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


#: ``host_desc_copy`` as a kernel of its own, compiled for gfx1250 (where its descriptors are
#: TDM descriptors).
tdm_copy = triton.jit(host_desc_copy.fn)


def float_descriptor(address, shape, strides, block):
    return TensorDescriptor(DescriptorBase(address, "float32", shape, strides), shape, strides, block)


#: The cases run on gfx1250 devices (the double's, chosen per thread), by name.
GFX1250 = {"num_ctas=2 on gfx1250 (clusters)", "TDM descriptors on gfx1250"}

#: Each case: the launches, as (kernel, grid, args, keyword arguments).
CASES = {
    "vector add": [
        (add, (4,), (X, Y, Z, 1000), {"BLOCK": 256}),
        (add, (3, 2), (Tensor(X.address + 64), Y, Z, 7), {"BLOCK": 256}),
        (add, (1,), (X, Y, Z, -1), {"BLOCK": 128}),
    ],
    "scalar mix": [
        (scalars, (1,), (F64, -5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**63 + 5, 0.1, -2.5, True), {}),
        (scalars, (1,), (F64, 2, 16, 32, 2**31, 3, 5, 2**32, 2**64 - 1, 1.0, 0.0, False), {}),
    ],
    "num_warps=8, LDS (matmul)": [(matmul, (4, 2), (A, B, X, 512), {"BM": 64, "BN": 64, "BK": 32, "num_warps": 8, "num_stages": 2})],
    "i64 and 1 specialized": [(axpy, (5, 2, 3), (X, Y, Z, 2**33, 1, 1.5), {"BLOCK": 256})],
    "cooperative grid": [(add, (8,), (X, Y, Z, 2000), {"BLOCK": 256, "launch_cooperative_grid": True})],
    "empty grid": [(add, (0,), (X, Y, Z, 10), {"BLOCK": 256}), (add, (4, 0, 1), (X, Y, Z, 10), {"BLOCK": 256})],
    "stream from the driver": [(add, (1,), (X, Y, Z, 3), {"BLOCK": 64})],
    # Host TensorDescriptors on gfx942 (no TMA, no tensordesc_meta): decomposed into the base
    # pointer, shape, strides and flags.
    "decomposed host descriptors": [
        (host_desc_copy, (4,), (descriptor(0x7F00_0006_0000, [256, 64], [64, 64]),
                                descriptor(0x7F00_0007_0000, [256, 64], [64, 64], padding="nan"), 256), {"BM": 64, "BN": 64}),
    ],
    # Clusters of num_ctas blocks (hipDrvLaunchKernelEx), cooperative or not.
    "num_ctas=2 on gfx1250 (clusters)": [
        (add_clustered, (4,), (X, Y, Z, 1000), {"BLOCK": 256, "num_ctas": 2}),
        (add_clustered, (3, 2), (X, Y, Z, 7), {"BLOCK": 256, "num_ctas": 2, "launch_cooperative_grid": True}),
    ],
    # Host TensorDescriptors on gfx1250: TDM descriptors (rank 2 with two descriptors, one
    # asking for nan padding, which AMD ignores; rank 3 with strides of its own).
    "TDM descriptors on gfx1250": [
        (tdm_copy, (4,), (descriptor(0x7F00_0006_0000, [256, 64], [64, 64]),
                          descriptor(0x7F00_0007_0000, [70000, 64], [64, 64], padding="nan"), 256), {"BM": 64, "BN": 64}),
        (tdm3_copy, (1,), (float_descriptor(0x7F00_0008_0000, [3, 20, 64], [2560, 128, 1], [2, 16, 64]), Z),
         {"B0": 2, "B1": 16, "B2": 64, "num_warps": 8}),
    ],
    # More arguments than the native launcher keeps on its stack.
    "45 arguments": [(wide, (2,), (*[Tensor(0x7F00_0010_0000 + 0x100 * i) for i in range(20)], *[3 + 7 * i for i in range(25)]), {})],
}


def outcome(call, message=True):
    """``"ok"``, or the error's type (and message)."""
    try:
        call()
        return "ok"
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return f"{type(e).__name__}: {e}" if message else type(e).__name__


class Ranged(Tensor):
    """A tensor that says how many bytes it spans (``ptr_range()``, which Triton's AMD backend
    reads to specialize pointers within 2 GiB)."""

    def __init__(self, address: int, size: int) -> None:
        super().__init__(address)
        self.size = size

    def ptr_range(self) -> int:
        return self.size


class Unranged(Tensor):
    """A tensor whose ``ptr_range()`` fails: Triton asks it only where it specializes."""

    def ptr_range(self) -> int:
        raise RuntimeError("no range")


@triton.jit(do_not_specialize=["x_ptr"])
def add_unspecialized(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def pointer_ranges():
    """Tensors within and beyond 2 GiB (and at 2^31 - 1 bytes), with ``knobs.amd.use_buffer_ops``
    on and off (set on the knob, then through the environment only): per call, whether the
    dispatch chose the kernel Triton's own ``run`` chose, and that kernel's hash; then a
    ``do_not_specialize`` pointer whose ``ptr_range()`` fails (Triton never asks it)."""
    from safecall._triton_dispatch import _ORIGINAL_RUN

    small = [Ranged(a, 4096) for a in (X.address, Y.address, Z.address)]
    big = [Ranged(X.address, 2**31), *small[1:]]
    edge = [Ranged(X.address, 2**31 - 1), *small[1:]]
    chosen = []

    def both(args):
        ours = add[(4,)](*args, 1000, BLOCK=256)
        theirs = _ORIGINAL_RUN["run"](add, *args, 1000, grid=(4,), warmup=False, BLOCK=256)
        chosen.append([ours.hash == theirs.hash, ours.hash])

    for on in (True, False):
        with knobs.amd.scope():
            knobs.amd.use_buffer_ops = on
            for args in (small, big, small, big, edge):
                both(args)
    with knobs.amd.scope():
        del knobs.amd.use_buffer_ops
        os.environ["AMDGCN_USE_BUFFER_OPS"] = "0"
        for args in (small, big):
            both(args)
    os.environ.pop("AMDGCN_USE_BUFFER_OPS", None)
    unranged = [Unranged(X.address), Y, Z]
    ours = [outcome(lambda: add_unspecialized[(4,)](*unranged, 1000, BLOCK=256)) for _ in range(2)]
    theirs = _ORIGINAL_RUN["run"](add_unspecialized, *unranged, 1000, grid=(4,), warmup=False, BLOCK=256)
    return {"chosen": chosen, "unspecialized": ours, "unspecialized by Triton": theirs.hash is not None,
            "unspecialized stats": safecall.triton.jit(add_unspecialized).stats()}


def autotuned():
    """An autotuned kernel (two configs, a stand-in benchmarker that launches each once and
    finds them equal: Triton keeps the first), three calls through Triton's own
    ``Autotuner.run`` and three through the dispatch's autotune layer, on two autotuners of the
    same kernel: the pointer checks and launches of each, the best configs, the layer's counts."""
    from safecall._triton_dispatch import _ORIGINAL_RUN

    def tuner():
        return triton.autotune(
            configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8)],
            key=["n"],
            do_bench=lambda kernel_call, quantiles: (kernel_call(), [1.0, 1.0, 1.0])[1],
        )(add)

    reference, tuned = tuner(), tuner()
    out = {}
    for label, call in (("triton", lambda: _ORIGINAL_RUN["autotune"](reference, X, Y, Z, 4000, grid=(8,), warmup=False)),
                        ("dispatch", lambda: tuned[(8,)](X, Y, Z, 4000))):
        fake.safecall_fake_hip_reset()
        for _ in range(3):
            call()
        out[label] = [r for r in fake_hip.records(fake) if r["call"] in RECORDED]
    out["best"] = [str(reference.best_config), str(tuned.best_config)]
    out["tuner stats"] = safecall.triton.jit(tuned).stats()
    return out


def seeded_calls():
    """The CUDA dispatch runner's seeded draws of how kernels are called (call shapes with
    AMD's launch options, heuristics layers, autotuned kernels, launch hooks:
    ``triton_dispatch_calls``) on gfx942, each through Triton's own methods and twice through
    the dispatch, with the pointer checks among the records."""
    import types

    from safecall._triton_dispatch import _ORIGINAL_RUN
    from support.triton_dispatch_calls import AMD_OPTIONS, run_calls

    fake_hip.set_arch(fake, "gfx942")
    ctx = types.SimpleNamespace(
        # The draws reset the double through the CUDA double's entry point's name.
        fake=types.SimpleNamespace(safecall_fake_cuda_reset=fake.safecall_fake_hip_reset),
        original_run=_ORIGINAL_RUN,
        launches=lambda: [r for r in fake_hip.records(fake) if r["call"] in RECORDED],
        x=X, y=Y,
    )
    return run_calls(ctx, AMD_OPTIONS)


def random_calls():
    """Seeded ``kernel[grid](...)`` calls of a kernel of many parameter kinds on gfx942
    (``triton_draws``): 40 new specializations, then 40 calls in the same classes; each call's
    launch and pointer-check records, or the type of its error."""
    import random

    from support.triton_draws import mixed_call, mixed_classes
    from support.triton_kernels import mixed

    rng = random.Random(20261129)
    draws = [mixed_classes(rng) for _ in range(40)]
    out = []
    for draw in draws + draws:
        grid, args, kwargs = mixed_call(rng, draw, Tensor)
        fake.safecall_fake_hip_reset()
        try:
            mixed[grid](*args, **kwargs)
            out.append([r for r in fake_hip.records(fake) if r["call"] in RECORDED])
        except Exception as e:  # noqa: BLE001  (the error is part of the result)
            out.append(type(e).__name__)
    if MODE == "dispatch":
        out.append(safecall.triton.jit(mixed).stats())
    return out


def main() -> None:
    result = {"driver": type(triton.runtime.driver.active).__name__, "triton": triton.__version__, "cases": {}}
    shipped_hook = knobs.runtime.launch_enter_hook
    knobs.runtime.launch_enter_hook = hook
    for run in ("cases", "second pass")[: 2 if MODE == "dispatch" else 1]:
        result.setdefault(run, {})
        first_hook = len(hook_calls)
        for name, launches in CASES.items():
            fake.safecall_fake_hip_reset()
            fake_hip.set_arch(fake, "gfx1250" if name in GFX1250 else "gfx942")
            error = None
            try:
                for kernel, grid, args, kwargs in launches:
                    kernel[grid](*args, **kwargs)
            except Exception as e:  # noqa: BLE001  (the error is part of the result)
                # The type only: a failed launch's message is each driver's own.
                error = type(e).__name__
            records = [r for r in fake_hip.records(fake) if r["call"] in RECORDED]
            result[run][name] = records + ([{"error": error}] if error else [])
        result["hook calls" if run == "cases" else "second pass hook calls"] = hook_calls[first_hook:]
    knobs.runtime.launch_enter_hook = shipped_hook
    result["random calls"] = random_calls()
    if MODE == "dispatch":
        kernels = {"add": add, "scalars": scalars, "matmul": matmul, "axpy": axpy, "host_desc_copy": host_desc_copy,
                   "wide": wide}
        result["stats"] = {name: safecall.triton.jit(k).stats() for name, k in kernels.items()}
        result["pointer ranges"] = pointer_ranges()
        result["stats after ranges"] = safecall.triton.jit(add).stats()
        result["autotuned"] = autotuned()
        result["seeded calls"] = seeded_calls()

    # A negative grid: both drivers pass it on as unsigned ints (2^32 - 1); the double launches
    # it, where safecall's check applies HIP's rule on the threads per dimension first.
    fake.safecall_fake_hip_reset()
    result["negative grid"] = {
        "outcome": outcome(lambda: add[(-1,)](X, Y, Z, 10, BLOCK=256)).splitlines()[0],
        "launches": [(r["grid"], r["block"]) for r in fake_hip.launches(fake)],
    }
    # A tensor the runtime calls host memory: Triton's ValueError, before any launch.
    fake.safecall_fake_hip_reset()
    add[(1,)](X, Y, Z, 9, BLOCK=256)
    fake.safecall_fake_hip_reset()
    fake_hip.fail(fake, "hipPointerGetAttribute", 1)
    result["host memory"] = {
        # Triton's message formats an argument index it never passes ("(at %d)"): the type only.
        "outcome": outcome(lambda: add[(1,)](X, Y, Z, 9, BLOCK=256), message=False),
        "launches": fake_hip.launches(fake),
    }
    compiled = add.warmup(X, Y, Z, 16, BLOCK=256, grid=(1,))
    md = compiled.metadata
    # The launcher alone (CompiledKernel[grid]): every pointer form Triton's driver.c takes, an
    # i32 wider than 32 bits (truncated, as C casts), then the wrong forms and their errors.
    fake.safecall_fake_hip_reset()

    class IntAddress(int):
        pass

    class DataPtrSub:
        def data_ptr(self):
            return IntAddress(0x7F00_0000_5000)

    runner = compiled[(2, 1, 1)]
    runner(0x7F00_0000_6000, IntAddress(0x7F00_0000_7000), DataPtrSub(), 2**40 + 7, 256)
    runner(True, None, X, -(2**31) - 1, 256)
    result["cases"]["launcher pointer forms"] = [r for r in fake_hip.records(fake) if r["call"] in RECORDED]

    class StrPtr:
        def data_ptr(self):
            return "0x10"

    result["errors"] = {
        "i32 beyond i64": outcome(lambda: runner(X, Y, Z, 2**70, 256)),
        "no data_ptr": outcome(lambda: runner(object(), Y, Z, 4, 256)),
        "data_ptr not an int": outcome(lambda: runner(StrPtr(), Y, Z, 4, 256)),
        "float for a pointer": outcome(lambda: runner(1.5, Y, Z, 4, 256)),
        "str for an i32": outcome(lambda: runner(X, Y, Z, "4", 256)),
    }

    # Seeded pointer arguments in every form, good and bad (`triton_fakes.random_pointer`), as
    # the first pointer of the launcher: the error (type and message), then the launch and
    # pointer-check records of each.
    import random

    from support.triton_fakes import random_pointer

    def pointer_form(first):
        fake.safecall_fake_hip_reset()
        error = outcome(lambda: runner(first, Y, Z, 4, 256))
        return [error, [r for r in fake_hip.records(fake) if r["call"] in RECORDED]]

    rng = random.Random(4040)
    result["random pointer forms"] = [pointer_form(random_pointer(rng)) for _ in range(200)]

    # The same forms through `kernel[grid](...)` (the JIT, or the dispatch in "dispatch" mode),
    # each called twice (a miss, then a hit); two of three data_ptr() objects given a dtype, as
    # the JIT needs one: the error (type and message), then the records of each call.
    def pointer_call(first):
        fake.safecall_fake_hip_reset()
        error = outcome(lambda: add[(1,)](first, Y, Z, 4, BLOCK=256))
        return [error, [r for r in fake_hip.records(fake) if r["call"] in RECORDED]]

    def pointer_calls():
        rng = random.Random(4040)
        calls = []
        for i in range(200):
            form = random_pointer(rng)
            if hasattr(form, "result") and i % 3:
                form.dtype = X.dtype
            calls.append([pointer_call(form), pointer_call(form)])
        return calls

    result["random pointer calls"] = pointer_calls()
    # Again with `use_buffer_ops` off: no pointer-range part, AMD's Python specializer still.
    knobs.amd.use_buffer_ops = False
    result["random pointer calls, no buffer ops"] = pointer_calls()
    del knobs.amd.use_buffer_ops

    utils = triton.runtime.driver.active.utils
    loaded = utils.load_binary(md.name, compiled.asm["hsaco"], md.shared, 0)
    result["utils"] = {
        "get_device_properties": utils.get_device_properties(0),
        "get_device_properties 1": utils.get_device_properties(1),
        "get_device_properties 7": outcome(lambda: utils.get_device_properties(7)),
        "load_binary n_regs n_spills n_max_threads": list(loaded[2:]),
        "load_binary unknown kernel": outcome(lambda: utils.load_binary("nope", compiled.asm["hsaco"], md.shared, 0)),
        "unload_module": outcome(lambda: utils.unload_module(loaded[0])),
        "get_current_target": repr(triton.runtime.driver.active.get_current_target()),
    }
    with open(OUT, "w") as f:
        json.dump(result, f)


main()
