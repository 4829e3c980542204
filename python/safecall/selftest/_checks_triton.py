"""Triton kernels through :mod:`safecall.triton`: vector add, a row softmax, a matmul using
98304 bytes of shared memory (the opt-in above 48 KiB) and a kernel taking two host
``TensorDescriptor`` arguments (TMA descriptors the host function builds). The cubins were
compiled by Triton 3.9 for sm_90 and ship with the self-test (``triton_kernels/``, whose
README and ``make.py`` say how), so on devices of compute capability 9.0 (H100, H200, GH200)
the checks need no Triton on the machine and run the same whatever Triton it has. On other
devices the machine's own Triton compiles the same sources (``triton_kernels/sources.py``) for
the device, when it is Triton 3.9.

Results are compared with PyTorch's where PyTorch sees the GPU, else with a reference computed
in Python on inputs chosen so that the kernels' results are exact (the softmax within 1e-6).
"""

from __future__ import annotations

import json
import math
import pathlib
import random
from typing import Any, Callable, Dict, List, Tuple

from .. import builder as ir
from .. import triton as sct
from ._context import Context
from ._report import Skip

#: The shipped kernels and their manifest.
SM90 = pathlib.Path(__file__).parent / "triton_kernels" / "sm90"


def _cdiv64(a: Any, b: int) -> Any:
    """ceil(a / b) as an ``i64`` expression (``a`` an IR integer expression)."""
    return ir.ceil_div(ir.cast(ir.i64, a), ir.lit(b, ir.i64))


#: Each kernel's grid, computed from its arguments (Triton's META: argument name -> IR
#: expression, constexpr name -> value), so the functions take no grid parameter.
GRIDS: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "add_kernel": lambda META: (_cdiv64(META["n_elements"], META["BLOCK_SIZE"]),),
    "softmax_kernel": lambda META: (META["n_rows"],),
    "matmul_kernel": lambda META: (_cdiv64(META["M"], META["BLOCK_M"]) * _cdiv64(META["N"], META["BLOCK_N"]),),
    "desc_copy_kernel": lambda META: (
        _cdiv64(META["in_desc"].shape[0], META["BLOCK_M"]),
        _cdiv64(META["in_desc"].shape[1], META["BLOCK_N"]),
    ),
}


def kernels() -> Dict[str, sct.Kernel]:
    """The shipped kernels, read with :func:`safecall.triton.load`."""
    manifest = json.loads((SM90 / "manifest.json").read_text())
    out = {}
    for name, k in manifest["kernels"].items():
        out[name] = sct.load(SM90 / k["json"], signature=k["signature"], constants=k["constants"], divisible=k["divisible"])
    return out


_FUNCTIONS: Dict[str, Any] = {}


def _function(ctx: Context, name: str) -> Any:
    """The kernel's function: from the shipped sm_90 cubin on an sm_90 device; elsewhere
    compiled by the machine's own Triton when it is the release ``safecall.triton`` reads."""
    if name not in _FUNCTIONS:
        if ctx.capability == (9, 0):
            kernel: Any = kernels()[name]
        else:
            kernel = _compiled_here(ctx, name)
        _FUNCTIONS[name] = sct.function(kernel, grid=GRIDS[name])
    return _FUNCTIONS[name]


def _compiled_here(ctx: Context, name: str) -> Any:
    """Kernel ``name`` compiled for this device by the machine's Triton (3.9 only)."""
    import importlib.util

    arch = ctx.capability[0] * 10 + ctx.capability[1]
    shipped = f"the shipped Triton cubins are for sm_90; the device is sm_{arch}"
    if importlib.util.find_spec("triton") is None:
        raise Skip(f"{shipped} and triton is not installed")
    import triton

    if not triton.__version__.startswith(sct.SUPPORTED_TRITON + "."):
        raise Skip(f"{shipped} and triton {triton.__version__} is not {sct.SUPPORTED_TRITON} (what safecall.triton reads)")
    import os
    import sys

    # As make.py compiles them: fused multiply-adds (Triton 3.9's default, which it warns about).
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    sys.path.insert(0, str(SM90.parent))
    try:
        import sources
    finally:
        sys.path.remove(str(SM90.parent))
    return sources.compile_one(name, ("cuda", arch, 32))


def _f32(x: float) -> float:
    import struct

    return struct.unpack("<f", struct.pack("<f", x))[0]


def vector_add(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """``out = x + y`` over 10000 floats (several programs, a masked tail)."""
    fn = _function(ctx, "add_kernel")
    n = 10_000
    rng = random.Random(1)
    xs = [_f32(rng.uniform(-100, 100)) for _ in range(n)]
    ys = [_f32(rng.uniform(-100, 100)) for _ in range(n)]
    x, y, out = ctx.array("float32", xs), ctx.array("float32", ys), ctx.zeros(4 * n)
    fn(x.tensor("float32", [n]), y.tensor("float32", [n]), out.tensor("float32", [n]), n, 1024)
    ctx.driver.sync()
    got = out.read("float32")
    want = [_f32(a + b) for a, b in zip(xs, ys)]
    ctx.expect(got == want, lambda: f"out != x + y at {next(i for i in range(n) if got[i] != want[i])}")
    return f"out == x + y exactly for n={n}", {"n": n}


def softmax(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """A row softmax of 64 rows of 1000 columns, rows 1024 floats apart."""
    fn = _function(ctx, "softmax_kernel")
    rows, cols, stride = 64, 1000, 1024
    rng = random.Random(2)
    data = [_f32(rng.gauss(0, 3)) for _ in range(rows * stride)]
    src, dst = ctx.array("float32", data), ctx.zeros(4 * rows * stride)
    fn(dst.tensor("float32", [rows * stride]), src.tensor("float32", [rows * stride]), stride, stride, rows, cols, 1024)
    ctx.driver.sync()
    got = dst.read("float32")
    worst = 0.0
    for r in range(rows):
        row = data[r * stride : r * stride + cols]
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        for c in range(cols):
            worst = max(worst, abs(got[r * stride + c] - exps[c] / total))
        # The columns past n_cols are not written.
        ctx.expect(all(v == 0.0 for v in got[r * stride + cols : (r + 1) * stride]), lambda: f"row {r}: written past n_cols")
    ctx.expect(worst <= 1e-6, lambda: f"largest difference from the reference {worst:.3g} > 1e-6")
    if ctx.on_double:
        return f"{rows} rows of {cols}", {}
    return f"{rows} rows of {cols}: within 1e-6 of the reference", {"max_abs_diff": f"{worst:.2e}"}


def matmul(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """An fp16 matmul (fp32 accumulation) whose kernel uses 98304 bytes of shared memory: the
    host function opts in above 48 KiB; edges in M, N and K are masked."""
    fn = _function(ctx, "matmul_kernel")
    shared = kernels()["matmul_kernel"].metadata["shared"]
    m, n, k = 129, 144, 80
    rng = random.Random(3)
    # Small integers: every product and sum is exact in fp16 and fp32, so the result is exact.
    a = [float(rng.randint(-2, 2)) for _ in range(m * k)]
    b = [float(rng.randint(-2, 2)) for _ in range(k * n)]
    da, db, dc = ctx.array("float16", a), ctx.array("float16", b), ctx.zeros(2 * m * n)
    fn(
        da.tensor("float16", [m * k]), db.tensor("float16", [k * n]), dc.tensor("float16", [m * n]),
        m, n, k, k, 1, n, 1, n, 1, 128, 128, 64, 8,
    )
    ctx.driver.sync()
    got = dc.read("float16")
    want = [sum(a[i * k + p] * b[p * n + j] for p in range(k)) for i in range(m) for j in range(n)]
    ctx.expect(got == want, lambda: f"c != a @ b at {next(i for i in range(m * n) if got[i] != want[i])}")
    return f"{m}x{k} @ {k}x{n} exact, kernel shared memory {shared} bytes", {"shared": shared}


def descriptors(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """``out = 2 * in`` through two host tensor descriptors (TMA), 100 x 200 floats (partial
    tiles at both edges)."""
    fn = _function(ctx, "desc_copy_kernel")
    rows, cols = 100, 200
    values = [float((i * 7) % 1001) - 500.0 for i in range(rows * cols)]
    src, dst = ctx.array("float32", values), ctx.zeros(4 * rows * cols)
    fn(src.tensor("float32", [rows, cols]), dst.tensor("float32", [rows, cols]), 32, 64)
    ctx.driver.sync()
    got = dst.read("float32")
    ctx.expect(got == [2 * v for v in values], lambda: "out != 2 * in")
    return f"{rows}x{cols} through TMA descriptors: out == 2 * in", {}


def _driver_script(ctx: Context, *args: str) -> Dict[str, Any]:
    """Runs ``_triton_driver_script.py`` with ``args`` in a process of its own; its result."""
    import importlib.util
    import json
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("triton") is None:
        raise Skip("triton is not installed")
    import triton

    from .._triton_driver import INSTALL_SUPPORTED

    if triton.__version__[:3] not in INSTALL_SUPPORTED:
        raise Skip(f"triton {triton.__version__}: the installed driver serves {', '.join(INSTALL_SUPPORTED)}")
    script = pathlib.Path(__file__).with_name("_triton_driver_script.py")
    env = dict(os.environ, SAFECALL_LIBCUDA_PATH=ctx.driver.path) if ctx.on_double else dict(os.environ)
    env.pop("SAFECALL_TRITON_DRIVER", None)
    proc = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the driver process failed: {tail[0]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    ctx.require(result["driver"] == "SafecallCudaDriver", lambda: f"the active driver was {result['driver']}")
    ctx.expect(bool(result["ok"]), lambda: "out != x + y")
    return result


def installed_driver(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """``kernel[grid](...)`` of a vector add, compiled by this machine's Triton, launched
    through safecall's installed Triton driver (``safecall.triton.install()``) in a process of
    its own, with no C compiler involved."""
    result = _driver_script(ctx)
    return f"Triton {result['triton']} kernel[grid](...) on safecall's driver, 3 launches, out == x + y", {}


def dispatch(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """The same through the dispatch (``safecall.triton.install(dispatch=True)``): the first
    call compiles through Triton's JIT, the two others are served from the kernel's table."""
    result = _driver_script(ctx, "dispatch")
    stats = result["stats"]
    ctx.require(stats == {"miss": 1, "hit": 2}, lambda: f"the dispatcher counted {stats}, not 1 miss and 2 hits")
    return f"Triton {result['triton']} kernel[grid](...) through the dispatch: 1 miss, 2 hits, out == x + y", {}


CHECKS: List[Tuple[str, Callable[[Context], Any]]] = [
    ("triton vector add", vector_add),
    ("triton softmax", softmax),
    ("triton matmul (96 KiB shared)", matmul),
    ("triton tensor descriptors", descriptors),
    ("triton kernel[grid] on the driver", installed_driver),
    ("triton kernel[grid] dispatched", dispatch),
]
