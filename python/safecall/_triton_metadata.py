"""The packed metadata Triton passes each launcher call (``CompiledKernel.packed_metadata``:
``num_warps``, ``num_ctas``, shared memory, as the kernel's backend packs them).

Triton's launchers launch with the tuple they are given; safecall's host functions hold the
kernel's own values. So a launcher call passing other values is refused (never launched with
the kernel's values in silence): a ``TypeError`` for what is no tuple (or list) of the same length, as
Triton's argument parsing raises it, a ``ValueError`` for other values."""

from __future__ import annotations

from typing import Any, Optional, Tuple


def packed_metadata(metadata: Any) -> Optional[Tuple[Any, ...]]:
    """The kernel's packed metadata, as ``CompiledKernel`` packs it
    (``make_backend(metadata.target).pack_metadata(metadata)``); None where that cannot be
    made (a stand-in ``metadata`` without a target)."""
    try:
        from triton.compiler.compiler import make_backend

        packed = make_backend(metadata.target).pack_metadata(metadata)
    except (AttributeError, KeyError, RuntimeError, TypeError, ImportError):
        return None
    return tuple(packed)


def check_packed_metadata(given: Any, expected: Optional[Tuple[Any, ...]], name: str) -> None:
    """Raises unless ``given`` is ``expected`` or equal to it (see the module's docs)."""
    if expected is None or given is expected:
        return
    # A list as a tuple (Triton's ``(iii)`` parsing takes any sequence of the length).
    if isinstance(given, (tuple, list)) and len(given) == len(expected):
        if tuple(given) == expected:
            return
        raise ValueError(
            f"kernel `{name}`: safecall's launcher launches with the kernel's own packed metadata "
            f"{expected} (num_warps, num_ctas, shared memory, ...); got {given}"
        )
    raise TypeError(
        f"kernel `{name}`: the packed metadata must be a tuple (or list) of {len(expected)} items, as "
        f"CompiledKernel.packed_metadata; got {type(given).__name__}"
    )
