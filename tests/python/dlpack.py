"""A small DLPack producer built with ctypes, for tensors numpy cannot describe.

numpy only exports CPU tensors with byte_offset 0 and real data. The check cases also need
tensors on other devices, with a non-zero ``byte_offset``, with NULL or fake data pointers and
with NULL strides. :class:`RawTensor` describes such a tensor and hands out a DLPack capsule
through ``__dlpack__``, so ``tvm_ffi.from_dlpack`` turns it into a ``tvm_ffi.Tensor``.
"""

import ctypes


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


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

# Producers whose managed tensor has not been deleted yet, by the address of the struct.
_LIVE = {}


@_DELETER
def _delete(managed):
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class RawTensor:
    """A tensor given field by field: ``data`` is an address (int) or None for NULL;
    ``strides`` (in elements) None for NULL; ``keepalive`` holds whatever owns the memory."""

    def __init__(self, data, device, dtype, shape, strides, byte_offset, keepalive=None):
        self.data = data
        self.device = device
        self.dtype = dtype
        self.shape = list(shape)
        self.strides = None if strides is None else list(strides)
        self.byte_offset = byte_offset
        self.keepalive = keepalive

    def __dlpack_device__(self):
        return (self.device[0], self.device[1])

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
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
