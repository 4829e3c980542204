"""The shared check suite (tests/checks) in this repository: its cases, and the libraries
``tests/check_suite.rs`` builds from them for ``checks/test_libraries.py``."""

from __future__ import annotations

import collections
import os
import pathlib
from typing import Any, Dict, List, Tuple

from safecall.testing.checks import load_suites

from . import CHECKS

#: Passed case outcomes per (runner, backend), printed at the end (checks/conftest.py).
COUNTS: collections.Counter = collections.Counter()

#: Why the library tests have nothing to run without the Rust test.
NO_LIBRARIES = "SAFECALL_CHECK_LIBS is not set: run through `cargo test --test integration check_suite`"


def suites() -> List[Dict[str, Any]]:
    """Every suite of tests/checks, sorted by name."""
    return load_suites(CHECKS)


def libraries() -> List[Tuple[str, pathlib.Path]]:
    """``[(backend, directory)]`` from ``SAFECALL_CHECK_LIBS`` (``name=dir;name=dir``), set
    by the Rust test that builds the libraries; empty when unset."""
    spec = os.environ.get("SAFECALL_CHECK_LIBS", "")
    out = []
    for entry in filter(None, spec.split(";")):
        name, _, directory = entry.partition("=")
        out.append((name, pathlib.Path(directory)))
    return out
