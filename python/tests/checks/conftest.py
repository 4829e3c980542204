"""The shared check suite (tests/checks) on the Python delivery paths: the JIT
(``test_jit.py``) and the libraries ``tests/check_suite.rs`` builds (``test_libraries.py``,
``test_metadata.py``, collected only when it runs them)."""

from support.checks import COUNTS


def pytest_terminal_summary(terminalreporter):
    for (runner, backend), n in sorted(COUNTS.items()):
        terminalreporter.write_line(f"python check suite [{runner} {backend}]: {n} passed")
