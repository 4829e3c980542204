"""The kernel arguments a Triton launch builds beyond the user's values: pointer dtypes, host
tensor descriptors (TMA on CUDA, TDM on AMD) and the two trailing scratch pointers, each as Triton 3.9's launcher
builds them (the facts in :data:`safecall._triton_abi.TRITON_ABI`)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from . import builder as ir
from ._dlpack import DTYPES
from ._native import triton_descriptor_ir
from ._triton_abi import TRITON_ABI, Kernel, UnsupportedKernelError


def pointee(kernel: Kernel, arg: str, ty: str, check_dtypes: bool) -> str:
    """The DLPack dtype a pointer ``*DTYPE`` argument's tensor must have (``"any"`` unchecked)."""
    if not check_dtypes:
        return "any"
    elem = ty[len(TRITON_ABI.pointer_prefix) :]
    dtype = TRITON_ABI.pointee_dtypes.get(elem)
    if dtype is None:
        raise UnsupportedKernelError(
            f"kernel `{kernel.name}`: argument '{arg}' points to `{elem}`, which has no DLPack "
            f"dtype; supported: {', '.join(TRITON_ABI.pointee_dtypes)} (or check_dtypes=False)"
        )
    return dtype


#: The smallest magnitude an ``fp16`` rounds to infinity from (the largest finite half, 65504,
#: plus half a unit in its last place: the tie rounds to even, which is infinity).
_FP16_OVERFLOW = 65520.0


def fp16_argument(f: ir.FunctionBuilder, arg: str, position: int) -> Any:
    """An ``fp16`` scalar parameter: taken as an ``f64`` and rounded to the nearest half once,
    ties to even (what an ``f16`` parameter does), refusing a finite value that rounds to
    infinity with a ``ValueError``, as Triton's launcher refuses it (``PyFloat_Pack2`` raises
    ``OverflowError``); infinities and NaNs pass. Returns the half to pass."""
    value = f.param(arg, ir.f64)
    fits = ir.and_(value < _FP16_OVERFLOW, value > -_FP16_OVERFLOW)
    not_finite = ir.or_(ir.or_(value == float("inf"), value == float("-inf")), value != value)
    f.assert_(
        ir.or_(fits, not_finite),
        "ValueError",
        f"{f.name}: argument '{arg}' (#{position}): ",
        value,
        " is out of range for fp16: it rounds to infinity (the largest finite fp16 is 65504; "
        "Triton's launcher refuses it too)",
    )
    return ir.cast(ir.f16, value)


#: A tiled descriptor's signature type (``tensordesc<fp16[64, 64]>``, Gluon's with a layout
#: after the block) and an im2col one's, compiled once.
_TILED_TYPE = re.compile(re.escape(TRITON_ABI.tensor_descriptor.prefix) + r"<([A-Za-z0-9]+)\[([0-9, ]+)\](,.*)?>")
_IM2COL_TYPE = re.compile(
    re.escape(TRITON_ABI.tensor_descriptor.im2col_prefix) + r"<([A-Za-z0-9]+)\[([0-9, ]+)\],input_rank=([0-9]+)(,.*)?>"
)


def is_im2col(ty: str, entry: Mapping[str, Any]) -> bool:
    """Whether a host descriptor argument is an im2col one (Gluon's ``TensorDescriptorIm2Col``)."""
    return ty.startswith(TRITON_ABI.tensor_descriptor.im2col_prefix) or bool(entry.get("is_im2col"))


def descriptor_type(kernel: Kernel, arg: str, ty: str, entry: Mapping[str, Any]) -> Tuple[str, int, str]:
    """A host tensor descriptor's (DLPack dtype, rank, the IR's ``tensormap`` dtype word), from
    its signature type (``tensordesc<fp16[64, 64]>``, Gluon's ``tensordesc<fp16[64, 64],LAYOUT>``,
    or ``tensordesc_im2col<fp16[64, 32],input_rank=4,...>``) and ``tensordesc_meta`` entry;
    refuses the kinds the adapter does not build."""
    table = TRITON_ABI.tensor_descriptor
    what = f"kernel `{kernel.name}`: argument '{arg}' ({ty})"
    if is_im2col(ty, entry):
        match = _IM2COL_TYPE.fullmatch(ty)
        if match is None or not entry.get("is_im2col") or len(entry["block_size"]) != 2:
            raise UnsupportedKernelError(
                f"{what}: not an im2col descriptor `{table.im2col_prefix}<DTYPE[PIXELS, CHANNELS],input_rank=N,...>` "
                "with a two-entry block_size and is_im2col in its tensordesc_meta entry"
            )
        rank = int(match.group(3))
    else:
        # Gluon's descriptors add their shared-memory layout after the block
        # (`tensordesc<fp16[64, 32],NVMMASharedLayout(...)>`); the `tensordesc_meta` entry says
        # how the map is encoded, as for Triton's own.
        match = _TILED_TYPE.fullmatch(ty)
        if match is None:
            raise UnsupportedKernelError(f"{what}: not a tiled descriptor type `{table.prefix}<DTYPE[BLOCK, ...]>`")
        rank = len(match.group(2).split(","))
    if entry.get("fp4_padded"):
        raise UnsupportedKernelError(f"{what}: padded fp4 descriptors are not supported")
    element = match.group(1)
    if not is_im2col(ty, entry) and len(entry["block_size"]) != rank:
        raise UnsupportedKernelError(f"{what}: block_size {entry['block_size']} does not have rank {rank}")
    code = table.device_to_host_element_type.get(entry["elem_type"], entry["elem_type"])
    if entry["swizzle"] not in table.swizzle or not 0 <= code < len(table.element_types):
        raise UnsupportedKernelError(
            f"{what}: unknown swizzle {entry['swizzle']} or element type {entry['elem_type']}"
        )
    return pointee(kernel, arg, TRITON_ABI.pointer_prefix + element, True), rank, table.element_types[code]


def tdm_descriptor_type(kernel: Kernel, arg: str, ty: str, entry: Mapping[str, Any]) -> Tuple[str, int, Optional[Tuple[int, int]]]:
    """An AMD TDM descriptor's (DLPack dtype, rank, padding ``(interval, amount)`` or None),
    from its signature type (``tensordesc<fp16[64, 64]>``) and ``tensordesc_meta`` entry
    (``block_size``, ``elem_bits``, ``interval_padding_pairs``: Triton's AMD
    ``make_tensordesc_arg`` takes at most one pair). A shared-memory layout after the block
    (Gluon's ``tensordesc<fp16[64, 64],PaddedSharedLayout(...)>``) changes nothing of what is
    passed: the entry says how the descriptor is built."""
    table = TRITON_ABI.tensor_descriptor
    what = f"kernel `{kernel.name}`: argument '{arg}' ({ty})"
    match = _TILED_TYPE.fullmatch(ty)
    if match is None:
        raise UnsupportedKernelError(f"{what}: not a tiled descriptor type `{table.prefix}<DTYPE[BLOCK, ...]>`")
    rank = len(match.group(2).split(","))
    dtype = pointee(kernel, arg, TRITON_ABI.pointer_prefix + match.group(1), True)
    block = list(entry.get("block_size") or [])
    if len(block) != rank:
        raise UnsupportedKernelError(f"{what}: block_size {block} does not have rank {rank}")
    if entry.get("elem_bits") != DTYPES[dtype][1]:
        raise UnsupportedKernelError(f"{what}: elem_bits {entry.get('elem_bits')} is not the size of {dtype}")
    pairs = [list(p) for p in entry.get("interval_padding_pairs") or []]
    if len(pairs) > 1 or any(len(p) != 2 for p in pairs):
        raise UnsupportedKernelError(f"{what}: interval_padding_pairs {pairs}: Triton's AMD launcher takes at most one pair")
    return dtype, rank, (int(pairs[0][0]), int(pairs[0][1])) if pairs else None


def check_descriptor_options(k: Kernel, options: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """The ``descriptors=`` option checked: descriptor arguments of ``k`` -> the
    ``TensorDescriptor`` fields their tensors cannot say (``padding``, ``round_f32_to_tf32``,
    and an im2col descriptor's corners and element strides, which it must be given)."""
    table = TRITON_ABI.tensor_descriptor
    out: Dict[str, Dict[str, Any]] = {}
    im2col = {arg for arg, ty in k.signature.items() if ty.startswith(table.im2col_prefix)}
    missing = sorted(im2col - set(options))
    if missing:
        raise ValueError(
            f"kernel `{k.name}`: im2col descriptor argument {missing[0]!r} needs descriptors={{{missing[0]!r}: "
            "{'pixel_box_lower_corner': [...], 'pixel_box_upper_corner': [...]}}"
        )
    for arg, fields in options.items():
        ty = k.signature.get(arg, "")
        if not ty.startswith(table.prefix):
            raise ValueError(f"descriptors={{{arg!r}: ...}}: kernel `{k.name}` has no tensor descriptor argument {arg!r}")
        allowed = list(table.fields) + (list(table.im2col_fields) if arg in im2col else [])
        unknown = sorted(set(fields) - set(allowed))
        if unknown:
            raise ValueError(f"descriptors[{arg!r}]: unknown field {unknown[0]!r}; supported: {', '.join(allowed)}")
        padding = fields.get("padding", "zero")
        if padding not in table.fields["padding"]:
            raise ValueError(f"descriptors[{arg!r}]: padding={padding!r}, expected 'zero' or 'nan'")
        out[arg] = {"padding": padding, "round_f32_to_tf32": bool(fields.get("round_f32_to_tf32", False))}
        if arg in im2col:
            lower, upper, strides = table.im2col_fields
            for corner in (lower, upper):
                if corner not in fields:
                    raise ValueError(f"descriptors[{arg!r}]: an im2col descriptor needs {corner!r}")
            out[arg].update({name: fields.get(name) for name in table.im2col_fields})
            if out[arg][strides] is None:
                del out[arg][strides]
    return out


class TensorMapSpec(NamedTuple):
    """What a host TMA descriptor argument's IR is built from (:func:`descriptor_spec`): the
    tensor's DLPack dtype, rank and device, the ``tensormap(..)`` words (the box, empty for an
    im2col one), ``im2col`` None or ``(lower, upper, channels, pixels, element_strides or
    None)``, and the type Triton passes the shape as. ``kind`` tags it for the native
    builder."""

    kind: str
    dtype: str
    rank: int
    device: str
    box: List[int]
    swizzle: str
    l2_promotion: str
    oob_fill: str
    element: str
    im2col: Optional[Tuple[Any, ...]]
    shape_type: str


class TdmSpec(NamedTuple):
    """What an AMD TDM descriptor argument's IR is built from (:func:`descriptor_spec`): the
    tensor's DLPack dtype, rank and device, the ``tdm(..)`` block, warps and padding, and the
    type Triton passes the shape as."""

    kind: str
    dtype: str
    rank: int
    device: str
    block: List[int]
    warps: int
    pad: Optional[Tuple[int, int]]
    shape_type: str


def descriptor_spec(
    k: Kernel, arg: str, ty: str, entry: Mapping[str, Any], fields: Mapping[str, Any]
) -> Any:
    """What a host descriptor argument's IR is built from, checked (the kinds the adapter does
    not build refused, a dim name ``<arg>_dim<i>`` that another argument of ``k`` has): a
    :class:`TensorMapSpec`, or on AMD a :class:`TdmSpec`, whose words are the IR's
    (``tensormap(..)``'s and ``tdm(..)``'s). :func:`descriptor_argument` builds the IR of a spec
    with the Python builder (``safecall.triton.function``),
    ``safecall._native.triton_launch_module`` natively (the installed driver's launches)."""
    table = TRITON_ABI.tensor_descriptor
    device = TRITON_ABI.backends[k.backend].device
    shape_type = str(table.shape[0])
    if k.backend == "hip":
        # `padding` and `round_f32_to_tf32` have no TDM field: Triton's AMD launcher ignores
        # them, and so does this one.
        dtype, rank, pad = tdm_descriptor_type(k, arg, ty, entry)
        _check_dims_free(k, arg, rank)
        block = [int(b) for b in entry["block_size"]]
        return TdmSpec("tdm", dtype, rank, device, block, int(k.metadata["num_warps"]), pad, shape_type)
    dtype, rank, element = descriptor_type(k, arg, ty, entry)
    if fields.get("round_f32_to_tf32"):
        if dtype != "float32":
            raise ValueError(f"descriptors[{arg!r}]: round_f32_to_tf32 needs a float32 descriptor, not {ty}")
        element = table.tf32_element_type
    if fields.get("padding") == "nan" and not dtype.startswith(("float", "bfloat")):
        raise ValueError(f"descriptors[{arg!r}]: padding='nan' needs a floating-point descriptor, not {ty}")
    _check_dims_free(k, arg, rank)
    im2col = _im2col_spec(arg, rank, entry, fields) if is_im2col(ty, entry) else None
    box = [] if im2col else [int(b) for b in entry["block_size"]]
    fill = table.fields["padding"][fields.get("padding", "zero")]
    return TensorMapSpec("tensormap", dtype, rank, device, box, table.swizzle[entry["swizzle"]], table.l2_promotion,
                         fill, element, im2col, shape_type)


def descriptor_argument(
    f: ir.FunctionBuilder,
    k: Kernel,
    arg: str,
    ty: str,
    entry: Mapping[str, Any],
    fields: Mapping[str, Any],
    checked: bool = False,
) -> Tuple[Any, List[Any]]:
    """A descriptor parameter: a CUDA tensor of the descriptor's dtype and rank (any strides),
    and the kernel arguments Triton passes for it: the ``tensormap`` built as Triton builds it
    (with the ``TensorDescriptor`` ``fields`` of :func:`check_descriptor_options`), the shape
    as ``i32``s (checked to fit) and the strides as ``i64``s; on AMD the TDM descriptor (see
    :func:`descriptor_spec`). ``checked``: an AMD descriptor's tensor is checked as Triton's
    ``TensorDescriptor`` checks its fields (``safecall.triton.function``, whose callers pass
    tensors, not descriptors; a CUDA descriptor's encoder checks these itself)."""
    spec = descriptor_spec(k, arg, ty, entry, fields)
    # The IR is built natively, by the code that builds the installed driver's launches, and
    # spliced here as text: a descriptor's IR has one owner.
    param, checks, (first, *rest) = triton_descriptor_ir(spec, arg, f.name)
    t = f.param(arg, param)
    if checked and isinstance(spec, TdmSpec):
        _check_as_tensor_descriptor(f, t, arg, spec.rank, DTYPES[spec.dtype][1] // 8)
    for check in checks:
        f._emit(check.rstrip("\n"))
    table = TRITON_ABI.tensor_descriptor
    types = [str(table.shape[0])] * spec.rank + [str(table.strides[0])] * spec.rank
    return t, [ir.TensorMap(first), *(ir.Expr(text, ty) for text, ty in zip(rest, types))]


def _check_as_tensor_descriptor(f: ir.FunctionBuilder, t: Any, arg: str, rank: int, size: int) -> None:
    """What Triton's ``TensorDescriptor`` asserts of its fields (the IR's ``tdm`` checks that
    the innermost dimension is contiguous), as ``ValueError``s: the base address aligned to 16
    bytes, every outer stride a multiple of 16 bytes, every dim positive."""
    where = f"{f.name}: argument '{arg}'"
    zero = ir.lit(0, ir.i64)
    address = ir.cast(ir.u64, ir.offset(t.data, ir.cast(ir.i64, t.byte_offset)))
    f.assert_(
        address % ir.lit(16, ir.u64) == ir.lit(0, ir.u64),
        "ValueError",
        f"{where}: the base address ",
        address,
        " is not aligned to 16 bytes, as Triton's TensorDescriptor requires",
    )
    for i in range(rank - 1):
        f.assert_(
            (t.strides[i] * ir.lit(size, ir.i64)) % ir.lit(16, ir.i64) == zero,
            "ValueError",
            f"{where}: strides[{i}] is ",
            t.strides[i],
            f" elements of {size} bytes, not a multiple of 16 bytes, as Triton's TensorDescriptor requires",
        )
    for i in range(rank):
        f.assert_(
            t.shape[i] > zero,
            "ValueError",
            f"{where}: shape[{i}] is 0; Triton's TensorDescriptor requires every dim to be positive",
        )


def _check_dims_free(k: Kernel, arg: str, rank: int) -> None:
    """Refuses a kernel with an argument named as a dim of descriptor ``arg``'s tensor
    (``<arg>_dim<i>``)."""
    clash = [d for d in (f"{arg}_dim{i}" for i in range(rank)) if d in k.signature]
    if clash:
        raise UnsupportedKernelError(
            f"kernel `{k.name}`: argument {clash[0]!r} clashes with the shape of '{arg}'"
        )


def _im2col_spec(arg: str, rank: int, entry: Mapping[str, Any], fields: Mapping[str, Any]) -> Tuple[Any, ...]:
    """What the ``tensormap_im2col`` of an im2col descriptor is built from: its corners and
    element strides (from ``fields``, as ``TensorDescriptorIm2Col`` names them), channels per
    pixel and pixels per column from ``block_size`` (``[pixels, channels]``), as
    ``fillTMADescriptorIm2col``: ``(lower, upper, channels, pixels, element_strides or None)``."""
    lower_name, upper_name, strides_name = TRITON_ABI.tensor_descriptor.im2col_fields

    def ints(name: str, n: int) -> List[int]:
        values = fields.get(name)
        try:
            out = [int(v) for v in values]  # type: ignore[union-attr]
        except TypeError:
            raise ValueError(f"descriptors[{arg!r}]: {name}={values!r}, expected {n} ints") from None
        if len(out) != n:
            raise ValueError(f"descriptors[{arg!r}]: {name} has {len(out)} entries, expected {n} (rank {rank})")
        return out

    lower, upper = ints(lower_name, rank - 2), ints(upper_name, rank - 2)
    element_strides = ints(strides_name, rank) if fields.get(strides_name) is not None else None
    pixels, channels = (int(v) for v in entry["block_size"])
    return (lower, upper, channels, pixels, element_strides)


def launch_settings(md: Mapping[str, Any], hip: bool) -> Tuple[int, int, Dict[str, Any]]:
    """What a kernel's metadata says of its launch, as Triton's launchers read it: ``num_ctas``,
    the block size (``num_warps`` warps of 32 threads, of ``warp_size`` on AMD), and the launch
    settings: a cluster of ``num_ctas`` along x when above 1 (with Triton's scheduling policy
    on CUDA; AMD's launch passes none), the dynamic shared memory, and the flags the backend
    honours (:attr:`TritonAbi.flags`, :attr:`TritonAbi.hip_flags`)."""
    num_ctas = int(md.get("num_ctas", 1) or 1)
    settings: Dict[str, Any] = {}
    if num_ctas > 1:
        settings["cluster"] = [num_ctas, 1, 1]
        if not hip:
            settings["cluster_policy"] = TRITON_ABI.cluster_when_num_ctas_above_1
    if md.get("shared"):
        settings["shared_mem"] = int(md["shared"])
    for flag, setting in (TRITON_ABI.hip_flags if hip else TRITON_ABI.flags).items():
        if md.get(flag):
            settings[setting] = True
    warp = int(md[TRITON_ABI.warp_size_key]) if hip else TRITON_ABI.threads_per_warp
    return num_ctas, warp * int(md["num_warps"]), settings


def scratch_pointers(f: ir.FunctionBuilder, k: Kernel, grid: Sequence[Any], device: Any) -> List[Any]:
    """The two trailing pointers (``global_scratch``, ``profile_scratch``): NULL when the
    metadata's ``<name>_size`` is 0; otherwise a buffer of ``grid_x * grid_y * grid_z *
    num_ctas * <name>_size`` bytes from the environment allocator on ``device`` (a ``device``
    expression or ``(type, id)``), allocated per launch as Triton's launcher does and released
    when the function returns, its data checked to be aligned to ``<name>_align``."""
    md = k.metadata
    out: List[Any] = []
    for name in TRITON_ABI.trailing_pointers:
        size = int(md.get(f"{name}_size") or 0)
        if size == 0:
            out.append(ir.cast(ir.ptr, ir.lit(0, ir.u64)))
            continue
        if name in k.signature:
            raise UnsupportedKernelError(f"kernel `{k.name}`: argument '{name}' clashes with Triton's {name} pointer")
        align = int(md.get(f"{name}_align") or 1)
        dims = [ir.cast(ir.i64, g) for g in grid] + [ir.lit(1, ir.i64)] * (3 - len(grid))
        # Each grid entry is at most 2^31 - 1 (checked): x * y fits, so does z * per program.
        xy, per_z = dims[0] * dims[1], dims[2] * ir.lit(int(md.get("num_ctas", 1)) * size, ir.i64)
        f.assert_(
            xy <= ir.lit(2**63 - 1, ir.i64).floordiv(per_z),
            "ValueError",
            f"{f.name}: the grid's {name} (grid_x * grid_y * grid_z * num_ctas * {size} bytes) does not fit in int64",
        )
        buffer = f.empty(name, [xy * per_z], "uint8", device)
        address = ir.cast(ir.u64, buffer.data)
        f.assert_(
            address % ir.lit(align, ir.u64) == ir.lit(0, ir.u64),
            "RuntimeError",
            f"{f.name}: the environment allocator returned {name} at ",
            address,
            f", not aligned to {align} bytes as the kernel requires",
        )
        out.append(buffer.data)
    return out
