"""Triton 3.9's kernel launch ABI in one table, and the two launchers the differential test
compares: Triton's own (``CompiledKernel[grid](...)``) and a safecall host function built from
the same compiled kernel with the public builder.

Every fact below was read from Triton 3.9.0's wheel: ``triton/backends/nvidia/driver.c``
(``_launch``, ``launchKernel``, the ``extract*`` functions, ``loadBinary``) and
``triton/backends/nvidia/driver.py`` (``ty_to_cpp``, ``CudaLauncher``). The differential test
checks them against Triton's launcher on every case, so a Triton that changes them fails it.
"""

from __future__ import annotations

import inspect
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import safecall as sc

#: The Triton release these facts are for (``xtask`` pins it for the test venv).
TRITON_VERSION = "3.9.0"

#: Triton 3.9's launch ABI. Keys:
#:
#: - ``scalars``: a compiled signature's scalar type -> (the IR type that packs the same bytes,
#:   the ``struct`` format of Triton's packing) (``ty_to_cpp`` and the ``extract*`` functions:
#:   ``i1`` and ``u1`` are one byte, ``fp16``/``bf16`` two, ``fp32`` four, ``fp64`` eight,
#:   integers their width). ``fp16`` rounds to nearest even (``PyFloat_Pack2``); ``bf16`` is
#:   the upper half of the float32 (``extractBF16`` *truncates*; the IR's ``bf16`` rounds, so
#:   the tests use values that both represent exactly). Types the IR lacks are spelled as text.
#: - ``pointer_prefix``, ``pointer_format``: pointer types are spelled ``*DTYPE``; each is an
#:   8-byte address (``CUdeviceptr``), taken from an ``int`` as is, or from ``.data_ptr()``;
#:   ``None`` is NULL.
#: - ``constexpr``: the signature's word for a parameter the kernel was specialized on (also
#:   ``None`` and the integer ``1`` when Triton specializes them); it is not passed.
#: - ``trailing_pointers``: two pointers after the user's parameters, always passed, NULL when
#:   the metadata's ``<name>_size`` is 0; otherwise each launch allocates
#:   ``grid_x * grid_y * grid_z * num_ctas * <name>_size`` bytes aligned to ``<name>_align``
#:   (``CudaLauncher.__call__``): global scratch from ``triton.set_allocator``'s allocator,
#:   called as ``allocator(size, align, stream)``.
#: - ``threads_per_warp``: block = (threads_per_warp * num_warps, 1, 1).
#: - ``grid_x_times_num_ctas``: the grid's x is multiplied by ``num_ctas``.
#: - ``cluster_when_num_ctas_above_1``: cluster (num_ctas, 1, 1) and this scheduling policy.
#: - ``non_portable_cluster_at``: ``num_ctas`` for which Triton sets
#:   ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`` before launching (issue 26 has the
#:   IR set it itself for any cluster over 8 blocks, so the launcher built here does not).
#: - ``shared_opt_in_above``: dynamic shared memory is the metadata's ``shared``; above this
#:   many bytes the kernel is opted in (Triton: to the device's maximum minus static).
#: - ``flags``: metadata flags -> the launch setting each becomes.
#: - ``launches_only_nonempty_grids``: a grid with a zero dimension launches nothing.
#: - ``tensordesc``: a host ``TensorDescriptor`` argument (signature ``tensordesc<DTYPE[..]>``)
#:   becomes the 128-byte ``CUtensorMap`` (``make_tensordesc_arg`` and ``fillTMADescriptorTiled``:
#:   ``cuTensorMapEncodeTiled`` of ``base.data_ptr()``, the shape and strides reversed, the box
#:   of the metadata's ``block_size``, element strides 1, no interleave, the metadata's
#:   ``swizzle``, L2 promotion 128B, NaN fill when ``padding == "nan"``, then bit 21 cleared on
#:   drivers up to 13010 for tensors under 128 KiB) followed by the shape as ``i32``s and the
#:   strides (elements) as ``i64``s.
TRITON_ABI: Dict[str, Any] = {
    "scalars": {
        "i1": (sc.bool_, "<?"),
        "u1": (sc.bool_, "<B"),
        "i8": (sc.i8, "<b"),
        "i16": (sc.i16, "<h"),
        "i32": (sc.i32, "<i"),
        "i64": (sc.i64, "<q"),
        "u8": (sc.u8, "<B"),
        "u16": (sc.u16, "<H"),
        "u32": (sc.u32, "<I"),
        "u64": (sc.u64, "<Q"),
        "fp16": ("f16", "<e"),
        "bf16": ("bf16", "bf16: upper half of <f"),
        "fp32": (sc.f32, "<f"),
        "fp64": (sc.f64, "<d"),
    },
    "pointer_prefix": "*",
    "pointer_format": "<Q",
    "constexpr": "constexpr",
    "trailing_pointers": ("global_scratch", "profile_scratch"),
    "threads_per_warp": 32,
    "grid_x_times_num_ctas": True,
    "cluster_when_num_ctas_above_1": "spread",
    "non_portable_cluster_at": 16,
    "shared_opt_in_above": 48 * 1024,
    "flags": {"launch_pdl": "pdl", "launch_cooperative_grid": "cooperative"},
    "launches_only_nonempty_grids": True,
    "tensordesc": {
        "prefix": "tensordesc",
        "swizzle": {0: "none", 1: "b32", 2: "b64", 3: "b128"},
        "l2_promotion": "b128",
        "dtypes": {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "i8": "int8", "u8": "uint8"},
        "shape": (sc.i32, "<i"),
        "strides": (sc.i64, "<q"),
    },
}

#: What the safecall side of a case needs that the IR does not have yet.
NEEDS_ISSUE_26 = "needs launch settings from issue 26"
NEEDS_SCRATCH = "needs per-launch scratch allocation (issue 29, with the allocation issue)"


def scratch_requests(kernel: Any, grid: Sequence[int]) -> Dict[str, Tuple[int, int]]:
    """The allocation (bytes, alignment) Triton makes per launch for each trailing pointer
    whose size is not 0."""
    md = kernel.metadata
    programs = grid[0] * grid[1] * grid[2] * md.num_ctas
    return {
        name: (programs * getattr(md, f"{name}_size"), getattr(md, f"{name}_align"))
        for name in TRITON_ABI["trailing_pointers"]
        if getattr(md, f"{name}_size")
    }


def expected_launch(kernel: Any, grid: Tuple[int, int, int]) -> Dict[str, Any]:
    """The launch configuration the table predicts for ``kernel`` (a ``CompiledKernel``)."""
    md = kernel.metadata
    num_ctas = md.num_ctas
    cluster = [num_ctas, 1, 1] if num_ctas > 1 else None
    return {
        "kernel": md.name,
        "grid": [grid[0] * num_ctas, grid[1], grid[2]],
        "block": [TRITON_ABI["threads_per_warp"] * md.num_warps, 1, 1],
        "cluster": cluster,
        "shared_mem": md.shared,
    }


def is_descriptor(triton_type: str) -> bool:
    """Whether a signature type is a host tensor descriptor."""
    return triton_type.startswith(TRITON_ABI["tensordesc"]["prefix"])


def descriptor_argument(f: Any, name: str, triton_type: str, meta: Mapping[str, Any]) -> List[Any]:
    """The kernel arguments of descriptor parameter ``name`` (``tensordesc<fp16[64, 64]>``):
    a tensor parameter of ``f`` (any strides), its ``tensormap`` built as Triton's launcher
    builds it from ``meta`` (the kernel's ``tensordesc_meta`` entry), its shape as ``i32``s and
    its strides as ``i64``s."""
    table = TRITON_ABI["tensordesc"]
    element, dims = triton_type[len(table["prefix"]) + 1 : -1].split("[")
    rank = len(dims.rstrip("]").split(","))
    x = f.tensor(name, [f"{name}_{i}" for i in range(rank)], table["dtypes"][element], strides="any")
    tmap = sc.tensormap(
        x, box=list(meta["block_size"]), swizzle=table["swizzle"][meta["swizzle"]], l2_promotion=table["l2_promotion"]
    )
    return [tmap, *(sc.cast(table["shape"][0], x.shape[i]) for i in range(rank)), *(x.strides[i] for i in range(rank))]


def packed(triton_type: str, value: Any) -> bytes:
    """The bytes Triton's launcher passes for one non-constexpr argument."""
    if triton_type.startswith(TRITON_ABI["pointer_prefix"]):
        return struct.pack(TRITON_ABI["pointer_format"], value or 0)
    fmt = TRITON_ABI["scalars"][triton_type][1]
    if fmt.startswith("bf16"):
        return struct.pack("<f", value)[2:]
    return struct.pack(fmt, value)


def expected_args(signature: Mapping[str, str], args: Sequence[Any], scratch: Mapping[str, int]) -> List[str]:
    """Each kernel argument's bytes as the table says Triton packs them (hex, as the double
    records them), then the trailing pointers (``scratch``: the addresses allocated; NULL for
    the others)."""
    out: List[Any] = []
    for ty, value in zip(signature.values(), args):
        if is_descriptor(ty):
            # The map's bytes are the driver's (None here); then shape and strides.
            table = TRITON_ABI["tensordesc"]
            out.append(None)
            out += [struct.pack(table["shape"][1], d).hex() for d in value.shape]
            out += [struct.pack(table["strides"][1], s).hex() for s in value.strides]
        elif ty != TRITON_ABI["constexpr"]:
            out.append(packed(ty, value).hex())
    return out + [packed("*", scratch.get(name)).hex() for name in TRITON_ABI["trailing_pointers"]]


def ir_type(triton_type: str) -> Any:
    """The IR parameter type of a non-constexpr Triton parameter type."""
    if triton_type.startswith(TRITON_ABI["pointer_prefix"]):
        return sc.data_ptr
    ty = TRITON_ABI["scalars"][triton_type][0]
    if isinstance(ty, str):
        found = getattr(sc, ty, None)
        if found is None:
            raise LookupError(f"the IR has no `{ty}` type (Triton's `{triton_type}` scalars)")
        return found
    return ty


def missing_features(kernel: Any, signature: Mapping[str, str]) -> Optional[str]:
    """Why the safecall side of ``kernel`` cannot be built yet (the issue and what the builder
    lacks), or None."""
    md = kernel.metadata
    scratch = [n for n in TRITON_ABI["trailing_pointers"] if getattr(md, f"{n}_size")]
    if scratch:
        return f"{NEEDS_SCRATCH}: {', '.join(scratch)}"
    launch = inspect.signature(sc.FunctionBuilder.launch).parameters
    wanted = [setting for flag, setting in TRITON_ABI["flags"].items() if getattr(md, flag)]
    if md.num_ctas > 1:
        wanted.append("cluster_policy")
    lacking = [f"`{s}=`" for s in wanted if s not in launch]
    for ty in signature.values():
        if is_descriptor(ty) and not hasattr(sc, "tensormap"):
            lacking.append("`tensormap(...)` launch arguments")
        elif is_descriptor(ty):
            continue
        elif ty != TRITON_ABI["constexpr"] and not ty.startswith(TRITON_ABI["pointer_prefix"]):
            spelled = TRITON_ABI["scalars"][ty][0]
            if isinstance(spelled, str) and not hasattr(sc, spelled):
                lacking.append(f"the `{spelled}` type")
    return f"{NEEDS_ISSUE_26}: the safecall side needs {', '.join(lacking)}" if lacking else None


def safecall_launcher(kernel: Any, signature: Mapping[str, str], constants: Mapping[str, Any]) -> Any:
    """A JIT-compiled safecall function ``launch(grid_x, grid_y, grid_z, stream, *args)`` that
    launches ``kernel``'s cubin as Triton's launcher does, taking the same arguments as
    ``CompiledKernel[grid](*args)`` (constexpr ones are checked to be the compiled values)."""
    md = kernel.metadata
    for name in TRITON_ABI["trailing_pointers"]:
        if getattr(md, f"{name}_size") != 0:
            raise NotImplementedError(f"{md.name}: {name} of {getattr(md, f'{name}_size')} bytes")
    m = sc.ModuleBuilder(f"triton_{md.name}")
    m.device_binary("triton", "cubin", kernel.asm["cubin"], [md.name])
    f = m.function("launch", doc=f"Launches Triton {TRITON_VERSION}'s `{md.name}` as Triton does.")
    gx, gy, gz = (f.param(n, sc.i32) for n in ("grid_x", "grid_y", "grid_z"))
    stream = f.param("stream", sc.stream)
    args = []
    descriptors = iter(getattr(md, "tensordesc_meta", None) or ())
    for name, ty in signature.items():
        if ty == TRITON_ABI["constexpr"]:
            f.param(name, sc.const(constants[name]))
        elif is_descriptor(ty):
            args += descriptor_argument(f, name, ty, next(descriptors))
        else:
            args.append(f.param(name, ir_type(ty)))
    null = sc.cast(sc.ptr, sc.lit(0, sc.u64))
    args += [null for _ in TRITON_ABI["trailing_pointers"]]
    settings: Dict[str, Any] = {}
    if md.num_ctas > 1:
        settings["cluster"] = [md.num_ctas, 1, 1]
        settings["cluster_policy"] = TRITON_ABI["cluster_when_num_ctas_above_1"]
    if md.shared:
        settings["shared_mem"] = md.shared
    for flag, setting in TRITON_ABI["flags"].items():
        if getattr(md, flag):
            settings[setting] = True
    block = TRITON_ABI["threads_per_warp"] * md.num_warps
    num_ctas, zero = sc.lit(md.num_ctas, sc.i32), sc.lit(0, sc.i32)
    grid = [gx * num_ctas, gy, gz] if TRITON_ABI["grid_x_times_num_ctas"] else [gx, gy, gz]
    nonempty = sc.and_(gx > zero, sc.and_(gy > zero, gz > zero))
    with f.if_(nonempty if TRITON_ABI["launches_only_nonempty_grids"] else sc.lit(True)):
        f.launch("triton", md.name, *args, grid=grid, block=[block], stream=stream, device=0, **settings)
    return sc.jit(m.build())["launch"]


def triton_launch(kernel: Any, grid: Sequence[int], args: Sequence[Any], stream: int) -> None:
    """Triton's own launch: ``CompiledKernel[grid](*args, stream=stream)``."""
    kernel[tuple(grid)](*args, stream=stream)


def safecall_launch(launcher: Any, grid: Sequence[int], args: Sequence[Any], stream: int) -> None:
    """The safecall function's launch with the same arguments (a tensor descriptor's base
    tensor for the descriptor)."""
    launcher(*grid, stream, *(a.base if hasattr(a, "block_shape") else a for a in args))
