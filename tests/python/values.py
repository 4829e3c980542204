"""Python values built from the case descriptors of ``tests/checks`` (see its README), and
checks of results against expected-value descriptors."""

import ctypes
import math
import struct

import numpy as np
import tvm_ffi

from dlpack import RawTensor

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


def callback(name):
    if name == "echo":
        return lambda *args: args[0] if args else None
    if name == "fail":

        def fail(*args):
            raise ValueError("callback failed")

        return fail
    raise AssertionError(f"unknown callback {name}")


def tag(d):
    keys = [k for k in d if k != "as"]
    assert len(keys) == 1, f"a value descriptor has one key: {d}"
    return keys[0], d[keys[0]]


def _float(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}[v]
    return float(v)


class Args:
    """The Python arguments of a call and the tensors among them."""

    def __init__(self, descs, mode):
        self.tensors = {}
        self.values = [self.value(d, (i,), mode) for i, d in enumerate(descs)]

    def value(self, d, path, mode):
        if d is None:
            return None
        key, body = tag(d)
        if key == "int":
            return int(body)
        if key == "bool":
            return bool(body)
        if key == "float":
            return _float(body)
        if key == "ptr":
            return ctypes.c_void_p(body)
        if key in ("str",):
            return str(body)
        if key == "bytes":
            return body.encode()
        if key == "device":
            return tvm_ffi.device(body)
        if key == "dtype":
            return tvm_ffi.dtype(body)
        if key == "shape":
            return tvm_ffi.Shape(tuple(body))
        if key == "array":
            return [self.value(item, path + (j,), mode) for j, item in enumerate(body)]
        if key == "list":
            return tvm_ffi.List(
                [self.value(item, path + (j,), mode) for j, item in enumerate(body)]
            )
        if key == "func":
            return callback(body)
        if key == "data_ptr":
            t = make_tensor(TensorDesc(body), "direct")
            self.tensors[path] = t
            how = d.get("as", "ptr")
            if how == "int":
                return t.address
            assert how == "ptr", how
            return ctypes.c_void_p(t.address)
        if key == "tensor":
            t = make_tensor(TensorDesc(body), mode)
            self.tensors[path] = t
            return t.passed
        raise AssertionError(f"descriptor {key} has no Python form (mark the case rust-only)")

    def expand(self, message):
        """Expands ``{ptr:PATH}`` placeholders to the address of the tensor's first element."""
        out = ""
        rest = message
        while "{ptr:" in rest:
            start = rest.index("{ptr:")
            end = rest.index("}", start)
            path = tuple(int(p) for p in rest[start + 5 : end].split("."))
            out += rest[:start] + hex(self.tensors[path].address)
            rest = rest[end + 1 :]
        return out + rest


def _bits(x):
    return struct.pack("<d", x)


def check_value(expected, got, args):
    """Raises AssertionError when ``got`` does not match the descriptor ``expected``."""
    if expected is None:
        assert got is None, f"expected None, got {got!r}"
        return
    key, body = tag(expected)
    if key == "int":
        assert type(got) is int and got == body, f"expected int {body}, got {got!r}"
    elif key == "bool":
        assert type(got) is bool and got == body, f"expected bool {body}, got {got!r}"
    elif key == "float":
        want = _float(body)
        ok = type(got) is float and (
            (math.isnan(want) and math.isnan(got)) or _bits(got) == _bits(want)
        )
        assert ok, f"expected float {want!r}, got {got!r}"
    elif key == "ptr":
        assert isinstance(got, ctypes.c_void_p), f"expected a pointer, got {got!r}"
        assert (got.value or 0) == body, f"expected pointer {body:#x}, got {got!r}"
    elif key == "str":
        assert isinstance(got, str) and str(got) == body, f"expected str {body!r}, got {got!r}"
    elif key == "bytes":
        assert isinstance(got, bytes) and bytes(got) == body.encode(), (
            f"expected bytes {body!r}, got {got!r}"
        )
    elif key == "device":
        assert isinstance(got, tvm_ffi.Device), f"expected a device, got {got!r}"
        dt, index = parse_device(body)
        assert (got.dlpack_device_type(), got.index) == (dt, index), f"expected {body}, got {got}"
    elif key == "dtype":
        assert isinstance(got, tvm_ffi.dtype) and str(got) == body, f"expected {body}, got {got!r}"
    elif key == "shape":
        assert isinstance(got, tvm_ffi.Shape) and tuple(got) == tuple(body), (
            f"expected Shape {body}, got {got!r}"
        )
    elif key == "array":
        assert isinstance(got, tvm_ffi.Array) and len(got) == len(body), (
            f"expected an Array of {len(body)}, got {got!r}"
        )
        for w, g in zip(body, got):
            check_value(w, g, args)
    elif key == "func":
        assert isinstance(got, tvm_ffi.Function), f"expected a Function, got {got!r}"
    elif key == "new_tensor":
        assert isinstance(got, tvm_ffi.Tensor), f"expected a new tensor, got {got!r}"
        assert tuple(got.shape) == tuple(body["shape"]), f"expected {body}, got shape {got.shape}"
        assert str(got.dtype) == body.get("dtype", "float32"), f"expected {body}, got {got.dtype}"
        dt, index = parse_device(body.get("device", "cpu:0"))
        assert (got.device.dlpack_device_type(), got.device.index) == (dt, index)
        if "values" in body:
            got_values = [float(v) for v in np.from_dlpack(got).reshape(-1)]
            assert got_values == [float(v) for v in body["values"]], (
                f"expected values {body['values']}, got {got_values}"
            )
    elif key == "arg":
        path = tuple(int(p) for p in str(body).split("."))
        passed = args.tensors[path]
        assert isinstance(got, tvm_ffi.Tensor), f"expected the tensor argument, got {got!r}"
        assert got.data_ptr() == passed.address
        assert tuple(got.shape) == tuple(passed.desc.shape)
    else:
        raise AssertionError(f"unknown expected-value descriptor {key}")


def check_after(after, args):
    for entry in after:
        path = tuple(int(p) for p in str(entry["arg"]).split("."))
        t = args.tensors[path]
        assert t.view is not None, f"cannot read back the tensor at {path}"
        got = [float(x) for x in np.asarray(t.view).reshape(-1)]
        assert got == [float(x) for x in entry["values"]], (
            f"tensor at {path} holds {got}, expected {entry['values']}"
        )
