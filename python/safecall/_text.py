"""The IR's text spellings the builder writes: names (quoted when not plain identifiers),
string and byte literals, and constants."""

from __future__ import annotations

import codecs
import math
import re
from typing import Any

from ._native import RESERVED

#: Words a name must be quoted to use: the Rust side's list (src/ir/syntax.rs).
_RESERVED = frozenset(RESERVED)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# Characters `_escape` spells differently (the quotes are checked apart).
_PLAIN = re.compile(r"[^\\\n\t\r\0\x01-\x1f\x7f]*\Z")


def _escape(text: str, quote: str) -> str:
    if quote not in text and _PLAIN.match(text):
        return text  # the common case, without a loop over the characters
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


#: Names already spelled (a launcher's IR spells each of its names several times, and the next
#: kernel's mostly the same ones); at most ``_NAMES_KEPT`` are kept.
_NAMES: dict = {}
_NAMES_KEPT = 4096


def _name(name: str) -> str:
    """A name as the text format writes it: backticks unless it is a plain identifier."""
    if type(name) is str:
        spelled = _NAMES.get(name)
        if spelled is not None:
            return spelled
    elif not isinstance(name, str):
        raise TypeError(f"a name must be a str, got {type(name).__name__}")
    spelled = name if _IDENT.match(name) and name not in _RESERVED else "`" + _escape(name, "`") + "`"
    if type(name) is str and len(_NAMES) < _NAMES_KEPT:
        _NAMES[name] = spelled
    return spelled


def _string(text: str) -> str:
    return '"' + _escape(text, '"') + '"'


def _bytes(data: bytes) -> str:
    """A byte-string literal: ``codecs.escape_encode`` spells printable ASCII as itself and the
    rest as ``\\xNN``, ``\\n``, ``\\t``, ``\\r``, ``\\\\`` and ``\\'`` (all escapes the lexer reads);
    only ``"`` needs escaping on top. It runs in C: a cubin of kilobytes takes microseconds."""
    return 'b"' + codecs.escape_encode(bytes(data))[0].decode("ascii").replace('"', '\\"') + '"'


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

