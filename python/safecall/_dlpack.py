"""A small DLPack producer over raw device memory, in ctypes: what safecall hands tvm_ffi
for memory that no framework describes (the self-test's ``cuMemAlloc`` arrays, the Triton
driver's views of a ``TensorDescriptor``). The structs are DLPack 1.x's (``dlpack/dlpack.h``
as apache-tvm-ffi 0.1.15 ships it). :class:`RawTensor` (public as ``safecall.testing.RawTensor``)
describes any tensor field by field; this module imports nothing of safecall, so a process
without the package can load it as a file."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: DLPack's ``kDLCUDA``.
KDL_CUDA = 2
#: DLPack's ``kDLROCM``: AMD GPU memory.
KDL_ROCM = 10

#: dtype -> (DLPack type code, bits, ``struct`` format character).
DTYPES: Dict[str, Tuple[int, int, str]] = {
    "bool": (6, 8, "?"),
    "int8": (0, 8, "b"),
    "int16": (0, 16, "h"),
    "int32": (0, 32, "i"),
    "int64": (0, 64, "q"),
    "uint8": (1, 8, "B"),
    "uint16": (1, 16, "H"),
    "uint32": (1, 32, "I"),
    "uint64": (1, 64, "Q"),
    "float16": (2, 16, "e"),
    "float32": (2, 32, "f"),
    "float64": (2, 64, "d"),
    "bfloat16": (4, 16, "H"),
    "float8_e4m3fn": (10, 8, "B"),
    "float8_e5m2": (12, 8, "B"),
    "float8_e4m3fnuz": (11, 8, "B"),
    "float8_e5m2fnuz": (13, 8, "B"),
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
_VDELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _VDELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

#: ``DLPackManagedTensorAllocator``'s error callback: ``SetError(error_ctx, kind, message)``.
_SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
#: ``DLPackManagedTensorAllocator`` (dlpack.h): ``(prototype, out, error_ctx, SetError) -> int``,
#: the environment allocator's C type.
_ALLOCATOR = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(DLTensor),
    ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)),
    ctypes.c_void_p,
    _SET_ERROR,
)

# Managed tensors handed out and not deleted yet, by address: what keeps their storage alive.
_LIVE: Dict[int, Any] = {}


@_DELETER
def _delete(managed: Any) -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _fill(
    t: DLTensor,
    data: int,
    device_id: int,
    dtype: str,
    shape: Sequence[int],
    strides: Optional[Sequence[int]],
    byte_offset: int,
    device_type: int = KDL_CUDA,
) -> List[Any]:
    code, bits, _ = DTYPES[dtype]
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    keep: List[Any] = [shape_arr]
    t.data = data
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides is not None:
        strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides)
        keep.append(strides_arr)
        t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = byte_offset
    return keep


class View:
    """A DLPack producer (legacy ``dltensor`` capsule) of one tensor at ``data`` on device
    ``device_id`` of ``device_type`` (CUDA by default; ``KDL_ROCM`` for AMD GPUs):
    ``tvm_ffi.from_dlpack(View(...))`` gives a ``tvm_ffi.Tensor``. ``keepalive`` holds whatever
    owns the memory; strides are in elements (None: compact)."""

    def __init__(
        self,
        data: int,
        dtype: str,
        shape: Sequence[int],
        strides: Optional[Sequence[int]] = None,
        byte_offset: int = 0,
        device_id: int = 0,
        keepalive: Any = None,
        device_type: int = KDL_CUDA,
    ):
        self.data, self.dtype, self.shape, self.strides = data, dtype, list(shape), strides
        self.byte_offset, self.device_id, self.keepalive = byte_offset, device_id, keepalive
        self.device_type = device_type

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (self.device_type, self.device_id)

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        managed = DLManagedTensor()
        keep = _fill(
            managed.dl_tensor,
            self.data,
            self.device_id,
            self.dtype,
            self.shape,
            self.strides,
            self.byte_offset,
            self.device_type,
        )
        managed.deleter = _delete
        _LIVE[ctypes.addressof(managed)] = (managed, keep, self.keepalive)
        return _capsule_new(ctypes.addressof(managed), b"dltensor", None)


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
