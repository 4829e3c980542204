"""The HIP runtime test double (tests/fake_hip, a cdylib built by ``cargo test``) seen from
Python: where it is, loading it, and reading the calls it recorded on this thread.

The double's ELF ``SONAME`` is ``libamdhip64.so``: once this process has loaded it by its path,
code linked against ``libamdhip64.so`` binds to it. Triton's AMD launcher ``dlopen``s the
runtime by path instead (``TRITON_LIBHIP_PATH``, a file named ``libamdhip64.so*``):
:func:`libhip_dir` makes one.
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
from typing import Any, Dict, List

from . import ROOT, in_ci

#: The double's shared library, as ``cargo test`` (or ``cargo build -p safecall-fake-hip``)
#: builds it, or ``$SAFECALL_FAKE_HIP_PATH`` (the benchmarks use a release build, whose entry
#: points cost next to nothing, as a runtime's do).
PATH = pathlib.Path(os.environ.get("SAFECALL_FAKE_HIP_PATH") or ROOT / "target" / "debug" / "deps" / "libsafecall_fake_hip.so")

#: The launch entry points whose records :func:`launches` returns.
LAUNCH_CALLS = ("hipModuleLaunchKernel", "hipModuleLaunchCooperativeKernel", "hipDrvLaunchKernelEx")


def missing_reason() -> str | None:
    """Why the double cannot be used here, or None when it can."""
    if not PATH.exists():
        return f"{PATH} is missing (cargo test or cargo build -p safecall-fake-hip builds it)"
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
    """The double, loaded, with this thread's records, failures and current device reset
    (skipping as :func:`skip_unless_available` does)."""
    skip_unless_available()
    fake = load()
    fake.safecall_fake_hip_reset()
    return fake


def load() -> ctypes.CDLL:
    """Loads the double (once per process) and points safecall's generated code at it
    (``SAFECALL_LIBAMDHIP64_PATH``)."""
    os.environ["SAFECALL_LIBAMDHIP64_PATH"] = str(PATH)
    fake = ctypes.CDLL(str(PATH))
    fake.safecall_fake_hip_log.restype = ctypes.c_size_t
    fake.safecall_fake_hip_log.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    fake.safecall_fake_hip_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
    fake.safecall_fake_hip_hide.argtypes = [ctypes.c_char_p]
    fake.safecall_fake_hip_set_arch.argtypes = [ctypes.c_char_p]
    return fake


def set_arch(fake: ctypes.CDLL, processor: str) -> None:
    """Makes this thread's devices ``processor`` (``gfx942``, the default, or ``gfx1250``)
    until the next reset: the code objects they load, their ``gcnArchName`` and warp size."""
    if fake.safecall_fake_hip_set_arch(processor.encode()) != 0:
        raise ValueError(f"the HIP double has no {processor} devices")


def libhip_dir(fake_path: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """A directory holding ``libamdhip64.so`` (a link to the double), for Triton's
    ``TRITON_LIBHIP_PATH`` (whose file name must start with ``libamdhip64.so``); returns
    ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    link = into / "libamdhip64.so"
    if not (link.is_symlink() and os.readlink(link) == str(fake_path)):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(fake_path)
    return into


def log(fake: ctypes.CDLL) -> str:
    """This thread's records as the double writes them: JSON lines, oldest first."""
    n = fake.safecall_fake_hip_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_hip_log(buf, n + 1)
    return buf.value.decode()


def records(fake: ctypes.CDLL) -> List[Dict[str, Any]]:
    """This thread's records, oldest first."""
    return [json.loads(line) for line in log(fake).splitlines()]


def launches(fake: ctypes.CDLL) -> List[Dict[str, Any]]:
    """This thread's launch records, oldest first."""
    return [r for r in records(fake) if r["call"] in LAUNCH_CALLS]


def fail(fake: ctypes.CDLL, name: str, code: int) -> None:
    """The next call of ``name`` on this thread returns ``code``."""
    fake.safecall_fake_hip_fail(name.encode(), code)
