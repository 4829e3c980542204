"""``tensormap(x, box=(..), ...)`` and ``tensormap_im2col(x, ...)``: TMA descriptor arguments of
``FunctionBuilder.launch`` (docs/ir.md, "TMA descriptors"); ``tdm(x, block=(..), warps=W)``,
AMD's TDM descriptor argument ("TDM descriptors")."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ._expr import Expr, TensorRef, _expr

#: What an option takes: a keyword of the IR (``"b128"``), a byte count (``128``), or None.
OptionLike = Union[str, int, None]


class TensorMap:
    """A ``tensormap(..)`` launch argument; pass it among ``FunctionBuilder.launch``'s args."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        #: The IR spelling.
        self.text = text

    def __repr__(self) -> str:
        return f"TensorMap({self.text!r})"


def _dims(values: Union[Sequence[Any], Any]) -> str:
    if isinstance(values, (int, Expr)):
        values = [values]
    return "(" + ", ".join(_expr(v) for v in values) + ")"


def _word(key: str, value: OptionLike) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"tensormap {key}= takes a keyword or a byte count, not {value!r}")
    # Byte counts are the IR's `bN` keywords (`swizzle=128` is `swizzle=b128`).
    return f"b{value}" if isinstance(value, int) else value


def _options(
    element_strides: Optional[Sequence[Any]],
    interleave: OptionLike,
    swizzle: OptionLike,
    l2_promotion: OptionLike,
    oob_fill: Optional[str],
    dtype: Optional[str],
) -> list:
    parts = []
    if element_strides is not None:
        parts.append(f"element_strides={_dims(element_strides)}")
    for key, value in (
        ("interleave", interleave),
        ("swizzle", swizzle),
        ("l2_promotion", l2_promotion),
        ("oob_fill", oob_fill),
        ("dtype", dtype),
    ):
        word = _word(key, value)
        if word is not None:
            parts.append(f"{key}={word}")
    return parts


def tensormap(
    tensor: TensorRef,
    *,
    box: Sequence[Any],
    element_strides: Optional[Sequence[Any]] = None,
    interleave: OptionLike = None,
    swizzle: OptionLike = None,
    l2_promotion: OptionLike = None,
    oob_fill: Optional[str] = None,
    dtype: Optional[str] = None,
) -> TensorMap:
    """A TMA descriptor (``CUtensorMap``) of a tensor parameter, built by the host function
    with ``cuTensorMapEncodeTiled`` and passed to the kernel by value.

    Parameters
    ----------
    tensor : TensorRef
        The tensor parameter (from ``FunctionBuilder.param``).
    box : sequence of int or Expr
        The tile extent of each dimension, outermost first.
    element_strides : sequence of int or Expr, optional
        The traversal stride of each dimension (all 1 by default).
    interleave, swizzle, l2_promotion : str or int, optional
        The IR keyword (``"b128"``, ``"b128_atom32"``, ``"none"``) or a byte count (``128``).
    oob_fill : str, optional
        ``"none"`` or ``"nan"``.
    dtype : str, optional
        The descriptor's element type when the tensor's dtype cannot say it (``"tf32"``; the
        packed ``"u4x16_align8"``, ``"u4x16_align16"``, ``"u6x16_align16"`` over a tensor of
        bytes, whose innermost extent counts bytes: docs/ir.md, "Packed element types").

    Returns
    -------
    TensorMap
        The argument; the IR's parser checks the keywords, the verifier the rules.

    Raises
    ------
    TypeError
        When ``tensor`` is not a tensor parameter or an option is neither a keyword nor an int.

    Examples
    --------
    >>> import safecall as sc
    >>> m = sc.ModuleBuilder("tma")
    >>> f = m.function("copy")
    >>> x = f.param("x", sc.tensor(["m", "n"], "float16", device="cuda"))
    >>> sc.tensormap(x, box=(64, 64), swizzle=128).text
    'tensormap(x, box=(64, 64), swizzle=b128)'
    """
    if not isinstance(tensor, TensorRef):
        raise TypeError(f"tensormap takes a tensor parameter, not {tensor!r}")
    parts = [tensor.text, f"box={_dims(box)}"]
    parts += _options(element_strides, interleave, swizzle, l2_promotion, oob_fill, dtype)
    return TensorMap(f"tensormap({', '.join(parts)})")


def tensormap_im2col(
    tensor: TensorRef,
    *,
    lower: Sequence[Any],
    upper: Sequence[Any],
    channels: Any,
    pixels: Any,
    element_strides: Optional[Sequence[Any]] = None,
    interleave: OptionLike = None,
    swizzle: OptionLike = None,
    l2_promotion: OptionLike = None,
    oob_fill: Optional[str] = None,
    dtype: Optional[str] = None,
) -> TensorMap:
    """An im2col TMA descriptor of a tensor parameter of rank 3 to 5 (N, spatial dims, C),
    built with ``cuTensorMapEncodeIm2col``.

    Parameters
    ----------
    tensor : TensorRef
        The tensor parameter.
    lower, upper : sequence of int or Expr
        The pixel box's corner offsets, one per spatial dimension, outermost first.
    channels, pixels : int or Expr
        Channels per pixel and pixels per column.
    element_strides, interleave, swizzle, l2_promotion, oob_fill, dtype
        As for :func:`tensormap`.

    Returns
    -------
    TensorMap
        The argument.

    Raises
    ------
    TypeError
        When ``tensor`` is not a tensor parameter or an option is neither a keyword nor an int.

    Examples
    --------
    >>> import safecall as sc
    >>> m = sc.ModuleBuilder("conv")
    >>> f = m.function("conv")
    >>> x = f.param("x", sc.tensor(["n", "h", "w", "c"], "float16", device="cuda"))
    >>> sc.tensormap_im2col(x, lower=(-1, -1), upper=(1, 1), channels=64, pixels=128).text
    'tensormap_im2col(x, lower=(-1, -1), upper=(1, 1), channels=64, pixels=128)'
    """
    if not isinstance(tensor, TensorRef):
        raise TypeError(f"tensormap_im2col takes a tensor parameter, not {tensor!r}")
    parts = [
        tensor.text,
        f"lower={_dims(lower)}",
        f"upper={_dims(upper)}",
        f"channels={_expr(channels)}",
        f"pixels={_expr(pixels)}",
    ]
    parts += _options(element_strides, interleave, swizzle, l2_promotion, oob_fill, dtype)
    return TensorMap(f"tensormap_im2col({', '.join(parts)})")


def _literal(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"tdm {key} takes non-negative ints (what the kernel was compiled with), not {value!r}")
    return str(value)


def tdm(
    tensor: TensorRef,
    *,
    block: Sequence[int],
    warps: int,
    pad: Optional[Sequence[int]] = None,
) -> TensorMap:
    """An AMD TDM (tensor data mover) descriptor of a tensor parameter, for gfx1250 kernels:
    built by the host function as Triton 3.9's AMD launcher builds it and passed by value (48
    bytes for a tensor of rank 1 or 2, 80 for rank 3 to 5; docs/ir.md, "TDM descriptors").

    Parameters
    ----------
    tensor : TensorRef
        The tensor parameter (rank 1 to 5, 8- to 64-bit elements; ``device="rocm"``).
    block : sequence of int
        The kernel's block extent per dimension, outermost first.
    warps : int
        The warps the kernel was compiled for (each gets its share of the block).
    pad : (int, int), optional
        The shared-memory padding ``(interval, amount)`` in elements.

    Returns
    -------
    TensorMap
        The argument (the same launch-argument type as :func:`tensormap`'s); the verifier
        checks it against the tensor and the kernel's parameter.

    Raises
    ------
    TypeError
        When ``tensor`` is not a tensor parameter or a value is not a non-negative int.

    Examples
    --------
    >>> import safecall as sc
    >>> m = sc.ModuleBuilder("amd")
    >>> f = m.function("load")
    >>> x = f.param("x", sc.tensor(["m", "n"], "float16", device="rocm"))
    >>> sc.tdm(x, block=(64, 64), warps=4, pad=(64, 8)).text
    'tdm(x, block=(64, 64), warps=4, pad=(64, 8))'
    """
    if not isinstance(tensor, TensorRef):
        raise TypeError(f"tdm takes a tensor parameter, not {tensor!r}")
    if isinstance(block, int):
        block = [block]
    parts = [
        tensor.text,
        "block=(" + ", ".join(_literal("block", b) for b in block) + ")",
        f"warps={_literal('warps', warps)}",
    ]
    if pad is not None:
        parts.append("pad=(" + ", ".join(_literal("pad", p) for p in pad) + ")")
    return TensorMap(f"tdm({', '.join(parts)})")
