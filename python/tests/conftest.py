"""pytest setup of the Python test tree.

The package must be installed (``cargo xtask python`` or ``cargo xtask test`` build it into
``.venv`` with maturin). Outside CI a missing package skips everything with that reason; under
``CI=true`` it is an error. ``SAFECALL_STRESS=1`` runs the lifetime and thread tests at their
full counts (10k compile/drop cycles, 8 threads x 100k calls) instead of bounded ones.

The tests of libraries that a Rust test builds (:data:`BUILT_BY_RUST`) are collected only
when that test runs them, with the variable naming the libraries set.
"""

import os

import pytest

# The helpers' assertions explain themselves as the tests' own do.
pytest.register_assert_rewrite("safecall.testing")

if os.environ.get("CI") not in ("true", "1"):
    pytest.importorskip(
        "safecall._native",
        reason="the safecall package is not installed: run `cargo xtask python`",
    )

#: Test paths (relative to this directory) -> (the variable naming their libraries, the Rust
#: test that builds them and runs pytest on these paths).
BUILT_BY_RUST = {
    "checks/test_libraries.py": ("SAFECALL_CHECK_LIBS", "tests/check_suite.rs"),
    "checks/test_metadata.py": ("SAFECALL_CHECK_LIBS", "tests/check_suite.rs"),
    "gpu_launch": ("SAFECALL_GPU_LIBDIR", "tests/gpu/python.rs"),
    "modules": ("SAFECALL_MODULES_LIBDIR", "tests/modules_python.rs"),
}

collect_ignore = [path for path, (var, _) in BUILT_BY_RUST.items() if var not in os.environ]


def pytest_report_header():
    return [
        f"not collected: python/tests/{path} (run by {test}, which sets {var})"
        for path, (var, test) in BUILT_BY_RUST.items()
        if path in collect_ignore
    ]
