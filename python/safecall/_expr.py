"""Expressions of the IR as the builder builds them: Python operators, the built-in
functions, tensor fields and packed callees."""

from __future__ import annotations

from typing import Any, Union

from ._text import _float, _literal, _name, _string
from ._types import _INT_SUFFIXES, Type, _type

class Expr:
    """An expression: Python operators build the IR's (``+ - * / % & | ^ << >>``, unary ``-``
    and ``~``, comparisons); ``and_``, ``or_``, ``not_`` are the logical ones."""

    __slots__ = ("text",)
    __hash__ = None  # type: ignore[assignment]  (== builds an expression)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        raise TypeError(
            "an IR expression has no truth value in Python: use FunctionBuilder.if_ or select"
        )

    def _bin(self, op: str, other: Any, reverse: bool = False) -> "Expr":
        a, b = _expr(self), _expr(other)
        if reverse:
            a, b = b, a
        return Expr(f"({a} {op} {b})")

    __add__ = lambda s, o: s._bin("+", o)  # noqa: E731
    __radd__ = lambda s, o: s._bin("+", o, True)  # noqa: E731
    __sub__ = lambda s, o: s._bin("-", o)  # noqa: E731
    __rsub__ = lambda s, o: s._bin("-", o, True)  # noqa: E731
    __mul__ = lambda s, o: s._bin("*", o)  # noqa: E731
    __rmul__ = lambda s, o: s._bin("*", o, True)  # noqa: E731
    __truediv__ = lambda s, o: s._bin("/", o)  # noqa: E731
    __rtruediv__ = lambda s, o: s._bin("/", o, True)  # noqa: E731
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
        return Expr(f"-({self.text})")

    def __invert__(self) -> "Expr":
        return Expr(f"~({self.text})")

    # The operations Python has no operator for, as methods (as in the Rust builder).
    def ceil_div(self, other: Any) -> "Expr":
        return ceil_div(self, other)

    def floordiv(self, other: Any) -> "Expr":
        return floordiv(self, other)

    def floormod(self, other: Any) -> "Expr":
        return floormod(self, other)

    def min(self, other: Any) -> "Expr":
        return min_(self, other)

    def max(self, other: Any) -> "Expr":
        return max_(self, other)

    def cast(self, ty: Union[Type, str]) -> "Expr":
        return cast(ty, self)

    def load(self, ty: Union[Type, str]) -> "Expr":
        return load(ty, self)

    def offset(self, nbytes: Any) -> "Expr":
        return offset(self, nbytes)


def _expr(value: Any) -> str:
    if isinstance(value, Expr):
        return value.text
    if isinstance(value, str):
        raise TypeError(
            f"a Python str in an expression is ambiguous: use var({value!r}) for a name or "
            f"string({value!r}) for a string literal"
        )
    return _literal(value)


def lit(value: Union[int, float, bool], ty: Union[Type, str, None] = None) -> Expr:
    """A constant; ``ty`` gives an int its type (``lit(5, i32)`` is ``5i32``; without it an int
    is ``i64``) and a float ``f32`` or ``f64`` (the default)."""
    t = None if ty is None else _type(ty)
    if isinstance(value, bool):
        if t not in (None, "bool"):
            raise TypeError(f"lit({value!r}, {t}): a bool constant has type bool")
        return Expr(_literal(value))
    if isinstance(value, int):
        if t is None or t == "i64":
            return Expr(str(value))
        if t in _INT_SUFFIXES:
            return Expr(f"{value}{t}")
        if t in ("f32", "f64"):
            return lit(float(value), t)
        raise TypeError(f"lit({value!r}, {t}): not a numeric type")
    if isinstance(value, float):
        if t in (None, "f64"):
            return Expr(_float(value))
        if t == "f32":
            return Expr(_float(value, "f32"))
        raise TypeError(f"lit({value!r}, {t}): a float constant is f32 or f64")
    raise TypeError(f"lit: not a constant: {value!r}")


def var(name: str) -> Expr:
    """A name in scope (parameter, symbolic variable, ``let``, loop variable)."""
    return Expr(_name(name))


def string(text: str) -> Expr:
    """A string literal (a ``call`` argument passes it as a NUL-terminated static ``ptr``)."""
    return Expr(_string(text))


def _call(fn: str, *args: Any) -> Expr:
    return Expr(f"{fn}(" + ", ".join(_expr(a) for a in args) + ")")


def min_(a: Any, b: Any) -> Expr:
    return _call("min", a, b)


def max_(a: Any, b: Any) -> Expr:
    return _call("max", a, b)


def ceil_div(a: Any, b: Any) -> Expr:
    return _call("ceil_div", a, b)


def floordiv(a: Any, b: Any) -> Expr:
    return _call("floordiv", a, b)


def floormod(a: Any, b: Any) -> Expr:
    return _call("floormod", a, b)


def select(cond: Any, a: Any, b: Any) -> Expr:
    return _call("select", cond, a, b)


def cast(ty: Union[Type, str], e: Any) -> Expr:
    return Expr(f"cast<{_type(ty)}>({_expr(e)})")


def load(ty: Union[Type, str], p: Any) -> Expr:
    return Expr(f"load<{_type(ty)}>({_expr(p)})")


def offset(p: Any, nbytes: Any) -> Expr:
    return _call("offset", p, nbytes)


def is_none(name: Union[str, Expr]) -> Expr:
    return Expr(f"is_none({name.text if isinstance(name, Expr) else _name(name)})")


def and_(a: Any, b: Any) -> Expr:
    return Expr(f"({_expr(a)} && {_expr(b)})")


def or_(a: Any, b: Any) -> Expr:
    return Expr(f"({_expr(a)} || {_expr(b)})")


def not_(a: Any) -> Expr:
    return Expr(f"!({_expr(a)})")


class _Indexed:
    __slots__ = ("base", "field")

    def __init__(self, base: str, field: str):
        self.base, self.field = base, field

    def __getitem__(self, i: int) -> Expr:
        return Expr(f"{self.base}.{self.field}[{int(i)}]")


class TensorRef(Expr):
    """A tensor parameter (or tuple element): itself an expression (its name), with the fields
    ``data``, ``shape[i]``, ``strides[i]``, ``ndim``, ``dtype``, ``device``, ``device_type``,
    ``device_id``, ``byte_offset``."""

    __slots__ = ()

    def _field(self, f: str) -> Expr:
        return Expr(f"{self.text}.{f}")

    data = property(lambda s: s._field("data"))
    ndim = property(lambda s: s._field("ndim"))
    dtype = property(lambda s: s._field("dtype"))
    device = property(lambda s: s._field("device"))
    device_type = property(lambda s: s._field("device_type"))
    device_id = property(lambda s: s._field("device_id"))
    byte_offset = property(lambda s: s._field("byte_offset"))
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

