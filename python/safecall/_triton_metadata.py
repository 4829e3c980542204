"""The packed metadata Triton passes each launcher call (``CompiledKernel.packed_metadata``:
``num_warps``, ``num_ctas``, shared memory, as the kernel's backend packs them).

Triton's launchers launch with the tuple they are given; safecall's host functions hold the
kernel's own values. So a launcher call passing other values is refused (never launched with
the kernel's values in silence): a ``TypeError`` for what Triton's argument parsing refuses
too (3.6's ``PyArg_ParseTuple(kernel_metadata, "iii")`` wants a tuple, 3.7+'s ``(iii)`` a
sequence of the length; each item an ``int``) and for sequences other than tuples and lists, a
``ValueError`` for other values. The native launcher calls :class:`PackedMetadataCheck` for
what is not the object it last accepted."""

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


class PackedMetadataCheck:
    """``check(given)`` raises unless ``given`` may be launched with (see the module's docs);
    the first exact tuple it accepts is remembered, so that later calls with that object
    (``CompiledKernel.packed_metadata``) cost one comparison."""

    __slots__ = ("expected", "name", "lists", "seen")

    def __init__(self, expected: Optional[Tuple[Any, ...]], name: str, minor: Tuple[int, int]):
        self.expected, self.name = expected, name
        #: Whether a list is taken (Triton 3.7+'s ``(iii)`` takes any sequence; 3.6 a tuple).
        self.lists = minor >= (3, 7)
        self.seen: Any = None

    def __call__(self, given: Any) -> None:
        expected = self.expected
        if expected is None or given is self.seen:
            return
        if (isinstance(given, tuple) or (self.lists and isinstance(given, list))) and len(given) == len(expected) \
                and all(isinstance(v, int) for v in given):
            if tuple(given) != expected:
                raise ValueError(
                    f"kernel `{self.name}`: safecall's launcher launches with the kernel's own packed metadata "
                    f"{expected} (num_warps, num_ctas, shared memory); got {tuple(given)}"
                )
            if type(given) is tuple:
                self.seen = given
            return
        kinds = "a tuple or list" if self.lists else "a tuple"
        raise TypeError(
            f"kernel `{self.name}`: the packed metadata must be {kinds} of {len(expected)} ints, as "
            f"CompiledKernel.packed_metadata; got {type(given).__name__}"
        )
