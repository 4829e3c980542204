"""One process of ``benches/triton_launch_count.sh``: a Triton kernel launched N times, in
steady state, as ``WHAT`` says (``run16``: ``CompiledKernel.run`` of a 16-argument kernel, 12
pointers being objects with a Python ``data_ptr()``; ``grid3``: ``kernel[grid](...)`` of a
3-argument kernel), on safecall's installed driver (``WHICH=safecall``, ``DISPATCH=1`` for
``install(dispatch=True)``) or Triton's own (``WHICH=stock``). Before the N launches: 1,100
warm-up launches and, for the launcher, the wait for its tier-up (the optimizing recompile of
its host function on a background thread after 1,000 launches), so that that compile falls
into every run alike (without the wait it fell into some runs only: up to 7,000 instructions
per call of noise)."""

import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))
from support import fake_cuda  # noqa: E402

fake = fake_cuda.load()
fake.safecall_fake_cuda_ordinal_handles(1)
cache = pathlib.Path(os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp()))
os.environ["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, cache / "libcuda"))
import triton as version  # noqa: E402

if tuple(int(p) for p in version.__version__.split(".")[:2]) < (3, 8):
    from support.triton_fakes import torch_stand_in

    torch_stand_in()
import safecall.triton as safecall_triton  # noqa: E402

if os.environ.get("WHICH", "safecall") == "safecall":
    safecall_triton.install(dispatch=bool(os.environ.get("DISPATCH")))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


class T:
    def __init__(self, address):
        self.address, self.dtype = address, tl.float32

    def data_ptr(self):
        return self.address


@triton.jit
def k3(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)


@triton.jit
def k16(a, b, c, d, e, f, g, h, i, j, k, l, n, m, p, q, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(a + o) + tl.load(b + o) + tl.load(c + o) + tl.load(d + o) + tl.load(e + o)
    v += tl.load(f + o) + tl.load(g + o) + tl.load(h + o) + tl.load(i + o) + tl.load(j + o) + tl.load(k + o)
    tl.store(l + o, v * n + m + p + q)


ptrs = [T(0x7F00_0000_0000 + 0x10000 * i) for i in range(12)]
N = int(os.environ.get("N", "1000"))
if os.environ.get("WHAT", "run16") == "run16":
    args = ptrs[:12] + [3, 5, 7, 9]
    k16[(4,)](*args, BLOCK=128)
    fake.safecall_fake_cuda_quiet(1)
    compiled = next(iter(k16.device_caches[0][0].values()))
    run_args = (4, 1, 1, 0, compiled.function, compiled.packed_metadata, None,
                triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook, *args, 128)

    def launch():
        compiled.run(*run_args)
else:
    args = ptrs[:2] + [1000]
    k3[(4,)](*args, BLOCK=128)
    fake.safecall_fake_cuda_quiet(1)
    compiled = next(iter(k3.device_caches[0][0].values()))

    def launch():
        k3[(4,)](*args, BLOCK=128)
for _ in range(1100):
    launch()
# The launcher's own object (safecall's: the native launcher a builtin function is bound to).
native = getattr(compiled.run, "__self__", None)
deadline = time.monotonic() + 120
while native is not None and hasattr(native, "tiered_up") and not native.tiered_up and time.monotonic() < deadline:
    time.sleep(0.05)
for _ in range(N):
    launch()
