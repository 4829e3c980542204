"""``launcher_cls`` of the installed safecall Triton driver: launches a compiled kernel with
the running Triton's launcher semantics (3.7+: ``CudaLauncher`` over ``driver.c``'s
``launch``; 3.6: its launcher generated per signature), through a host function safecall
generates per kernel form (``_triton_host_function``: a kernel's specializations for other
alignments of the same arguments share one). Kernels of pointers, scalars and host TMA descriptors launch through
the native :class:`safecall._native.TritonLaunch`; the others (tuples, descriptors Triton
decomposes into pointers, scratch memory) through :class:`SafecallLauncher`, in Python.

Per call it receives what Triton's JIT hands any launcher (grid, stream, the ``CUfunction``
from ``utils.load_binary``, packed metadata, launch metadata, the two hooks, then every bound
argument, constexprs included). Python does what only Python can (the hooks, Triton's
allocators for the scratch memory, ``data_ptr()`` of tensor-likes, ``TensorDescriptor``
fields); the generated function (built on the first call from the cubin ``load_binary``
loaded, with the launch settings of :data:`safecall.triton.TRITON_ABI`) checks the grid,
packs every argument as Triton does and calls ``cuLaunchKernelEx`` on the ``CUfunction``
``load_binary`` returned, its last argument (the IR's ``function=``: the cubin is checked
against, not loaded a second time).

Argument conversions, as Triton's extractors: pointers take ``None`` (NULL), an ``int``
(unchecked) or an object with ``data_ptr()``; integers follow each release's rules
(:data:`_INTEGER_RULES`: 3.7+ truncate to the kernel's width as C casts do, ``u64`` takes 0 to
2^64 - 1; 3.6 checks ranges and masks as ``PyArg_ParseTuple`` does); ``fp16`` rounds to
nearest even (``OverflowError`` beyond the half range, as ``PyFloat_Pack2``); ``bf16`` is the
upper half of the float32 (truncated, as Triton does); ``fp32``/``fp64`` round to nearest.
"""

from __future__ import annotations

import functools
import operator
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._native import cuda_device_pointer, hip_device_pointer
from ._triton_abi import TRITON_ABI, UnsupportedKernelError
from ._triton_args import is_im2col
from ._triton_hip import libhip_path
from ._triton_host_function import _SCALARS, host_function, launch_metadata
from ._triton_integers import _grid_dim, _integer, _integer_rule, _integer_slow, _u64
from ._triton_metadata import PackedMetadataCheck, packed_metadata
from ._triton_utils import _libcuda_path

#: The launch settings the installed driver's launcher does not serve yet, by metadata key.
_UNSERVED_INSTRUMENTATION = ("gsan",)


def _pointer(value: Any, out: List[Any]) -> None:
    out.append(_address_bits(_address(value)))


def _hip_pointer(value: Any, out: List[Any]) -> None:
    out.append(_address_bits(_address(value, hip=True)))


def _address_bits(address: int) -> int:
    """An address of 0 to 2^64 - 1 as the signed 64-bit int the host function's pointer
    parameter takes (an int from 2^63 on would reach it as an ``ffi.BigInt``)."""
    return address - (1 << 64) if address >> 63 else address


class _Leaf:
    """One kernel argument of the flattened signature: its type and how Python converts it."""

    __slots__ = ("ty", "convert", "descriptor")

    def __init__(self, ty: str, convert: Callable[[Any, List[Any]], None], descriptor: Optional[dict] = None):
        self.ty, self.convert, self.descriptor = ty, convert, descriptor


class SafecallLauncher:
    """Triton's ``launcher_cls`` protocol: ``SafecallLauncher(src, metadata)``, then called as
    ``launcher(gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
    launch_enter_hook, launch_exit_hook, *args)`` for each launch."""

    def __init__(self, src: Any, metadata: Any):
        for mode in _UNSERVED_INSTRUMENTATION:
            if mode in str(getattr(metadata, "instrumentation_mode", "") or ""):
                raise UnsupportedKernelError(f"safecall's Triton driver does not serve {mode} instrumentation yet")
        self.metadata = metadata
        self.name = getattr(metadata, "name", "kernel")
        #: Refuses packed metadata other than the kernel's (``_triton_metadata``).
        self.check_metadata = PackedMetadataCheck(packed_metadata(metadata), self.name, _triton_minor())
        #: ``"cuda"``, or ``"hip"`` for an AMD kernel (its ``target.backend``).
        self.backend = kernel_backend(metadata)
        self.pointer = _hip_pointer if self.backend == "hip" else _pointer
        self.minor = _triton_minor()
        self.types = list(src.signature.values())
        self.tensordesc_meta = list(getattr(metadata, "tensordesc_meta", None) or [])
        self.num_ctas = int(getattr(metadata, "num_ctas", 1) or 1)
        if self.backend == "hip":
            if getattr(metadata, "launch_cooperative_grid", False):
                _check_cooperative()
        self.global_scratch = (int(metadata.global_scratch_size or 0), int(metadata.global_scratch_align or 1))
        self.profile_scratch = (int(metadata.profile_scratch_size or 0), int(metadata.profile_scratch_align or 1))
        entries = iter(self.tensordesc_meta)
        self.plan = [self._plan(ty, entries) for ty in self.types]
        #: How many of the kernel's arguments a launch must pass at least, more being ignored
        #: (``_check_count``); None: exactly its arguments.
        self.at_least = _at_least(self.plan, self.minor)
        # On Triton 3.6 host descriptors get the bit-21 workaround of 3.7+ (cleared for tensors
        # under 128 KiB on drivers up to 13010), which 3.6's launcher does not apply: the one
        # bit in which these launches differ from 3.6's own (docs/triton.md).
        self._functions: Dict[Tuple[int, Tuple[Any, ...]], Any] = {}
        #: :func:`launch_metadata` of the kernel, made on the first build.
        self._launch_metadata: Optional[Dict[str, Any]] = None

    # ---- the conversion plan --------------------------------------------------------------
    def _plan(self, ty: Any, entries: Any) -> Any:
        if isinstance(ty, tuple):
            return tuple(self._plan(t, entries) for t in ty)
        if ty == TRITON_ABI.constexpr:
            return None
        if isinstance(ty, str) and ty.startswith(TRITON_ABI.tensor_descriptor.prefix):
            entry = next(entries, None) if self.tensordesc_meta else None
            return _Leaf(ty, _pointer, {"entry": entry})
        if isinstance(ty, str) and ty.startswith(TRITON_ABI.pointer_prefix):
            return _Leaf(ty, self.pointer)
        if ty not in _SCALARS:
            raise UnsupportedKernelError(f"kernel `{self.name}`: argument type {ty!r} is not served by safecall's Triton driver")
        convert = _SCALARS[ty][2]
        if convert is _integer:
            convert = functools.partial(_integer, _integer_rule(ty, self.minor))
        return _Leaf(ty, convert)

    def _flatten(self, plan: Sequence[Any], args: Sequence[Any], out: List[Any], leaves: List[Any], key: List[Any],
                 deferred: Optional[List[Tuple[int, Any]]]) -> None:
        """The arguments' words into ``out``; with ``deferred`` (Triton 3.6, whose launcher
        reads pointers after the enter hook), each pointer's place and object there instead
        (a 0 in its place)."""
        for step, value in zip(plan, args):
            if step is None:
                continue
            if isinstance(step, tuple):
                self._flatten(step, value, out, leaves, key, deferred)
            elif step.descriptor is not None:
                self._descriptor(step, value, out, leaves, key, deferred)
            else:
                if deferred is not None and step.convert is self.pointer:
                    deferred.append((len(out), value))
                    out.append(0)
                else:
                    step.convert(value, out)
                leaves.append(step.ty)

    def _descriptor(self, step: _Leaf, desc: Any, out: List[Any], leaves: List[Any], key: List[Any],
                    deferred: Optional[List[Tuple[int, Any]]]) -> None:
        entry = step.descriptor["entry"]
        if entry is None:
            # Decomposed (no TMA): base, shape and strides as i64, the two flags, then the
            # shape as i32 and the strides as i64 again (backends/driver.py's layout; its
            # `decompose_descriptor` reads the shape and strides before the launcher checks
            # the base's pointer).
            shape, strides = _shape_and_strides(desc)
            elem = step.ty[step.ty.index("<") + 1 : step.ty.index("[")]
            if deferred is not None:
                deferred.append((len(out), desc.base))
                out.append(0)
            else:
                self.pointer(desc.base, out)
            leaves.append("*" + elem)
            for v in shape + strides:
                out.append(v)
                leaves.append("i64")
            flags = [desc.padding == "nan"]
            if self.minor >= (3, 7):
                flags.append(bool(desc.round_f32_to_tf32))
            for flag in flags:
                out.append(int(flag))
                leaves.append("i1")
            for v in shape:
                out.append(v)
                leaves.append("i32")
            for v in strides:
                out.append(v)
                leaves.append("i64")
            return
        # The base's address first, then the shape and strides, as the native launcher reads
        # a TMA or TDM descriptor.
        address = _descriptor_address(desc.base)
        shape, strides = _shape_and_strides(desc)
        dtype = _descriptor_dtype(step.ty)
        out.append(_descriptor_view(address, dtype, shape, strides, TRITON_ABI.backends[self.backend].device_type))
        leaves.append((step.ty, len(key)))
        if self.backend == "hip":
            # A TDM descriptor: Triton's AMD launcher reads no other field (no padding, no tf32).
            key.append(("zero", False))
            return
        # As `make_tensordesc_arg`: NaN fill for a padding equal to "nan", zero for anything else.
        padding = "nan" if desc.padding == "nan" else "zero"
        fields: Tuple[Any, ...] = (padding, bool(getattr(desc, "round_f32_to_tf32", False)) and self.minor >= (3, 7))
        if is_im2col(step.ty, entry):
            # The corners and element strides are encoded into the CUtensorMap: part of the
            # host function's key, as the padding is (None element strides are all 1, as
            # Triton passes them).
            lower = _ints(desc.pixel_box_lower_corner, "pixelBoxLower elements must be int")
            upper = _ints(desc.pixel_box_upper_corner, "pixelBoxUpper elements must be int")
            strides_field = getattr(desc, "element_strides", None)
            element_strides = (
                _ints(strides_field, "elementStrides elements must be int") if strides_field is not None else (1,) * len(shape)
            )
            fields += (lower, upper, element_strides)
        key.append(fields)

    # ---- the call -------------------------------------------------------------------------
    def __call__(
        self, gx: int, gy: int, gz: int, stream: int, function: int, kernel_metadata: Any,
        launch_metadata: Any, launch_enter_hook: Any, launch_exit_hook: Any, *args: Any,
    ) -> None:
        self._check_count(len(args))
        self.check_metadata(kernel_metadata)
        scratch = [self._scratch(self.global_scratch, gx, gy, gz, stream, profile=False),
                   self._scratch(self.profile_scratch, gx, gy, gz, stream, profile=True)]
        # Parsed first, as Triton's launchers parse them (before the hook and the arguments).
        gx, gy, gz = _grid_dim(gx), _grid_dim(gy), _grid_dim(gz)
        # The enter hook runs before the arguments are read (3.7+'s driver.c), after them on
        # 3.6 (its launcher parses the arguments first).
        hook_first = self.minor >= (3, 7)
        if hook_first and launch_enter_hook is not None and _hooked(launch_enter_hook):
            launch_enter_hook(launch_metadata)
        values: List[Any] = []
        leaves: List[Any] = []
        key: List[Any] = []
        # Triton 3.6's launcher reads the pointers after the enter hook, the scratch's first.
        deferred: Optional[List[Tuple[int, Any]]] = None if hook_first else []
        self._flatten(self.plan, args, values, leaves, key, deferred)
        if deferred is None:
            for s in scratch:
                self.pointer(s, values)
        else:
            deferred[:0] = [(len(values) + i, s) for i, s in enumerate(scratch)]
            values.extend(0 for _ in scratch)
        fn = self._functions.get((function, tuple(key)))
        if fn is None:
            fn = self._build(function, leaves, key)
        if not hook_first and launch_enter_hook is not None and _hooked(launch_enter_hook):
            launch_enter_hook(launch_metadata)
        for at, value in deferred or ():
            word: List[Any] = []
            self.pointer(value, word)
            values[at] = word[0]
        fn(gx, gy, gz, stream, *values, _address_bits(function))
        if launch_exit_hook is not None and _hooked(launch_exit_hook):
            launch_exit_hook(launch_metadata)

    def _check_count(self, given: int) -> None:
        """The launch's item count: exact, or per :func:`_at_least` (the native launcher's
        rule and messages, ``TritonLaunch.call_items``)."""
        n, at_least = len(self.plan), self.at_least
        if given == n or (at_least is not None and given >= at_least):
            return
        if at_least is not None and at_least < n:
            raise TypeError(f"the launcher takes 9 arguments and at least the kernel's first {at_least} "
                            f"(its last parameters are constexprs), got {9 + given}")
        raise TypeError(f"the launcher takes {9 + n} arguments (9 and the kernel's {n}), got {9 + given}")

    def _scratch(self, spec: Tuple[int, int], gx: int, gy: int, gz: int, stream: int, profile: bool) -> Any:
        size, align = spec
        if size <= 0:
            return None
        from triton.runtime import _allocation

        nbytes = gx * gy * gz * self.num_ctas * size
        if not profile:
            return _allocation._allocator.get()(nbytes, align, stream)
        if not hasattr(_allocation, "has_profile_allocator"):
            # Triton 3.6/3.7: the profile allocator, a NullAllocator raising unless one was set.
            return _allocation._profile_allocator.get()(nbytes, align, stream)
        if _allocation.has_profile_allocator():
            return _allocation._profile_allocator.get()(nbytes, align, stream)
        import triton

        return triton.runtime.driver.active.allocate_default_profile_scratch(nbytes, align, stream)

    # ---- the host function ----------------------------------------------------------------
    def _binary(self, function: int) -> Tuple[str, bytes, int]:
        """What ``utils.load_binary`` loaded as ``function``: (kernel name, cubin or HSACO,
        ordinal)."""
        import triton

        found = getattr(triton.runtime.driver.active.utils, "binaries", {}).get(function)
        if found is None:
            raise RuntimeError(
                f"safecall's Triton driver: kernel `{self.name}`: function {function:#x} was not loaded by this "
                "driver's utils.load_binary (was it compiled before safecall.triton.install()?)"
            )
        return found

    def _build(self, function: int, leaves: Sequence[Any], key: Sequence[Any]) -> Any:
        fn = self._host_function(function, leaves, tuple(key), native=False)
        self._functions[(function, tuple(key))] = fn
        return fn

    def build_entry(self, function: int, leaves: Sequence[Any], key: Sequence[Any] = ()) -> Tuple[int, Any]:
        """The host function of ``function`` for the descriptor fields ``key`` (per host
        descriptor ``(padding, round_f32_to_tf32)``) as ``(safe-call address, what keeps its
        code alive)``, for :class:`safecall._native.TritonLaunch`."""
        return self._host_function(function, leaves, tuple(key), native=True)

    def _host_function(self, function: int, leaves: Sequence[Any], key: Tuple[Any, ...], native: bool) -> Any:
        """:func:`host_function` of ``function`` (which it takes as its last argument)."""
        name, cubin, ordinal = self._binary(function)
        if self._launch_metadata is None:
            self._launch_metadata = launch_metadata(self.metadata)
        return host_function(name, cubin, self._launch_metadata, leaves, key, ordinal, self.backend, native)


def _ints(values: Any, message: str) -> Tuple[int, ...]:
    """A sequence of ``int``s (``PyLong_Check``, as ``fillTMADescriptorIm2col``), else its
    ``TypeError``."""
    out = tuple(values)
    if not all(isinstance(v, int) for v in out):
        raise TypeError(message)
    return tuple(int(v) for v in out)


_MAX_DESCRIPTOR_RANK = 5


def _dims(values: Any, what: str) -> List[int]:
    """A descriptor's shape or strides as the native launcher reads them: at most five
    integers (``__index__``: a ``float`` is a ``TypeError``), each fitting a signed 64-bit
    integer (else ``OverflowError``), never truncated."""
    out = []
    for v in values:
        if len(out) == _MAX_DESCRIPTOR_RANK:
            raise ValueError(f"a TensorDescriptor's {what} has more than {_MAX_DESCRIPTOR_RANK} dimensions")
        n = operator.index(v)
        if not -(1 << 63) <= n < (1 << 63):
            raise OverflowError(f"a TensorDescriptor's {what} entry {n} does not fit a signed 64-bit integer")
        out.append(n)
    return out


def _shape_and_strides(desc: Any) -> Tuple[List[int], List[int]]:
    """A descriptor's shape and strides (:func:`_dims`), of equal lengths (else a
    ``ValueError``)."""
    shape, strides = _dims(desc.shape, "shape"), _dims(desc.strides, "strides")
    if len(strides) != len(shape):
        raise ValueError(f"a TensorDescriptor's shape has {len(shape)} dimensions but its strides {len(strides)}")
    return shape, strides


def _at_least(plan: Sequence[Any], minor: Tuple[int, int]) -> Optional[int]:
    """How many items a launch of a kernel with this ``plan`` must pass at least, more being
    ignored, or None where it must pass exactly its arguments. Triton 3.7+'s ``driver.c`` reads
    the items by the signature and never counts them: trailing constexprs may be left out
    (a ``CompiledKernel`` called with its runtime arguments only), items past the last
    parameter are ignored (fewer than that is a ``TypeError`` here: ``driver.c`` reads past the
    tuple). Exact on 3.6 (its generated launcher parses a fixed count) and, on 3.8+, for a
    kernel with host tensor descriptors (Triton's native ``make_tensordesc_args`` asserts the
    count: the process aborts)."""

    def descriptors(steps: Sequence[Any]) -> bool:
        return any(descriptors(s) if isinstance(s, tuple) else (s is not None and s.descriptor is not None)
                   for s in steps)

    if minor < (3, 7) or (minor >= (3, 8) and descriptors(plan)):
        return None
    return max((i + 1 for i, step in enumerate(plan) if step is not None), default=0)


@functools.lru_cache(maxsize=None)
def _triton_minor() -> Tuple[int, int]:
    """The running Triton's (major, minor), read once (a process runs one Triton)."""
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def kernel_backend(metadata: Any) -> str:
    """A compiled kernel's ``target.backend`` (``"cuda"`` when its metadata has none)."""
    target = getattr(metadata, "target", None)
    if isinstance(target, dict):
        return str(target.get("backend") or "cuda")
    return str(getattr(target, "backend", None) or "cuda")


def _check_cooperative() -> None:
    """Triton's ``HIPLauncher`` check: a cooperative kernel needs a device that supports
    cooperative launches (an ``AssertionError`` otherwise, as Triton's)."""
    import triton

    active = triton.runtime.driver.active
    props = active.utils.get_device_properties(active.get_current_device())
    assert props["cooperativeLaunch"], "Cooperative launch requested but not supported by device"


def _address(value: Any, hip: bool = False) -> int:
    """A pointer argument's address, as ``driver.c``'s ``extractPointer``: ``None`` is NULL,
    an ``int`` (or an instance of a subclass, ``bool`` included) itself, anything else its
    ``data_ptr()``, which must be an ``int``, checked by the driver (``cuPointerGetAttribute``,
    or ``hipPointerGetAttribute`` for ``hip``: host memory the device cannot reach is Triton's
    ``ValueError``), except (CUDA only, as Triton's AMD driver checks every one) a torch
    tensor whose ``is_cuda`` is true."""
    if value is None:
        return 0
    if isinstance(value, int):
        return _u64(int(value))
    try:
        address = value.data_ptr()
    except Exception as e:
        # Any failure of the call (no such attribute, not callable, or it raised) is
        # driver.c's TypeError; the call's own error is its cause.
        raise TypeError("Pointer argument must be either uint64 or have data_ptr method") from e
    if not isinstance(address, int):
        raise TypeError("data_ptr method of Pointer object must return 64-bit int")
    address = _u64(int(address))
    if hip:
        return address if address == 0 else hip_device_pointer(libhip_path(), address)
    torch = sys.modules.get("torch")
    if address == 0 or (type(value) is getattr(torch, "Tensor", None) and value.is_cuda):
        return address
    return cuda_device_pointer(_libcuda_path(), address)


def _descriptor_address(base: Any) -> int:
    """A TMA descriptor's base address as Triton's ``make_tensordesc_arg`` reads it:
    ``base.data_ptr()``, with no device check: an ``int`` (or an instance of a subclass, as the
    encoder's ``PyArg_ParseTuple`` takes) of 0 to 2^64 - 1 (the encoder would wrap others)."""
    address = base.data_ptr()
    if not isinstance(address, int):
        raise TypeError("data_ptr method of a TensorDescriptor's base must return 64-bit int")
    return _u64(int(address))


def _descriptor_dtype(ty: str) -> str:
    elem = ty[ty.index("<") + 1 : ty.index("[")]
    dtype = TRITON_ABI.pointee_dtypes.get(elem)
    if dtype is None:
        raise UnsupportedKernelError(f"a tensor descriptor of `{elem}` is not served by safecall's Triton driver")
    return dtype


def _descriptor_view(address: int, dtype: str, shape: Sequence[int], strides: Sequence[int], device_type: int) -> Any:
    """A ``tvm_ffi.Tensor`` at ``address`` with the descriptor's shape and strides (elements),
    on device 0 of ``device_type`` (the launch device is the host function's own): what the
    host function builds the ``CUtensorMap``, or on AMD the TDM descriptor, from."""
    import tvm_ffi

    from ._dlpack import View

    return tvm_ffi.from_dlpack(View(address, dtype, shape, strides, device_type=device_type))


#: Triton's ``triton.knobs.HookChain``, imported when a launch first has a hook.
_HOOK_CHAIN: List[type] = []


def _hooked(hook: Any) -> bool:
    """Whether a launch hook does anything, as Triton's launchers call it: one of exactly
    Triton's ``HookChain`` class with registered calls, or any other object (a ``HookChain``
    subclass, or an object with a ``calls`` attribute of its own, is called whatever its
    ``calls``)."""
    if not _HOOK_CHAIN:
        from triton.knobs import HookChain

        _HOOK_CHAIN.append(HookChain)
    return type(hook) is not _HOOK_CHAIN[0] or bool(getattr(hook, "calls", True))


def launcher(src: Any, metadata: Any) -> Callable[..., None]:
    """The driver's ``launcher_cls``: for a kernel whose arguments are pointers, scalars and
    host TMA descriptors (no tuples, no descriptors decomposed into pointers) and without
    scratch memory, :class:`safecall._native.TritonLaunch` over a launch function generated
    for its exact argument list (no loop over a plan per call), as the builtin function of its
    ``function()`` (called with CPython's fast convention: no tuple read item by item);
    otherwise a :class:`SafecallLauncher`. Both launch the same way."""
    general = SafecallLauncher(src, metadata)
    if general.global_scratch[0] or general.profile_scratch[0]:
        return general
    if any(isinstance(step, tuple) or (step is not None and step.descriptor is not None and step.descriptor["entry"] is None)
           for step in general.plan):
        return general
    # im2col descriptors: their corners are part of the host function's key, which the native
    # launcher's (two bits per descriptor) does not hold.
    if any(step is not None and step.descriptor is not None and is_im2col(step.ty, step.descriptor["entry"])
           for step in general.plan):
        return general
    if sum(step is not None and step.descriptor is not None for step in general.plan) > _MAX_NATIVE_DESCRIPTORS:
        return general
    from triton.knobs import HookChain

    from ._dlpack import DTYPES
    from ._native import TritonLaunch

    leaves: List[Any] = []
    kinds: List[int] = []
    descriptors: List[Tuple[int, int]] = []
    for step in general.plan:
        if step is None:
            kinds.append(0)
        elif step.descriptor is not None:
            leaves.append((step.ty, len(descriptors)))
            kinds.append(_KIND_CODES["tensordesc"])
            code, bits, _ = DTYPES[_descriptor_dtype(step.ty)]
            descriptors.append((code, bits))
        else:
            leaves.append(step.ty)
            kinds.append(_kind_code(step.ty))
    torch = sys.modules.get("torch")
    minor = _triton_minor()
    hip = general.backend == "hip"
    return TritonLaunch(
        kinds,
        lambda function, key: general.build_entry(function, leaves, key),
        HookChain,
        # Triton's AMD driver checks every data_ptr() with the runtime, torch's too.
        _NoTensor if hip else getattr(torch, "Tensor", _NoTensor),
        _libcuda_path(),
        _integer_slow,
        minor >= (3, 7),
        descriptors,
        minor >= (3, 7),
        libhip_path() if hip else None,
        general.check_metadata,
        general.at_least,
    ).function()


#: The most host descriptors :class:`safecall._native.TritonLaunch` takes (2 bits of each in a
#: 64-bit key of its host functions).
_MAX_NATIVE_DESCRIPTORS = 32


def _kind_code(ty: str) -> int:
    if ty.startswith(TRITON_ABI.pointer_prefix):
        return _KIND_CODES["*"]
    return _KIND_CODES.get(ty) or _integer_rule(ty, _triton_minor())


#: A leaf type -> the argument kind code of :class:`safecall._native.TritonLaunch` (``"*"``: any
#: pointer; ``"tensordesc"``: a host TMA descriptor; integers by :func:`_integer_rule`).
_KIND_CODES: Dict[str, int] = {
    "*": 1,
    "tensordesc": 2,
    **{t: 4 for t in ("fp32", "f32", "fp64")},
    "fp16": 5,
    "bf16": 6,
}

class _NoTensor:
    """Stands for ``torch.Tensor`` when torch is not imported: no value is of this class."""


class _Compiled:
    """What :func:`safecall.triton.from_compiled` reads of a compiled kernel, from the
    launcher's ``(src, metadata)`` and the cubin ``load_binary`` loaded."""

    def __init__(self, src: Any, metadata: Any, cubin: bytes):
        self.src, self.metadata = src, metadata
        self.asm = {TRITON_ABI.backends[kernel_backend(metadata)].asm: cubin}


def strict_launcher(src: Any, metadata: Any) -> Callable[..., None]:
    """The ``launcher_cls`` of ``install(strict=True)``: each kernel launched through
    :func:`safecall.triton.function`'s host function (its checks and messages), with Triton's
    hooks around the call. The grid goes first, as a tuple; every argument follows,
    constexprs included, as the JIT hands them."""
    from . import triton as sct

    functions: Dict[int, Any] = {}
    name = getattr(metadata, "name", "kernel")
    check_metadata = PackedMetadataCheck(packed_metadata(metadata), name, _triton_minor())

    def launch(gx: int, gy: int, gz: int, stream: int, function: int, kernel_metadata: Any,
               launch_metadata: Any, enter: Any, exit: Any, *args: Any) -> None:
        check_metadata(kernel_metadata)
        fn = functions.get(function)
        if fn is None:
            import triton

            found = getattr(triton.runtime.driver.active.utils, "binaries", {}).get(function)
            if found is None:
                raise RuntimeError(f"safecall's Triton driver: kernel `{name}` was not loaded by this driver")
            # The handle `load_binary` loaded on `found[2]`, launched as it is (one load).
            fn = functions[function] = sct.function(
                _Compiled(src, metadata, found[1]), grid=3, handle=(function, found[2])
            )
        if enter is not None and _hooked(enter):
            enter(launch_metadata)
        fn((gx, gy, gz), *args)
        if exit is not None and _hooked(exit):
            exit(launch_metadata)

    return launch
