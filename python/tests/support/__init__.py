"""What the tests of this repository share and a wheel cannot ship: where the repository and
its cargo-built artifacts are, and how this run is configured. (Helpers that work from an
installed wheel live in ``safecall.testing``.)

``python/tests`` is on ``sys.path`` through pytest's ``pythonpath`` option (pytest.ini); the
runners started in processes of their own get it through ``PYTHONPATH`` (``triton_driver_run.py``,
``triton_dispatch_run.py``) or run as ``python -m support.triton_hip`` in ``python/tests``.
"""

from __future__ import annotations

import os
import pathlib
from typing import List

#: The repository.
ROOT = pathlib.Path(__file__).resolve().parents[3]
#: The Python test tree (``python/tests``), what ``PYTHONPATH`` must hold for ``support``.
TESTS = ROOT / "python" / "tests"
#: The shared check cases (tests/checks/README.md).
CHECKS = ROOT / "tests" / "checks"

STRESS = os.environ.get("SAFECALL_STRESS") == "1"


def in_ci() -> bool:
    """Whether the suite runs in CI, where a skip is a failure."""
    return os.environ.get("CI") in ("true", "1")


def stress(full, bounded):
    """``full`` under ``SAFECALL_STRESS=1``, else ``bounded``."""
    return full if STRESS else bounded


def backends() -> List[str]:
    """The backends of the installed package, as its Rust side lists them."""
    from safecall import _native

    return list(_native.BACKENDS)
