"""A recording TVM-FFI environment allocator, in ctypes: what a host function allocates
(``empty`` in the IR) and frees, counted, so that a test can check that every tensor it
allocated was freed exactly once."""

from __future__ import annotations

import ctypes
import gc
import math
from typing import Any, Dict, List, Optional, Tuple

from .._dlpack import _ALLOCATOR, _VDELETER, DLDataType, DLDevice, DLManagedTensorVersioned
from ..allocator import _set_allocator

__all__ = ["RecordingAllocator"]



class RecordingAllocator:
    """A TVM-FFI environment allocator that records every allocation and every free.

    ``with RecordingAllocator() as allocator:`` installs it for the calling thread (as
    ``TVMFFIEnvSetDLPackManagedTensorAllocator`` does for PyTorch's) and removes it on exit;
    host functions that allocate (``empty`` in the IR) then get their tensors from it.

    Parameters
    ----------
    fail : str, optional
        Every allocation fails, with a RuntimeError carrying this message.
    address : int, optional
        Hand out this address, with no memory behind it (device memory of a driver double
        that never touches it). By default each tensor gets zero-filled, 64-byte aligned host
        memory, freed when its deleter runs.

    Attributes
    ----------
    requests : list of tuple
        Each successful allocation's ``(shape, (type code, bits, lanes), (device type, device
        id))``, in order.
    sizes : list of int
        Each successful allocation's size in bytes, in order.
    frees : int
        How many allocated tensors were freed.
    bad_frees : int
        How many frees were of tensors this allocator had not handed out, or freed twice.

    Examples
    --------
    >>> import safecall
    >>> from safecall.testing import RecordingAllocator
    >>> f = safecall.jit(safecall.parse(
    ...     "module m; fn make(n: i64) -> tensor {"
    ...     " let t = empty((n,), float32, device(1i32, 0i32)); return t; }"))["make"]
    >>> with RecordingAllocator() as allocator:
    ...     t = f(3)
    ...     del t
    >>> allocator.requests, allocator.sizes
    ([([3], (2, 32, 1), (1, 0))], [12])
    >>> allocator.check_freed()
    """

    def __init__(self, *, fail: Optional[str] = None, address: Optional[int] = None) -> None:
        self.fail = fail
        self.address = address
        self.requests: List[Tuple[List[int], Tuple[int, int, int], Tuple[int, int]]] = []
        self.sizes: List[int] = []
        self.frees = 0
        self.bad_frees = 0
        # Live managed tensors by address, with what keeps their memory.
        self._live: Dict[int, Any] = {}
        self._delete = _VDELETER(self._free)
        self._allocate = _ALLOCATOR(self._alloc)

    @property
    def live(self) -> int:
        """How many tensors it allocated are not freed yet.

        Returns
        -------
        int
            The count.
        """
        return len(self._live)

    def _free(self, managed: Any) -> None:
        if self._live.pop(ctypes.cast(managed, ctypes.c_void_p).value, None) is None:
            self.bad_frees += 1
        else:
            self.frees += 1

    def _alloc(self, prototype: Any, out: Any, error_ctx: Any, set_error: Any) -> int:
        if self.fail is not None:
            set_error(error_ctx, b"RuntimeError", self.fail.encode())
            return -1
        p = prototype.contents
        shape = [p.shape[k] for k in range(p.ndim)]
        nbytes = math.prod(shape) * ((p.dtype.bits * p.dtype.lanes + 7) // 8)
        if self.address is None:
            memory: Any = ctypes.create_string_buffer(nbytes + 64)
            address = ctypes.addressof(memory)
            address += -address % 64
        else:
            memory, address = None, self.address
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        m = DLManagedTensorVersioned()
        m.version.major, m.version.minor = 1, 0
        m.deleter = self._delete
        m.dl_tensor.data = address
        m.dl_tensor.device = DLDevice(p.device.device_type, p.device.device_id)
        m.dl_tensor.ndim = p.ndim
        m.dl_tensor.dtype = DLDataType(p.dtype.code, p.dtype.bits, p.dtype.lanes)
        m.dl_tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
        self._live[ctypes.addressof(m)] = (m, memory, dims)
        self.requests.append(
            (shape, (p.dtype.code, p.dtype.bits, p.dtype.lanes), (p.device.device_type, p.device.device_id))
        )
        self.sizes.append(nbytes)
        out[0] = ctypes.pointer(m)
        return 0

    def check_freed(self) -> None:
        """Checks that every tensor it allocated was freed exactly once.

        Collects garbage first, so that tensors only a reference cycle held are freed.

        Returns
        -------
        None

        Raises
        ------
        AssertionError
            When a tensor is still live, or a free was of a tensor it had not handed out.
        """
        gc.collect()
        assert not self._live and self.bad_frees == 0 and self.frees == len(self.sizes), (
            f"allocations not freed exactly once: {len(self.sizes)} allocated ({self.sizes} bytes), "
            f"{self.frees} freed, {len(self._live)} still live, {self.bad_frees} double frees"
        )

    def __enter__(self) -> "RecordingAllocator":
        """Installs the allocator for the calling thread.

        Returns
        -------
        RecordingAllocator
            This allocator.

        Raises
        ------
        RuntimeError
            When libtvm_ffi refuses it.
        """
        _install(self._allocate)
        return self

    def __exit__(self, *exc: Any) -> None:
        """Removes the calling thread's allocator (none is installed on it afterwards)."""
        _install(None)


def _install(allocator: Any) -> None:
    """Installs ``allocator`` (a ctypes allocator, or None for none) for the calling thread."""
    address = ctypes.cast(allocator, ctypes.c_void_p).value if allocator is not None else None
    rc = _set_allocator()(address, 0, None)
    if rc != 0:
        raise RuntimeError(f"TVMFFIEnvSetDLPackManagedTensorAllocator returned {rc}")
