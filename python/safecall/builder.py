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
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

# The types and expressions live in modules of their own; the builder re-exports them, so
# ``safecall.ir`` (this module) names everything a module is built from.
from ._expr import (  # noqa: F401
    Expr,
    TensorRef,
    _as,
    _Callee,
    _expr,
    _pair,
    and_,
    cast,
    ceil_div,
    direct,
    floordiv,
    floormod,
    global_,
    import_,
    is_none,
    lit,
    load,
    max_,
    min_,
    not_,
    offset,
    or_,
    select,
    string,
    var,
)
from ._tensormap import TensorMap, tdm, tensormap, tensormap_im2col  # noqa: F401
from ._native import BINARY_FORMATS, LAUNCH_SETTINGS
from ._parse import parse
from ._text import _bytes, _name, _string
from ._types import (  # noqa: F401
    Type,
    _body_type,
    _type,
    any_,
    bool_,
    bytes_,
    const,
    data_ptr,
    device,
    dtype,
    bf16,
    f16,
    f32,
    f64,
    func,
    i8,
    i16,
    i32,
    i64,
    none,
    optional,
    ptr,
    shape,
    str_,
    stream,
    tensor,
    tuple_,
    u8,
    u16,
    u32,
    u64,
)

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
    "tensormap",
    "tensormap_im2col",
    "tdm",
    "TensorMap",
]

# ---- statements and functions ---------------------------------------------------------------


def _one_of(words: Sequence[str]) -> str:
    """``'a', 'b' or 'c'``."""
    quoted = [repr(w) for w in words]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


class Extern:
    """An ``extern fn`` declared in a module; pass it (or its name) to ``FunctionBuilder.call``."""

    __slots__ = ("name", "params", "ret")

    def __init__(self, name: str, params: Sequence[str] = (), ret: Optional[str] = None):
        self.name = name
        #: The parameter types (IR spellings), which Python numbers passed to them take.
        self.params = tuple(params)
        #: The return type, or None for ``void``.
        self.ret = ret


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
        text, spelled = _type(ty), _name(name)
        self._params.append(f"{spelled}: {text}")
        if text.startswith("tensor[") or text.startswith("optional[tensor["):
            return TensorRef(spelled)
        return Expr(spelled, _body_type(text))

    def tensor(self, name: str, shape: Sequence[Union[int, str]], dtype: str = "any", **attrs: Any) -> TensorRef:
        """``param(name, tensor(shape, dtype, **attrs))``."""
        return self.param(name, tensor(shape, dtype, **attrs))  # type: ignore[return-value]

    def divisible(self, name: str, divisor: int) -> "FunctionBuilder":
        """A constraint ``name % divisor == 0`` on an integer parameter or symbolic variable."""
        self._where.append(f"{_name(name)} % {int(divisor)} == 0")
        return self

    def returns(self, ty: Union[Type, str, Sequence[Union[Type, str]]]) -> "FunctionBuilder":
        """The return type: ``none`` (default), a scalar, ``device``, ``dtype``, ``str_``,
        ``"tensor"`` or ``any_``; a tuple or list of them returns several values as one
        ``ffi.Array`` (``-> (tensor, i64)``, returned with ``return_((a, n))``)."""
        if isinstance(ty, (tuple, list)):
            items = [_type(t) for t in ty]
            self._ret = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        else:
            self._ret = _type(ty)
        return self

    # -- statements --
    def _emit(self, stmt: str) -> None:
        self._stack[-1].items.append(stmt)

    def let(self, name: str, value: Any, mut: bool = False) -> Expr:
        """``let [mut] name = value;``; returns the name as an expression."""
        value = _as(value, None, f"let {name}")
        self._emit(f"let {'mut ' if mut else ''}{_name(name)} = {value.text};")
        return Expr(_name(name), value.ty)

    def assign(self, name: Union[str, Expr], value: Any) -> None:
        """``name = value;`` (a ``let mut`` binding)."""
        target = name.text if isinstance(name, Expr) else _name(name)
        ty = name.ty if isinstance(name, Expr) else None
        self._emit(f"{target} = {_as(value, ty, f'the assignment to {target}').text};")

    def store(self, ty: Union[Type, str], p: Any, value: Any) -> None:
        """``store<T>(p, value);``."""
        t = _type(ty)
        p, value = _as(p, "ptr", "store()'s pointer"), _as(value, t, f"store<{t}>'s value")
        self._emit(f"store<{t}>({p.text}, {value.text});")

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
        cond = _as(cond, "bool", "assert's condition")
        self._emit(f"assert {cond.text} else {_name(kind)}({', '.join(parts)});")

    def call(self, fn: Union[Extern, str], *args: Any, dest: Optional[str] = None) -> Optional[Expr]:
        """``[let dest =] call fn(args);`` of an extern C function."""
        name = fn.name if isinstance(fn, Extern) else fn
        params = fn.params if isinstance(fn, Extern) else ()
        if params and len(args) != len(params):
            raise TypeError(f"{name} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
        typed = [
            _as(a, params[k] if params else None, f"argument #{k} of {name}")
            for k, a in enumerate(args)
        ]
        call = f"call {_name(name)}(" + ", ".join(a.text for a in typed) + ")"
        return self._bind(call, dest, fn.ret if isinstance(fn, Extern) else None)

    def call_packed(self, callee: Union[_Callee, Expr], *args: Any, dest: Optional[str] = None) -> Optional[Expr]:
        """``[let dest =] call_packed callee(args);``: ``global_``, ``import_``, ``direct`` or a
        ``func`` parameter; ``dest`` is an owned ``any``."""
        head = callee.text
        call = f"call_packed {head}(" + ", ".join(_expr(a) for a in args) + ")"
        return self._bind(call, dest)

    def _bind(self, call: str, dest: Optional[str], ty: Optional[str] = None) -> Optional[Expr]:
        if dest is None:
            self._emit(call + ";")
            return None
        self._emit(f"let {_name(dest)} = {call};")
        return Expr(_name(dest), ty)

    def get_stream(self, name: str, device_type: Any, device_id: Any) -> Expr:
        """``let name = get_stream(device_type, device_id);`` (both ``i32``)."""
        device_type = _as(device_type, "i32", "get_stream()'s device_type")
        device_id = _as(device_id, "i32", "get_stream()'s device_id")
        self._emit(f"let {_name(name)} = get_stream({device_type.text}, {device_id.text});")
        return Expr(_name(name), "ptr")

    def launch(self, binary: str, kernel: str, *args: Any, **settings: Any) -> None:
        """``launch binary.kernel[grid=(..), block=(..), ...](args);``: launches a kernel of a
        ``ModuleBuilder.device_binary`` (through the CUDA driver, or the HIP runtime for an
        ``hsaco``/``hipfb`` binary).

        The settings are keywords, the IR's (``_native.LAUNCH_SETTINGS``, which the Rust side
        owns): ``grid`` and ``block`` (required), ``cluster`` and ``preferred_cluster`` take 1
        to 3 integer expressions (or one int or expression); ``shared_mem``, ``stream``
        (default: the device's environment stream), ``device`` (default: the first CUDA, or
        ROCm, tensor parameter's device id), ``pdl`` and ``cooperative`` (bools: Python
        ``True``/``False`` or ``bool`` expressions decided at call time), ``priority`` and
        ``function`` (a ``ptr``: a kernel handle the caller loaded from the binary, launched
        as it is, see docs/ir.md; a handle known now is ``cast(ptr, lit(handle, u64))``, a
        bare int being an ``i64``) take one expression; ``cluster_policy`` takes one of its
        words (``"default"``, ``"spread"``, ``"load_balancing"``). A setting given as
        ``None`` is left out. The arguments are
        scalars and pointers (a tensor's ``.data``), passed by value, TMA descriptors
        (``tensormap(x, box=...)``) and AMD TDM descriptors (``tdm(x, block=..., warps=...)``).

        Raises
        ------
        TypeError
            An unknown setting, or ``grid`` or ``block`` missing.
        ValueError
            A keyword setting's value is not one of its words.
        """

        def dims(values: Any) -> str:
            if isinstance(values, (int, Expr)):
                values = [values]
            return "(" + ", ".join(_expr(v) for v in values) + ")"

        known = {keyword for keyword, *_ in LAUNCH_SETTINGS}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(
                f"launch() got an unexpected setting {unknown[0]!r}; the settings are "
                f"{', '.join(keyword for keyword, *_ in LAUNCH_SETTINGS)}"
            )
        text = []
        for keyword, value_shape, required, words in LAUNCH_SETTINGS:
            value = settings.get(keyword)
            if value is None:
                if required:
                    raise TypeError(f"launch() missing the required setting {keyword!r}")
                continue
            if value_shape == "dims":
                text.append(f"{keyword}={dims(value)}")
            elif value_shape == "keyword":
                if value not in words:
                    raise ValueError(f"{keyword} must be {_one_of(words)}, not {value!r}")
                text.append(f"{keyword}={value}")
            else:
                text.append(f"{keyword}={_expr(value)}")
        self._emit(
            f"launch {_name(binary)}.{_name(kernel)}[{', '.join(text)}]("
            + ", ".join(a.text if isinstance(a, TensorMap) else _expr(a) for a in args)
            + ");"
        )

    def empty(self, name: str, shape: Sequence[Any], dtype: Any, device: Any) -> TensorRef:
        """``let name = empty((d0, ...), dtype, device);``: a compact tensor from the caller's
        environment allocator (docs/ir.md, Allocating tensors). ``shape`` holds ``i64``
        expressions or ints; ``dtype`` is a dtype string or ``tvm_ffi.dtype``; ``device`` is a
        ``device`` expression (``x.device``) or a pair ``(device_type, device_id)`` of ``i32``
        expressions or ints (``(1, 0)`` is ``cpu:0``). Returns the new tensor."""
        dims = [_as(d, "i64", f"dimension {k} of empty()").text for k, d in enumerate(shape)]
        dims_text = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
        if isinstance(device, (tuple, list)):
            if len(device) != 2:
                raise ValueError(
                    f"empty()'s device is a device expression or (device_type, device_id), got {device!r}"
                )
            t = _as(device[0], "i32", "empty()'s device type")
            i = _as(device[1], "i32", "empty()'s device id")
            device_text = f"device({t.text}, {i.text})"
        else:
            device_text = _as(device, "device", "empty()'s device").text
        if str(dtype) == "any":
            raise ValueError("empty() needs a concrete dtype, not 'any'")
        self._emit(f"let {_name(name)} = empty({dims_text}, {dtype}, {device_text});")
        return TensorRef(_name(name))

    def return_(self, value: Any = None) -> None:
        """``return;``, ``return value;``, or ``return (a, b, ...);`` for a tuple or list
        ``value`` (a function whose ``returns`` is a tuple of types)."""
        if value is None:
            self._emit("return;")
            return
        if isinstance(value, (tuple, list)):
            items = [_expr(v) for v in value]
            self._emit("return (" + ", ".join(items) + ("," if len(items) == 1 else "") + ");")
            return
        ty = _body_type(self._ret) if self._ret is not None else None
        self._emit(f"return {_as(value, ty, f'the return value of {self.name}').text};")

    @contextlib.contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """``with f.if_(cond): ...``; an ``else_()`` block may follow at once."""
        block = _Block(f"if {_as(cond, 'bool', 'the condition of if_').text}")
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
        start, end, ty = _pair("for_range", start, end)
        head = f"for {_name(name)} in {start.text}..{end.text}"
        if step != 1:
            head += f" step {int(step)}"
        block = _Block(head)
        self._stack[-1].items.append(block)
        self._stack.append(block)
        try:
            yield Expr(_name(name), ty)
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


class _DeviceBinary:
    """A ``device_binary`` item: its name, format, bytes and kernel names (spelled)."""

    def __init__(self, name: str, format: str, data: bytes, kernels: List[str]):
        self.name, self.format, self.data, self.kernels = name, format, data, kernels

    def text(self, files: Optional[Dict[str, bytes]]) -> str:
        """The item; with ``files`` a dict, its bytes go there under a path the text names."""
        if files is None:
            data = f"data {_bytes(self.data)};"
        else:
            path = f"<device_binary {self.name}>"
            files[path] = self.data
            data = f"file {_string(path)};"
        return (
            f"device_binary {_name(self.name)} {{\n    format {self.format};\n    {data}\n"
            f"    kernels [{', '.join(self.kernels)}];\n}}"
        )


class ModuleBuilder:
    """Builds a module: externs, imported modules, device binaries, imports, functions. ``build()`` verifies it
    and returns a ``safecall.Module``."""

    def __init__(self, name: str):
        self.name = name
        self._prefix: Optional[str] = None
        self._externs: List[str] = []
        self._imported: List[str] = []
        self._binaries: List[_DeviceBinary] = []
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
        return Extern(name, [_type(p) for p in params], None if ret is None else _type(ret))

    def imported_module(self, label: str, kind: str, payload: bytes, imports: Sequence[str] = ()) -> None:
        """Embeds a module of ``kind`` loaded by ``ffi.Module.load_from_bytes.<kind>``."""
        lines = [f"imported_module {_name(label)} {{", f"    kind {_string(kind)};", f"    payload {_bytes(bytes(payload))};"]
        if imports:
            lines.append("    imports [" + ", ".join(_name(i) for i in imports) + "];")
        lines.append("}")
        self._imported.append("\n".join(lines))

    def device_binary(self, name: str, format: str, data: bytes, kernels: Sequence[str]) -> None:
        """Embeds a GPU binary whose ``kernels`` (entry names) ``FunctionBuilder.launch``
        launches: ``format`` ``"cubin"``, ``"fatbin"`` or ``"ptx"`` through the CUDA driver,
        ``"hsaco"`` (an AMDGPU code object) through the HIP runtime."""
        if format not in BINARY_FORMATS:
            raise ValueError(f"device binary format must be {_one_of(BINARY_FORMATS)}, not {format!r}")
        self._binaries.append(_DeviceBinary(name, format, bytes(data), [_name(k) for k in kernels]))

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
        return self._text(None)

    def _text(self, files: Optional[Dict[str, bytes]]) -> str:
        """The text; with ``files`` a dict, each device binary is a ``file`` path that the
        dict maps to its bytes (see :meth:`build`), not an inline byte string."""
        parts = [f"module {_name(self.name)};"]
        if self._prefix is not None:
            parts.append(f"system_lib_prefix {_string(self._prefix)};")
        parts.extend(self._externs)
        parts.extend(self._imported)
        parts.extend(b.text(files) for b in self._binaries)
        parts.extend(self._imports)
        parts.extend(f.text() for f in self._functions)
        return "\n\n".join(parts) + "\n"

    def build(self) -> Any:
        """Parses and verifies the module (``IRError`` when invalid).

        The device binaries go to the parser as bytes, beside the text (``safecall.parse``'s
        ``files``), not spelled as byte strings in it: a cubin of 100 KB is not escaped here
        and read back there. The module is the one ``parse(self.text())`` gives."""
        files: Dict[str, bytes] = {}
        return parse(self._text(files), f"<builder {self.name}>", files=files)
