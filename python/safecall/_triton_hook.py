"""Imported at interpreter start-up by the wheel's ``safecall_triton_driver.pth`` when
``SAFECALL_TRITON_DRIVER`` is set to anything but ``0``, ``false``, ``no``, ``off`` or nothing
(any case, spaces around ignored): ``1`` (``true``, ``yes``, ``on``) installs safecall as
Triton's GPU driver (NVIDIA, or AMD on ROCm machines) before any library touches
``triton.runtime.driver.active``, so unchanged programs (``kernel[grid](...)``, vLLM, SGLang,
Helion) run with no C compiler; ``dispatch`` also installs the dispatch
(``install(dispatch=True)``), ``strict`` safecall's checks (``install(strict=True)``). Any other
value installs nothing and says so on stderr, as does a failed install: a ``.pth`` hook must not
stop the interpreter."""

import os
import sys

#: The variable's values -> ``install``'s keywords.
MODES = {
    **{on: {} for on in ("1", "true", "yes", "on")},
    "dispatch": {"dispatch": True},
    "strict": {"strict": True},
}

_value = os.environ.get("SAFECALL_TRITON_DRIVER", "")
_mode = MODES.get(_value.strip().lower())
if _mode is None:
    print(f"safecall: SAFECALL_TRITON_DRIVER={_value!r} is none of {', '.join(MODES)} (or 0, false, no, off): "
          "the driver was not installed", file=sys.stderr)
else:
    try:
        from .triton import install

        install(**_mode)
    except Exception as e:  # noqa: BLE001  (reported, not raised: see above)
        print(f"safecall: SAFECALL_TRITON_DRIVER={_value} but the driver was not installed: {type(e).__name__}: {e}",
              file=sys.stderr)
