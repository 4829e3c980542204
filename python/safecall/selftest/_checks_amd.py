"""Checks that run on an AMD GPU (through the HIP runtime): the AMD example over several sizes
from a clang offload bundle (code objects for gfx90a, gfx942, gfx1100 and gfx1201: the runtime
picks the device's), and the errors of bad calls."""

from __future__ import annotations

import pathlib
from typing import Any, Dict, Tuple

import safecall as sc

from ._hip import Hip, floats, unfloats

#: The sizes ``add_one`` runs over (partial blocks, one block, many).
ADD_ONE_SIZES = (1, 255, 256, 1000, 1 << 20)
KERNELS = pathlib.Path(__file__).resolve().parent / "kernels"


def _module() -> sc.ModuleBuilder:
    m = sc.ModuleBuilder("selftest_hip")
    m.device_binary("kernels", "hipfb", (KERNELS / "add_one.hipfb").read_bytes(), ["add_one"])
    f = m.function("add_one", doc="y = x + 1 (float32) on an AMD GPU, 256 threads per block.")
    x = f.tensor("x", ["n"], "float32", device="rocm", index=sc.i32)
    y = f.tensor("y", ["n"], "float32", device="rocm")
    n = sc.var("n")
    with f.if_(n > 0):
        f.launch("kernels", "add_one", x.data, y.data, sc.cast(sc.i32, n), grid=[sc.ceil_div(n, 256)], block=[256])
    return m


def add_one(hip: Hip) -> Tuple[str, Dict[str, Any]]:
    """y = x + 1 over several sizes (results read back and compared, except on the double),
    then a shape mismatch and a bad device."""
    fns = sc.jit(_module().build())
    for n in ADD_ONE_SIZES:
        values = [float(i % 4096) - 7.5 for i in range(n)]
        px, py = hip.malloc(4 * n), hip.malloc(4 * n)
        try:
            hip.write(px, floats(values))
            fns.add_one(hip.tensor(px, "float32", [n]), hip.tensor(py, "float32", [n]))
            hip.sync()
            got = unfloats(hip.read(py, 4 * n))
        finally:
            hip.free(px)
            hip.free(py)
        if not hip.is_double and got != [v + 1 for v in values]:
            raise AssertionError(f"n={n}: y != x + 1 (first values {got[:4]})")
    px = hip.malloc(16)
    try:
        try:
            fns.add_one(hip.tensor(px, "float32", [4]), hip.tensor(px, "float32", [3]))
        except ValueError as e:
            expected = "add_one: argument 'y' (#1): shape[0] is 3, expected 4 (= n, bound by x.shape[0])"
            if expected not in str(e):
                raise AssertionError(f"unexpected message: {e}") from None
        else:
            raise AssertionError("a shape mismatch raised nothing")
    finally:
        hip.free(px)
    return f"y = x + 1 for n in {list(ADD_ONE_SIZES)}; a shape mismatch is a ValueError", {"launches": len(ADD_ONE_SIZES)}


CHECKS = [("hip add_one", add_one)]
