"""One process of ``benches/triton_launch_count.sh``: one of ``benches/triton_driver.py``'s
kernels launched N times, in steady state, as ``WHAT`` says (``run16``: ``CompiledKernel.run``
of the 16-argument kernel, 12 pointers being objects with a Python ``data_ptr()``; ``grid3``:
``kernel[grid](...)`` of the 3-argument one), on safecall's installed driver
(``WHICH=safecall``, ``DISPATCH=1`` for ``install(dispatch=True)``) or Triton's own
(``WHICH=stock``). Before the N launches: 1,100 warm-up launches and the wait for the
launcher's tier-up (the optimizing recompile of its host function on a background thread
after 1,000 launches), so that that compile falls into every run alike (without the wait it
fell into some runs only: up to 7,000 instructions per call of noise)."""

import os
import tempfile
import time

from triton_driver import kernels, setup

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())
fake, safecall_triton = setup(os.environ.get("WHICH", "safecall"))
if os.environ.get("WHICH", "safecall") == "safecall" and os.environ.get("DISPATCH"):
    safecall_triton.install(dispatch=True)
import triton  # noqa: E402

N = int(os.environ.get("N", "1000"))
kernel, args = kernels()[16 if os.environ.get("WHAT", "run16") == "run16" else 3]
kernel[(4,)](*args, BLOCK=128)
fake.safecall_fake_cuda_quiet(1)
compiled = next(iter(kernel.device_caches[0][0].values()))
if os.environ.get("WHAT", "run16") == "run16":
    run_args = (4, 1, 1, 0, compiled.function, compiled.packed_metadata, None,
                triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook, *args, 128)

    def launch():
        compiled.run(*run_args)
else:
    def launch():
        kernel[(4,)](*args, BLOCK=128)
for _ in range(1100):
    launch()
# The launcher's own object (safecall's: the native launcher a builtin function is bound to).
native = getattr(compiled.run, "__self__", None)
deadline = time.monotonic() + 120
while native is not None and hasattr(native, "tiered_up") and not native.tiered_up and time.monotonic() < deadline:
    time.sleep(0.05)
for _ in range(N):
    launch()
