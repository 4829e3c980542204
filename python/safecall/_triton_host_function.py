"""The host function a Triton kernel launches through on the installed driver
(:func:`launch_module`: Triton's launch as safecall IR, for one kernel and one set of
descriptor fields), and its sharing (:func:`host_function`): the kernels of one form (the
specializations Triton compiles of one kernel for other alignments or divisibility of the same
arguments) launch through one host function, which takes the ``CUfunction`` as its last
argument. Each scalar argument's conversion as Triton's extractors do (:data:`_SCALARS`) lives
here beside its IR types."""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, Dict, List, Sequence, Tuple

from . import builder as ir
from ._compile import jit
from ._native import Module, kernel_params, triton_launch_module
from ._triton_abi import TRITON_ABI, Kernel
from ._triton_args import descriptor_spec, launch_settings
from ._triton_integers import _integer

#: The host functions of the launchers built so far, by kernel name, backend, device, argument
#: kinds, descriptor fields and use (:func:`host_function`), each with what else it was built
#: from: kept for the process, as Triton keeps every kernel it compiled.
_FORMS: Dict[Tuple[Any, ...], List["_Shared"]] = {}


def _fp16(value: Any, out: List[Any]) -> None:
    """As Triton's ``extractFP16``: ``PyFloat_AsDouble`` (``ctypes.c_double`` reads a value
    so: a ``str`` is a ``TypeError``, where ``float()`` would parse it), then
    ``PyFloat_Pack2`` (``struct``'s ``e``)."""
    out.append(struct.unpack("<H", struct.pack("<e", ctypes.c_double(value).value))[0])


def _bf16(value: Any, out: List[Any]) -> None:
    """As Triton's ``extractBF16``: ``PyFloat_AsDouble``, the C cast to ``float``
    (``ctypes.c_float``: beyond float's range an infinity, where ``struct`` raises), its upper
    16 bits."""
    out.append(int.from_bytes(bytes(ctypes.c_float(value)), "little") >> 16)


def _float(value: Any, out: List[Any]) -> None:
    """As Triton's ``PyFloat_AsDouble``: a ``float`` as it is; anything else through
    ``ctypes.c_double`` (an int beyond the ``f64`` range is an ``OverflowError``, a ``str`` a
    ``TypeError``, an object with ``__float__`` its value)."""
    out.append(value if type(value) is float else ctypes.c_double(value).value)


#: A scalar type -> (the Python-facing IR type, the kernel's IR type (None: the same),
#: converter; integers' take their rule first).
_SCALARS: Dict[str, Tuple[Any, Any, Callable[[Any, List[Any]], None]]] = {
    "i1": (ir.i64, ir.i8, _integer),
    "u1": (ir.i64, ir.u8, _integer),
    "i8": (ir.i64, ir.i8, _integer),
    "i16": (ir.i64, ir.i16, _integer),
    "i32": (ir.i64, ir.i32, _integer),
    "i64": (ir.i64, None, _integer),
    "u8": (ir.i64, ir.u8, _integer),
    "u16": (ir.i64, ir.u16, _integer),
    "u32": (ir.i64, ir.u32, _integer),
    "u64": (ir.i64, ir.u64, _integer),
    "fp16": (ir.u16, None, _fp16),
    "bf16": (ir.u16, None, _bf16),
    "fp32": (ir.f32, None, _float),
    "f32": (ir.f32, None, _float),
    "fp64": (ir.f64, None, _float),
}


#: The metadata keys a launch reads (:func:`launch_metadata`).
_LAUNCH_METADATA = (
    "num_warps", "num_ctas", "shared", "tensordesc_meta", TRITON_ABI.warp_size_key,
    *TRITON_ABI.flags, *TRITON_ABI.hip_flags,
)


def launch_metadata(md: Any) -> Dict[str, Any]:
    """What a launch reads of a kernel's metadata (a ``KernelMetadata`` named tuple or a
    dict): :data:`_LAUNCH_METADATA`'s keys that it has. Specializations of one kernel differ in
    the rest (``hash``), as can installations (``extern_libs``' paths): :func:`launch_module`
    is given only these, so that what it reads is what the host functions are shared by."""
    if hasattr(md, "_asdict"):
        return {k: getattr(md, k) for k in _LAUNCH_METADATA if hasattr(md, k)}
    full = dict(md)
    return {k: full[k] for k in _LAUNCH_METADATA if k in full}


def launch_module(
    name: str, cubin: bytes, md: Dict[str, Any], leaves: Sequence[Any], key: Sequence[Any], ordinal: int, backend: str = "cuda",
) -> Module:
    """The host function ``launch(grid_x, grid_y, grid_z, stream, *arguments, global_scratch,
    profile_scratch, function)`` for one kernel and one set of descriptor fields (``key``: per
    host descriptor, ``(padding, round_f32_to_tf32)``, then for an im2col one its lower and
    upper corners and element strides), as a verified module; ``md`` its
    :func:`launch_metadata`; ``cubin`` the HSACO of an AMD kernel (``backend == "hip"``).
    ``function`` is the handle ``utils.load_binary`` loaded the binary as on device
    ``ordinal``, which the launch uses as Triton's launcher does (``function=``: the binary is
    not loaded again, only checked against, so one host function serves every kernel whose
    binary declares the same parameters).

    What the launch is, is decided here (each argument's kind, each descriptor's
    :func:`descriptor_spec`, :func:`launch_settings`); the module is built natively from it
    (``safecall._native.triton_launch_module``: no IR text written and parsed again)."""
    hip = backend == "hip"
    kernel = Kernel(
        name=name, cubin=cubin, metadata=md, signature={}, constants={}, divisible=frozenset(), backend=backend
    )
    specs: List[Any] = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, tuple):
            ty, k = leaf
            padding, tf32, *im2col = key[k]
            fields = {"padding": padding, "round_f32_to_tf32": tf32}
            fields.update(zip(TRITON_ABI.tensor_descriptor.im2col_fields, im2col))
            specs.append(descriptor_spec(kernel, f"arg{i}", ty, md["tensordesc_meta"][k], fields))
        elif leaf.startswith(TRITON_ABI.pointer_prefix):
            specs.append(None)
        else:
            outer, inner, _ = _SCALARS[leaf]
            specs.append((str(outer), None if inner is None else str(inner)))
    num_ctas, block, settings = launch_settings(md, hip)
    return triton_launch_module(
        name, TRITON_ABI.backends[backend].format, cubin, specs, list(TRITON_ABI.trailing_pointers), num_ctas, block,
        settings, ordinal, hip,
    )


def host_function(
    name: str, cubin: bytes, md: Dict[str, Any], leaves: Sequence[Any], key: Tuple[Any, ...], ordinal: int, backend: str,
    native: bool,
) -> Any:
    """The JIT-compiled :func:`launch_module` of a kernel (``md`` its :func:`launch_metadata`):
    for ``native`` use, ``(safe-call address, what keeps its code alive)``, which
    :class:`safecall._native.TritonLaunch` calls and asks for the optimized code of itself;
    otherwise its ``tvm_ffi.Function``. Shared through :data:`_FORMS` with every kernel of the
    same form: what :func:`launch_module` builds from, with the metadata reduced to what the
    launch reads (all it is given) and the binary to what the verifier reads of it (the
    kernel's parameter table, :func:`safecall._native.kernel_params`, read only where a host
    function of the same name and arguments exists). The specializations of one kernel that differ only in what
    Triton assumed of the arguments (16-byte alignment, divisibility by 16) share one. Only
    what the launches need is kept (not the module, which holds a copy of the binary), and
    the binary itself until its table is read."""
    # Every pointer is a `data_ptr` parameter, whatever it points to.
    kinds = tuple(leaf if isinstance(leaf, tuple) or not leaf.startswith(TRITON_ABI.pointer_prefix) else "*"
                  for leaf in leaves)
    group = (name, backend, ordinal, kinds, key, native)
    binary = _Binary(TRITON_ABI.backends[backend].format, cubin, name)
    for shared in _FORMS.get(group, ()):
        if shared.launch_metadata == md and shared.binary.same_params(binary):
            return shared.built
    module = launch_module(name, cubin, md, leaves, key, ordinal, backend)
    if native:
        # Launchable at once from the baseline compiler's code; the native launcher asks for
        # Cranelift's optimized code (compiled on the tier-up thread) once the kernel has been
        # launched often enough to pay for it.
        jitted = jit(module, tier_up="on_request")
        built = (jitted.addresses["launch"], jitted.code)
    else:
        built = jit(module)["launch"]
    if binary.may_match():
        _FORMS.setdefault(group, []).append(_Shared(binary, md, built))
    return built


class _Binary:
    """A kernel's binary, for comparing its parameter table with another's: read once, when
    first compared, and then let go."""

    __slots__ = ("format", "data", "name", "_params")

    def __init__(self, format: str, data: bytes, name: str):
        self.format, self.data, self.name = format, data, name
        self._params: Any = _Binary

    def params(self) -> Any:
        """:func:`safecall._native.kernel_params` of the kernel (None: unknown)."""
        if self._params is _Binary:
            self._params = kernel_params(self.format, self.data, self.name)
            self.data = b""
        return self._params

    def may_match(self) -> bool:
        """False once its table was read and is unknown: it can never be shared."""
        return self._params is _Binary or self._params is not None

    def same_params(self, other: "_Binary") -> bool:
        """Whether both tables are known and equal: the verifier checks a launch of either
        kernel alike (``other``'s read first)."""
        theirs = other.params()
        return theirs is not None and theirs == self.params()


class _Shared:
    """A host function in :data:`_FORMS`, with the binary and metadata it was built from."""

    __slots__ = ("binary", "launch_metadata", "built")

    def __init__(self, binary: _Binary, launch_metadata: Dict[str, Any], built: Any):
        self.binary, self.launch_metadata, self.built = binary, launch_metadata, built
