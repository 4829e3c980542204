"""A small DLPack producer over raw device memory, in ctypes: what safecall hands tvm_ffi
for memory that no framework describes (the self-test's ``cuMemAlloc`` arrays, the Triton
driver's views of a ``TensorDescriptor``). The structs are DLPack 1.x's (``dlpack/dlpack.h``
as apache-tvm-ffi 0.1.15 ships it)."""

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


def view(data: int, dtype: str, shape: Sequence[int], strides: Optional[Sequence[int]] = None) -> View:
    """A :class:`View` on CUDA device 0 with no byte offset."""
    return View(data, dtype, shape, strides)
