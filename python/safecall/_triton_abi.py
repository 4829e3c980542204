"""Triton 3.9's launch ABI as named facts (:data:`TRITON_ABI`, a :class:`TritonAbi`), the
adapter's errors and what it reads from a compiled kernel (:class:`Kernel`);
``safecall.triton`` re-exports them."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Mapping, Tuple

from . import builder as ir

#: The Triton minor release whose launch ABI is below (tested: 3.9.0); kernels compiled by
#: any other version are refused.
SUPPORTED_TRITON = "3.9"

@dataclasses.dataclass(frozen=True)
class TensorDescriptorAbi:
    """How a host ``TensorDescriptor`` argument is passed (``tensordesc<fp16[64, 64]>``, one
    ``tensordesc_meta`` entry each, in order; ``make_tensordesc_arg`` and
    ``fillTMADescriptorTiled``): a 128-byte ``CUtensorMap`` (``cuTensorMapEncodeTiled`` of
    ``base.data_ptr()``, the shape and byte strides, the box ``block_size``, element strides 1,
    no interleave, the entry's ``swizzle``, L2 promotion 128B, zero fill for the default
    ``padding="zero"``; bit 21 cleared on drivers up to 13010 for tensors under 128 KiB, which
    the IR's ``tensormap`` does too) followed by the shape as ``i32``s and the strides
    (elements) as ``i64``s.

    Attributes
    ----------
    prefix, im2col_prefix : str
        The signature's words of a tiled and of an im2col descriptor.
    swizzle : dict
        ``tensordesc_meta``'s swizzle code -> the IR's ``swizzle`` word.
    element_types : tuple of str
        The host ``CUtensorMapDataType`` values in order, as the IR's ``tensormap(dtype=...)``
        words.
    device_to_host_element_type : dict
        The device-side element type code -> the host enum's.
    l2_promotion : str
        The IR's ``l2_promotion`` word Triton uses.
    im2col_fields : tuple of str
        The fields of Gluon's ``TensorDescriptorIm2Col`` an im2col descriptor's
        ``cuTensorMapEncodeIm2col`` also takes (``fillTMADescriptorIm2col``): the pixel box's
        lower and upper corners (one offset per spatial dimension) and the element strides
        (one per dimension; ``None`` is all 1). Its box is ``block_size`` as ``[pixels per
        column, channels per pixel]``, its rank the type's ``input_rank``, and no bit is
        cleared after encoding.
    fields : dict
        The ``TensorDescriptor`` fields the launcher reads besides base, shape and strides:
        ``padding`` -> the IR's ``oob_fill`` (``"nan"``: ``OOB_FILL_NAN_REQUEST_ZERO_FMA``), and
        ``round_f32_to_tf32``'s values, of which ``True`` makes the element type
        :attr:`tf32_element_type`.
    tf32_element_type : str
        The element type of a descriptor with ``round_f32_to_tf32``.
    shape, strides : tuple
        The IR type and ``struct`` format of each shape and stride value after the map.
    """

    prefix: str
    im2col_prefix: str
    im2col_fields: Tuple[str, ...]
    swizzle: Mapping[int, str]
    element_types: Tuple[str, ...]
    device_to_host_element_type: Mapping[int, int]
    l2_promotion: str
    fields: Mapping[str, Any]
    tf32_element_type: str
    shape: Tuple[Any, str]
    strides: Tuple[Any, str]


@dataclasses.dataclass(frozen=True)
class BackendAbi:
    """A ``target.backend``'s device binary and tensors.

    Attributes
    ----------
    asm : str
        The ``CompiledKernel.asm`` key (and cache file suffix) of the device binary.
    format : str
        The IR's ``device_binary`` format.
    device : str
        The IR's device word of its tensors.
    device_type : int
        The DLPack device type code of its tensors.
    """

    asm: str
    format: str
    device: str
    device_type: int


@dataclasses.dataclass(frozen=True)
class TritonAbi:
    """Triton 3.9's launch ABI, read from its wheel (``triton/backends/nvidia/driver.c``:
    ``_launch``, ``launchKernel``, the ``extract*`` functions; ``driver.py``: ``ty_to_cpp``,
    ``CudaLauncher``) and checked against Triton's own launcher by
    python/tests/test_triton_differential.py. Besides the attributes below, two facts hold for
    every launch and need no switch: the grid's x is multiplied by ``num_ctas``, and a grid with
    a zero dimension launches nothing.

    Attributes
    ----------
    scalars : dict
        A signature's scalar type -> (the IR type that packs the same bytes, the ``struct``
        format of Triton's packing). ``fp16`` rounds to nearest even; Triton's ``bf16`` is the
        upper half of the float32 (it *truncates*, the IR rounds).
    pointer_prefix, pointer_format : str
        Pointer types are ``*DTYPE``, 8-byte addresses.
    pointee_dtypes : dict
        A pointer's element type -> the DLPack dtype its tensor must have.
    constexpr : str
        The signature's word for a parameter the kernel was specialized on (also ``None`` and
        the integer ``1`` when Triton specializes them); it is not passed.
    divisibility : tuple
        The attribute (``tt.divisibility``) and value Triton specializes pointers (aligned) and
        integers (divisible) on.
    trailing_pointers : tuple of str
        Two pointers after the user's parameters, NULL when the metadata's ``<name>_size`` is 0;
        otherwise each launch allocates ``grid_x * grid_y * grid_z * num_ctas * <name>_size``
        bytes aligned to ``<name>_align`` (``CudaLauncher.__call__``: from
        ``triton.set_allocator``'s allocator, called as ``allocator(size, align, stream)``, even
        for an empty grid; the host function asks the environment allocator, for nonempty grids
        only).
    zeroed_scratch : tuple of str
        The trailing pointers Triton zeroes when no allocator was set
        (``allocate_default_profile_scratch``: ``torch.zeros``, for proton's instrumentation);
        the IR's ``empty`` does not zero, so such kernels are refused.
    tensor_descriptor : TensorDescriptorAbi
        Host ``TensorDescriptor`` arguments.
    threads_per_warp : int
        block = (threads_per_warp * num_warps, 1, 1).
    cluster_when_num_ctas_above_1 : str
        Cluster (num_ctas, 1, 1) and this scheduling policy (CUDA; AMD passes the cluster and
        no policy).
    non_portable_cluster_at : int
        ``num_ctas`` for which Triton opts in to clusters above 8 blocks (the IR's launch does
        this itself for any cluster over 8 blocks).
    shared_opt_in_above : int
        Dynamic shared memory is ``shared``; above this the kernel is opted in (the IR's launch
        does this itself).
    flags : dict
        Metadata flags -> the launch setting each becomes.
    backends : dict
        Per ``target.backend``, its :class:`BackendAbi`. AMD kernels (``"hip"``,
        ``triton/backends/amd/driver.c``: ``_launch``, ``launchKernel``) pack arguments and the
        two trailing pointers as CUDA's do; block = (``metadata.warp_size`` * num_warps, 1, 1)
        (:attr:`warp_size_key`); ``num_ctas`` above 1 launches with ``hipDrvLaunchKernelEx``,
        attributes cluster (num_ctas, 1, 1) and cooperative (``launch_cooperative_grid``, 0 or
        1), in that order (the IR's HIP launch with ``cluster=`` passes exactly these); a host
        tensor descriptor with a ``tensordesc_meta`` entry (gfx1250: ``block_size``,
        ``elem_bits``, ``interval_padding_pairs``) is a TDM descriptor (the IR's ``tdm`` of the
        base tensor, the block, ``num_warps`` and the one padding pair), then the shape and
        strides as for a TMA descriptor (``make_tensordesc_arg`` of ``backends/amd/driver.py``).
    warp_size_key : str
        The metadata key of an AMD kernel's warp size.
    hip_flags : dict
        The metadata flags an AMD launch honours.
    """

    scalars: Mapping[str, Tuple[Any, str]]
    pointer_prefix: str
    pointer_format: str
    pointee_dtypes: Mapping[str, str]
    constexpr: str
    divisibility: Tuple[str, int]
    trailing_pointers: Tuple[str, ...]
    zeroed_scratch: Tuple[str, ...]
    tensor_descriptor: TensorDescriptorAbi
    threads_per_warp: int
    cluster_when_num_ctas_above_1: str
    non_portable_cluster_at: int
    shared_opt_in_above: int
    flags: Mapping[str, str]
    backends: Mapping[str, BackendAbi]
    warp_size_key: str
    hip_flags: Mapping[str, str]


#: Triton 3.9's launch ABI (see :class:`TritonAbi`).
TRITON_ABI = TritonAbi(
    scalars={
        "i1": (ir.bool_, "<?"),
        "u1": (ir.bool_, "<B"),
        "i8": (ir.i8, "<b"),
        "i16": (ir.i16, "<h"),
        "i32": (ir.i32, "<i"),
        "i64": (ir.i64, "<q"),
        "u8": (ir.u8, "<B"),
        "u16": (ir.u16, "<H"),
        "u32": (ir.u32, "<I"),
        "u64": (ir.u64, "<Q"),
        "fp16": (ir.f16, "<e"),
        "bf16": (ir.bf16, "bf16: upper half of <f"),
        "fp32": (ir.f32, "<f"),
        "fp64": (ir.f64, "<d"),
    },
    pointer_prefix="*",
    pointer_format="<Q",
    pointee_dtypes={
        "i1": "bool",
        "i8": "int8",
        "i16": "int16",
        "i32": "int32",
        "i64": "int64",
        "u8": "uint8",
        "u16": "uint16",
        "u32": "uint32",
        "u64": "uint64",
        "fp16": "float16",
        "bf16": "bfloat16",
        "fp32": "float32",
        "fp64": "float64",
        "fp8e4nv": "float8_e4m3fn",
        "fp8e5": "float8_e5m2",
        "fp8e4b8": "float8_e4m3fnuz",
        "fp8e5b16": "float8_e5m2fnuz",
    },
    constexpr="constexpr",
    divisibility=("tt.divisibility", 16),
    trailing_pointers=("global_scratch", "profile_scratch"),
    zeroed_scratch=("profile_scratch",),
    tensor_descriptor=TensorDescriptorAbi(
        prefix="tensordesc",
        im2col_prefix="tensordesc_im2col",
        im2col_fields=("pixel_box_lower_corner", "pixel_box_upper_corner", "element_strides"),
        swizzle={0: "none", 1: "b32", 2: "b64", 3: "b128"},
        element_types=(
            "u8", "u16", "u32", "i32", "u64", "i64", "f16", "f32", "f64", "bf16",
            "f32_ftz", "tf32", "tf32_ftz", "u4x16_align8", "u4x16_align16", "u6x16_align16",
        ),
        device_to_host_element_type={8: 10, 9: 8, 10: 9},
        l2_promotion="b128",
        fields={"padding": {"zero": "none", "nan": "nan"}, "round_f32_to_tf32": (False, True)},
        tf32_element_type="tf32",
        shape=(ir.i32, "<i"),
        strides=(ir.i64, "<q"),
    ),
    threads_per_warp=32,
    cluster_when_num_ctas_above_1="spread",
    non_portable_cluster_at=16,
    shared_opt_in_above=48 * 1024,
    flags={"launch_pdl": "pdl", "launch_cooperative_grid": "cooperative"},
    backends={
        "cuda": BackendAbi(asm="cubin", format="cubin", device="cuda", device_type=2),
        "hip": BackendAbi(asm="hsaco", format="hsaco", device="rocm", device_type=10),
    },
    warp_size_key="warp_size",
    hip_flags={"launch_cooperative_grid": "cooperative"},
)


class UnsupportedKernelError(NotImplementedError):
    """A kernel (or an option) this adapter cannot launch safely: the message names the Triton
    argument or metadata field and what is supported."""


class TritonVersionError(UnsupportedKernelError):
    """The kernel was compiled by a Triton release other than :data:`SUPPORTED_TRITON`."""


@dataclasses.dataclass(frozen=True)
class Kernel:
    """What the adapter reads from a compiled Triton kernel.

    Attributes
    ----------
    name : str
        The kernel's entry name in the cubin (``metadata.name``).
    cubin : bytes
        The device binary: the cubin, or for an AMD kernel (``backend == "hip"``) the HSACO.
    metadata : dict
        Triton's metadata (the ``.json`` next to the cubin in Triton's cache).
    signature : dict
        Parameter name -> Triton type (``"*fp16"``, ``"i32"``, ``"constexpr"``, ...), in order.
    constants : dict
        Constexpr parameter name -> the value the kernel was compiled with.
    divisible : frozenset of str
        Parameters Triton specialized as divisible by 16 (pointers: aligned to 16 bytes).
    """

    name: str
    cubin: bytes
    metadata: Dict[str, Any]
    signature: Dict[str, str]
    constants: Dict[str, Any]
    divisible: FrozenSet[str]
    #: ``"cuda"``, or ``"hip"`` for an AMD kernel (its ``target.backend``).
    backend: str = "cuda"
