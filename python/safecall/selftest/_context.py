"""What every check works with: the driver, the device, the kernels shipped with the
self-test, and the rule that separates what is checked on a GPU from what the CUDA driver
test double (which computes nothing) can show."""

from __future__ import annotations

import pathlib
from typing import Any, Callable, Optional, Sequence

import safecall as sc

from ._driver import Driver
from ._memory import DeviceArray
from ._report import Failure, Report, Skip

#: The hand-written PTX (and its README) shipped with the self-test.
KERNELS = pathlib.Path(__file__).parent / "kernels"


def ptx(name: str) -> bytes:
    """The bytes of ``kernels/NAME.ptx``."""
    return (KERNELS / f"{name}.ptx").read_bytes()


class Context:
    """The state the checks share."""

    def __init__(self, driver: Driver, report: Report, device: int = 0):
        self.driver = driver
        self.report = report
        self.device = device
        self.on_double = driver.is_double
        self.capability = driver.capability(device)
        self.torch: Any = _torch_with_cuda()
        self._arrays: list = []

    # ---- results ----------------------------------------------------------------------
    def expect(self, ok: bool, message: Callable[[], str]) -> None:
        """A check of what a kernel computed: a :class:`Failure` when wrong on a GPU; on the
        driver double, which computes nothing, not checked."""
        if not self.on_double and not ok:
            raise Failure(message())

    def require(self, ok: bool, message: Callable[[], str]) -> None:
        """A check of what the host side did (errors, messages, counts): checked everywhere."""
        if not ok:
            raise Failure(message())

    def raises(self, kind: type, call: Callable[[], Any], expected: Optional[str] = None) -> str:
        """Calls ``call``, which must raise ``kind``; returns the message's first line, which
        must equal ``expected`` when given."""
        try:
            call()
        except kind as e:
            first = str(e).split("\n")[0]
            if expected is not None and first != expected:
                raise Failure(f"{kind.__name__} said {first!r}, expected {expected!r}") from None
            return first
        raise Failure(f"no {kind.__name__} was raised")

    def needs_capability(self, major: int, what: str) -> None:
        """Skips the check on a device older than compute capability ``major``.0."""
        if self.capability[0] < major:
            raise Skip(f"{what} needs compute capability {major}.0 or later; the device has {self.capability[0]}.{self.capability[1]}")

    # ---- memory -----------------------------------------------------------------------
    def array(self, dtype: str, values: Sequence[Any]) -> DeviceArray:
        """A device array holding ``values``, freed by :meth:`release`."""
        a = DeviceArray.of(self.driver, dtype, values, self.device)
        self._arrays.append(a)
        return a

    def zeros(self, nbytes: int) -> DeviceArray:
        """``nbytes`` of zeroed device memory, freed by :meth:`release`."""
        a = DeviceArray(self.driver, nbytes, self.device)
        self.driver.memset(a.ptr, 0, nbytes)
        self._arrays.append(a)
        return a

    def release(self) -> None:
        """Frees the arrays of the last check."""
        while self._arrays:
            self._arrays.pop().free()

    def jit(self, m: sc.ModuleBuilder) -> Any:
        """The module JIT-compiled (baseline tier, the default)."""
        return sc.jit(m.build())


def _torch_with_cuda() -> Any:
    """PyTorch when it is importable and sees a CUDA device, else None."""
    try:
        import torch
    except Exception:  # noqa: BLE001  (a broken torch install is no torch)
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None
