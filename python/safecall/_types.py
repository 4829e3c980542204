"""The IR's types as the builder spells them: scalar and object types, ``tensor(...)``,
``optional``, ``const`` and ``tuple_``."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

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
    shape: Sequence[Union[int, str]],
    dtype: str = "any",
    *,
    device: Union[str, int, None] = None,
    strides: Union[str, Sequence[Union[int, str]], None] = None,
    device_id: Optional[str] = None,
    byte_offset: Optional[str] = None,
    align: Optional[int] = None,
    index: Union[Type, str, None] = None,
) -> Type:
    """A tensor parameter type: ``shape`` has one entry per dimension, each an int or the name
    of a symbolic variable; ``dtype`` a TVM-FFI dtype string or ``"any"``; ``device`` a device
    name (``"cpu"``, ``"cuda"``...) or code; ``strides`` ``"compact"`` (default), ``"any"`` or
    one entry per dimension; ``device_id`` ``"same"`` (default), ``"free"`` or a variable;
    ``byte_offset`` ``"zero"`` (default) or ``"any"``; ``align`` bytes; ``index`` an int type
    the element count must fit."""
    parts = [_dims(shape), dtype]
    if device is not None:
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

