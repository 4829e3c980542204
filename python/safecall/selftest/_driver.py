"""The CUDA driver as the self-test sees it: found as safecall's generated code finds it
(``$SAFECALL_LIBCUDA_PATH``, else ``libcuda.so.1``), called through ctypes for what the checks
need besides launches (devices, their attributes, memory, copies, synchronization).

Entry points are the driver's exported names (``cuMemAlloc_v2`` and friends, as ``cuda.h``
maps them since CUDA 3.2). The CUDA driver test double (tests/fake_cuda) is recognised by its
control entry point ``safecall_fake_cuda_log``: on it, memory is host memory and kernels
compute nothing, so the checks make every launch but cannot check results.
"""

from __future__ import annotations

import ctypes
import os
from typing import Dict, List, Optional, Tuple

from .._native import CUDA

#: The variable safecall's generated code reads first to find the driver.
LIBCUDA_PATH_ENV = "SAFECALL_LIBCUDA_PATH"
#: The driver's library name.
LIBCUDA = "libcuda.so.1"

#: ``CUdevice_attribute`` values by short name (from cudarc's ``driver::sys``, through
#: ``safecall._native.CUDA``).
ATTRIBUTES: Dict[str, int] = {
    k[len("DEVICE_ATTRIBUTE_") :].lower(): v for k, v in CUDA.items() if k.startswith("DEVICE_ATTRIBUTE_")
}

_CU = ctypes.c_int
_PTR = ctypes.c_void_p


class DriverError(RuntimeError):
    """A driver call the self-test made itself failed."""


class NoDriver(Exception):
    """No CUDA driver could be loaded (no NVIDIA GPU stack on this machine)."""


class Driver:
    """The loaded driver, initialised, with device ``ordinal``'s primary context current."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib = lib
        self.path = path
        self.is_double = hasattr(lib, "safecall_fake_cuda_log")
        self._declare()
        self.check(self.lib.cuInit(0), "cuInit")
        self.device_count = self._device_count()
        self._contexts: Dict[int, int] = {}

    @staticmethod
    def load() -> "Driver":
        """Loads the driver as generated code does; raises :class:`NoDriver` when absent."""
        path = os.environ.get(LIBCUDA_PATH_ENV) or LIBCUDA
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise NoDriver(f"cannot load the CUDA driver `{path}`: {e}") from None
        return Driver(lib, path)

    def _declare(self) -> None:
        sig = {
            "cuInit": [ctypes.c_uint],
            "cuDeviceGetCount": [ctypes.POINTER(ctypes.c_int)],
            "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            "cuDeviceGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_PTR), ctypes.c_int],
            "cuCtxSetCurrent": [_PTR],
            "cuCtxSynchronize": [],
            "cuDriverGetVersion": [ctypes.POINTER(ctypes.c_int)],
            "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
            "cuMemFree_v2": [ctypes.c_uint64],
            "cuMemcpyHtoD_v2": [ctypes.c_uint64, _PTR, ctypes.c_size_t],
            "cuMemcpyDtoH_v2": [_PTR, ctypes.c_uint64, ctypes.c_size_t],
            "cuMemsetD8_v2": [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t],
            "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        }
        for name, args in sig.items():
            fn = getattr(self.lib, name)
            fn.argtypes = args
            fn.restype = _CU
        self.lib.cuDeviceGetName.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        self.lib.cuDeviceGetName.restype = _CU

    def error_text(self, code: int) -> str:
        """``CUDA_ERROR_X (text)`` for a driver result code."""
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(name)) != 0 or not name.value:
            return f"CUresult {code}"
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        return f"{name.value.decode()} ({(text.value or b'').decode()})"

    def check(self, code: int, what: str) -> None:
        """Raises :class:`DriverError` naming ``what`` when ``code`` is not CUDA_SUCCESS."""
        if code != 0:
            raise DriverError(f"{what} failed: {self.error_text(code)}")

    def _device_count(self) -> int:
        n = ctypes.c_int()
        self.check(self.lib.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
        return n.value

    def handle(self, ordinal: int) -> int:
        """The ``CUdevice`` of a device ordinal."""
        dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal), f"cuDeviceGet({ordinal})")
        return dev.value

    def attribute(self, name: str, ordinal: int = 0) -> int:
        """A ``CUdevice_attribute`` by its short name in :data:`ATTRIBUTES`."""
        value = ctypes.c_int()
        code = self.lib.cuDeviceGetAttribute(ctypes.byref(value), ATTRIBUTES[name], self.handle(ordinal))
        self.check(code, f"cuDeviceGetAttribute({name})")
        return value.value

    def name(self, ordinal: int = 0) -> str:
        """The device's name (``NVIDIA H100 80GB HBM3``)."""
        buf = ctypes.create_string_buffer(256)
        self.check(self.lib.cuDeviceGetName(buf, 256, self.handle(ordinal)), "cuDeviceGetName")
        return buf.value.decode(errors="replace")

    def capability(self, ordinal: int = 0) -> Tuple[int, int]:
        """The compute capability ``(major, minor)``."""
        return (
            self.attribute("compute_capability_major", ordinal),
            self.attribute("compute_capability_minor", ordinal),
        )

    def version(self) -> int:
        """``cuDriverGetVersion`` (13000 is CUDA 13.0)."""
        v = ctypes.c_int()
        self.check(self.lib.cuDriverGetVersion(ctypes.byref(v)), "cuDriverGetVersion")
        return v.value

    def use(self, ordinal: int = 0) -> None:
        """Makes device ``ordinal``'s primary context current on this thread (PyTorch's)."""
        ctx = self._contexts.get(ordinal)
        if ctx is None:
            out = _PTR()
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(out), self.handle(ordinal)), "cuDevicePrimaryCtxRetain")
            ctx = self._contexts[ordinal] = out.value or 0
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def sync(self) -> None:
        """``cuCtxSynchronize``: waits for every launch so far and reports their failures."""
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    def lost(self) -> Optional[str]:
        """Why the current context can run nothing more, or None while it works: a kernel
        fault (an illegal address, a trap) is sticky, so every later call of the context fails
        with it. Two synchronizations tell a sticky error from a reported one."""
        if self.lib.cuCtxSynchronize() == 0:
            return None
        code = self.lib.cuCtxSynchronize()
        return None if code == 0 else self.error_text(code)

    def alloc(self, nbytes: int) -> int:
        """Device memory (``cuMemAlloc``); free it with :meth:`free`."""
        ptr = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), max(nbytes, 1)), f"cuMemAlloc({nbytes})")
        return ptr.value

    def free(self, ptr: int) -> None:
        """``cuMemFree``."""
        self.check(self.lib.cuMemFree_v2(ptr), "cuMemFree")

    def upload(self, ptr: int, data: bytes) -> None:
        """Copies ``data`` to device address ``ptr``."""
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        self.check(self.lib.cuMemcpyHtoD_v2(ptr, buf, len(data)), "cuMemcpyHtoD")

    def download(self, ptr: int, nbytes: int) -> bytes:
        """Copies ``nbytes`` from device address ``ptr``."""
        buf = ctypes.create_string_buffer(nbytes)
        self.check(self.lib.cuMemcpyDtoH_v2(buf, ptr, nbytes), "cuMemcpyDtoH")
        return buf.raw

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        """``cuMemsetD8``."""
        self.check(self.lib.cuMemsetD8_v2(ptr, byte, nbytes), "cuMemsetD8")

    def double_log(self) -> List[dict]:
        """The double's records on this thread (the double only)."""
        import json

        fn = self.lib.safecall_fake_cuda_log
        fn.restype = ctypes.c_size_t
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        n = fn(None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        fn(buf, n + 1)
        return [json.loads(line) for line in buf.value.decode().splitlines()]

    def double_reset(self) -> None:
        """Clears the double's records on this thread (the double only)."""
        self.lib.safecall_fake_cuda_reset()


def optional_driver() -> Tuple[Optional[Driver], Optional[str]]:
    """The driver, or None and why not."""
    try:
        driver = Driver.load()
    except NoDriver as e:
        return None, str(e)
    except (AttributeError, DriverError) as e:
        return None, f"the CUDA driver cannot be used: {e}"
    if driver.device_count == 0:
        return None, "the CUDA driver reports no device"
    return driver, None
