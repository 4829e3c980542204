"""The Python values of the check cases' argument descriptors, and checks of results against
expected-value descriptors (format in tests/checks/README.md of the repository)."""

import ctypes
import math
import struct

import numpy as np
import tvm_ffi

from ._check_tensors import TensorDesc, make_tensor, parse_device


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
        if key == "big_int":
            return _big_int(body)
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


def _big_int(words):
    """The ``int`` of two's-complement 64-bit words, least significant first."""
    value = sum((w & (2**64 - 1)) << (64 * i) for i, w in enumerate(words))
    return value - (1 << (64 * len(words))) if words and words[-1] < 0 else value


def check_value(expected, got, args):
    """Raises AssertionError when ``got`` does not match the descriptor ``expected``."""
    if expected is None:
        assert got is None, f"expected None, got {got!r}"
        return
    key, body = tag(expected)
    if key == "int":
        assert type(got) is int and got == body, f"expected int {body}, got {got!r}"
    elif key == "big_int":
        want = _big_int(body)
        assert type(got) is int and got == want, f"expected int {want}, got {got!r}"
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
