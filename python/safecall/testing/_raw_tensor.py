"""A DLPack producer of a tensor given field by field, for tensors numpy cannot describe."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Sequence, Tuple

from .._dlpack import _DELETER, DLDataType, DLDevice, DLManagedTensor, _capsule_new

__all__ = ["RawTensor"]

# Managed tensors handed out and not deleted yet, by the address of the struct.
_LIVE: Dict[int, Any] = {}


@_DELETER
def _delete(managed: Any) -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


class RawTensor:
    """A tensor given field by field, handed to TVM-FFI through ``__dlpack__``.

    numpy exports only CPU tensors with real data and ``byte_offset`` 0. A test of a
    host function's argument checks also needs tensors on other devices, with a non-zero
    ``byte_offset``, with NULL or fake data pointers and with NULL strides: ``RawTensor``
    describes such a tensor, and ``tvm_ffi.from_dlpack`` (or passing it to a
    ``tvm_ffi.Function``) turns it into a ``tvm_ffi.Tensor``. Nothing reads the memory.

    Parameters
    ----------
    data : int or None
        The data pointer, an address; None for NULL.
    device : tuple of int
        ``(DLPack device type, device id)``, e.g. ``(2, 0)`` for ``cuda:0``.
    dtype : tuple of int
        ``(DLPack type code, bits, lanes)``, e.g. ``(2, 32, 1)`` for float32.
    shape : sequence of int
        The shape.
    strides : sequence of int or None
        The strides in elements; None for NULL (compact, row-major).
    byte_offset : int
        DLPack's ``byte_offset``: the first element is at ``data + byte_offset``.
    keepalive : object, optional
        Whatever owns the memory, kept alive with the tensor.

    Examples
    --------
    >>> import tvm_ffi
    >>> from safecall.testing import RawTensor
    >>> t = tvm_ffi.from_dlpack(RawTensor(0x7F0000001000, (2, 0), (2, 32, 1), [4, 8], None, 16))
    >>> (tuple(t.shape), t.device.dlpack_device_type(), hex(t.data_ptr()))
    ((4, 8), 2, '0x7f0000001010')
    """

    def __init__(
        self,
        data: Optional[int],
        device: Tuple[int, int],
        dtype: Tuple[int, int, int],
        shape: Sequence[int],
        strides: Optional[Sequence[int]],
        byte_offset: int,
        keepalive: Any = None,
    ) -> None:
        self.data = data
        self.device = device
        self.dtype = dtype
        self.shape = list(shape)
        self.strides = None if strides is None else list(strides)
        self.byte_offset = byte_offset
        self.keepalive = keepalive

    def __dlpack_device__(self) -> Tuple[int, int]:
        """The DLPack device of the tensor.

        Returns
        -------
        tuple of int
            ``(device type, device id)``.
        """
        return (self.device[0], self.device[1])

    def __dlpack__(self, stream: Any = None, max_version: Any = None, **kwargs: Any) -> Any:
        """A ``dltensor`` capsule of a new ``DLManagedTensor`` describing the tensor.

        Parameters
        ----------
        stream, max_version, **kwargs
            The DLPack protocol's arguments, ignored (the capsule is always unversioned).

        Returns
        -------
        PyCapsule
            The capsule; its consumer takes the managed tensor and calls its deleter.
        """
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * max(ndim, 1))(*self.strides)
        managed = DLManagedTensor()
        t = managed.dl_tensor
        t.data = self.data
        t.device = DLDevice(*self.device)
        t.ndim = ndim
        t.dtype = DLDataType(*self.dtype)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = self.byte_offset
        managed.deleter = _delete
        _LIVE[ctypes.addressof(managed)] = (managed, shape, strides, self)
        # No capsule destructor: the consumer takes the tensor (and calls its deleter); a
        # capsule nobody consumed leaks its small struct, which tests can afford.
        return _capsule_new(ctypes.addressof(managed), b"dltensor", None)
