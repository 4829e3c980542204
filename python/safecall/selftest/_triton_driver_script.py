"""Run by the self-test in a process of its own (the driver must be installed before anything
touches ``triton.runtime.driver.active``): ``kernel[grid](...)`` of a Triton vector add on
safecall's installed driver, compiled by the Triton this machine has; with the argument
``dispatch``, through the dispatch too (``install(dispatch=True)``: the first call goes through
Triton's JIT, the others are served from the kernel's table). Prints one JSON line:
``{"launches": N, "ok": bool|null, "driver": str, "triton": str, "stats": {...}}`` (``ok``
null on the driver double, which computes nothing; ``stats`` the dispatcher's counts)."""

import json
import random
import struct
import sys

import safecall.triton

DISPATCH = sys.argv[1:] == ["dispatch"]
safecall.triton.install(dispatch=DISPATCH)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from safecall.selftest._driver import Driver  # noqa: E402
from safecall.selftest._memory import DeviceArray  # noqa: E402


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=inside) + tl.load(y_ptr + offsets, mask=inside), mask=inside)


class _Tensor:
    """What Triton's JIT reads of a tensor: ``data_ptr()`` and ``dtype``."""

    def __init__(self, array):
        self.array, self.dtype = array, tl.float32

    def data_ptr(self):
        return self.array.ptr


def main():
    n = 5000
    rng = random.Random(7)
    xs = [struct.unpack("<f", struct.pack("<f", rng.uniform(-10, 10)))[0] for _ in range(n)]
    ys = [struct.unpack("<f", struct.pack("<f", rng.uniform(-10, 10)))[0] for _ in range(n)]
    driver = Driver.load()
    driver.use(0)
    x, y = DeviceArray.of(driver, "float32", xs), DeviceArray.of(driver, "float32", ys)
    out = DeviceArray(driver, 4 * n)
    for _ in range(3):
        _add[(triton.cdiv(n, 1024),)](_Tensor(x), _Tensor(y), _Tensor(out), n, BLOCK=1024)
    driver.sync()
    got = out.read("float32")
    want = [struct.unpack("<f", struct.pack("<f", a + b))[0] for a, b in zip(xs, ys)]
    active = type(triton.runtime.driver.active).__name__
    ok = None if driver.is_double else got == want
    stats = safecall.triton.jit(_add).stats() if DISPATCH else {}
    print(json.dumps({"launches": 3, "ok": ok, "driver": active, "triton": triton.__version__, "stats": stats}))
    for a in (x, y, out):
        a.free()


if __name__ == "__main__":
    sys.exit(main())
