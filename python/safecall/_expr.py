"""Expressions of the IR as the builder builds them: Python operators, the built-in
functions, tensor fields and packed callees."""

from __future__ import annotations

import math
import struct
from typing import Any, Optional, Tuple, Union

from ._text import _float, _literal, _name, _string
from ._types import Type, _type


# ---- literal typing -------------------------------------------------------------------------

#: The value range of each integer type.
_INT_RANGES = {
    **{f"i{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
    **{f"u{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)},
}
_FLOATS = ("f16", "bf16", "f32", "f64")


def _py_type(ty: str) -> str:
    """How Python code names the IR type ``ty`` (``bool`` is ``sc.bool_``)."""
    return "sc.bool_" if ty == "bool" else f"sc.{ty}"


def _default_literal(value: Any) -> "Expr":
    """A Python value with no typed operand to meet: ``i64``, ``f64`` or ``bool``."""
    if isinstance(value, str):
        raise TypeError(
            f"a Python str in an expression is ambiguous: use var({value!r}) for a name or "
            f"string({value!r}) for a string literal"
        )
    if isinstance(value, bool):
        return Expr(_literal(value), "bool")
    if isinstance(value, int):
        return lit(value)
    if isinstance(value, float):
        return Expr(_float(value), "f64")
    raise TypeError(f"not an IR expression or a constant: {value!r}")


def _typed_literal(value: Any, ty: str, meets: str) -> "Expr":
    """A Python number ``value`` that meets an operand of type ``ty`` takes that type when it
    fits (apache/tvm's ``MakeConst(a.ty(), b)``); ``meets`` names that operand, for errors."""
    if isinstance(value, str) or not isinstance(value, (bool, int, float)):
        return _default_literal(value)
    where = f"the type of {meets}"
    if ty == "bool":
        if isinstance(value, bool):
            return Expr(_literal(value), "bool")
        raise TypeError(f"{value!r} cannot be bool, {where}: use True or False")
    if isinstance(value, bool):
        raise TypeError(f"{value!r} cannot be {ty}, {where}: write {int(value)} for the number")
    if ty in _INT_RANGES:
        if isinstance(value, float):
            raise TypeError(
                f"{value!r} (a Python float) cannot be {ty}, {where}: write an int, or compute "
                f"in floats with sc.cast(sc.f64, ...)"
            )
        lo, hi = _INT_RANGES[ty]
        if not lo <= value <= hi:
            raise ValueError(
                f"{value} does not fit {ty} ({lo} to {hi}), {where}: compute in a wider type "
                f"with sc.cast(sc.i64, ...)"
            )
        return lit(value, ty)
    if ty in _FLOATS:
        as_float = float(value)
        if isinstance(value, int) and int(as_float) != value:
            raise ValueError(f"{value} is not exactly {ty}, {where}")
        if ty == "f32" and math.isfinite(as_float):
            try:
                rounded = struct.unpack("<f", struct.pack("<f", as_float))[0]
            except OverflowError:
                rounded = math.inf
            if not math.isfinite(rounded):
                raise ValueError(f"{value!r} does not fit f32, {where}")
            if isinstance(value, int) and rounded != value:
                raise ValueError(f"{value} is not exactly f32, {where}")
        return lit(as_float, ty)
    raise TypeError(f"{value!r} cannot be {ty}, {where} (there are no {ty} literals)")


def _as(value: Any, ty: Optional[str], meets: str) -> "Expr":
    """``value`` as an operand where type ``ty`` is expected (None: unknown): a Python number
    takes ``ty``; an expression of another known type is an error, never converted."""
    if not isinstance(value, Expr):
        return _default_literal(value) if ty is None else _typed_literal(value, ty, meets)
    if ty is not None and value.ty is not None and value.ty != ty:
        raise TypeError(
            f"{value.text} is {value.ty} where {meets} needs {ty}: convert it explicitly with "
            f"sc.cast({_py_type(ty)}, {value.text})"
        )
    return value


def _pair(op: str, a: Any, b: Any) -> "Tuple[Expr, Expr, Optional[str]]":
    """The two operands of a binary operation with their common type: a Python number takes
    the type of the other operand; two typed operands must agree."""
    if isinstance(a, Expr) and isinstance(b, Expr):
        if a.ty is not None and b.ty is not None and a.ty != b.ty:
            raise TypeError(
                f"operands of {op} have different types: {a.text} is {a.ty}, {b.text} is "
                f"{b.ty}; convert one explicitly, e.g. sc.cast({_py_type(a.ty)}, {b.text})"
            )
        return a, b, a.ty or b.ty
    if isinstance(a, Expr):
        b = _as(b, a.ty, f"{a.text} (the other operand of {op})")
        return a, b, a.ty or b.ty
    if isinstance(b, Expr):
        a = _as(a, b.ty, f"{b.text} (the other operand of {op})")
        return a, b, b.ty or a.ty
    a, b = _default_literal(a), _default_literal(b)
    return _pair(op, a, b)


_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def _binary(op: str, a: Any, b: Any) -> "Expr":
    a, b, ty = _pair(op, a, b)
    return Expr(f"({a.text} {op} {b.text})", "bool" if op in _COMPARISONS else ty)


# ---- expressions ----------------------------------------------------------------------------


class Expr:
    """An expression: Python operators build the IR's (``+ - * / % & | ^ << >>``, unary ``-``
    and ``~``, comparisons); ``and_``, ``or_``, ``not_`` are the logical ones.

    ``ty`` is the expression's IR type (``"i32"``, ``"bool"``, ``"ptr"``...) where the builder
    knows it (parameters, tensor fields, literals, casts and what is computed from them), else
    None. A Python number meeting a typed operand takes its type (``x.device_type == 2`` compares
    two ``i32``); two typed operands of different types are a ``TypeError``, never converted."""

    __slots__ = ("text", "ty")
    __hash__ = None  # type: ignore[assignment]  (== builds an expression)

    def __init__(self, text: str, ty: Optional[str] = None):
        self.text = text
        self.ty = ty

    def __repr__(self) -> str:
        return f"Expr({self.text!r})" if self.ty is None else f"Expr({self.text!r}, {self.ty!r})"

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        raise TypeError(
            "an IR expression has no truth value in Python: use FunctionBuilder.if_ or select"
        )

    def _bin(self, op: str, other: Any, reverse: bool = False) -> "Expr":
        return _binary(op, other, self) if reverse else _binary(op, self, other)

    __add__ = lambda s, o: s._bin("+", o)  # noqa: E731
    __radd__ = lambda s, o: s._bin("+", o, True)  # noqa: E731
    __sub__ = lambda s, o: s._bin("-", o)  # noqa: E731
    __rsub__ = lambda s, o: s._bin("-", o, True)  # noqa: E731
    __mul__ = lambda s, o: s._bin("*", o)  # noqa: E731
    __rmul__ = lambda s, o: s._bin("*", o, True)  # noqa: E731
    __truediv__ = lambda s, o: s._bin("/", o)  # noqa: E731
    __rtruediv__ = lambda s, o: s._bin("/", o, True)  # noqa: E731
    # ``a // b`` is ``floordiv(a, b)`` (Python's floor division), so ``triton.cdiv`` works.
    __floordiv__ = lambda s, o: floordiv(s, o)  # noqa: E731
    __rfloordiv__ = lambda s, o: floordiv(o, s)  # noqa: E731
    __mod__ = lambda s, o: s._bin("%", o)  # noqa: E731
    __rmod__ = lambda s, o: s._bin("%", o, True)  # noqa: E731
    __and__ = lambda s, o: s._bin("&", o)  # noqa: E731
    __rand__ = lambda s, o: s._bin("&", o, True)  # noqa: E731
    __or__ = lambda s, o: s._bin("|", o)  # noqa: E731
    __ror__ = lambda s, o: s._bin("|", o, True)  # noqa: E731
    __xor__ = lambda s, o: s._bin("^", o)  # noqa: E731
    __rxor__ = lambda s, o: s._bin("^", o, True)  # noqa: E731
    __lshift__ = lambda s, o: s._bin("<<", o)  # noqa: E731
    __rlshift__ = lambda s, o: s._bin("<<", o, True)  # noqa: E731
    __rshift__ = lambda s, o: s._bin(">>", o)  # noqa: E731
    __rrshift__ = lambda s, o: s._bin(">>", o, True)  # noqa: E731
    __eq__ = lambda s, o: s._bin("==", o)  # type: ignore[assignment]  # noqa: E731
    __ne__ = lambda s, o: s._bin("!=", o)  # type: ignore[assignment]  # noqa: E731
    __lt__ = lambda s, o: s._bin("<", o)  # noqa: E731
    __le__ = lambda s, o: s._bin("<=", o)  # noqa: E731
    __gt__ = lambda s, o: s._bin(">", o)  # noqa: E731
    __ge__ = lambda s, o: s._bin(">=", o)  # noqa: E731

    def __neg__(self) -> "Expr":
        return Expr(f"-({self.text})", self.ty)

    def __invert__(self) -> "Expr":
        return Expr(f"~({self.text})", self.ty)

    # The operations Python has no operator for, as methods (as in the Rust builder).
    def ceil_div(self, other: Any) -> "Expr":
        """``ceil_div(self, other)``."""
        return ceil_div(self, other)

    def floordiv(self, other: Any) -> "Expr":
        """``floordiv(self, other)``."""
        return floordiv(self, other)

    def floormod(self, other: Any) -> "Expr":
        """``floormod(self, other)``."""
        return floormod(self, other)

    def min(self, other: Any) -> "Expr":
        """``min(self, other)``."""
        return min_(self, other)

    def max(self, other: Any) -> "Expr":
        """``max(self, other)``."""
        return max_(self, other)

    def cast(self, ty: Union[Type, str]) -> "Expr":
        """``cast<ty>(self)``."""
        return cast(ty, self)

    def load(self, ty: Union[Type, str]) -> "Expr":
        """``load<ty>(self)`` (``self`` a ``ptr``)."""
        return load(ty, self)

    def offset(self, nbytes: Any) -> "Expr":
        """``offset(self, nbytes)`` (``self`` a ``ptr``)."""
        return offset(self, nbytes)


def _expr(value: Any) -> str:
    """The text of an expression, or of a Python constant at its default type."""
    if isinstance(value, Expr):
        return value.text
    return _default_literal(value).text


def lit(value: Union[int, float, bool], ty: Union[Type, str, None] = None) -> Expr:
    """A constant of an explicit type.

    Parameters
    ----------
    value : int, float or bool
        The constant.
    ty : Type or str, optional
        Its type: an integer type (default ``i64`` for an int), ``f16``, ``bf16``, ``f32`` or
        ``f64`` (default for a float), ``bool`` for a bool. A float given an ``f16`` or ``bf16``
        type is rounded to the nearest value of that type, ties to even, as
        ``numpy.float16(value)`` is (``lit(0.1, bf16)`` is the bf16 ``0x3dcd``, not the
        truncated ``0x3dcc``).

    Returns
    -------
    Expr
        ``5i32`` for ``lit(5, i32)``, ``2.5f32`` for ``lit(2.5, f32)``.

    Raises
    ------
    TypeError
        The value cannot have that type; ValueError: it is out of the type's range.
    """
    t = None if ty is None else _type(ty)
    if isinstance(value, bool):
        if t not in (None, "bool"):
            raise TypeError(f"lit({value!r}, {t}): a bool constant has type bool")
        return Expr(_literal(value), "bool")
    if isinstance(value, int):
        if t is None:
            t = "i64"
        if t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            if not lo <= value <= hi:
                raise ValueError(f"lit({value}, {t}): {value} does not fit {t} ({lo} to {hi})")
            # int(): an IntEnum (tvm_ffi.DLDeviceType.kDLCUDA) spells its number
            return Expr(str(int(value)) if t == "i64" else f"{int(value)}{t}", t)
        if t in _FLOATS:
            return lit(float(value), t)
        raise TypeError(f"lit({value!r}, {t}): not a numeric type")
    if isinstance(value, float):
        if t in (None, "f64"):
            return Expr(_float(value), "f64")
        if t in _FLOATS:
            return Expr(_float(value, t), t)
        raise TypeError(f"lit({value!r}, {t}): a float constant is f16, bf16, f32 or f64")
    raise TypeError(f"lit: not a constant: {value!r}")


def var(name: str, ty: Union[Type, str, None] = None) -> Expr:
    """A name in scope (parameter, symbolic variable, ``let``, loop variable); ``ty`` its type
    when you want Python numbers meeting it to take that type (a symbolic variable is ``i64``)."""
    return Expr(_name(name), None if ty is None else _type(ty))


def string(text: str) -> Expr:
    """A string literal (a ``call`` argument passes it as a NUL-terminated static ``ptr``); its
    type depends on where it is used, so the builder leaves it untyped."""
    return Expr(_string(text))


def _same_type_call(fn: str, a: Any, b: Any) -> Expr:
    a, b, ty = _pair(f"{fn}()", a, b)
    return Expr(f"{fn}({a.text}, {b.text})", ty)


def min_(a: Any, b: Any) -> Expr:
    """``min(a, b)``: integers or floats of one type."""
    return _same_type_call("min", a, b)


def max_(a: Any, b: Any) -> Expr:
    """``max(a, b)``: integers or floats of one type."""
    return _same_type_call("max", a, b)


def ceil_div(a: Any, b: Any) -> Expr:
    """``ceil_div(a, b)``: integers of one type, rounding up."""
    return _same_type_call("ceil_div", a, b)


def floordiv(a: Any, b: Any) -> Expr:
    """``floordiv(a, b)``: integers of one type, rounding toward negative infinity."""
    return _same_type_call("floordiv", a, b)


def floormod(a: Any, b: Any) -> Expr:
    """``floormod(a, b)``: integers of one type, the remainder of ``floordiv``."""
    return _same_type_call("floormod", a, b)


def select(cond: Any, a: Any, b: Any) -> Expr:
    """``select(cond, a, b)``: ``a`` when ``cond`` (a ``bool``), else ``b`` (one scalar type)."""
    c = _as(cond, "bool", "the condition of select()")
    a, b, ty = _pair("select()", a, b)
    return Expr(f"select({c.text}, {a.text}, {b.text})", ty)


def cast(ty: Union[Type, str], e: Any) -> Expr:
    """``cast<ty>(e)``: the explicit conversion between scalar types (docs/ir.md, Casts)."""
    t = _type(ty)
    return Expr(f"cast<{t}>({_expr(e)})", t)


def load(ty: Union[Type, str], p: Any) -> Expr:
    """``load<ty>(p)``: reads a ``ty`` at pointer ``p``."""
    t = _type(ty)
    return Expr(f"load<{t}>({_as(p, 'ptr', 'load()').text})", t)


def offset(p: Any, nbytes: Any) -> Expr:
    """``offset(p, nbytes)``: the pointer ``p`` plus ``nbytes`` (an ``i64``)."""
    p = _as(p, "ptr", "offset()'s pointer")
    n = _as(nbytes, "i64", "offset()'s byte count")
    return Expr(f"offset({p.text}, {n.text})", "ptr")


def is_none(name: Union[str, Expr]) -> Expr:
    """``is_none(name)``: whether an optional parameter (or ``any`` value) is None."""
    return Expr(f"is_none({name.text if isinstance(name, Expr) else _name(name)})", "bool")


def and_(a: Any, b: Any) -> Expr:
    """``a && b`` (both ``bool``)."""
    a, b = _as(a, "bool", "&&"), _as(b, "bool", "&&")
    return Expr(f"({a.text} && {b.text})", "bool")


def or_(a: Any, b: Any) -> Expr:
    """``a || b`` (both ``bool``)."""
    a, b = _as(a, "bool", "||"), _as(b, "bool", "||")
    return Expr(f"({a.text} || {b.text})", "bool")


def not_(a: Any) -> Expr:
    """``!a`` (a ``bool``)."""
    return Expr(f"!({_as(a, 'bool', '!').text})", "bool")


class _Indexed:
    __slots__ = ("base", "field")

    def __init__(self, base: str, field: str):
        self.base, self.field = base, field

    def __getitem__(self, i: int) -> Expr:
        return Expr(f"{self.base}.{self.field}[{int(i)}]", "i64")

    def __call__(self, *args: Any) -> None:
        raise TypeError(
            f"{self.base}.{self.field} is indexed, not called: write {self.base}.{self.field}[i]"
        )


class TensorRef(Expr):
    """A tensor parameter (or tuple element): itself an expression (its name), with the fields
    ``data``, ``shape[i]``, ``strides[i]``, ``ndim``, ``dtype``, ``device``, ``device_type``,
    ``device_id``, ``byte_offset``."""

    __slots__ = ()

    def _field(self, f: str, ty: str) -> Expr:
        return Expr(f"{self.text}.{f}", ty)

    data = property(lambda s: s._field("data", "ptr"), doc="``x.data``: the data pointer (``ptr``).")
    ndim = property(lambda s: s._field("ndim", "i32"), doc="``x.ndim`` (``i32``).")
    dtype = property(lambda s: s._field("dtype", "dtype"), doc="``x.dtype`` (a ``dtype``).")
    device = property(lambda s: s._field("device", "device"), doc="``x.device`` (a ``device``).")
    device_type = property(
        lambda s: s._field("device_type", "i32"), doc="``x.device_type``: the DLPack code (``i32``)."
    )
    device_id = property(lambda s: s._field("device_id", "i32"), doc="``x.device_id`` (``i32``).")
    byte_offset = property(
        lambda s: s._field("byte_offset", "u64"), doc="``x.byte_offset`` (``u64``)."
    )
    shape = property(lambda s: _Indexed(s.text, "shape"))
    strides = property(lambda s: _Indexed(s.text, "strides"))


# ---- packed callees -------------------------------------------------------------------------


class _Callee:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def global_(name: str) -> _Callee:
    """``call_packed global "name"``: a global function, looked up once per call site."""
    return _Callee(f"global {_string(name)}")


def import_(name: str) -> _Callee:
    """``call_packed import "name"``: a function of the library's imported modules."""
    return _Callee(f"import {_string(name)}")


def direct(symbol: str) -> _Callee:
    """``call_packed direct "symbol"``: a safe-call symbol, called directly."""
    return _Callee(f"direct {_string(symbol)}")

