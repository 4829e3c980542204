"""How each Triton release reads an integer argument of a kernel, for the installed driver's
launchers (``_triton_launcher``): the rule codes the native launcher
(:class:`safecall._native.TritonLaunch`) takes, their fast ranges, and the Python rule for
every other value (:func:`_integer_slow`)."""

from __future__ import annotations

import operator
from typing import Any, List, Tuple


def _u64(value: int) -> int:
    """``value`` if it is 0 to 2^64 - 1, else the ``OverflowError`` of CPython's
    ``PyLong_AsUnsignedLongLong`` (as the native launcher raises it)."""
    if value < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if value >> 64:
        raise OverflowError("int too big to convert")
    return value


def _integer(rule: int, value: Any, out: List[Any]) -> None:
    """An integer argument by its rule (:data:`_INTEGER_RULES`): the bits to pass, or the
    release's error."""
    lo, hi = _FAST_RANGES[rule]
    out.append(value if type(value) is int and lo <= value <= hi else _integer_slow(rule, value))


#: How each Triton release reads an integer argument, by type -> rule code (``_integer_slow``):
#: 3.7+ call ``PyLong_AsLong`` and friends and cast (truncating); 3.6's generated launcher
#: parses them with ``PyArg_ParseTuple`` formats (``b h i L`` check ranges, ``B H I K`` mask;
#: ``K``, its ``u64``, takes only an ``int``, where ``B H I`` take an object with ``__index__``).
_INTEGER_RULES = {
    "3.7+": {
        **{t: 10 for t in ("i1", "i8", "i16", "i32")},
        "i64": 11,
        **{t: 12 for t in ("u1", "u8", "u16", "u32")},
        "u64": 13,
    },
    "3.6": {
        "i1": 14, "i8": 14, "i16": 15, "i32": 16, "i64": 11,
        **{t: 17 for t in ("u1", "u8", "u16", "u32")},
        "u64": 18,
    },
}


def _grid_dim(value: Any) -> int:
    """A grid dimension as every Triton release's launcher parses it (``PyArg_ParseTuple``'s
    ``i``: ``PyLong_AsLong``, then an ``OverflowError`` beyond a C ``int``)."""
    lo, hi = _FAST_RANGES[16]
    return value if type(value) is int and lo <= value <= hi else _integer_slow(16, value)


def c_type_name(value: Any) -> str:
    """The type's name as CPython's argument parser words it: ``None`` for ``None``, a C type's
    ``tp_name`` (``numpy.int64``: module and name), a class's name."""
    if value is None:
        return "None"
    t = type(value)
    heap = t.__flags__ & (1 << 9)  # Py_TPFLAGS_HEAPTYPE: tp_name is the bare name
    return t.__name__ if heap or t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def parsed_int(value: Any) -> int:
    """``value`` as ``PyArg_ParseTuple``'s ``i`` format reads it (a C ``int``), with its errors:
    the ``utils`` entry points' device numbers and sizes, as Triton's ``driver.c`` parses them."""
    return _grid_dim(value)


def parsed_long(value: Any) -> int:
    """``value`` as the ``l`` format reads it (a C ``long``, ``PyLong_AsLong``)."""
    lo, hi = _I64
    return value if type(value) is int and lo <= value <= hi else _integer_slow(10, value)


def parsed_handle(value: Any) -> int:
    """``value`` as the ``K`` format reads it (``unsigned long long``, masked; an ``int``
    only): the ``utils`` entry points' module, function and stream handles."""
    return value if type(value) is int and 0 <= value <= _U64_MASK else _integer_slow(18, value) & _U64_MASK


def _integer_rule(ty: str, minor: Tuple[int, int]) -> int:
    return _INTEGER_RULES["3.6" if minor < (3, 7) else "3.7+"][ty]


_U64_MASK = (1 << 64) - 1
_I64 = (-(1 << 63), (1 << 63) - 1)
#: Rule code -> the values passed as they are (the native launcher's fast ranges too).
_FAST_RANGES = {10: _I64, 11: _I64, 12: (0, _I64[1]), 13: (0, _I64[1]), 14: (0, 255),
                15: (-(1 << 15), (1 << 15) - 1), 16: (-(1 << 31), (1 << 31) - 1), 17: _I64, 18: _I64}
#: Rule code -> (lowest, highest, message below, message above) for the range-checked rules.
_RANGES = {
    10: (*_I64, "Python int too large to convert to C long", "Python int too large to convert to C long"),
    11: (*_I64, "int too big to convert", "int too big to convert"),
    12: (0, _U64_MASK, "can't convert negative value to unsigned int", "Python int too large to convert to C unsigned long"),
    13: (0, _U64_MASK, "can't convert negative int to unsigned", "int too big to convert"),
    14: (0, 255, "unsigned byte integer is less than minimum", "unsigned byte integer is greater than maximum"),
    15: (-(1 << 15), (1 << 15) - 1, "signed short integer is less than minimum", "signed short integer is greater than maximum"),
    16: (-(1 << 31), (1 << 31) - 1, "signed integer is less than minimum", "signed integer is greater than maximum"),
}


def _integer_slow(rule: int, value: Any) -> int:
    """An integer argument outside its rule's fast range, read as Triton's extractor reads it:
    the 64 bits to pass (as a signed ``int``), or that extractor's error: ``OverflowError``
    out of range; ``TypeError`` for what is not an integer (``PyLong_AsUnsignedLong`` and
    ``PyLong_AsUnsignedLongLong``, 3.7+'s unsigned readers, and 3.6's ``K`` format take only
    ``int``s; the others an object with ``__index__`` too). The ``K`` format's message is
    CPython's without the argument's position (``argument 5 must be int, not X`` there): the
    type of the error is Triton's, its text close."""
    if rule in (12, 13) and not isinstance(value, int):
        raise TypeError("an integer is required")
    if rule == 18 and not isinstance(value, int):
        raise TypeError(f"argument must be int, not {c_type_name(value)}")
    v = operator.index(value)
    if rule in (17, 18):
        bits = v & _U64_MASK
    else:
        lo, hi, below, above = _RANGES[rule]
        if rule in (14, 15, 16) and not _I64[0] <= v <= _I64[1]:
            raise OverflowError("Python int too large to convert to C long")
        if v < lo:
            raise OverflowError(below)
        if v > hi:
            raise OverflowError(above)
        bits = v & _U64_MASK
    return bits - (1 << 64) if bits > _I64[1] else bits
