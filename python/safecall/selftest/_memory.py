"""Device memory without PyTorch: arrays in ``cuMemAlloc`` memory handed to tvm_ffi through
DLPack, and a TVM-FFI environment allocator over ``cuMemAlloc`` for host functions that
allocate (``empty`` in the IR) when no framework installed one.

Only ctypes: the self-test must run where neither torch nor numpy is installed.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Dict, List, Optional, Sequence

import tvm_ffi

from .._dlpack import _ALLOCATOR, _VDELETER, DTYPES, KDL_CUDA, DLDataType, DLDevice, DLManagedTensorVersioned, DLPackVersion, View
from ._driver import Driver

class DeviceArray:
    """``cuMemAlloc`` memory of ``nbytes``, viewed as tensors of any layout through DLPack."""

    def __init__(self, driver: Driver, nbytes: int, device_id: int = 0):
        self.driver = driver
        self.nbytes = nbytes
        self.device_id = device_id
        self.ptr = driver.alloc(nbytes)

    @classmethod
    def of(cls, driver: Driver, dtype: str, values: Sequence[Any], device_id: int = 0) -> "DeviceArray":
        """A new array holding ``values`` packed as ``dtype``."""
        data = pack(dtype, values)
        a = cls(driver, len(data), device_id)
        driver.upload(a.ptr, data)
        return a

    def free(self) -> None:
        """Releases the memory (views handed out must not be used afterwards)."""
        if self.ptr:
            self.driver.free(self.ptr)
            self.ptr = 0

    def read(self, dtype: str, count: Optional[int] = None, offset: int = 0) -> List[Any]:
        """``count`` values of ``dtype`` from byte ``offset`` (all of them by default)."""
        size = DTYPES[dtype][1] // 8
        count = (self.nbytes - offset) // size if count is None else count
        return unpack(dtype, self.driver.download(self.ptr + offset, count * size))

    def tensor(self, dtype: str, shape: Sequence[int], strides: Optional[Sequence[int]] = None, byte_offset: int = 0) -> tvm_ffi.Tensor:
        """A ``tvm_ffi.Tensor`` viewing this memory (strides in elements; None: compact)."""
        return tvm_ffi.from_dlpack(View(self.ptr, dtype, shape, strides, byte_offset, self.device_id, self))


def pack(dtype: str, values: Sequence[Any]) -> bytes:
    """``values`` as little-endian ``dtype`` bytes."""
    return struct.pack(f"<{len(values)}{DTYPES[dtype][2]}", *values)


def unpack(dtype: str, data: bytes) -> List[Any]:
    """Little-endian ``dtype`` bytes as Python values."""
    fmt = DTYPES[dtype][2]
    return list(struct.unpack(f"<{len(data) // struct.calcsize(fmt)}{fmt}", data))


# ---- the environment allocator ------------------------------------------------------------



class CudaAllocator:
    """A ``DLPackManagedTensorAllocator`` over ``cuMemAlloc`` (compact tensors on the
    prototype's CUDA device), installed process-wide with
    ``TVMFFIEnvSetDLPackManagedTensorAllocator`` while the ``with`` block runs. ``allocated``
    counts the tensors it made, ``live`` those not yet released."""

    def __init__(self, driver: Driver):
        self.driver = driver
        self.allocated = 0
        self._tensors: Dict[int, Any] = {}
        self._callback = _ALLOCATOR(self._allocate)
        self._deleter = _VDELETER(self._release)
        self._set = ctypes.CDLL(None).TVMFFIEnvSetDLPackManagedTensorAllocator
        self._set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        self._set.restype = ctypes.c_int
        self._previous = ctypes.c_void_p()

    @property
    def live(self) -> int:
        """Tensors allocated and not released yet."""
        return len(self._tensors)

    def __enter__(self) -> "CudaAllocator":
        address = ctypes.cast(self._callback, ctypes.c_void_p)
        if self._set(address, 1, ctypes.byref(self._previous)) != 0:
            raise RuntimeError("TVMFFIEnvSetDLPackManagedTensorAllocator refused the allocator")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._set(self._previous, 1, None)

    def _allocate(self, prototype: Any, out: Any, error_ctx: Any, set_error: Any) -> int:
        try:
            p = prototype.contents
            if p.device.device_type != KDL_CUDA:
                set_error(error_ctx, b"RuntimeError", b"the self-test's allocator makes CUDA tensors only")
                return -1
            shape = [p.shape[i] for i in range(p.ndim)]
            count = 1
            for d in shape:
                count *= d
            nbytes = count * ((p.dtype.bits * p.dtype.lanes + 7) // 8)
            managed = DLManagedTensorVersioned()
            managed.version = DLPackVersion(1, 0)
            data = self.driver.alloc(nbytes)
            t = managed.dl_tensor
            shape_arr = (ctypes.c_int64 * max(p.ndim, 1))(*shape)
            t.data = data
            t.device = DLDevice(p.device.device_type, p.device.device_id)
            t.ndim = p.ndim
            t.dtype = DLDataType(p.dtype.code, p.dtype.bits, p.dtype.lanes)
            t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
            managed.deleter = self._deleter
            self._tensors[ctypes.addressof(managed)] = (managed, shape_arr, data)
            self.allocated += 1
            out[0] = ctypes.pointer(managed)
            return 0
        except Exception as e:  # noqa: BLE001  (no exception may cross into C)
            set_error(error_ctx, b"RuntimeError", f"self-test allocator: {e}".encode())
            return -1

    def _release(self, managed: Any) -> None:
        entry = self._tensors.pop(ctypes.addressof(managed.contents), None)
        if entry is not None:
            try:
                self.driver.free(entry[2])
            except Exception:  # noqa: BLE001  (a deleter cannot raise into C)
                pass
