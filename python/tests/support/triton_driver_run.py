"""Runs Triton kernels the everyday way, ``kernel[grid](...)``, against the CUDA driver double,
and writes what the double recorded as JSON: the runner of ``test_triton_driver.py``.

    python triton_driver_run.py (stock|safecall) OUT.json

``stock`` uses Triton's own NVIDIA driver (which compiles ``driver.c`` with ``cc``);
``safecall`` installs safecall's (``safecall.triton.install()``) before anything touches
``triton.runtime.driver.active``. Both launch the same kernels with the same arguments (tensors
are objects with ``data_ptr()`` and ``dtype`` at fake addresses: the double touches no memory),
through the same allocator for global scratch memory and with a launch hook registered.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

from support import fake_cuda  # python/tests is on PYTHONPATH

MODE, OUT = sys.argv[1], sys.argv[2]
fake = fake_cuda.load()
# Device handles equal to ordinals, as real drivers number them: Triton's own driver passes
# `get_current_device()` (a CUdevice) where an ordinal is expected.
fake.safecall_fake_cuda_ordinal_handles(1)
os.environ["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, pathlib.Path(os.environ["TRITON_CACHE_DIR"]) / "libcuda"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


import triton as _triton_version  # noqa: E402  (only its version: the driver is not touched)

if tuple(int(p) for p in _triton_version.__version__.split(".")[:2]) < (3, 8):
    from support.triton_fakes import torch_stand_in

    torch_stand_in()
if MODE == "safecall":
    import safecall.triton

    safecall.triton.install()

import triton  # noqa: E402
from triton import knobs  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from support.triton_fakes import DescriptorBase, ElementType  # noqa: E402
from support.triton_metadata_calls import packed_metadata_calls  # noqa: E402
from support.triton_kernels import axpy, copy, desc_copy, host_desc_copy, matmul, pdl_copy, scalars, tuple_copy  # noqa: E402


class Tensor:
    """What Triton's JIT reads of a tensor: ``data_ptr()`` and ``dtype``."""

    def __init__(self, address: int, dtype: str = "float32") -> None:
        self.address, self.dtype = address, ElementType(dtype)

    def data_ptr(self) -> int:
        return self.address


class Allocator:
    """``triton.set_allocator``'s allocator: one fake address, every request recorded."""

    def __init__(self) -> None:
        self.requests = []

    def __call__(self, size: int, align: int, stream: int) -> int:
        self.requests.append([size, align, stream])
        return 0x7E00_0000_0000


X, Y, Z = Tensor(0x7F00_0000_1000), Tensor(0x7F00_0000_2000), Tensor(0x7F00_0000_3000, "float64")
A, B, C = Tensor(0x7F00_0001_0000, "float16"), Tensor(0x7F00_0002_0000, "float16"), Tensor(0x7F00_0003_0000)
hook_calls = []
allocator = Allocator()
triton.set_allocator(allocator)


def descriptor(address: int, shape, block, **fields):
    return TensorDescriptor.from_tensor(DescriptorBase(address, "float16", shape), block, **fields)


def helion_launch(kernel, grid, *args, num_warps, num_stages):
    """Helion's ``default_launcher`` (stock) or safecall's ``helion_launcher``, as Helion's
    generated host code calls its ``_launcher``."""
    if MODE == "safecall":
        return safecall.triton.helion_launcher(kernel, grid, *args, num_warps=num_warps, num_stages=num_stages)
    return kernel.run(*args, grid=grid, warmup=False, num_warps=num_warps, num_stages=num_stages, launch_cooperative_grid=False)


#: The stand-in benchmarker's timings, in the order the autotuner asks: the second config wins.
TIMINGS = iter([3.0, 1.0, 2.0])


def stub_bench(kernel_call, quantiles):
    """``do_bench`` for the double, which computes nothing: each config launches once and
    gets the next timing."""
    kernel_call()
    t = next(TIMINGS)
    return [t, t, t]


tuned_copy = triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256}, num_warps=8)],
    key=["n"],
    do_bench=stub_bench,
)(copy)


#: ``host_desc_copy`` as a kernel of its own, compiled for sm_80 (no TMA: Triton decomposes
#: each host descriptor into its base pointer, shape, strides and flags).
host_desc_copy_sm80 = triton.jit(host_desc_copy.fn)


def on_sm80(call):
    """``call()`` with Triton compiling for sm_80 (``TRITON_OVERRIDE_ARCH``; the double's
    devices are sm_90, which runs nothing here)."""
    os.environ["TRITON_OVERRIDE_ARCH"] = "sm80"
    try:
        return call()
    finally:
        del os.environ["TRITON_OVERRIDE_ARCH"]


#: name -> a call of the everyday form.
CASES = {
    "pointers and an i32": lambda: copy[(8,)](X, Y, 1000, BLOCK=128),
    "divisible by 16": lambda: copy[(8,)](X, Y, 1024, BLOCK=128),
    "a misaligned pointer": lambda: copy[(8,)](Tensor(0x7F00_0000_1004), Y, 1000, BLOCK=128),
    "an i64 and a float": lambda: axpy[(5, 2, 3)](X, Y, None, 2**33, 1, 1.5, BLOCK=256),
    "None and 1 specialized": lambda: axpy[(4,)](X, Y, None, 1000, 1, -0.25, BLOCK=256),
    "a bias pointer": lambda: axpy[(4,)](X, Y, Z, 1000, 3, 2.0, BLOCK=256),
    "scalar mix": lambda: scalars[(1,)](Z, -5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**63 - 5, 0.1, -2.5e-300, True),
    "u64 at or above 2^63": lambda: scalars[(1,)](Z, 0, 0, 0, 0, 0, 0, 0, 2**64 - 1, 0.0, 0.0, False),
    "num_warps=8, >48 KiB shared": lambda: matmul[(4, 2)](A, B, C, 512, BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
    "PDL": lambda: pdl_copy[(8,)](X, Y, 1000, BLOCK=128, launch_pdl=True),
    "num_ctas=2 (a cluster)": lambda: copy[(3,)](X, Y, 1000, BLOCK=128, num_ctas=2),
    "empty grid": lambda: copy[(0,)](X, Y, 1000, BLOCK=128),
    "autotuned (3 configs, then the best)": lambda: tuned_copy[lambda meta: (triton.cdiv(3000, meta["BLOCK"]),)](X, Y, 3000),
    "global scratch (device descriptors)": lambda: desc_copy[(4,)](
        Tensor(0x7F00_0004_0000, "float16"), Tensor(0x7F00_0005_0000, "float16"), 256, 64, BM=64, BN=64
    ),
    "host tensor descriptors": lambda: host_desc_copy[(4,)](
        descriptor(0x7F00_0006_0000, [256, 64], [64, 64]), descriptor(0x7F00_0007_0000, [256, 64], [64, 64]), 256, BM=64, BN=64
    ),
    "host descriptors decomposed (sm_80), nan padding": lambda: on_sm80(lambda: host_desc_copy_sm80[(4,)](
        descriptor(0x7F00_0006_0000, [256, 64], [64, 64], padding="nan"),
        descriptor(0x7F00_0007_0000, [200, 48], [64, 64]),
        256, BM=64, BN=64,
    )),
    "tuple arguments, nested": lambda: tuple_copy[(4,)]((X, (Y, Tensor(0x7F00_0000_4000))), (1000, 3, 2.5), BLOCK=128),
    "tuple arguments, an int of 1 and an i64": lambda: tuple_copy[(2,)]((X, (Y, Tensor(0x7F00_0000_4004))), (2**40, 1, -1), BLOCK=64),
    "Helion's launcher signature": lambda: helion_launch(copy, (8,), X, Y, 1000, 128, num_warps=4, num_stages=3),
    "host descriptors, nan padding": lambda: host_desc_copy[(4,)](
        descriptor(0x7F00_0006_0000, [256, 64], [64, 64], padding="nan"),
        descriptor(0x7F00_0007_0000, [256, 64], [64, 64]),
        256, BM=64, BN=64,
    ),
}



def compiled_call(kernel, grid, *args):
    """`CompiledKernel[grid](*args)`, as `triton.compile`'s users call it, on the kernel's first
    specialization."""
    next(iter(kernel.device_caches[0][0].values()))[grid](*args)


# Triton 3.7+'s launchers read the items by the kernel's signature: trailing constexprs may be
# left out, items past the last parameter are ignored (3.6's refuses any count but the exact one:
# "protocol errors" below).
COUNT_CASES = {
    "CompiledKernel without its trailing constexpr": lambda: compiled_call(copy, (8, 1, 1), X, Y, 1000),
    "CompiledKernel with an item past its last parameter": lambda: compiled_call(copy, (8, 1, 1), X, Y, 1000, 128, 7),
    "CompiledKernel without its trailing constexprs, general launcher": lambda: compiled_call(
        desc_copy, (4, 1, 1), Tensor(0x7F00_0004_0000, "float16"), Tensor(0x7F00_0005_0000, "float16"), 256, 64
    ),
}
if tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 7):
    CASES.update(COUNT_CASES)

from support import triton_gluon_kernels as gluon_kernels  # noqa: E402

if gluon_kernels.AVAILABLE:
    # Gluon's im2col descriptors (Triton 3.8+): the corners and element strides are encoded
    # into the CUtensorMap with the address, shape and strides.
    def _nhwc(address):
        return DescriptorBase(address, "float16", [2, 8, 8, 32])

    CASES["im2col descriptor (Gluon)"] = lambda: gluon_kernels.im2col_copy[(1,)](
        gluon_kernels.im2col_descriptor(_nhwc(0x7F00_0008_0000), pixel_box_lower_corner=[-1, -1],
                                        pixel_box_upper_corner=[1, 1]),
        Tensor(0x7F00_0009_0000, "float16"), 64, 32, num_warps=4,
    )
    # Gluon's tiled descriptors carry their shared-memory layout (in the kernel's signature too).
    CASES["tiled descriptor (Gluon)"] = lambda: gluon_kernels.tiled_copy[(1,)](
        gluon_kernels.tiled_descriptor(DescriptorBase(0x7F00_000C_0000, "float16", [128, 64])),
        Tensor(0x7F00_0009_0000, "float16"), 64, 32, num_warps=4,
    )
    CASES["tiled (Gluon), another block, nan padding"] = lambda: gluon_kernels.tiled_copy[(1,)](
        gluon_kernels.tiled_descriptor(DescriptorBase(0x7F00_000D_0000, "float16", [256, 64]), (32, 32), padding="nan"),
        Tensor(0x7F00_0009_0000, "float16"), 32, 32, num_warps=4,
    )
    CASES["im2col, element strides and nan padding"] = lambda: gluon_kernels.im2col_copy[(2,)](
        gluon_kernels.im2col_descriptor(_nhwc(0x7F00_000A_0000), pixel_box_lower_corner=[0, -2],
                                        pixel_box_upper_corner=[2, 0], element_strides=[1, 2, 2, 1], padding="nan"),
        Tensor(0x7F00_0009_0000, "float16"), 64, 32, num_warps=4,
    )

knobs.runtime.launch_enter_hook.add(lambda md: hook_calls.append("enter"))
results = {}
for name, call in CASES.items():
    fake.safecall_fake_cuda_reset()
    before = len(allocator.requests)
    try:
        call()
        call()  # the second call takes the cached path
        error = None
    except Exception as e:  # noqa: BLE001  (the error is part of the result)
        error = f"{type(e).__name__}: {e}"
    launches = [
        {k: v for k, v in r.items() if k != "call"}
        for r in fake_cuda.records(fake)
        if r["call"] == "cuLaunchKernelEx"
    ]
    # Binaries loaded on the way (Triton's load_binary's; a launcher loading its kernel again
    # would add its own).
    loads = sum("LoadData" in r["call"] for r in fake_cuda.records(fake))
    results[name] = {"launches": launches, "error": error, "scratch": allocator.requests[before:], "loads": loads}


def outcome(call):
    """A utils call's result, or its error (type and message), JSON-ready."""
    try:
        value = call()
    except AttributeError as e:
        # An entry point this Triton's utils lack (3.6 has 5 of 3.9's 12).
        return f"absent: {e}" if "utils" in str(e).lower() else f"AttributeError: {e}"
    except Exception as e:  # noqa: BLE001  (the error is part of the result)
        return f"{type(e).__name__}: {e}"
    if type(value).__name__ == "PyCUtensorMap":
        import ctypes

        # Both drivers' objects hold the map after the object's header, at CUtensorMap's
        # alignment (128 in the cuda.h Triton bundles): read where C code reading Triton's
        # objects (PyTorch Inductor's static launcher) reads it.
        assert id(value) % 128 == 0, "PyCUtensorMap objects are 128-byte aligned"
        return ctypes.string_at(id(value) + 128, 128).hex()
    return list(value) if isinstance(value, tuple) else value


utils = triton.runtime.driver.active.utils


def im2col(address, swizzle, elem_size, elem_type, block, shape, strides, padding, lower, upper, element_strides):
    """``utils.fill_tma_descriptor_im2col`` in this release's form: 3.7 takes channels per pixel
    and pixels per column (``block`` reversed) before the element strides."""
    if triton.__version__.startswith("3.7."):
        return utils.fill_tma_descriptor_im2col(
            address, swizzle, elem_size, elem_type, block, shape, strides, padding, lower, upper, block[1], block[0],
            element_strides,
        )
    return utils.fill_tma_descriptor_im2col(
        address, swizzle, elem_size, elem_type, block, shape, strides, padding, lower, upper, element_strides
    )


# The tiled encoder under this Triton's name (3.6: `fill_tma_descriptor`).
if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 7):
    fill = utils.fill_tma_descriptor
else:
    fill = utils.fill_tma_descriptor_tiled
compiled = copy.warmup(X, Y, 1000, BLOCK=128, grid=(1,))
results["utils"] = {
    "get_device_properties": outcome(lambda: utils.get_device_properties(0)),
    "get_device_capability": outcome(lambda: utils.get_device_capability(0)),
    "get_current_device": outcome(lambda: utils.get_current_device()),
    "set_current_device": outcome(lambda: utils.set_current_device(1)),
    "get_current_device after set": outcome(lambda: utils.get_current_device()),
    "get_default_stream": outcome(lambda: utils.get_default_stream(0)),
    "is_stream_capturing": outcome(lambda: utils.is_stream_capturing(0)),
    "set_printf_fifo_size": outcome(lambda: utils.set_printf_fifo_size(1 << 20)),
    "set_printf_fifo_size negative": outcome(lambda: utils.set_printf_fifo_size(-1)),
    "fill_tma_descriptor_tiled": outcome(lambda: fill(0x7F00_0006_0000, 3, 2, 6, [64, 64], [256, 64], [64, 1], 0)),
    "fill_tma_descriptor_tiled nan": outcome(lambda: fill(0x7F00_0006_0000, 2, 4, 7, [8, 16], [100, 40], [48, 1], 1)),
    "fill_tma_descriptor_tiled rank mismatch": outcome(lambda: fill(0x7F00_0006_0000, 3, 2, 6, [64, 64], [256], [1], 0)),
    "fill_tma_descriptor_im2col": outcome(
        lambda: im2col(0x7F00_0008_0000, 3, 2, 6, [64, 32], [4, 10, 10, 32], [3200, 320, 32, 1], 0, [-1, -1], [1, 1], [1, 1, 1, 1])
    ),
    "fill_tma_descriptor_im2col nan": outcome(
        lambda: im2col(
            0x7F00_0008_0000, 2, 4, 7, [32, 16], [2, 8, 8, 8, 16], [8192, 1024, 128, 16, 1], 1, [0, -1, -2], [0, 1, 2],
            [1, 1, 1, 1, 1]
        )
    ),
    "fill_tma_descriptor_im2col corners": outcome(
        lambda: im2col(0x7F00_0008_0000, 3, 2, 6, [64, 32], [4, 10, 10, 32], [3200, 320, 32, 1], 0, [-1, -1], [1], [1, 1, 1, 1])
    ),
    "load_binary": outcome(lambda: utils.load_binary(compiled.name, compiled.asm["cubin"], compiled.metadata.shared, 0)[2:]),
    "load_binary unknown kernel": outcome(lambda: utils.load_binary("nope", compiled.asm["cubin"], 0, 0)),
    "cuOccupancyMaxActiveClusters": outcome(lambda: utils.cuOccupancyMaxActiveClusters(compiled.function, 0, 2)),
    "unload_module": outcome(lambda: utils.unload_module(compiled.module)),
    "map_python_to_cpp_type": [triton.runtime.driver.active.map_python_to_cpp_type(t) for t in ("*fp32", "i1", "bf16", "u64")],
    "get_current_target": str(triton.runtime.driver.active.get_current_target()),
}


class NoPointer:
    """A tensor-like without ``data_ptr``."""


class StrPointer:
    """A tensor-like whose ``data_ptr()`` is not an int."""

    def data_ptr(self):
        return "0x1000"


hooks = triton.knobs.runtime
compiled = next(iter(copy.device_caches[0][0].values()))


def run(*args, grid=(8, 1, 1)):
    return outcome(lambda: compiled.run(*grid, 0, compiled.function, compiled.packed_metadata, None,
                                        hooks.launch_enter_hook, hooks.launch_exit_hook, *args))


results["errors"] = {
    "no data_ptr": run(NoPointer(), Y, 1000, 128),
    "data_ptr not an int": run(StrPointer(), Y, 1000, 128),
    "an int too large for i32": run(X, Y, 2**40, 128),
}
# A negative grid launches nothing (driver.c launches when gridX * gridY * gridZ > 0); two
# negative entries reach the launch, where the host function refuses them (Triton's driver
# passes them on as huge unsigned values).
results["errors"]["a negative grid"] = run(X, Y, 1000, 128, grid=(-1, 1, 1))
results["errors, safecall's own"] = {"two negative grid entries": run(X, Y, 1000, 128, grid=(-1, -1, 1))}
# The general launcher (a kernel with global scratch): on 3.6 too the pointers are read after
# the enter hook (it read them before, so the hook did not run).
general_compiled = next(iter(desc_copy.device_caches[0][0].values()))
results["errors"]["no data_ptr, general launcher"] = outcome(lambda: general_compiled.run(
    4, 1, 1, 0, general_compiled.function, general_compiled.packed_metadata, None, hooks.launch_enter_hook,
    hooks.launch_exit_hook, Tensor(0x7F00_0004_0000, "float16"), NoPointer(), 256, 64, 64, 64))
# The same with a scratch allocator returning no pointer: the scratch is read first (its error).
triton.set_allocator(lambda size, align, stream: "no pointer")
results["errors"]["no data_ptr and no scratch pointer, general launcher"] = outcome(lambda: general_compiled.run(
    4, 1, 1, 0, general_compiled.function, general_compiled.packed_metadata, None, hooks.launch_enter_hook,
    hooks.launch_exit_hook, Tensor(0x7F00_0004_0000, "float16"), StrPointer(), 256, 64, 64, 64))
triton.set_allocator(allocator)
results["hook calls"] = len(hook_calls)
# Grid dimensions beyond a C int: Triton's launchers parse them first (`PyArg_ParseTuple`'s
# `i`), an OverflowError before the enter hook runs or any argument is read.
results["grid errors"] = {
    "beyond i32": run(X, Y, 1000, 128, grid=(2**31, 1, 1)),
    "below i32": run(X, Y, 1000, 128, grid=(1, -(2**31) - 1, 1)),
    "beyond i64": run(X, Y, 1000, 128, grid=(1, 1, 2**63)),
    "hook calls": len(hook_calls) - results["hook calls"],
}
# Calls that break the launcher protocol, after the count (neither launcher runs a hook for
# them): Triton's launcher refuses them with Python's TypeError for its `__call__`; ours is a
# builtin function, which CPython refuses keywords for and which counts its arguments.
full = (8, 1, 1, 0, compiled.function, compiled.packed_metadata, None, None, None, X, Y, 1000, 128)
results["protocol errors"] = {
    "too few arguments": outcome(lambda: compiled.run(*full[:4])),
    "a keyword argument": outcome(lambda: compiled.run(*full, extra=1)),
}
results["protocol errors"]["a launch after them"] = outcome(lambda: compiled.run(*full))

# Packed metadata other than the kernel's (support/triton_metadata_calls.py).
results["packed metadata"] = packed_metadata_calls(fake, outcome, copy, desc_copy, X, Y, Tensor)
if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 7):
    results["protocol errors"].update({name: outcome(call) for name, call in COUNT_CASES.items()})
if MODE == "safecall":
    # A kernel with host tensor descriptors, its trailing constexprs left out: 3.7 launches;
    # 3.8+ wants the exact count (Triton's make_tensordesc_args asserts it: the process
    # aborts, so stock's is not run).
    hd = next(iter(host_desc_copy.device_caches[0][0].values()))
    results["protocol errors"]["host descriptors, trailing constexprs left out"] = outcome(lambda: hd.run(
        4, 1, 1, 0, hd.function, hd.packed_metadata, None, None, None,
        descriptor(0x7F00_0006_0000, [256, 64], [64, 64]), descriptor(0x7F00_0007_0000, [256, 64], [64, 64]), 256))
    # A runtime argument left out: Triton 3.7+'s driver.c reads past the tuple (not run).
    results["protocol errors"]["a runtime argument left out"] = outcome(lambda: compiled.run(*full[:-2]))
# The launcher each compiled kernel got (the installed driver: native for pointers, scalars
# and host TMA descriptors; in Python with scratch memory or tuple arguments).
results["launchers"] = {
    k.fn.__name__: sorted({type(getattr(c.run, "__self__", c.run)).__name__ for c in k.device_caches[0][0].values()})
    for k in (copy, host_desc_copy, desc_copy, tuple_copy)
}


# Launch hooks of other kinds in the knobs' place, on the native launcher (copy) and the general
# one (tuple arguments): Triton's launchers call any hook but None (a HookChain of exactly
# Triton's class runs its calls, and so does nothing when it holds none).
class LoudChain(triton.knobs.HookChain):
    """A HookChain subclass with a __call__ of its own, holding no calls."""

    def __call__(self, metadata):
        kind_log.append(["loud", type(metadata).__name__])


class OwnHook:
    """A hook of its own class whose `calls` is an empty list."""

    calls = []

    def __call__(self, metadata):
        kind_log.append(["own", type(metadata).__name__])


kind_log = []
results["hook kinds"] = {}
chains = hooks.launch_enter_hook, hooks.launch_exit_hook
for name, hook in (("a HookChain subclass", LoudChain()), ("an object with calls", OwnHook()),
                   ("an empty HookChain", triton.knobs.HookChain())):
    hooks.launch_enter_hook = hooks.launch_exit_hook = hook
    kind_log.clear()
    copy[(8,)](X, Y, 1000, BLOCK=128)
    tuple_copy[(4,)]((X, (Y, Tensor(0x7F00_0000_4000))), (1000, 3, 2.5), BLOCK=128)
    results["hook kinds"][name] = list(kind_log)
# An empty HookChain launched with, then given a new list of calls (not `add`): called from then on.
replaced = triton.knobs.HookChain()
hooks.launch_enter_hook = hooks.launch_exit_hook = replaced
kind_log.clear()
copy[(8,)](X, Y, 1000, BLOCK=128)
replaced.calls = [lambda metadata: kind_log.append(["replaced", type(metadata).__name__])]
copy[(8,)](X, Y, 1000, BLOCK=128)
results["hook kinds"]["a HookChain whose calls were replaced"] = list(kind_log)
hooks.launch_enter_hook, hooks.launch_exit_hook = chains

# Bad host descriptors (fields changed after construction, which TensorDescriptor allows),
# after the hook count above: each refused by both drivers, safecall's with its own words.
class CpuBase(DescriptorBase):
    """A base tensor on the CPU (what `device.type` says of a torch CPU tensor)."""

    device = type("Device", (), {"type": "cpu"})()


def bad_descriptor(**fields):
    d = descriptor(0x7F00_0006_0000, [256, 64], [64, 64])
    for name, value in fields.items():
        setattr(d, name, value)
    return d


desc_compiled = next(iter(host_desc_copy.device_caches[0][0].values()))


def run_desc(x_desc):
    y_desc = descriptor(0x7F00_0007_0000, [256, 64], [64, 64])
    return outcome(lambda: desc_compiled.run(4, 1, 1, 0, desc_compiled.function, desc_compiled.packed_metadata, None,
                                             hooks.launch_enter_hook, hooks.launch_exit_hook, x_desc, y_desc, 256, 64, 64))


results["descriptor errors"] = {
    "base without data_ptr": run_desc(bad_descriptor(base=object())),
    "base on the CPU": run_desc(bad_descriptor(base=CpuBase(0x7F00_0006_0000, "float16", [256, 64]))),
    "strides shorter than the shape": run_desc(bad_descriptor(strides=[1])),
    "rank 3 for a rank-2 parameter": run_desc(bad_descriptor(shape=[4, 256, 64], strides=[16384, 64, 1])),
    "rank 6": run_desc(bad_descriptor(shape=[1] * 4 + [256, 64], strides=[16384] * 4 + [64, 1])),
}


class IntAddress(int):
    """An address of an ``int`` subclass (an ``IntEnum``, a wrapper's handle type)."""


class SubclassPointer(Tensor):
    """A tensor-like whose ``data_ptr()`` returns an ``int`` subclass."""

    def data_ptr(self) -> int:
        return IntAddress(self.address)


class TorchTensor(Tensor):
    """A stand-in ``torch.Tensor``, the class a launcher made while it is ``torch.Tensor`` takes
    for torch's (safecall's skips the driver's check of a device tensor's address)."""

    def __init__(self, address: int, is_cuda: bool) -> None:
        super().__init__(address)
        self.is_cuda = is_cuda


def torch_launcher():
    """A launcher of ``copy`` made while ``torch.Tensor`` is :class:`TorchTensor`."""
    import types

    saved = sys.modules.get("torch")
    torch = saved or types.ModuleType("torch")
    had, previous = hasattr(torch, "Tensor"), getattr(torch, "Tensor", None)
    torch.Tensor = TorchTensor
    sys.modules["torch"] = torch
    try:
        return triton.runtime.driver.active.launcher_cls(compiled.src, compiled.metadata)
    finally:
        if had:
            torch.Tensor = previous
        else:
            del torch.Tensor
        if saved is None:
            del sys.modules["torch"]


def pointer_form(launcher, first):
    """``copy`` launched with ``first`` as its first pointer: the error, the launches and how
    many pointers the driver checked."""
    fake.safecall_fake_cuda_reset()
    error = outcome(lambda: launcher(8, 1, 1, 0, compiled.function, compiled.packed_metadata, None, None, None,
                                     first, Y, 1000, 128))
    records = fake_cuda.records(fake)
    launched = [{k: v for k, v in r.items() if k != "call"} for r in records if r["call"] == "cuLaunchKernelEx"]
    return {"error": error, "launches": launched}, sum(r["call"] == "cuPointerGetAttribute" for r in records)


# The pointer forms driver.c accepts (PyLong_Check: int subclasses, bool; a data_ptr() of an int
# subclass; a torch tensor, on the device or not: Triton checks every address with the driver).
with_torch = torch_launcher()
forms = {
    "an int subclass": (compiled.run, IntAddress(0x7F00_0000_1000)),
    "True": (compiled.run, True),
    "data_ptr() of an int subclass": (compiled.run, SubclassPointer(0x7F00_0000_1000)),
    "a torch tensor on the device": (with_torch, TorchTensor(0x7F00_0000_1000, True)),
    "a torch tensor in host memory the device maps": (with_torch, TorchTensor(0x7F00_0000_1000, False)),
}
results["pointer forms"], results["pointer checks"] = {}, {}
for name, (launcher, first) in forms.items():
    results["pointer forms"][name], results["pointer checks"][name] = pointer_form(launcher, first)
# Seeded pointer arguments in every form, good and bad (`random_pointer`): the error (type and
# message), the launches and the driver's pointer checks of each.
import random  # noqa: E402

from support.triton_fakes import random_pointer  # noqa: E402

rng = random.Random(4040)
results["random pointer forms"] = [pointer_form(compiled.run, random_pointer(rng)) for _ in range(200)]
if MODE == "safecall":
    # The same draws through safecall's general launcher (which serves kernels with scratch).
    from safecall._triton_launcher import SafecallLauncher  # noqa: E402

    general = SafecallLauncher(compiled.src, compiled.metadata)
    rng = random.Random(4040)
    results["random pointer forms, general launcher"] = [pointer_form(general, random_pointer(rng)) for _ in range(200)]
# A kernel launched often: safecall's launcher asks for its host function's optimized code
# after 1000 launches (Cranelift compiles it on the tier-up thread; the first launches above
# were a few dozen), then launches exactly as before.
native = getattr(compiled.run, "__self__", None)
if type(native).__name__ == "TritonLaunch":
    import time

    def one_launch():
        fake.safecall_fake_cuda_reset()
        compiled.run(*full)
        return [{k: v for k, v in r.items() if k != "call"} for r in fake_cuda.launches(fake)]

    tier_up = {"tiered up before": native.tiered_up, "launch before": one_launch()}
    tier_up["calls before"] = [r["call"] for r in fake_cuda.records(fake)]
    fake.safecall_fake_cuda_quiet(1)
    for _ in range(1000):
        compiled.run(*full)
    fake.safecall_fake_cuda_quiet(0)
    deadline = time.monotonic() + 120
    while not native.tiered_up and time.monotonic() < deadline:
        time.sleep(0.005)
    tier_up.update({"tiered up": native.tiered_up, "launch after": one_launch()})
    tier_up["calls after"] = [r["call"] for r in fake_cuda.records(fake)]
    results["tier-up"] = tier_up
# Random scalars (seeded): each scalar of the scalar kernel drawn at and beyond its type's range
# (`random_scalar`), launched through the launcher this driver made for it (3.6: generated per
# signature; 3.7+: the variadic one), hooks off; each launch's argument bytes, or the type of
# the error.
import random  # noqa: E402

from support.triton_fakes import random_scalar, random_strides  # noqa: E402

def launched_args(kernel, args):
    """``kernel``'s launcher called with ``args`` (grid 1, stream 0, hooks off): each launch's
    argument bytes, or the type of the error."""
    fake.safecall_fake_cuda_reset()
    try:
        kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, *args)
    except Exception as e:  # noqa: BLE001  (the error's type is the result)
        return type(e).__name__
    return [launch["args"] for launch in fake_cuda.launches(fake)]


scalar_kernel = next(iter(scalars.device_caches[0][0].values()))
scalar_types = list(scalar_kernel.src.signature.values())
rng = random.Random(36)
draws = [launched_args(scalar_kernel, [Z if ty.startswith("*") else random_scalar(rng, ty) for ty in scalar_types])
         for _ in range(300)]
results["random scalars"] = {"types": scalar_types, "draws": draws}
# The same launcher given one scalar of another Python type per launch (`foreign_scalar`:
# int-likes with only `__index__`, float-likes with only `__float__`, subclasses, a float for an
# int, an int for a float, a str, None), the others valid (`valid_scalar`): the bytes, or the
# error's type.
# The kernel is compiled with every integer width (the JIT makes only i32, i64, u64 and u1), so
# that each of the release's integer readers is met (3.7+: `PyLong_AsLong` and friends; 3.6:
# `PyArg_ParseTuple`'s formats).
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from support.triton_fakes import foreign_scalar, valid_scalar  # noqa: E402

typed_signature = {"out_ptr": "*fp64", "a": "i8", "b": "i16", "c": "i32", "d": "i64", "e": "u8", "f": "u16",
                   "g": "u32", "h": "u64", "x": "fp32", "y": "fp64", "flag": "i1"}
typed = triton.compile(ASTSource(scalars, typed_signature), target=GPUTarget("cuda", 90, 32))
typed._init_handles()
typed_types = list(typed_signature.values())
rng = random.Random(3636)
foreign = []
for _ in range(300):
    odd = rng.randrange(1, len(typed_types))
    scalar_args = [Z if ty.startswith("*") else (foreign_scalar(rng, ty) if i == odd else valid_scalar(rng, ty))
                   for i, ty in enumerate(typed_types)]
    foreign.append(launched_args(typed, scalar_args))
results["random foreign scalars"] = foreign
# Random encoder calls (seeded): `fill_tma_descriptor_tiled` (3.6: `fill_tma_descriptor`) with
# draws inside and outside what the encoder accepts (ranks 1-5, boxes to 256 and beyond, dims
# to 2^32 and beyond, strides aligned or not, both paddings); each call's tensor and its map
# bytes, or its error with its message (what code reading Triton's objects, such as PyTorch
# Inductor's static launcher, gets).
rng = random.Random(37)


def aligned_step(elem_size):
    """A stride step drawn per stride: 16 bytes in elements (TMA's rule), one time in ten 1."""
    return lambda: 16 // elem_size if rng.random() < 0.9 else 1


encodes = []
for _ in range(200):
    rank = rng.randrange(1, 6)
    elem_size = rng.choice((1, 2, 4))
    elem_type = {1: 0, 2: rng.choice((6, 9)), 4: 7}[elem_size]
    block = [rng.choice((1, 8, 16, 64, 128, 256, 257)) if rng.random() < 0.9 else 0 for _ in range(rank)]
    shape = [rng.randrange(1, 1 << 33) if rng.random() < 0.2 else rng.randrange(1, 300) for _ in range(rank)]
    # Strides below 2^40 bytes (what TMA takes; beyond 2^63 Triton's C code wraps them).
    strides = random_strides(rng, shape, aligned_step(elem_size), (1 << 40) // elem_size, 0.3)
    address = rng.randrange(1 << 12, 1 << 48) & ~(15 if rng.random() < 0.95 else 0)
    swizzle, padding = rng.choice((0, 1, 2, 3)), rng.randrange(2)
    encodes.append({
        "tensor": [shape, strides, elem_size],
        "result": outcome(lambda: fill(address, swizzle, elem_size, elem_type, block, shape, strides, padding)),
    })
results["random encodes"] = encodes
# The same for the im2col encoder (3.7+; 3.6 has none): NHWC-like tensors of rank 3 to 5, boxes
# of pixels and channels, corners and element strides inside and outside their ranges.
im2col_encodes = []
for _ in range(150):
    rank = rng.randrange(3, 6)
    elem_size = rng.choice((1, 2, 4))
    elem_type = {1: 0, 2: rng.choice((6, 9)), 4: 7}[elem_size]
    shape = [rng.randrange(1, 1 << 33) if rng.random() < 0.1 else rng.randrange(1, 100) for _ in range(rank)]
    strides = random_strides(rng, shape, aligned_step(elem_size), (1 << 40) // elem_size, 0.2)
    block = [rng.choice((1, 16, 64, 256, 1024, 0)), rng.choice((8, 16, 32, 256, 257))]
    lower = [rng.randrange(-40, 10) for _ in range(rank - 2)]
    upper = [rng.randrange(-10, 40) for _ in range(rank - 2)]
    element_strides = [rng.choice((1, 1, 1, 2, 8, 9)) for _ in range(rank)]
    address = rng.randrange(1 << 12, 1 << 48) & ~15
    swizzle, padding = rng.choice((0, 1, 2, 3)), rng.randrange(2)
    im2col_encodes.append(outcome(lambda: im2col(
        address, swizzle, elem_size, elem_type, block, shape, strides, padding, lower, upper, element_strides
    )))
results["random im2col encodes"] = im2col_encodes
results["triton"] = triton.__version__
results["driver"] = type(triton.runtime.driver.active).__name__
# Seeded `kernel[grid](...)` calls of a kernel of many parameter kinds (`triton_draws`): 40 draws
# (each a new specialization: on 3.6 a new launcher per signature), then 40 more in the same
# classes with new values; each call's launches, or the type of its error.
from support.triton_draws import mixed_call, mixed_classes  # noqa: E402
from support.triton_kernels import mixed  # noqa: E402


def mixed_launch(grid, args, kwargs):
    fake.safecall_fake_cuda_reset()
    try:
        mixed[grid](*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (the error's type is the result)
        return type(e).__name__
    return [{k: v for k, v in r.items() if k != "call"} for r in fake_cuda.launches(fake)]


rng = random.Random(20261129)
mixed_draws = [mixed_classes(rng) for _ in range(40)]
results["random calls"] = [mixed_launch(*mixed_call(rng, draw, Tensor)) for draw in mixed_draws + mixed_draws]
pathlib.Path(OUT).write_text(json.dumps(results, indent=1, sort_keys=True))
