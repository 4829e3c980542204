"""What the Triton tests share: CUDA tensors at fake addresses that both launchers take, and
the launch the ABI table (``safecall.triton.TRITON_ABI``) predicts for a compiled kernel.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from safecall.testing import RawTensor, RecordingAllocator
from safecall.triton import SUPPORTED_TRITON, TRITON_ABI

from . import fake_cuda


def triton_unavailable() -> Optional[str]:
    """Why the Triton tests cannot run here (no triton 3.9, no driver double), or None."""
    try:
        import triton
    except ImportError:
        return f"triton is not installed (pip install triton=={SUPPORTED_TRITON}.0)"
    if not triton.__version__.startswith(SUPPORTED_TRITON + "."):
        return f"triton {triton.__version__} is installed; safecall.triton supports {SUPPORTED_TRITON}"
    return fake_cuda.missing_reason()


def skip_unless_triton() -> None:
    """Skips the calling test module when :func:`triton_unavailable` says why (fails in CI)."""
    import pytest

    reason = triton_unavailable()
    if reason is not None:
        if fake_cuda.in_ci():
            raise RuntimeError(f"CI=true: {reason}")
        pytest.skip(reason, allow_module_level=True)

#: DLPack (code, bits, lanes) of the dtypes the tests' pointers point to.
DLPACK_DTYPES = {
    "float16": (2, 16, 1),
    "bfloat16": (4, 16, 1),
    "float32": (2, 32, 1),
    "float64": (2, 64, 1),
    "int32": (0, 32, 1),
    "int64": (0, 64, 1),
    "uint8": (1, 8, 1),
}


class CudaTensor(RawTensor):
    """A CUDA tensor at a fake address (the double never touches memory): a DLPack producer
    for tvm_ffi, with the ``data_ptr()`` (first element: data + byte_offset) Triton reads."""

    def __init__(
        self,
        address: int,
        dtype: str = "float32",
        shape: Sequence[int] = (1024,),
        *,
        strides: Any = None,
        byte_offset: int = 0,
        device_id: int = 0,
        device_type: int = 2,
    ) -> None:
        super().__init__(address, (device_type, device_id), DLPACK_DTYPES[dtype], shape, strides, byte_offset)

    def data_ptr(self) -> int:
        return (self.data or 0) + self.byte_offset


class ElementType:
    """What Triton reads of a torch dtype: ``itemsize``, ``is_floating_point`` and its name
    (``str``, canonicalized by ``triton._utils.canonicalize_dtype``)."""

    def __init__(self, name: str) -> None:
        code, bits, _ = DLPACK_DTYPES[name]
        self.name, self.itemsize = name, bits // 8
        self.is_floating_point = code in (2, 4)  # DLPack float, bfloat

    def __str__(self) -> str:
        return self.name

    # One dtype per name, as torch's dtypes are singletons.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ElementType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class Float32Pointer:
    """What Triton's JIT reads of a float32 tensor, ``data_ptr()`` and ``dtype``, and the
    ``ptr_range()`` (4 KiB) its AMD backend reads: for the tests' own processes."""

    dtype = ElementType("float32")

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address

    def ptr_range(self) -> int:
        return 4096


class DescriptorBase:
    """A CUDA (or, with ``device_type=10``, ROCm) tensor at a fake address that Triton's ``TensorDescriptor.from_tensor`` takes
    (``data_ptr()``, ``dtype.itemsize``, ``shape``, ``stride()``) and tvm_ffi converts (DLPack):
    what a ``torch.Tensor`` is to both."""

    def __init__(
        self, address: int, dtype: str, shape: Sequence[int], strides: Optional[Sequence[int]] = None, device_type: int = 2
    ) -> None:
        import math

        self.tensor = CudaTensor(address, dtype, shape, strides=strides, device_type=device_type)
        self.dtype = ElementType(dtype)
        self.shape = list(shape)
        compact = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
        self.strides = list(strides) if strides is not None else compact

    def data_ptr(self) -> int:
        return self.tensor.data_ptr()

    def stride(self) -> List[int]:
        return list(self.strides)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.tensor.__dlpack_device__()


def is_descriptor(triton_type: str) -> bool:
    """Whether a signature type is a host tensor descriptor (``tensordesc<...>``)."""
    return triton_type.startswith(TRITON_ABI.tensor_descriptor.prefix)


def descriptor_fields(signature: Mapping[str, str], args: Sequence[Any]) -> Dict[str, Dict[str, Any]]:
    """``safecall.triton.function``'s ``descriptors=`` for Triton's ``args``: each
    ``TensorDescriptor``'s fields that its base tensor cannot say."""
    return {
        name: {"padding": a.padding, "round_f32_to_tf32": a.round_f32_to_tf32}
        for name, a in zip(signature, args)
        if is_descriptor(signature[name])
    }


def safecall_args(args: Sequence[Any]) -> List[Any]:
    """The arguments of safecall's function for Triton's ``args``: a ``TensorDescriptor``'s
    base tensor in its place (the function builds the descriptor itself)."""
    return [a.base if hasattr(a, "block_shape") else a for a in args]


def cuda_tensors(signature: Mapping[str, str], args: Sequence[Any]) -> List[Any]:
    """``args`` with each int passed to a pointer parameter replaced by a CUDA tensor of the
    pointee's dtype at that address."""
    out = []
    for ty, value in zip(signature.values(), args):
        if ty.startswith(TRITON_ABI.pointer_prefix) and isinstance(value, int):
            dtype = TRITON_ABI.pointee_dtypes[ty[1:]]
            out.append(CudaTensor(value, dtype))
        else:
            out.append(value)
    return out


def scratch_requests(kernel: Any, grid: Sequence[int]) -> Dict[str, Tuple[int, int]]:
    """The allocation (bytes, alignment) Triton makes per launch for each trailing pointer
    whose size is not 0."""
    md = kernel.metadata
    programs = grid[0] * grid[1] * grid[2] * md.num_ctas
    return {
        name: (programs * getattr(md, f"{name}_size"), getattr(md, f"{name}_align"))
        for name in TRITON_ABI.trailing_pointers
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
        "block": [TRITON_ABI.threads_per_warp * md.num_warps, 1, 1],
        "cluster": cluster,
        "shared_mem": md.shared,
    }


def packed(triton_type: str, value: Any) -> bytes:
    """The bytes Triton's launcher passes for one non-constexpr argument."""
    if triton_type.startswith(TRITON_ABI.pointer_prefix):
        return struct.pack(TRITON_ABI.pointer_format, value or 0)
    fmt = TRITON_ABI.scalars[triton_type][1]
    if fmt.startswith("bf16"):
        return struct.pack("<f", value)[2:]
    return struct.pack(fmt, value)


def expected_args(signature: Mapping[str, str], args: Sequence[Any], scratch: Mapping[str, int]) -> List[Optional[str]]:
    """Each kernel argument's bytes as the table says Triton packs them (hex, as the double
    records them; None for a descriptor's ``CUtensorMap``, whose bytes the driver writes), then the trailing pointers (``scratch``: the addresses allocated; NULL for
    the others)."""
    out: List[Optional[str]] = []
    table = TRITON_ABI.tensor_descriptor
    for ty, value in zip(signature.values(), args):
        if is_descriptor(ty):
            # The map's bytes are the driver's (None: not predicted), then shape and strides.
            out.append(None)
            out += [struct.pack(table.shape[1], d).hex() for d in value.shape]
            out += [struct.pack(table.strides[1], d).hex() for d in value.strides]
        elif ty != TRITON_ABI.constexpr:
            out.append(packed(ty, value).hex())
    return out + [packed("*", scratch.get(name)).hex() for name in TRITON_ABI.trailing_pointers]


class FakeAddressAllocator(RecordingAllocator):
    """A TVM-FFI environment allocator (what PyTorch's is to tvm_ffi) that hands out ``address``
    without memory behind it (the double never touches memory), recording each request
    (shape, DLPack dtype, device) and each free. ``with allocator:`` installs it on this thread."""

    def __init__(self, address: int) -> None:
        super().__init__(address=address)


def torch_stand_in():
    """Triton 3.6 and 3.7's own driver needs torch (its ``GPUDriver`` takes the device, stream
    and capability from it); where torch is absent, a stand-in answers as torch would on the
    double's device 0 (both drivers then get the same answers)."""
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("torch") is not None:
        return
    torch = types.ModuleType("torch")
    torch.version = types.SimpleNamespace(hip=None)
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True,
        current_device=lambda: 0,
        set_device=lambda device: None,
        get_device_capability=lambda device=0: (9, 0),
        current_stream=lambda device=0: types.SimpleNamespace(cuda_stream=0),
    )
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)
    sys.modules["torch"] = torch
    sys.modules["torch._C"] = torch._C


def random_strides(rng: Any, shape: Sequence[int], step: Any, limit: int, scattered: float) -> List[int]:
    """Element strides for ``shape`` drawn from ``rng`` (the random tests' descriptors): the
    innermost 1; each outer one the dense stride rounded up to a multiple of ``step()`` (drawn
    per stride), or, with probability ``scattered`` or where the dense one reaches ``limit``, a
    random multiple of it below ``limit``."""
    strides = [1]
    for extent in reversed(shape[1:]):
        s = step()
        dense = -(-strides[0] * extent // s) * s
        strides.insert(0, rng.randrange(1, limit // s) * s if rng.random() < scattered or dense >= limit else dense)
    return strides


def random_scalar(rng: Any, ty: str) -> Any:
    """A value for a scalar parameter of type ``ty``, drawn to reach every conversion's edges:
    integers at and beyond the type's range (which Triton's launcher casts as C does, or
    refuses beyond 64 bits), floats of every magnitude, infinities, NaNs of either sign, ties
    that a conversion through ``float`` would round twice, and the ``bool``s and ``int``s a
    float parameter also takes (ints beyond 64 bits too, up to and beyond the ``f64`` range,
    which Triton's launcher converts as ``float()`` does)."""
    import math
    import struct

    if ty in ("fp16", "bf16", "fp32", "fp64"):
        pick = rng.randrange(9)
        if pick == 0:
            return rng.choice((math.inf, -math.inf, math.nan, -math.nan, 0.0, -0.0, True, 3))
        if pick == 8:
            # An int beyond i64: of any size to past 2^1024, or at a float's edges.
            if rng.randrange(2):
                return rng.choice((1, -1)) * rng.randrange(1 << 63, 1 << rng.randrange(64, 1030))
            return rng.choice((1 << 64, -(1 << 63) - 1, (1 << 64) + (1 << 11), (1 << 1024) - (1 << 970), 1 << 1024))
        if pick == 1:
            # A NaN with payload bits (what the conversions do with them).
            return struct.unpack("<d", struct.pack("<Q", 0x7FF0_0000_0000_0000 | rng.randrange(1, 1 << 52) | rng.randrange(2) << 63))[0]
        if pick == 2:
            # Just above a half tie: (1 + 2^-11) * 2^k plus a little, which f64 -> f32 -> f16
            # would round to even twice.
            return math.ldexp(1 + 2.0**-11 + 2.0**-40, rng.randrange(-24, 16)) * rng.choice((1, -1))
        return rng.choice((1, -1)) * math.ldexp(rng.random(), rng.randrange(-160, 140))
    bits = int(ty[1:]) if ty != "i1" else 1
    if ty == "i1":
        return rng.choice((True, False, 0, 1))
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty[0] == "i" else (0, (1 << bits) - 1)
    pick = rng.randrange(6)
    if pick == 0:
        return rng.choice((lo, hi, 0, 1, -1, lo - 1, hi + 1))
    if pick == 1:
        # Beyond the type but within 64 bits (C casts), or beyond 64 bits (refused).
        return rng.randrange(-(1 << 63), 1 << 64)
    if pick == 2:
        return rng.choice((1 << 64, -(1 << 63) - 1, 1 << 70, -(1 << 70)))
    return rng.randrange(lo, hi + 1)


def valid_scalar(rng: Any, ty: str) -> Any:
    """A value every release's launcher takes for a scalar of type ``ty``: an int in the type's
    range (an ``i8`` from 0: 3.6 reads it with ``PyArg_ParseTuple``'s ``b``, an unsigned
    byte), a finite float (a half's within its range), a bool for ``i1``/``u1``."""
    if ty in ("fp16", "bf16", "fp32", "fp64"):
        return rng.uniform(-1000.0, 1000.0)
    if ty in ("i1", "u1"):
        return rng.choice((True, False))
    if ty == "i8":
        return rng.choice((0, 1, 127, rng.randrange(0, 128)))
    bits = int(ty[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty[0] == "i" else (0, (1 << bits) - 1)
    return rng.choice((lo, hi, 0, 1, rng.randrange(lo, hi + 1)))


class IndexOnly:
    """An int-like with only ``__index__``, as numpy's integer scalars are to C code."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"IndexOnly({self.value})"


class FloatOnly:
    """A float-like with only ``__float__``, as numpy's float scalars are to C code."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"FloatOnly({self.value})"


class IntSubclass(int):
    """An ``int`` subclass (``PyLong_Check`` holds, ``PyLong_CheckExact`` does not)."""


class FloatSubclass(float):
    """A ``float`` subclass."""


def foreign_scalar(rng: Any, ty: str) -> Any:
    """A value of another Python type than the scalar parameter's own, for the conversions'
    type rules (``PyLong_AsLong`` and ``PyFloat_AsDouble`` call ``__index__``/``__float__``,
    ``PyLong_AsUnsignedLong`` does not; 3.6's ``PyArg_ParseTuple`` formats have their own):
    ``__index__``-only and ``__float__``-only objects, int and float subclasses, a float for an
    int, a str, ``None``; each over a :func:`random_scalar` value of the type (or of an int
    type for an int-like given to a float)."""
    floating = ty in ("fp16", "bf16", "fp32", "fp64")
    pick = rng.randrange(7)
    if pick == 0:
        return IndexOnly(int(random_scalar(rng, "i64" if floating else ty)))
    if pick == 1:
        return FloatOnly(random_scalar(rng, ty) if floating else float(rng.randrange(-3, 300)))
    if pick == 2:
        value = random_scalar(rng, "i64" if floating else ty)
        return IntSubclass(value)
    if pick == 3:
        value = random_scalar(rng, ty) if floating else float(rng.randrange(-3, 300))
        return FloatSubclass(value if isinstance(value, float) else 1.5)
    if pick == 4:
        return rng.choice((2.0, 0.5, -1.0, float("nan"))) if not floating else rng.randrange(-(1 << 40), 1 << 40)
    if pick == 5:
        return rng.choice(("3", "1.5", b"7"))
    return None


class PointerLike:
    """A tensor-like whose ``data_ptr()`` returns ``result`` (or raises it, an exception)."""

    def __init__(self, result: Any) -> None:
        self.result = result

    def data_ptr(self) -> Any:
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result

    def __repr__(self) -> str:
        return f"PointerLike({self.result!r})"


class AttributePointer:
    """A ``data_ptr`` that is an int attribute, not a method."""

    data_ptr = 0x7F00_0000_1000


def random_pointer(rng: Any) -> Any:
    """A pointer argument in one of the forms a launcher meets, good or bad: an int (at, near and
    beyond the 64-bit range, 0, misaligned), an int subclass, a bool, ``None``, an object whose
    ``data_ptr()`` returns such an int, an int subclass, an ``__index__``-only object, a float,
    ``None`` or a str, or raises (an ``AttributeError`` among them); an ``__index__``-only
    object, a float or a str itself; a ``data_ptr`` that is no method."""
    address = rng.choice((0x7F00_0000_1000, 0x7F00_0000_1004, 0, 1, 4096, (1 << 64) - 1, 1 << 64, -1, -(1 << 63), 1 << 63,
                          rng.randrange(1 << 12, 1 << 48)))
    pick = rng.randrange(10)
    if pick == 0:
        return address
    if pick == 1:
        return IntSubclass(address)
    if pick == 2:
        return rng.choice((True, False, None))
    if pick in (3, 4):
        return PointerLike(address)
    if pick == 5:
        return PointerLike(rng.choice((IntSubclass(address), IndexOnly(address), float(address), None, "0x1000", True)))
    if pick == 6:
        return PointerLike(rng.choice((ValueError("no storage"), AttributeError("inner attribute"), TypeError("bad"))))
    if pick == 7:
        return IndexOnly(address)
    if pick == 8:
        return rng.choice((float(address), "0x7f0000001000", b"\x00"))
    return AttributePointer()


def address_out_of_range(form: Any) -> bool:
    """Whether a :func:`random_pointer` form is an address outside 0 to 2^64 - 1 (an int, or
    what its ``data_ptr()`` returns): safecall's ``OverflowError`` at once, where Triton's
    error depends on the arguments after it (the documented difference, docs/triton.md)."""
    address = form.result if isinstance(form, PointerLike) else form
    return isinstance(address, int) and not isinstance(address, bool) and not 0 <= address < 1 << 64


def nearest_bf16_bits(value: float) -> int:
    """The ``bf16`` nearest ``value`` (an ``f64``), ties to even, in one rounding (what the IR's
    ``bf16`` parameters do; Triton's launcher truncates the ``f32`` instead), computed exactly
    with fractions: at or above the largest finite ``bf16`` plus half a unit in the last place,
    infinity. Not for NaNs."""
    import fractions
    import math

    sign = 0x8000 if math.copysign(1.0, value) < 0 else 0
    if math.isinf(value):
        return sign | 0x7F80
    magnitude = fractions.Fraction(abs(value))
    if magnitude == 0:
        return sign
    # The unit in the last place of the binade (subnormals: that of the smallest normal).
    exponent = max(math.frexp(abs(value))[1] - 1, -126)
    ulp = fractions.Fraction(2) ** (exponent - 7)
    rounded = round(magnitude / ulp) * ulp  # round() of a Fraction: ties to even
    if rounded >= fractions.Fraction(2) ** 128:
        return sign | 0x7F80
    return sign | struct.unpack("<I", struct.pack("<f", float(rounded)))[0] >> 16


def tma_workaround_clears(shape: Any, strides: Any, elem: int, bits: Optional[int]) -> bool:
    """Whether the driver workaround clears bit 21 of a tiled descriptor on the double (whose
    driver version is at most 13010): when the tensor's span, ``1 + sum((dim - 1) * byte
    stride)``, is under 128 KiB. ``bits=32`` computes it as Triton 3.7+'s ``driver.c`` does, in
    a C ``int`` (the sum wraps to its low 32 bits, read as signed: a tensor spanning more than
    2 GiB can look small); ``None`` exactly, as safecall does."""
    span = sum((d - 1) * s * elem for d, s in zip(shape, strides))
    if bits is not None:
        span &= (1 << bits) - 1
        span -= (span >> (bits - 1)) << bits
    return span + 1 < 128 * 1024
