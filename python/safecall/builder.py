"""A Pythonic builder for the host IR (docs/ir.md), the counterpart of ``safecall::ir::build``.

The builder writes the IR's text form, which ``parse`` reads back into exactly the module the
Rust builder would make (the text and the data model are equivalent: ``parse(print(m)) == m``).
Diagnostics of invalid IR point into that text (``ModuleBuilder.text()``).

>>> from safecall import ModuleBuilder, tensor, i64
>>> m = ModuleBuilder("demo")
>>> f = m.function("length", doc="The length of x.")
>>> x = f.param("x", tensor(["n"], "float32", device="cpu"))
>>> f.returns(i64)
>>> f.return_(x.shape[0])
>>> print(m.text().strip().splitlines()[-3])
fn length(x: tensor[(n,), float32, device=cpu]) -> i64 {
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = [
    "ModuleBuilder",
    "FunctionBuilder",
    "Expr",
    "TensorRef",
    "Type",
    "Extern",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "bool_",
    "ptr",
    "str_",
    "bytes_",
    "device",
    "dtype",
    "shape",
    "func",
    "any_",
    "data_ptr",
    "stream",
    "none",
    "tensor",
    "optional",
    "const",
    "tuple_",
    "lit",
    "var",
    "string",
    "min_",
    "max_",
    "ceil_div",
    "floordiv",
    "floormod",
    "select",
    "cast",
    "load",
    "offset",
    "is_none",
    "and_",
    "or_",
    "not_",
    "global_",
    "import_",
    "direct",
]

_RESERVED = set(
    "any assert call call_packed cast compact direct else extern false fn for free get_stream "
    "global if import imported_module in inf inf_bf16 inf_f16 inf_f32 let load module mut nan "
    "nan_bf16 nan_f16 nan_f32 none "
    "return same step store system_lib_prefix true where zero".split()
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _escape(text: str, quote: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _name(name: str) -> str:
    """A name as the text format writes it: backticks unless it is a plain identifier."""
    if not isinstance(name, str):
        raise TypeError(f"a name must be a str, got {type(name).__name__}")
    if _IDENT.match(name) and name not in _RESERVED:
        return name
    return "`" + _escape(name, "`") + "`"


def _string(text: str) -> str:
    return '"' + _escape(text, '"') + '"'


def _bytes(data: bytes) -> str:
    out = []
    for b in data:
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return 'b"' + "".join(out) + '"'


# ---- types ----------------------------------------------------------------------------------


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


# ---- expressions ----------------------------------------------------------------------------


_FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


def _float(value: float, suffix: str = "") -> str:
    if math.isnan(value):
        return "nan" + ("_" + suffix if suffix else "")
    if math.isinf(value):
        return ("-" if value < 0 else "") + "inf" + ("_" + suffix if suffix else "")
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + suffix


def _literal(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    raise TypeError(f"not a constant: {value!r}")


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
    is ``i64``) and a float ``f16``, ``bf16``, ``f32`` or ``f64`` (the default).

    A float given an ``f16`` or ``bf16`` type is rounded to the nearest value of that type,
    ties to even, as ``numpy.float16(value)`` is (``lit(0.1, bf16)`` is the bf16 ``0x3dcd``, not
    the truncated ``0x3dcc``)."""
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
        if t in _FLOAT_TYPES:
            return lit(float(value), t)
        raise TypeError(f"lit({value!r}, {t}): not a numeric type")
    if isinstance(value, float):
        if t in (None, "f64"):
            return Expr(_float(value))
        if t in _FLOAT_TYPES:
            return Expr(_float(value, t))
        raise TypeError(f"lit({value!r}, {t}): a float constant is f16, bf16, f32 or f64")
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


# ---- statements and functions ---------------------------------------------------------------


class Extern:
    """An ``extern fn`` declared in a module; pass it (or its name) to ``FunctionBuilder.call``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _Block:
    __slots__ = ("head", "items", "tail")

    def __init__(self, head: str):
        self.head = head
        self.items: List[Union[str, "_Block"]] = []
        self.tail: Optional["_Block"] = None  # an `else` block

    def render(self, out: List[str], indent: str) -> None:
        out.append(f"{indent}{self.head} {{")
        for item in self.items:
            if isinstance(item, _Block):
                item.render(out, indent + "    ")
            else:
                out.append(f"{indent}    {item}")
        if self.tail is None:
            out.append(f"{indent}}}")
        else:
            out.append(f"{indent}}} else {{")
            for item in self.tail.items:
                if isinstance(item, _Block):
                    item.render(out, indent + "    ")
                else:
                    out.append(f"{indent}    {item}")
            out.append(f"{indent}}}")


class FunctionBuilder:
    """Builds one host function: parameters, constraints, return type, then the body, statement
    by statement (``with`` blocks for ``if``/``else``/``for``)."""

    def __init__(self, name: str, doc: Optional[str] = None):
        self.name = name
        self._doc = doc
        self._params: List[str] = []
        self._where: List[str] = []
        self._ret: Optional[str] = None
        self._body = _Block("")
        self._stack: List[_Block] = [self._body]

    # -- signature --
    def doc(self, text: str) -> "FunctionBuilder":
        """Sets the doc comment (served by ``__tvm_ffi__doc_<name>``)."""
        self._doc = text
        return self

    def param(self, name: str, ty: Union[Type, str]) -> Expr:
        """Adds a parameter; returns it as an expression (a ``TensorRef`` for tensors)."""
        text = _type(ty)
        self._params.append(f"{_name(name)}: {text}")
        if text.startswith("tensor[") or text.startswith("optional[tensor["):
            return TensorRef(_name(name))
        return Expr(_name(name))

    def tensor(self, name: str, shape: Sequence[Union[int, str]], dtype: str = "any", **attrs: Any) -> TensorRef:
        """``param(name, tensor(shape, dtype, **attrs))``."""
        return self.param(name, tensor(shape, dtype, **attrs))  # type: ignore[return-value]

    def divisible(self, name: str, divisor: int) -> "FunctionBuilder":
        """A constraint ``name % divisor == 0`` on an integer parameter or symbolic variable."""
        self._where.append(f"{_name(name)} % {int(divisor)} == 0")
        return self

    def returns(self, ty: Union[Type, str]) -> "FunctionBuilder":
        """The return type: ``none`` (default), a scalar, ``device``, ``dtype``, ``str_``,
        ``"tensor"`` or ``any_``."""
        self._ret = _type(ty)
        return self

    # -- statements --
    def _emit(self, stmt: str) -> None:
        self._stack[-1].items.append(stmt)

    def let(self, name: str, value: Any, mut: bool = False) -> Expr:
        """``let [mut] name = value;``; returns the name as an expression."""
        self._emit(f"let {'mut ' if mut else ''}{_name(name)} = {_expr(value)};")
        return Expr(_name(name))

    def assign(self, name: Union[str, Expr], value: Any) -> None:
        """``name = value;`` (a ``let mut`` binding)."""
        target = name.text if isinstance(name, Expr) else _name(name)
        self._emit(f"{target} = {_expr(value)};")

    def store(self, ty: Union[Type, str], p: Any, value: Any) -> None:
        """``store<T>(p, value);``."""
        self._emit(f"store<{_type(ty)}>({_expr(p)}, {_expr(value)});")

    def assert_(self, cond: Any, kind: str, *message: Any) -> None:
        """``assert cond else Kind(message...);``: str parts are text, other parts values."""
        parts = []
        for part in message:
            if isinstance(part, str):
                parts.append(_string(part))
            elif isinstance(part, Expr) and part.text.startswith('"'):
                parts.append(f"({part.text})")  # a string literal meant as a value
            else:
                parts.append(_expr(part))
        self._emit(f"assert {_expr(cond)} else {_name(kind)}({', '.join(parts)});")

    def call(self, fn: Union[Extern, str], *args: Any, dest: Optional[str] = None) -> Optional[Expr]:
        """``[let dest =] call fn(args);`` of an extern C function."""
        name = fn.name if isinstance(fn, Extern) else fn
        call = f"call {_name(name)}(" + ", ".join(_expr(a) for a in args) + ")"
        return self._bind(call, dest)

    def call_packed(self, callee: Union[_Callee, Expr], *args: Any, dest: Optional[str] = None) -> Optional[Expr]:
        """``[let dest =] call_packed callee(args);``: ``global_``, ``import_``, ``direct`` or a
        ``func`` parameter; ``dest`` is an owned ``any``."""
        head = callee.text
        call = f"call_packed {head}(" + ", ".join(_expr(a) for a in args) + ")"
        return self._bind(call, dest)

    def _bind(self, call: str, dest: Optional[str]) -> Optional[Expr]:
        if dest is None:
            self._emit(call + ";")
            return None
        self._emit(f"let {_name(dest)} = {call};")
        return Expr(_name(dest))

    def get_stream(self, name: str, device_type: Any, device_id: Any) -> Expr:
        """``let name = get_stream(device_type, device_id);`` (both ``i32``)."""
        self._emit(f"let {_name(name)} = get_stream({_expr(device_type)}, {_expr(device_id)});")
        return Expr(_name(name))

    def launch(
        self,
        binary: str,
        kernel: str,
        *args: Any,
        grid: Sequence[Any],
        block: Sequence[Any],
        cluster: Optional[Sequence[Any]] = None,
        shared_mem: Any = None,
        stream: Any = None,
        device: Any = None,
        pdl: Any = None,
        cooperative: Any = None,
        cluster_policy: Optional[str] = None,
        preferred_cluster: Optional[Sequence[Any]] = None,
        priority: Any = None,
    ) -> None:
        """``launch binary.kernel[grid=(..), block=(..), ...](args);``: launches a kernel of a
        ``ModuleBuilder.device_binary`` through the CUDA driver. ``grid``, ``block``,
        ``cluster`` and ``preferred_cluster`` are 1 to 3 integer expressions; ``stream``
        defaults to the device's environment stream and ``device`` to the first CUDA tensor
        parameter's device id; ``pdl`` (programmatic dependent launch) and ``cooperative``
        are bools (Python ``True``/``False`` or ``bool`` expressions decided at call time);
        ``cluster_policy`` is ``"default"``, ``"spread"`` or ``"load_balancing"``;
        ``priority`` is an integer. The arguments are scalars and pointers (a tensor's
        ``.data``), passed by value."""

        def dims(values: Any) -> str:
            if isinstance(values, (int, Expr)):
                values = [values]
            return "(" + ", ".join(_expr(v) for v in values) + ")"

        settings = [f"grid={dims(grid)}", f"block={dims(block)}"]
        if cluster is not None:
            settings.append(f"cluster={dims(cluster)}")
        for key, value in (("shared_mem", shared_mem), ("stream", stream), ("device", device)):
            if value is not None:
                settings.append(f"{key}={_expr(value)}")
        for key, value in (("pdl", pdl), ("cooperative", cooperative)):
            if value is not None:
                settings.append(f"{key}={_expr(value)}")
        if cluster_policy is not None:
            if cluster_policy not in ("default", "spread", "load_balancing"):
                raise ValueError(
                    f"cluster_policy must be 'default', 'spread' or 'load_balancing', "
                    f"not {cluster_policy!r}"
                )
            settings.append(f"cluster_policy={cluster_policy}")
        if preferred_cluster is not None:
            settings.append(f"preferred_cluster={dims(preferred_cluster)}")
        if priority is not None:
            settings.append(f"priority={_expr(priority)}")
        self._emit(
            f"launch {_name(binary)}.{_name(kernel)}[{', '.join(settings)}]("
            + ", ".join(_expr(a) for a in args)
            + ");"
        )

    def return_(self, value: Any = None) -> None:
        """``return;`` or ``return value;``."""
        self._emit("return;" if value is None else f"return {_expr(value)};")

    @contextlib.contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """``with f.if_(cond): ...``; an ``else_()`` block may follow at once."""
        block = _Block(f"if {_expr(cond)}")
        self._stack[-1].items.append(block)
        self._stack.append(block)
        try:
            yield
        finally:
            self._stack.pop()

    @contextlib.contextmanager
    def else_(self) -> Iterator[None]:
        """``with f.else_(): ...`` right after an ``if_`` block."""
        items = self._stack[-1].items
        if not items or not isinstance(items[-1], _Block) or not items[-1].head.startswith("if "):
            raise ValueError("else_() must directly follow an if_() block")
        if items[-1].tail is not None:
            raise ValueError("this if_() already has an else_()")
        block = _Block("else")
        items[-1].tail = block
        self._stack.append(block)
        try:
            yield
        finally:
            self._stack.pop()

    @contextlib.contextmanager
    def for_range(self, name: str, start: Any, end: Any, step: int = 1) -> Iterator[Expr]:
        """``with f.for_range("i", 0, n) as i: ...``; ``step`` a non-zero constant."""
        head = f"for {_name(name)} in {_expr(start)}..{_expr(end)}"
        if step != 1:
            head += f" step {int(step)}"
        block = _Block(head)
        self._stack[-1].items.append(block)
        self._stack.append(block)
        try:
            yield Expr(_name(name))
        finally:
            self._stack.pop()

    def text(self) -> str:
        """The function in the text format."""
        if len(self._stack) != 1:
            raise ValueError(f"function `{self.name}` has an unclosed block")
        out: List[str] = []
        if self._doc:
            out.extend(f"/// {line}".rstrip() for line in self._doc.split("\n"))
        head = f"fn {_name(self.name)}(" + ", ".join(self._params) + ")"
        if self._ret is not None:
            head += f" -> {self._ret}"
        if self._where:
            head += " where " + ", ".join(self._where)
        out.append(head + " {")
        for item in self._body.items:
            if isinstance(item, _Block):
                item.render(out, "    ")
            else:
                out.append(f"    {item}")
        out.append("}")
        return "\n".join(out)


class ModuleBuilder:
    """Builds a module: externs, imported modules, device binaries, imports, functions. ``build()`` verifies it
    and returns a ``safecall.Module``."""

    def __init__(self, name: str):
        self.name = name
        self._prefix: Optional[str] = None
        self._externs: List[str] = []
        self._imported: List[str] = []
        self._binaries: List[str] = []
        self._imports: List[str] = []
        self._functions: List[FunctionBuilder] = []

    def system_lib_prefix(self, prefix: str) -> "ModuleBuilder":
        """Register the functions as system-library symbols ``__tvm_ffi_<prefix><name>``."""
        self._prefix = prefix
        return self

    def extern_fn(
        self,
        name: str,
        params: Sequence[Union[Type, str]],
        ret: Union[Type, str, None] = None,
        nonzero_is_raised: bool = False,
    ) -> Extern:
        """Declares a C function the body may ``call`` (scalar parameter and return types)."""
        text = f"extern fn {_name(name)}(" + ", ".join(_type(p) for p in params) + ")"
        if ret is not None:
            text += f" -> {_type(ret)}"
        if nonzero_is_raised:
            text += " nonzero_is_raised"
        self._externs.append(text + ";")
        return Extern(name)

    def imported_module(self, label: str, kind: str, payload: bytes, imports: Sequence[str] = ()) -> None:
        """Embeds a module of ``kind`` loaded by ``ffi.Module.load_from_bytes.<kind>``."""
        lines = [f"imported_module {_name(label)} {{", f"    kind {_string(kind)};", f"    payload {_bytes(bytes(payload))};"]
        if imports:
            lines.append("    imports [" + ", ".join(_name(i) for i in imports) + "];")
        lines.append("}")
        self._imported.append("\n".join(lines))

    def device_binary(self, name: str, format: str, data: bytes, kernels: Sequence[str]) -> None:
        """Embeds a GPU binary (``format`` ``"cubin"``, ``"fatbin"`` or ``"ptx"``) whose
        ``kernels`` (entry names) ``FunctionBuilder.launch`` launches through the CUDA driver."""
        if format not in ("cubin", "fatbin", "ptx"):
            raise ValueError(f"device binary format must be 'cubin', 'fatbin' or 'ptx', not {format!r}")
        lines = [
            f"device_binary {_name(name)} {{",
            f"    format {format};",
            f"    data {_bytes(bytes(data))};",
            "    kernels [" + ", ".join(_name(k) for k in kernels) + "];",
            "}",
        ]
        self._binaries.append("\n".join(lines))

    def import_(self, label: str) -> None:
        """The library itself imports the imported module ``label``."""
        self._imports.append(f"import {_name(label)};")

    def function(self, name: str, doc: Optional[str] = None) -> FunctionBuilder:
        """Starts a host function (added to this module)."""
        f = FunctionBuilder(name, doc)
        self._functions.append(f)
        return f

    def add(self, f: FunctionBuilder) -> FunctionBuilder:
        """Adds a function built on its own."""
        self._functions.append(f)
        return f

    def text(self) -> str:
        """The module in the IR's text format."""
        parts = [f"module {_name(self.name)};"]
        if self._prefix is not None:
            parts.append(f"system_lib_prefix {_string(self._prefix)};")
        parts.extend(self._externs)
        parts.extend(self._imported)
        parts.extend(self._binaries)
        parts.extend(self._imports)
        parts.extend(f.text() for f in self._functions)
        return "\n\n".join(parts) + "\n"

    def build(self) -> Any:
        """Parses and verifies the module (``IRError`` when invalid)."""
        from . import parse

        return parse(self.text(), f"<builder {self.name}>")
