"""Imported at interpreter start-up by the wheel's ``safecall_triton_driver.pth`` when
``SAFECALL_TRITON_DRIVER=1``: installs safecall as Triton's NVIDIA driver before any library
touches ``triton.runtime.driver.active``, so unchanged programs (``kernel[grid](...)``, vLLM,
SGLang, Helion) run with no C compiler; ``SAFECALL_TRITON_DRIVER=dispatch`` also installs the
dispatch (``install(dispatch=True)``; on AMD, where it does not serve, the driver alone, with a
note on stderr). A failure is reported on stderr, never raised: a ``.pth`` hook must not stop
the interpreter."""

import os
import sys

try:
    from .triton import install

    dispatch = os.environ.get("SAFECALL_TRITON_DRIVER") == "dispatch"
    try:
        install(dispatch=dispatch)
    except ValueError as e:
        # The dispatch serves CUDA kernels only: on an AMD machine the driver is still
        # installed (install() changes nothing before its checks pass).
        if not dispatch:
            raise
        install()
        print(f"safecall: SAFECALL_TRITON_DRIVER=dispatch: {e}; the driver was installed without it", file=sys.stderr)
except Exception as e:  # noqa: BLE001  (reported, not raised: see above)
    print(f"safecall: SAFECALL_TRITON_DRIVER={os.environ.get('SAFECALL_TRITON_DRIVER')} but the driver was not installed: {type(e).__name__}: {e}", file=sys.stderr)
