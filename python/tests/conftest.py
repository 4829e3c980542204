"""pytest setup of the safecall package's suite.

The package must be installed (``cargo xtask python`` or ``cargo xtask test`` build it into
``.venv`` with maturin). Outside CI a missing package skips everything with that reason; under
``CI=true`` it is an error. ``SAFECALL_STRESS=1`` runs the lifetime and thread tests at their
full counts (10k compile/drop cycles, 8 threads x 100k calls) instead of bounded ones.
"""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The shared check suite's Python helpers (cases, values, dlpack).
sys.path.insert(0, str(ROOT / "tests" / "python"))

if os.environ.get("CI") not in ("true", "1"):
    pytest.importorskip(
        "safecall._native",
        reason="the safecall package is not installed: run `cargo xtask python`",
    )

STRESS = os.environ.get("SAFECALL_STRESS") == "1"


def stress(full, bounded):
    """``full`` under ``SAFECALL_STRESS=1``, else ``bounded``."""
    return full if STRESS else bounded


def backends():
    import safecall

    return ["cranelift", "llvm"] if safecall.HAS_LLVM else ["cranelift"]
