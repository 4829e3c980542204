"""Loading the shared cases (``tests/checks/*.json``) and the libraries built from them."""

import json
import os
import pathlib

CHECKS = pathlib.Path(__file__).resolve().parent.parent / "checks"


def suites():
    """Every case file, sorted by name."""
    return [json.loads(p.read_text()) for p in sorted(CHECKS.glob("*.json"))]


def libraries():
    """``[(backend, directory)]`` from ``SAFECALL_CHECK_LIBS`` (``name=dir;name=dir``), set
    by the Rust test that builds the libraries; empty when unset."""
    spec = os.environ.get("SAFECALL_CHECK_LIBS", "")
    out = []
    for entry in filter(None, spec.split(";")):
        name, _, directory = entry.partition("=")
        out.append((name, pathlib.Path(directory)))
    return out


def runs_on_python(case):
    return "python" in case.get("only", ["python"])


def has_top_level_tensor(case):
    return any(isinstance(a, dict) and "tensor" in a for a in case["args"])
