"""The IR's types as the builder spells them: scalar and object types, ``tensor(...)``,
``optional``, ``const`` and ``tuple_``."""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Tuple, Union

from ._text import _literal, _name

class Type:
    """A type of the IR, by its text (``i64``, ``tensor[(n,), float32]``, ``optional[f32]``)."""

    __slots__ = ("text", "scalar")

    def __init__(self, text: str, scalar: bool = False):
        self.text = text
        self.scalar = scalar

    def __repr__(self) -> str:
        return f"Type({self.text!r})"

    def __str__(self) -> str:
        return self.text


i8, i16, i32, i64 = (Type(t, True) for t in ("i8", "i16", "i32", "i64"))
u8, u16, u32, u64 = (Type(t, True) for t in ("u8", "u16", "u32", "u64"))
f32, f64 = Type("f32", True), Type("f64", True)
#: Half-precision floats (IEEE binary16 and bfloat16): they convert (``cast``) and compare;
#: arithmetic is done in ``f32`` or ``f64``. Conversions to them round to nearest, ties to even.
f16, bf16 = Type("f16", True), Type("bf16", True)
bool_ = Type("bool", True)
ptr = Type("ptr", True)
str_ = Type("str")
bytes_ = Type("bytes")
device = Type("device")
dtype = Type("dtype")
shape = Type("shape")
func = Type("func")
any_ = Type("any")
data_ptr = Type("data_ptr")
stream = Type("stream")
#: The return type of a function that returns nothing (the default).
none = Type("none")

_INT_SUFFIXES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}


def _type(t: Union[Type, str]) -> str:
    if isinstance(t, Type):
        return t.text
    if isinstance(t, str):
        return t
    raise TypeError(f"expected a safecall type, got {type(t).__name__}")


def _dim(d: Union[int, str]) -> str:
    if isinstance(d, bool) or not isinstance(d, (int, str)):
        raise TypeError(f"a dimension is an int or a symbolic variable's name, got {d!r}")
    return str(d) if isinstance(d, int) else _name(d)


def _dims(dims: Sequence[Union[int, str]]) -> str:
    parts = [_dim(d) for d in dims]
    return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def tensor(
    shape: Union[Sequence[Union[int, str]], str],
    dtype: Any = "any",
    *,
    device: Union[str, int, None] = None,
    strides: Union[str, Sequence[Union[int, str]], None] = None,
    device_id: Optional[str] = None,
    byte_offset: Optional[str] = None,
    align: Optional[int] = None,
    index: Union[Type, str, None] = None,
) -> Type:
    """A tensor parameter type, ``tensor[...]`` of the IR (docs/ir.md, Tensor parameters).

    Parameters
    ----------
    shape : sequence of int or str, or "any"
        One entry per dimension: a constant, or the name of a symbolic variable (an ``i64``
        bound by its first occurrence, e.g. ``"n"``). ``"any"``: any rank and extents (the
        strides then default to ``"any"``, the only strides such a tensor may have).
    dtype : str or tvm_ffi.dtype, default "any"
        The element type (``"float32"``, ``"bfloat16"``, ...), or ``"any"``.
    device : str or int, optional
        The device type: ``"any"`` (default: **only device ids are compared** with the other
        tensors, so a CPU and a CUDA tensor both with id 0 pass together), ``"same"`` (the same
        device type as the other ``device="same"`` tensors), a name (``"cpu"``, ``"cuda"``,
        ...) or a DLPack code (``tvm_ffi.DLDeviceType.kDLCUDA``).
    strides : str or sequence of int or str, optional
        ``"compact"`` (default: row-major, contiguous), ``"any"``, or one entry per dimension
        (constants or symbolic variables), in elements.
    device_id : str, optional
        ``"same"`` (default: the device id of the other ``same`` tensors), ``"free"``, or a
        symbolic variable's name.
    byte_offset : str, optional
        ``"zero"`` (default) or ``"any"``.
    align : int, optional
        Required alignment in bytes of ``data + byte_offset`` (a power of two).
    index : Type or str, optional
        An integer type the element count must fit (``sc.i32`` for 32-bit indexing kernels).

    Returns
    -------
    Type
        The type, for ``FunctionBuilder.param``.

    Examples
    --------
    >>> str(tensor(["n", 4], "float16", device="cuda", align=16))
    'tensor[(n, 4), float16, device=cuda, align=16]'
    >>> str(tensor("any", "float16", device="cuda"))
    'tensor[any, float16, device=cuda, strides=any]'
    """
    if isinstance(shape, str):
        if shape != "any":
            raise ValueError(f"a tensor's shape is a sequence of dims or 'any', not {shape!r}")
        if strides is None:
            strides = "any"
        parts = ["any", str(dtype)]
    else:
        parts = [_dims(shape), str(dtype)]
    if device is not None:
        if isinstance(device, int) and not isinstance(device, bool):
            device = int(device)  # an IntEnum such as tvm_ffi.DLDeviceType.kDLCUDA
        parts.append(f"device={device}")
    if strides is not None:
        parts.append(f"strides={strides if isinstance(strides, str) else _dims(strides)}")
    if device_id is not None:
        parts.append(f"device_id={device_id if device_id in ('same', 'free') else _name(device_id)}")
    if byte_offset is not None:
        parts.append(f"byte_offset={byte_offset}")
    if align is not None:
        parts.append(f"align={int(align)}")
    if index is not None:
        parts.append(f"index={_type(index)}")
    return Type("tensor[" + ", ".join(parts) + "]")


def optional(inner: Union[Type, str]) -> Type:
    """``optional[T]``: what ``T`` accepts, or None."""
    return Type(f"optional[{_type(inner)}]")


def const(value: Union[int, bool, float, None]) -> Type:
    """``const(V)``: exactly the value ``V`` (an int, bool, float or None)."""
    return Type(f"const({_literal(value)})")


def tuple_(*elements: Tuple[str, Union[Type, str]], **named: Union[Type, str]) -> Type:
    """``tuple(a: T, ...)``: an ``ffi.Array`` whose elements are checked as parameters of their
    own; give ``(name, type)`` pairs, or keyword arguments (in order)."""
    items = list(elements) + list(named.items())
    return Type("tuple(" + ", ".join(f"{_name(n)}: {_type(t)}" for n, t in items) + ")")



_SCALARS = {
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "bool", "ptr"
}


def _body_type(text: str) -> Optional[str]:
    """The type a parameter of type ``text`` has in the body (docs/ir.md, Functions and
    parameters), where it is a scalar, ``device`` or ``dtype``; None otherwise."""
    if text in _SCALARS or text in ("device", "dtype"):
        return text
    if text in ("data_ptr", "stream"):
        return "ptr"
    if text.startswith("optional[") and text.endswith("]"):
        return _body_type(text[len("optional[") : -1])
    if text.startswith("const(") and text.endswith(")"):
        value = text[len("const(") : -1]
        if value in ("true", "false"):
            return "bool"
        if value == "none":
            return None
        if re.fullmatch(r"-?(0x[0-9a-fA-F]+|[0-9]+)", value):
            return "i64"
        return "f64"
    return None
