"""Grids written as ``lambda META: (triton.cdiv(n, META["BLOCK"]),)``, traced once per code
object into a function of the values they read, so that the dispatch need not call the
lambda: ``triton.cdiv`` called from host code costs about 1.5 us in Triton 3.6 to 3.9 (its
``ConstexprFunction.__call__`` imports a module on every call), more than the rest of a
dispatched launch.

A grid function is traced only when its result cannot depend on anything but integer
arithmetic over the values it reads:

- a plain Python function of one parameter (``META``), without defaults;
- the only global and attribute names its code reads are ``triton`` and ``cdiv``, each
  resolving (in its globals) to the ``triton`` module or to ``triton.cdiv``, the
  ``ConstexprFunction`` whose raw function is pure arithmetic (no names read);
- its closure cells hold integers, the ``triton`` module or ``triton.cdiv``;
- called once with symbolic values for ``META[key]`` (string keys only), the integer cells
  and the integer globals it reads, it returns a tuple of 1 to 3 elements, each an ``int`` or an expression of ``+``,
  ``-``, ``*``, ``//``, ``%`` and unary ``-`` over those values: any other use of a symbolic
  value (comparing it, testing its truth, calling it, reading an attribute, converting it)
  stops the trace, and the grid is called as before.

The trace becomes a generated function of the values (``META`` values by key, then the cell
contents) with the same operations in the same order, called only when every value is an
exact ``int`` (where ``triton.cdiv``'s unwrapping of constexprs is the identity); otherwise the
dispatcher calls the grid itself, as Triton does. The dispatcher checks, on every call, that
the grid's globals still name the same objects.
"""

from __future__ import annotations

import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["GridPlan", "trace_grid"]

#: The global and attribute names a traced grid may read.
_NAMES = frozenset({"triton", "cdiv"})


class _Untraceable(Exception):
    """The grid does something the trace does not model."""


class _Sym:
    """A symbolic integer: an expression (Python source text) over the traced inputs."""

    __slots__ = ("src",)

    def __init__(self, src: str) -> None:
        self.src = src

    def _bin(self, op: str, other: Any, reflected: bool = False) -> "_Sym":
        o = _operand(other)
        return _Sym(f"({o} {op} {self.src})" if reflected else f"({self.src} {op} {o})")

    def __add__(self, o: Any) -> "_Sym":
        return self._bin("+", o)

    def __radd__(self, o: Any) -> "_Sym":
        return self._bin("+", o, True)

    def __sub__(self, o: Any) -> "_Sym":
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> "_Sym":
        return self._bin("-", o, True)

    def __mul__(self, o: Any) -> "_Sym":
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> "_Sym":
        return self._bin("*", o, True)

    def __floordiv__(self, o: Any) -> "_Sym":
        return self._bin("//", o)

    def __rfloordiv__(self, o: Any) -> "_Sym":
        return self._bin("//", o, True)

    def __mod__(self, o: Any) -> "_Sym":
        return self._bin("%", o)

    def __rmod__(self, o: Any) -> "_Sym":
        return self._bin("%", o, True)

    def __neg__(self) -> "_Sym":
        return _Sym(f"(-{self.src})")

    def _stop(self, *args: Any, **kwargs: Any) -> Any:
        raise _Untraceable("a symbolic value used beyond integer arithmetic")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _stop  # type: ignore[assignment]
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _stop  # type: ignore[assignment]
    __call__ = __iter__ = __len__ = __getitem__ = __truediv__ = __rtruediv__ = _stop  # type: ignore[assignment]
    __pow__ = __rpow__ = __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = _stop  # type: ignore[assignment]
    __rand__ = __ror__ = __rxor__ = __rlshift__ = __rrshift__ = __abs__ = __invert__ = _stop  # type: ignore[assignment]
    __pos__ = __round__ = __trunc__ = __floor__ = __ceil__ = __divmod__ = __rdivmod__ = _stop  # type: ignore[assignment]
    __str__ = __repr__ = __format__ = __getattr__ = _stop  # type: ignore[assignment]


def _operand(value: Any) -> str:
    if isinstance(value, _Sym):
        return value.src
    if type(value) is int:
        return repr(value)
    raise _Untraceable(f"a {type(value).__name__} operand")


class _Meta:
    """The symbolic ``META``: each string key read becomes an input."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = set(names)
        self.keys: List[str] = []

    def __getitem__(self, key: Any) -> _Sym:
        if type(key) is not str or key not in self.names:
            raise _Untraceable(f"META[{key!r}]")
        if key not in self.keys:
            self.keys.append(key)
        return _Sym(f"m{self.keys.index(key)}")

    def __getattr__(self, name: str) -> Any:
        raise _Untraceable(f"META.{name}")


class GridPlan:
    """A traced grid: ``fn(*meta_values, *cell_values, *global_values)`` returns the grid
    tuple; ``keys`` are the ``META`` keys it reads (parameter names), ``cells`` one entry per
    closure cell (``None``: an integer input; else the object it must still hold),
    ``inputs`` the integer globals it reads,
    ``globals`` the ``(name, object)`` pairs the grid's globals must still hold, and
    ``attributes`` the ``(object, name, value)`` attributes that must still hold (``triton.cdiv``)."""

    __slots__ = ("fn", "keys", "cells", "inputs", "globals", "attributes", "source")

    def __init__(self, fn: Any, keys: Tuple[str, ...], cells: Tuple[Any, ...], inputs: Tuple[str, ...],
                 globals_: Tuple[Tuple[str, Any], ...], attributes: Tuple[Tuple[Any, str, Any], ...], source: str):
        self.fn, self.keys, self.cells, self.inputs, self.globals, self.attributes, self.source = (
            fn, keys, cells, inputs, globals_, attributes, source)


def trace_grid(grid: Any, names: Sequence[str]) -> Optional[GridPlan]:
    """The plan of ``grid`` (a ``lambda META: ...``) over a kernel with parameters ``names``,
    or ``None`` where it cannot be traced exactly (module docs)."""
    import triton

    if type(grid) is not types.FunctionType:
        return None
    code = grid.__code__
    if (code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & 0x0C or grid.__defaults__
            or grid.__kwdefaults__):
        return None
    cdiv = getattr(triton, "cdiv", None)
    raw = getattr(cdiv, "fn", None)
    if raw is None or type(raw) is not types.FunctionType or raw.__code__.co_names:
        return None
    expected = {"triton": triton, "cdiv": cdiv}
    pairs: List[Tuple[str, Any]] = []
    inputs: List[str] = []
    traced_globals = dict(grid.__globals__)
    for name in code.co_names:
        if name in grid.__globals__:
            value = grid.__globals__[name]
            if name in expected and value is expected[name]:
                pairs.append((name, value))
            elif type(value) is int:
                # A module-level integer (`n_elements = x.numel()` at the top of a script):
                # an input, read from the globals on every call.
                traced_globals[name] = _Sym(f"g{len(inputs)}")
                inputs.append(name)
            else:
                return None
        elif name not in _NAMES:
            return None  # a builtin, or an attribute of something other than `triton`
    if "triton" in code.co_names and "triton" not in grid.__globals__:
        return None
    # Closure cells: integers are inputs, read on every call; the `triton` module or
    # `triton.cdiv` (imported inside the function that made the grid) stay, checked on every
    # call; anything else is not traced.
    cells: List[Any] = []
    traced_cells = []
    for i, cell in enumerate(grid.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            return None
        if type(value) is int:
            cells.append(None)
            traced_cells.append(types.CellType(_Sym(f"c{i}")))
        elif value is triton or value is cdiv:
            cells.append(value)
            traced_cells.append(types.CellType(value))
        else:
            return None
    meta = _Meta(names)
    symbolic = types.FunctionType(code, traced_globals, grid.__name__, None, tuple(traced_cells) or None)
    try:
        result = symbolic(meta)
        if type(result) is not tuple or not 1 <= len(result) <= 3:
            return None
        parts = [_operand(r) for r in result]
    except _Untraceable:
        return None
    except Exception:  # noqa: BLE001  (anything else the grid raises: Triton's path reports it)
        return None
    params = ([f"m{i}" for i in range(len(meta.keys))] + [f"c{i}" for i, c in enumerate(cells) if c is None]
              + [f"g{i}" for i in range(len(inputs))])
    source = f"def traced_grid({', '.join(params)}):\n    return ({', '.join(parts)},)\n"
    namespace: Dict[str, Any] = {}
    exec(compile(source, f"<safecall traced grid of {code.co_name}>", "exec"), namespace)  # noqa: S102
    # `cdiv` read as an attribute (of `triton`: any other owner stopped the trace).
    attributes = ((triton, "cdiv", cdiv),) if "cdiv" in code.co_names and "cdiv" not in grid.__globals__ else ()
    return GridPlan(namespace["traced_grid"], tuple(meta.keys), tuple(cells), tuple(inputs), tuple(pairs), attributes,
                    source)
