"""pytest setup of the Python runner of the shared check suite.

The Rust test ``python_tvm_ffi_passes_the_check_suite`` builds the case modules into shared
libraries (one directory per backend) and runs this directory with ``SAFECALL_CHECK_LIBS``
naming them. Run alone, without it, every test is skipped with that reason."""

import collections
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Passed case outcomes per (runner, backend), printed at the end.
COUNTS = collections.Counter()


def pytest_terminal_summary(terminalreporter):
    for (runner, backend), n in sorted(COUNTS.items()):
        terminalreporter.write_line(f"python check suite [{runner} {backend}]: {n} passed")
