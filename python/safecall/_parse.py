"""``safecall.parse``: IR text to a verified module. A leaf of the package: the builder
(``ModuleBuilder.build``) and the entry points (``_compile``) both import it."""

from __future__ import annotations

from typing import Mapping, Optional

from . import _native
from ._native import Module

__all__ = ["parse"]


def parse(
    text: str, file: str = "<string>", *, files: Optional[Mapping[str, bytes]] = None
) -> Module:
    """Parses and verifies IR text (docs/ir.md). When ``file`` names an existing file,
    ``file "..."`` paths of device binaries are read relative to its directory.

    ``files`` maps ``file "..."`` paths to their bytes, served from memory before the disk:
    a device binary held in Python reaches the parser as it is, not as an escaped byte string
    in the text (``ModuleBuilder.build`` passes its binaries so).

    Invalid IR raises :class:`IRError`: its message is the rendered diagnostics (file, line,
    caret, note) and ``errors`` holds each one as a :class:`Diagnostic`.
    """
    if files is None:
        return _native.parse(text, file)
    return _native.parse(text, file, {path: bytes(data) for path, data in files.items()})
