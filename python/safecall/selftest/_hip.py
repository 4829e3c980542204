"""The HIP runtime as the AMD self-test sees it: found as safecall's generated code finds it
(``$SAFECALL_LIBAMDHIP64_PATH``, else ``libamdhip64.so`` and its sonames), called through
ctypes for what the checks need besides launches (devices, memory, copies, synchronization).

The HIP runtime test double (tests/fake_hip) is recognised by its control entry point
``safecall_fake_hip_log``: on it, memory is host memory and kernels compute nothing, so the
checks make every launch but cannot check results.
"""

from __future__ import annotations

import ctypes
import os
import struct
from typing import Any, List, Optional, Sequence, Tuple

import tvm_ffi

from .._dlpack import KDL_ROCM, View

#: The variable safecall's generated code reads first to find the runtime.
LIBAMDHIP64_PATH_ENV = "SAFECALL_LIBAMDHIP64_PATH"
#: The names generated code tries, in order, when the variable is not set.
LIBAMDHIP64 = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6")
#: ``hipMemcpyKind``: host to device, device to host.
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2

_ERR = ctypes.c_int
_PTR = ctypes.c_void_p


class HipError(RuntimeError):
    """A runtime call the self-test made itself failed."""


class Hip:
    """The loaded runtime, with at least one device."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path
        self.is_double = hasattr(lib, "safecall_fake_hip_log")
        lib.hipGetErrorName.restype = ctypes.c_char_p
        lib.hipGetErrorName.argtypes = [_ERR]
        lib.hipMalloc.argtypes = [ctypes.POINTER(_PTR), ctypes.c_size_t]
        lib.hipFree.argtypes = [_PTR]
        lib.hipMemcpy.argtypes = [_PTR, _PTR, ctypes.c_size_t, ctypes.c_int]
        self.check(lib.hipInit(0), "hipInit")
        count = ctypes.c_int(0)
        self.check(lib.hipGetDeviceCount(ctypes.byref(count)), "hipGetDeviceCount")
        self.device_count = count.value

    def check(self, rc: int, what: str) -> None:
        """Raises :class:`HipError` naming ``what`` unless ``rc`` is ``hipSuccess``."""
        if rc != 0:
            name = self.lib.hipGetErrorName(rc) or b"unknown"
            raise HipError(f"{what} returned {name.decode()} ({rc})")

    def malloc(self, nbytes: int) -> int:
        p = _PTR()
        self.check(self.lib.hipMalloc(ctypes.byref(p), nbytes), "hipMalloc")
        return p.value or 0

    def free(self, p: int) -> None:
        self.check(self.lib.hipFree(p), "hipFree")

    def write(self, p: int, data: bytes) -> None:
        buf = ctypes.create_string_buffer(data, len(data))
        self.check(self.lib.hipMemcpy(p, buf, len(data), HOST_TO_DEVICE), "hipMemcpy (to the device)")

    def read(self, p: int, nbytes: int) -> bytes:
        buf = ctypes.create_string_buffer(nbytes)
        self.check(self.lib.hipMemcpy(buf, p, nbytes, DEVICE_TO_HOST), "hipMemcpy (from the device)")
        return buf.raw

    def sync(self) -> None:
        self.check(self.lib.hipDeviceSynchronize(), "hipDeviceSynchronize")

    def tensor(self, p: int, dtype: str, shape: Sequence[int], device: int = 0) -> tvm_ffi.Tensor:
        """A ``tvm_ffi.Tensor`` (``kDLROCM``) over ``p``."""
        return tvm_ffi.from_dlpack(View(p, dtype, shape, device_id=device, device_type=KDL_ROCM))


def optional_hip() -> Tuple[Optional[Hip], str]:
    """The runtime with a device, or None and why not."""
    path = os.environ.get(LIBAMDHIP64_PATH_ENV)
    candidates: List[str] = [path] if path else list(LIBAMDHIP64)
    errors = []
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            continue
        try:
            hip = Hip(lib, name)
        except (HipError, AttributeError) as e:
            return None, f"{name}: {e}"
        if hip.device_count == 0:
            return None, f"{name} reports no device"
        return hip, ""
    return None, "no HIP runtime: " + "; ".join(errors)


def floats(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def unfloats(data: bytes) -> List[Any]:
    return list(struct.unpack(f"<{len(data) // 4}f", data))
