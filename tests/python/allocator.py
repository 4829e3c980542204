"""A recording environment allocator for the Python runners, written with ctypes and numpy
(it stands in for PyTorch's, which tvm_ffi installs for calls with torch tensors): numpy
buffers behind DLPack managed tensors, each allocation's size and each free counted, so a
case can check that every allocation was freed exactly once. Installed for the calling thread
through the TVM-FFI C API of the libtvm_ffi that tvm_ffi loaded."""

import contextlib
import ctypes
import gc

import numpy as np
import tvm_ffi  # noqa: F401  (loads libtvm_ffi with RTLD_GLOBAL)
from dlpack import DLDataType, DLDevice, DLTensor


# The DLPack structs are the check suite's DLPack producer's (tests/python/dlpack.py).
class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32),
    ("minor", ctypes.c_uint32),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]
_SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
_ALLOCATOR = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(DLTensor),
    ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)),
    ctypes.c_void_p,
    _SET_ERROR,
)


class Record:
    """What the allocator did since it was installed."""

    def __init__(self):
        self.sizes = []
        self.live = {}
        self.frees = 0
        self.bad_frees = 0
        self.fail = None


RECORD = Record()


def _delete(managed):
    key = ctypes.cast(managed, ctypes.c_void_p).value
    if RECORD.live.pop(key, None) is None:
        RECORD.bad_frees += 1
    else:
        RECORD.frees += 1


_DELETE = _DELETER(_delete)


def _allocate(prototype, out, error_ctx, set_error):
    if RECORD.fail is not None:
        set_error(error_ctx, b"RuntimeError", RECORD.fail.encode())
        return -1
    p = prototype.contents
    shape = [p.shape[k] for k in range(p.ndim)]
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = numel * ((p.dtype.bits * p.dtype.lanes + 7) // 8)
    buf = np.zeros(nbytes + 64, dtype=np.uint8)
    address = buf.ctypes.data + (-buf.ctypes.data % 64)
    shape_array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    m = DLManagedTensorVersioned()
    m.major, m.minor = 1, 0
    m.deleter = _DELETE
    m.dl_tensor.data = address
    m.dl_tensor.device = DLDevice(p.device.device_type, p.device.device_id)
    m.dl_tensor.ndim = p.ndim
    m.dl_tensor.dtype = DLDataType(p.dtype.code, p.dtype.bits, p.dtype.lanes)
    m.dl_tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    RECORD.live[ctypes.addressof(m)] = (m, buf, shape_array)
    RECORD.sizes.append(nbytes)
    out[0] = ctypes.pointer(m)
    return 0


_ALLOCATE = _ALLOCATOR(_allocate)


def _set(allocator):
    fn = ctypes.CDLL(None).TVMFFIEnvSetDLPackManagedTensorAllocator
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    address = ctypes.cast(allocator, ctypes.c_void_p).value if allocator is not None else None
    assert fn(address, 0, None) == 0


@contextlib.contextmanager
def for_case(case):
    """The case's allocator (``"cpu"``, ``{"fails": message}``, or none) on this thread for
    the block; afterwards every allocation it made must have been freed exactly once."""
    spec = case.get("allocator")
    global RECORD
    RECORD = Record()
    if spec is None:
        _set(None)
        yield
        return
    if spec != "cpu":
        RECORD.fail = spec["fails"]
    _set(_ALLOCATE)
    try:
        yield
    finally:
        _set(None)
        gc.collect()
        r = RECORD
        assert not r.live and r.bad_frees == 0 and r.frees == len(r.sizes), (
            f"allocations not freed exactly once: {len(r.sizes)} allocated ({r.sizes} bytes), "
            f"{r.frees} freed, {len(r.live)} still live, {r.bad_frees} double frees"
        )
