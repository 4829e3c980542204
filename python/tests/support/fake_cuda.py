"""The CUDA driver test double (tests/fake_cuda, a cdylib built by ``cargo test``) seen from
Python: where it is, loading it, and reading the calls it recorded on this thread.

The double's ELF ``SONAME`` is ``libcuda.so.1``: once this process has loaded it by its path,
code linked against ``libcuda.so.1`` (Triton's launcher module) binds to it.
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
from typing import Any, Dict, List

from . import ROOT, in_ci

#: The double's shared library, as ``cargo test`` builds it, or ``$SAFECALL_FAKE_CUDA_PATH``
#: (the benchmarks use a release build, whose entry points cost next to nothing, as a
#: driver's do).
PATH = pathlib.Path(
    os.environ.get("SAFECALL_FAKE_CUDA_PATH") or ROOT / "target" / "debug" / "deps" / "libsafecall_fake_cuda.so"
)

#: The double's ``CUdevice`` of ordinal 0 (handles differ from ordinals on purpose).
DEVICE_HANDLE_BASE = 100


def missing_reason() -> str | None:
    """Why the double cannot be used here, or None when it can."""
    if not PATH.exists():
        return f"{PATH} is missing (cargo test builds it)"
    return None


def skip_unless_available() -> None:
    """Skips the calling test when the double is missing, or fails it in CI (where a skip is a
    failure)."""
    import pytest

    reason = missing_reason()
    if reason:
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)


def fresh() -> ctypes.CDLL:
    """The double, loaded, with this thread's records and failures cleared (skipping as
    :func:`skip_unless_available` does)."""
    skip_unless_available()
    fake = load()
    fake.safecall_fake_cuda_reset()
    return fake


def load() -> ctypes.CDLL:
    """Loads the double (once per process) and points safecall's generated code at it."""
    os.environ["SAFECALL_LIBCUDA_PATH"] = str(PATH)
    fake = ctypes.CDLL(str(PATH))
    fake.safecall_fake_cuda_log.restype = ctypes.c_size_t
    fake.safecall_fake_cuda_log.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    fake.safecall_fake_cuda_launch_delay.argtypes = [ctypes.c_uint64]
    return fake


def libcuda_dir(fake_path: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """A directory holding ``libcuda.so.1`` (a link to the double), for code that links the
    driver by that name (Triton's ``-L DIR -l:libcuda.so.1``); returns ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    link = into / "libcuda.so.1"
    if not (link.is_symlink() and os.readlink(link) == str(fake_path)):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(fake_path)
    return into


def records(fake: ctypes.CDLL) -> List[Dict[str, Any]]:
    """This thread's records, oldest first."""
    n = fake.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(buf, n + 1)
    return [json.loads(line) for line in buf.value.decode().splitlines()]


def launches(fake: ctypes.CDLL) -> List[Dict[str, Any]]:
    """This thread's ``cuLaunchKernelEx`` records, oldest first."""
    return [r for r in records(fake) if r["call"] == "cuLaunchKernelEx"]
