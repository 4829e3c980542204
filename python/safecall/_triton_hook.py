"""Imported at interpreter start-up by the wheel's ``safecall_triton_driver.pth`` when
``SAFECALL_TRITON_DRIVER=1``: installs safecall as Triton's GPU driver (NVIDIA, or AMD on ROCm
machines) before any library
touches ``triton.runtime.driver.active``, so unchanged programs (``kernel[grid](...)``, vLLM,
SGLang, Helion) run with no C compiler; ``SAFECALL_TRITON_DRIVER=dispatch`` also installs the
dispatch (``install(dispatch=True)``). A failure is reported on stderr, never raised: a ``.pth``
hook must not stop the interpreter."""

import os
import sys

try:
    from .triton import install

    install(dispatch=os.environ.get("SAFECALL_TRITON_DRIVER") == "dispatch")
except Exception as e:  # noqa: BLE001  (reported, not raised: see above)
    print(f"safecall: SAFECALL_TRITON_DRIVER={os.environ.get('SAFECALL_TRITON_DRIVER')} but the driver was not installed: {type(e).__name__}: {e}", file=sys.stderr)
