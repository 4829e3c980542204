"""The tensors of the check cases' ``{"tensor": {...}}`` descriptors (format in
tests/checks/README.md of the repository): numpy arrays where numpy can describe the tensor,
:class:`RawTensor` producers otherwise, and ``tvm_ffi.Tensor``s made from either."""

import math

import numpy as np
import tvm_ffi

from .._dlpack import RawTensor

DEVICE_TYPES = {
    "cpu": 1,
    "cuda": 2,
    "cuda_host": 3,
    "opencl": 4,
    "vulkan": 7,
    "metal": 8,
    "rocm": 10,
    "ext_dev": 12,
}

# DLPack type codes.
_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}


def parse_device(text):
    name, _, index = text.partition(":")
    return (DEVICE_TYPES[name], int(index or 0))


def dlpack_dtype(name):
    """(code, bits, lanes) of a dtype name, through tvm_ffi's own parser."""
    dt = tvm_ffi.dtype(name)
    return (dt.type_code, dt.bits, dt.lanes)


def numpy_dtype(name):
    """The numpy dtype of a dtype name, or None when numpy has none (bfloat16, vectors...)."""
    if name == "bool":
        return np.dtype(np.bool_)
    try:
        dt = np.dtype(name)
    except TypeError:
        return None
    return dt if dlpack_dtype(name) == _numpy_dlpack(dt) else None


def _numpy_dlpack(dt):
    kind = {"i": "int", "u": "uint", "f": "float", "b": "bool"}.get(dt.kind)
    if kind is None:
        return None
    return (_CODES[kind], dt.itemsize * 8, 1)


class TensorDesc:
    """A ``{"tensor": {...}}`` descriptor."""

    KEYS = {"dtype", "shape", "strides", "byte_offset", "device", "data", "fill", "view"}

    def __init__(self, body):
        unknown = set(body) - self.KEYS
        assert not unknown, f"unknown tensor keys {unknown}"
        self.dtype = body.get("dtype", "float32")
        self.shape = list(body["shape"])
        self.strides = body.get("strides")
        self.byte_offset = body.get("byte_offset", 0)
        self.device = parse_device(body.get("device", "cpu:0"))
        data = body.get("data", "alloc")
        self.null = data == "null"
        self.fake = data.get("fake") if isinstance(data, dict) else None
        self.misalign = data.get("misalign", 0) if isinstance(data, dict) else 0
        self.fill = body.get("fill", "iota")
        self.view = body.get("view")

    def element_size(self):
        code, bits, lanes = dlpack_dtype(self.dtype)
        return (bits * lanes + 7) // 8

    def effective_strides(self):
        if self.strides is not None:
            return list(self.strides)
        out = [1] * len(self.shape)
        for k in range(len(self.shape) - 2, -1, -1):
            out[k] = out[k + 1] * self.shape[k + 1]
        return out

    def numel(self):
        return math.prod(self.shape)

    def offsets(self):
        """Element offsets of every element, in row-major logical order."""
        if self.numel() <= 0:
            return []
        strides = self.effective_strides()
        return [
            sum(i * s for i, s in zip(index, strides))
            for index in np.ndindex(*self.shape)
        ]

    def numpy_expressible(self):
        return (
            self.device[0] == DEVICE_TYPES["cpu"]
            and not self.null
            and self.fake is None
            and self.byte_offset == 0
            and numpy_dtype(self.dtype) is not None
        )


class PassedTensor:
    """A tensor argument: what was passed, and how to find its elements."""

    def __init__(self, desc, passed, address, view=None):
        self.desc = desc
        self.passed = passed
        # Address of the first element (data + byte_offset).
        self.address = address
        # A numpy view of the logical elements, when the memory is real and numpy can type it.
        self.view = view


def _buffer(desc):
    """A zeroed byte buffer for the tensor and the offset in it of the data pointer."""
    offsets = desc.offsets()
    extent = (max(offsets) + 1) if offsets else 0
    size = desc.misalign + desc.byte_offset + extent * desc.element_size() + 128
    buf = np.zeros(size, dtype=np.uint8)
    start = (-buf.ctypes.data) % 64 + desc.misalign
    return buf, start


def _logical_view(desc, buf, first):
    """A numpy view of the elements, the first one at byte ``first`` of ``buf``."""
    dt = numpy_dtype(desc.dtype)
    if dt is None:
        return None
    strides = [s * dt.itemsize for s in desc.effective_strides()]
    return np.ndarray(desc.shape, dtype=dt, buffer=buf, offset=first, strides=strides)


def _fill(desc, view):
    if view is None or view.size == 0:
        return
    values = desc.fill
    if values == "iota":
        values = list(range(view.size))
    assert len(values) == view.size, "fill has one value per element"
    view[...] = np.array(values).reshape(desc.shape).astype(view.dtype)


def _numpy_tensor(desc):
    """A numpy array for a CPU tensor: a view built as the descriptor's ``view`` hint says
    (``transpose``: the transpose of a compact array; ``slice``: every n-th column of a wider
    array), else through ``as_strided`` on an aligned buffer."""
    dt = numpy_dtype(desc.dtype)
    buf, start = _buffer(desc)
    if desc.view == "transpose":
        base_shape = desc.shape[::-1]
        base = np.ndarray(base_shape, dtype=dt, buffer=buf, offset=start)
        array = base.T
    elif desc.view == "slice":
        step = desc.effective_strides()[-1]
        base_shape = desc.shape[:-1] + [desc.shape[-1] * step]
        base = np.ndarray(base_shape, dtype=dt, buffer=buf, offset=start)
        array = base[..., ::step]
    else:
        assert desc.view is None, f"unknown view {desc.view}"
        array = _logical_view(desc, buf, start)
    want = tuple(s * dt.itemsize for s in desc.effective_strides())
    assert array.strides == want or array.size == 0, (
        f"numpy built strides {array.strides}, the case wants {want}"
    )
    _fill(desc, array)
    return array, buf


def make_tensor(desc, mode):
    """The tensor to pass: a numpy array or a RawTensor (mode ``direct``), or a
    ``tvm_ffi.Tensor`` made from it (mode ``ffi``)."""
    if desc.numpy_expressible():
        array, buf = _numpy_tensor(desc)
        passed = array
        address = array.ctypes.data
        view = array
    else:
        if desc.null:
            data, buf, view = None, None, None
        elif desc.fake is not None:
            data, buf, view = desc.fake, None, None
        else:
            buf, start = _buffer(desc)
            data = buf.ctypes.data + start
            view = _logical_view(desc, buf, start + desc.byte_offset)
            _fill(desc, view)
        passed = RawTensor(
            data,
            desc.device,
            dlpack_dtype(desc.dtype),
            desc.shape,
            desc.strides,
            desc.byte_offset,
            keepalive=buf,
        )
        address = (data or 0) + desc.byte_offset
    if mode == "ffi":
        passed = tvm_ffi.from_dlpack(passed)
        _check_conversion(desc, passed, address)
    return PassedTensor(desc, passed, address, view)


def _check_conversion(desc, t, address):
    """The tvm_ffi.Tensor describes exactly the tensor of the case (so the case tests what it
    says, whatever the producer normalizes)."""
    assert tuple(t.shape) == tuple(desc.shape), (t.shape, desc.shape)
    assert t.device.dlpack_device_type() == desc.device[0]
    assert t.device.index == desc.device[1]
    if desc.strides is not None:
        assert tuple(t.strides) == tuple(desc.strides), (t.strides, desc.strides)
    # data_ptr() includes the byte offset.
    assert t.data_ptr() == address or desc.null

