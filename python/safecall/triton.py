"""Triton kernels as TVM-FFI functions, with no C compiler: ``safecall.triton``.

A compiled Triton kernel (a ``triton.compiler.CompiledKernel``, or its cubin and ``.json``
metadata on disk) becomes a host function in the IR that checks its arguments and launches the
cubin exactly as Triton's own launcher does; :func:`function` JIT-compiles it into a
``tvm_ffi.Function`` in about a millisecond, :func:`build` links several into a ``.so`` that
loads with only ``import tvm_ffi``. Triton itself is imported only to read a kernel (and not
even then: a kernel is read by duck typing, ``.asm``, ``.metadata`` and ``.src``).

>>> import safecall.triton as sct
>>> sct.SUPPORTED_TRITON
'3.9'

Every Triton ABI fact lives in :data:`TRITON_ABI`; docs/triton.md says what is checked.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

from . import builder as ir
from ._compile import build as build_module
from ._compile import jit as jit_module
from ._triton_abi import (
    SUPPORTED_TRITON,
    TRITON_ABI,
    BackendAbi,
    Kernel,
    TensorDescriptorAbi,
    TritonAbi,
    TritonVersionError,
    UnsupportedKernelError,
)
from ._triton_dispatch import AutotuneDispatcher, Dispatcher
from ._triton_dispatch import dispatcher as jit
from ._triton_driver import ENV_VAR, helion_launcher, install, installed
from ._triton_args import (
    check_descriptor_options,
    descriptor_argument,
    descriptor_type,
    fp16_argument,
    launch_settings,
    pointee,
    scratch_pointers,
    tdm_descriptor_type,
)

__all__ = [
    "AutotuneDispatcher",
    "BackendAbi",
    "ENV_VAR",
    "SUPPORTED_TRITON",
    "TRITON_ABI",
    "Dispatcher",
    "Kernel",
    "TensorDescriptorAbi",
    "TritonAbi",
    "TritonVersionError",
    "UnsupportedKernelError",
    "add_function",
    "build",
    "check_version",
    "from_compiled",
    "function",
    "helion_launcher",
    "install",
    "installed",
    "jit",
    "load",
    "module",
]

def check_version(version: Optional[str]) -> None:
    """Refuses a Triton version other than :data:`SUPPORTED_TRITON` (``3.9.x``).

    Raises
    ------
    TritonVersionError
        The version is missing or not 3.9.x.
    """
    if not isinstance(version, str):
        raise TritonVersionError(
            f"the kernel's metadata names no `triton_version`: safecall.triton supports kernels "
            f"compiled by Triton {SUPPORTED_TRITON}.x only"
        )
    if version.split(".")[:2] != SUPPORTED_TRITON.split("."):
        raise TritonVersionError(
            f"kernel compiled by Triton {version}: safecall.triton supports Triton "
            f"{SUPPORTED_TRITON}.x only (its launch ABI is the one tested)"
        )


def _metadata_dict(md: Any) -> Dict[str, Any]:
    if isinstance(md, Mapping):
        return dict(md)
    if hasattr(md, "_asdict"):
        return dict(md._asdict())
    return dict(vars(md))


def _by_name(signature: Mapping[str, str], keyed: Mapping[Any, Any]) -> Dict[str, Any]:
    """Triton keys constants and attributes by argument path (``(4,)``); names them."""
    names = list(signature)
    out = {}
    for key, value in keyed.items():
        if isinstance(key, str):
            out[key] = value
        elif isinstance(key, tuple) and len(key) == 1 and 0 <= key[0] < len(names):
            out[names[key[0]]] = value
        else:
            raise UnsupportedKernelError(
                f"argument path {key!r}: tuple arguments are not supported (only flat signatures)"
            )
    return out


def _divisible_from_attrs(signature: Mapping[str, str], attrs: Mapping[Any, Any]) -> FrozenSet[str]:
    attr, value = TRITON_ABI.divisibility
    named = _by_name(signature, attrs)
    return frozenset(n for n, items in named.items() if [attr, value] in [list(i) for i in items])


def from_compiled(kernel: Any) -> Kernel:
    """Reads a compiled kernel: a ``triton.compiler.CompiledKernel`` (what ``triton.compile``
    returns, or a ``@triton.jit`` function's cache holds), by duck typing.

    Parameters
    ----------
    kernel : CompiledKernel
        Anything with ``.asm["cubin"]``, ``.metadata`` and ``.src`` (``signature``,
        ``constants``, ``attrs``).

    Returns
    -------
    Kernel

    Raises
    ------
    TritonVersionError
        It was compiled by another Triton than 3.9.
    UnsupportedKernelError
        It is not a CUDA kernel, or has tuple arguments.
    """
    md = _metadata_dict(kernel.metadata)
    check_version(md.get("triton_version"))
    target = md.get("target")
    backend = getattr(target, "backend", None) or (target or {}).get("backend")
    _check_backend(backend, f"kernel `{md.get('name')}`")
    src = kernel.src
    signature = dict(src.signature)
    return Kernel(
        name=md["name"],
        cubin=bytes(kernel.asm[TRITON_ABI.backends[backend].asm]),
        backend=backend,
        metadata=md,
        signature=signature,
        constants=_by_name(signature, getattr(src, "constants", {}) or {}),
        divisible=_divisible_from_attrs(signature, getattr(src, "attrs", {}) or {}),
    )


def load(
    json_path: Union[str, os.PathLike],
    *,
    signature: Mapping[str, str],
    constants: Optional[Mapping[str, Any]] = None,
    divisible: Optional[Sequence[str]] = None,
) -> Kernel:
    """Reads a kernel from Triton's cache files: ``NAME.json`` (the metadata) and the
    ``NAME.cubin`` beside it. Triton's metadata does not hold the signature: give it as Triton
    was given it.

    Parameters
    ----------
    json_path : path
        The metadata file.
    signature : mapping of str to str
        Parameter name -> Triton type, in order (``"constexpr"`` for constexprs).
    constants : mapping, optional
        Constexpr name -> value.
    divisible : sequence of str, optional
        The parameters Triton specialized as divisible by 16. By default they are read from
        the ``NAME.ttir`` beside the metadata (its ``tt.divisibility`` attributes).

    Returns
    -------
    Kernel

    Raises
    ------
    TritonVersionError
        The metadata names another Triton than 3.9.
    FileNotFoundError
        The cubin (or, with no ``divisible``, the ``.ttir``) is missing.
    """
    path = pathlib.Path(json_path)
    md = json.loads(path.read_text())
    check_version(md.get("triton_version"))
    backend = md.get("target", {}).get("backend")
    _check_backend(backend, str(path))
    if divisible is None:
        divisible = _divisible_from_ttir(path.with_suffix(".ttir").read_text(), md["name"])
    return Kernel(
        name=md["name"],
        cubin=path.with_suffix("." + TRITON_ABI.backends[backend].asm).read_bytes(),
        backend=backend,
        metadata=md,
        signature=dict(signature),
        constants=dict(constants or {}),
        divisible=frozenset(divisible),
    )


def _check_backend(backend: Any, what: str) -> None:
    """Refuses a kernel for a backend other than CUDA and HIP (AMD)."""
    if backend not in TRITON_ABI.backends:
        known = " and ".join(repr(b) for b in TRITON_ABI.backends)
        raise UnsupportedKernelError(f"{what}: backend {backend!r}, only {known} are supported")


def _divisible_from_ttir(text: str, name: str) -> List[str]:
    """The parameters of ``tt.func public @name(%a: T {tt.divisibility = 16 : i32} ...)`` that
    carry Triton's divisibility attribute."""
    import re

    attr, value = TRITON_ABI.divisibility
    head = re.search(r"tt\.func public @" + re.escape(name) + r"\((.*)\) attributes", text)
    if head is None:
        raise UnsupportedKernelError(f"no `tt.func public @{name}` in the .ttir")
    params = re.findall(r"%([A-Za-z_][A-Za-z0-9_]*): [^%]*?(\{[^}]*\})?\s*loc\(", head.group(1))
    wanted = f"{attr} = {value} : i32"
    return [p for p, attrs in params if wanted in (attrs or "")]


# ---- building the host function -----------------------------------------------------------

GridSpec = Union[int, Sequence[Any], Callable[[Dict[str, Any]], Sequence[Any]]]


def _refuse_unsupported(kernel: Kernel) -> None:
    md = kernel.metadata
    for name in TRITON_ABI.zeroed_scratch:
        if md.get(f"{name}_size"):
            raise UnsupportedKernelError(
                f"kernel `{kernel.name}` needs {md[f'{name}_size']} bytes of {name} per program, which "
                f"Triton zeroes (proton instrumentation); safecall.triton allocates scratch uninitialized, "
                f"so it does not launch such kernels"
            )
    prefix = TRITON_ABI.tensor_descriptor.prefix
    descriptors = [arg for arg, ty in kernel.signature.items() if ty.startswith(prefix)]
    entries = md.get("tensordesc_meta") or []
    if descriptors and len(entries) != len(descriptors):
        raise UnsupportedKernelError(
            f"kernel `{kernel.name}`: {len(descriptors)} tensor descriptor arguments but {len(entries)} "
            f"`tensordesc_meta` entries; only descriptors Triton lowers to host TMA descriptors (sm_90 and "
            f"later) or AMD TDM descriptors (gfx1250) are supported"
        )
    check = tdm_descriptor_type if kernel.backend == "hip" else descriptor_type
    for arg, entry in zip(descriptors, entries):
        check(kernel, arg, kernel.signature[arg], entry)
    for arg, ty in kernel.signature.items():
        if arg in descriptors:
            continue
        if ty.startswith("(") or ty.startswith("["):
            raise UnsupportedKernelError(f"kernel `{kernel.name}`: argument '{arg}' ({ty}): tuple arguments are not supported")
        if not ty.startswith(TRITON_ABI.pointer_prefix) and ty != TRITON_ABI.constexpr:
            if ty not in TRITON_ABI.scalars:
                raise UnsupportedKernelError(
                    f"kernel `{kernel.name}`: argument '{arg}' has type `{ty}`; supported: pointers "
                    f"(*DTYPE), constexpr and {', '.join(TRITON_ABI.scalars)}"
                )


def _grid_param(grid: GridSpec, f: ir.FunctionBuilder, taken: Sequence[str]) -> Optional[List[Any]]:
    """With ``grid`` an int (its length), the grid tuple parameter (first) and its entries as
    ``i64`` expressions; otherwise None (the grid is computed, :func:`_grid_exprs`)."""
    if not isinstance(grid, int) or isinstance(grid, bool):
        return None
    axes = [f"grid_{a}" for a in "xyz"]
    if not 1 <= grid <= 3:
        raise ValueError(f"grid={grid}: a grid tuple has 1 to 3 entries")
    clash = [n for n in ["grid"] + axes[:grid] if n in taken]
    if clash:
        raise UnsupportedKernelError(f"the kernel has an argument named {clash[0]!r}, which the grid parameter uses")
    f.param("grid", ir.tuple_(*[(a, ir.i64) for a in axes[:grid]]))
    return [ir.var(a, ir.i64) for a in axes[:grid]]


def _grid_exprs(grid: GridSpec, meta: Dict[str, Any]) -> List[Any]:
    """A computed grid's 1 to 3 entries as ``i64`` expressions: a callable of Triton's ``META``
    dict, or the expressions (IR text, ``Expr``s, ints)."""
    exprs = grid(meta) if callable(grid) else grid
    if isinstance(exprs, (int, str, ir.Expr)):
        exprs = (exprs,)
    exprs = list(exprs)
    if not 1 <= len(exprs) <= 3:
        raise ValueError(f"the grid has {len(exprs)} entries, expected 1 to 3")
    out = []
    for e in exprs:
        if isinstance(e, bool) or not isinstance(e, (int, str, ir.Expr)):
            raise TypeError(f"a grid entry is an int, IR text or an expression, not {e!r}")
        out.append(ir.lit(e, ir.i64) if isinstance(e, int) else ir.cast(ir.i64, ir.Expr(e) if isinstance(e, str) else e))
    return out


def add_function(
    module: ir.ModuleBuilder,
    kernel: Any,
    name: Optional[str] = None,
    *,
    grid: GridSpec = 3,
    check_dtypes: bool = True,
    check_divisibility: bool = True,
    constexpr_params: bool = True,
    descriptors: Optional[Mapping[str, Mapping[str, Any]]] = None,
    handle: Optional[Tuple[int, int]] = None,
) -> ir.FunctionBuilder:
    """Adds a host function launching ``kernel`` (and its cubin, unless ``handle`` is given)
    to ``module``.

    The function takes the grid first when ``grid`` is an int, then the kernel's arguments in
    Triton's order, as ``CompiledKernel[grid](*args)`` does; it launches on the environment
    stream of the tensors' device (device 0 for a kernel without pointer arguments, or the
    ``handle``'s device). A module holding a ``handle`` is for ``safecall.jit`` in the process
    that loaded the kernel: a library built from it would launch an address of this process.

    Parameters
    ----------
    module : ModuleBuilder
        The module to add the function and the kernel's cubin (``<name>_cubin``) to.
    kernel : CompiledKernel or Kernel
        The kernel (see :func:`function`).
    name : str, optional
        The function's name (default: the kernel's).
    grid, check_dtypes, check_divisibility, constexpr_params, descriptors, handle
        As for :func:`function`.

    Returns
    -------
    FunctionBuilder
        The function (already added to ``module``).
    """
    k = kernel if isinstance(kernel, Kernel) else from_compiled(kernel)
    _refuse_unsupported(k)
    loaded = _handle(handle)
    descriptor_options = check_descriptor_options(k, descriptors or {})
    md = k.metadata
    fname = name or k.name
    image = TRITON_ABI.backends[k.backend]
    binary = f"{fname}_{image.asm}"
    module.device_binary(binary, image.format, k.cubin, [k.name])
    f = module.function(fname, doc=f"Launches the Triton {md.get('triton_version')} kernel `{k.name}` as Triton's launcher does.")
    meta: Dict[str, Any] = {}
    params: List[Tuple[str, str]] = []
    for arg, ty in k.signature.items():
        if ty == TRITON_ABI.constexpr:
            meta[arg] = k.constants.get(arg)
        else:
            params.append((arg, ty))
    grid_exprs = _grid_param(grid, f, list(k.signature))
    args: List[Any] = []
    first_tensor: Optional[Any] = None
    first_name = ""
    entries = iter(md.get("tensordesc_meta") or [])
    for arg, ty in k.signature.items():
        if ty == TRITON_ABI.constexpr:
            if constexpr_params:
                value = k.constants.get(arg)
                if value is not None and not isinstance(value, (bool, int, float)):
                    raise UnsupportedKernelError(
                        f"kernel `{k.name}`: constexpr '{arg}' = {value!r} cannot be checked at call "
                        f"time (const() takes int, bool, float and None); build with constexpr_params=False"
                    )
                f.param(arg, ir.const(value))
            continue
        divisible = check_divisibility and arg in k.divisible
        if ty.startswith(TRITON_ABI.tensor_descriptor.prefix):
            entry = next(entries)
            position = len(f._params)
            meta[arg], passed_args = descriptor_argument(f, k, arg, ty, entry, descriptor_options.get(arg, {}), checked=True)
            if first_tensor is None:
                first_tensor, first_name = meta[arg], f"'{arg}' (#{position})"
            args += passed_args
        elif ty.startswith(TRITON_ABI.pointer_prefix):
            spec = ir.tensor(
                "any",
                pointee(k, arg, ty, check_dtypes),
                device=image.device,
                byte_offset="any",
                align=TRITON_ABI.divisibility[1] if divisible else None,
            )
            position = len(f._params)
            t = f.param(arg, spec)
            meta[arg] = t
            if first_tensor is None:
                first_tensor, first_name = t, f"'{arg}' (#{position})"
            # Triton passes `tensor.data_ptr()`: the first element, data + byte_offset.
            args.append(ir.offset(t.data, ir.cast(ir.i64, t.byte_offset)))
        else:
            if ty == "fp16":
                value = fp16_argument(f, arg, len(f._params))
            else:
                value = f.param(arg, TRITON_ABI.scalars[ty][0])
            meta[arg] = value
            args.append(value)
            if divisible and ty not in ("i1", "u1") and not ty.startswith("fp") and ty != "bf16":
                f.divisible(arg, TRITON_ABI.divisibility[1])
    if grid_exprs is None:
        grid_exprs = _grid_exprs(grid, meta)
    passed = isinstance(grid, int) and not isinstance(grid, bool)
    _launch(f, binary, k, grid_exprs, args, (first_tensor, first_name), passed, loaded)
    return f


def _refuse_handle(caller: str, options: Mapping[str, Any]) -> None:
    """A ``TypeError`` when ``options`` give a ``handle`` to ``caller``, whose modules may be
    built into libraries (a handle is an address of this process)."""
    if options.get("handle") is not None:
        raise TypeError(
            f"{caller}() takes no handle: a kernel handle belongs to the process that loaded it (function() "
            "takes one, for its in-process host function; add_function() too, for a module that is JIT-compiled)"
        )


def _handle(handle: Any) -> Optional[Tuple[int, int]]:
    """``handle`` checked: ``None`` or ``(kernel handle, device ordinal)``, two ints."""
    if handle is None:
        return None
    what = "handle is (a nonzero kernel handle, a device ordinal), two ints"
    if (
        not isinstance(handle, tuple)
        or len(handle) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in handle)
    ):
        raise TypeError(f"{what}; got {handle!r}")
    if not 0 < handle[0] < 2**64 or not 0 <= handle[1] < 2**31:
        raise ValueError(f"{what}; got {handle!r}")
    return handle


def _launch(
    f: ir.FunctionBuilder,
    binary: str,
    k: Kernel,
    grid: List[Any],
    args: List[Any],
    first: Tuple[Optional[Any], str],
    passed: bool,
    loaded: Optional[Tuple[int, int]] = None,
) -> None:
    """The launch Triton's launcher makes: grid checks, then (for a nonempty grid) the scratch
    memory and the launch on the device of ``first`` (the first tensor argument and its name
    for messages; device 0 without one, or the device of ``loaded``: the caller's kernel
    handle and its device, launched as it is, on that device only)."""
    tensor, name = first
    num_ctas, block, settings = launch_settings(k.metadata, k.backend == "hip")
    if tensor is None:
        settings["device"] = 0 if loaded is None else loaded[1]
    if loaded is not None:
        settings["function"] = ir.cast(ir.ptr, ir.lit(loaded[0], ir.u64))
    zero = ir.lit(0, ir.i64)
    # Triton's launcher reads the grid as C ints (and multiplies x by num_ctas).
    for axis, g in zip("xyz", grid):
        limit = (2**31 - 1) // (num_ctas if axis == "x" else 1)
        what = f"{f.name}: argument 'grid' (#0): {axis}" if passed else f"{f.name}: the grid's {axis}"
        why = f" (num_ctas={num_ctas})" if axis == "x" and num_ctas > 1 else ""
        f.assert_(ir.and_(zero <= g, g <= ir.lit(limit, ir.i64)), "ValueError", f"{what} is ", g, f", expected 0 to {limit}{why}")
    programs = list(grid)
    # Triton launches num_ctas blocks per program along x (TritonAbi's docs).
    if num_ctas > 1:
        grid = [grid[0] * ir.lit(num_ctas, ir.i64)] + list(grid[1:])
    nonempty = zero < grid[0]
    for g in grid[1:]:
        nonempty = ir.and_(nonempty, zero < g)
    # An empty grid launches nothing, as Triton's launcher.
    with f.if_(nonempty):
        if loaded is not None and tensor is not None:
            # The caller's handle serves the device it was loaded on only.
            f.assert_(
                tensor.device_id == ir.lit(loaded[1], ir.i32),
                "ValueError",
                f"{f.name}: argument {name}: device is ",
                tensor.device,
                f", expected {TRITON_ABI.backends[k.backend].device}:{loaded[1]} "
                "(the device the kernel's handle was loaded on)",
            )
        device = tensor.device if tensor is not None else (TRITON_ABI.backends[k.backend].device_type, 0)
        scratch = scratch_pointers(f, k, programs, device)
        f.launch(binary, k.name, *args, *scratch, grid=grid, block=[block], **settings)


def module(
    kernels: Union[Mapping[str, Any], Sequence[Any]],
    name: str = "triton_kernels",
    **options: Any,
) -> ir.ModuleBuilder:
    """A module with one host function per kernel.

    Parameters
    ----------
    kernels : mapping of str to kernel, or sequence of kernels
        ``{function_name: kernel}``, or kernels named after themselves.
    name : str
        The module's name.
    **options
        As for :func:`add_function` (``grid``, ``check_dtypes``, ...), but ``handle``: a
        module of several kernels, or one to build a library from, embeds their cubins.

    Returns
    -------
    ModuleBuilder
    """
    m = ir.ModuleBuilder(name)
    items = kernels.items() if isinstance(kernels, Mapping) else [(None, k) for k in kernels]
    _refuse_handle("module", options)
    for fname, k in items:
        add_function(m, k, fname, **options)
    return m


def function(
    kernel: Any,
    *,
    grid: GridSpec = 3,
    name: Optional[str] = None,
    check_dtypes: bool = True,
    check_divisibility: bool = True,
    constexpr_params: bool = True,
    descriptors: Optional[Mapping[str, Mapping[str, Any]]] = None,
    backend: str = "cranelift",
    handle: Optional[Tuple[int, int]] = None,
) -> Any:
    """A ``tvm_ffi.Function`` that checks its arguments and launches ``kernel`` as Triton does.

    Parameters
    ----------
    kernel : CompiledKernel or Kernel
        A compiled Triton kernel (``triton.compile(...)``, a ``@triton.jit`` function's cache
        entry), or :func:`load`'s result.
    grid : int, sequence or callable, default 3
        An int ``n`` (1 to 3): the caller passes the grid first, a tuple of ``n`` ints. Or the
        grid computed from the arguments, then not passed: a callable taking Triton's ``META``
        dict (argument name -> IR expression, constexpr name -> its value) and returning 1 to
        3 expressions (``lambda META: (triton.cdiv(META["n"], META["BLOCK"]),)``), or the
        expressions themselves (IR text such as ``"ceil_div(n, 128)"``).
    name : str, optional
        The function's name (default: the kernel's).
    check_dtypes : bool, default True
        A pointer ``*fp16`` takes a CUDA tensor of dtype float16 (any shape and strides, on the
        launch device); False accepts any dtype.
    check_divisibility : bool, default True
        Check what Triton assumed when it compiled: pointers it specialized as divisible by 16
        are 16-byte aligned, integers divisible by 16 are (``where n % 16 == 0``).
    constexpr_params : bool, default True
        The constexprs are parameters (as ``CompiledKernel[grid]`` takes them), each checked
        to be the compiled value (``const(V)``); False leaves them out.
    descriptors : mapping, optional
        Per host tensor descriptor argument, the fields of Triton's ``TensorDescriptor`` that
        its tensor cannot say: ``{"x_desc": {"padding": "nan", "round_f32_to_tf32": True}}``
        (defaults ``"zero"`` and False, as in Triton); an im2col descriptor (Gluon's
        ``TensorDescriptorIm2Col``) also needs ``pixel_box_lower_corner`` and
        ``pixel_box_upper_corner``, and takes ``element_strides`` (all 1 by default).
    backend : str, default "cranelift"
        The JIT backend (``safecall.jit``).
    handle : (int, int), optional
        ``(function, device)``: the kernel already loaded by the caller (a ``CUfunction`` or
        ``CUkernel``, a ``hipFunction_t`` for AMD, e.g. a ``CompiledKernel``'s ``function``
        on its ``device``), launched as it is (the IR's ``function=``): the cubin still checks
        the arguments when the function is built but is neither embedded nor loaded, and the
        launch device must be ``device`` (else a ValueError naming the first tensor). The
        caller keeps the kernel loaded, with the shared-memory opt-in its launches need
        (Triton's ``load_binary`` sets it), while the function can launch it.

    Returns
    -------
    tvm_ffi.Function

    Raises
    ------
    UnsupportedKernelError
        The kernel has padded-fp4 tensor descriptors, tuple arguments, an argument
        type without a DLPack dtype, or a constexpr ``const()`` cannot check;
        TritonVersionError for Triton other than 3.9.

    Examples
    --------
    >>> launch = function(compiled, grid=1)          # doctest: +SKIP
    >>> launch((n // 128,), x, y, n, 128)             # doctest: +SKIP
    """

    k = kernel if isinstance(kernel, Kernel) else from_compiled(kernel)
    fname = name or k.name
    m = ir.ModuleBuilder(f"triton_{fname}")
    add_function(
        m,
        k,
        fname,
        grid=grid,
        check_dtypes=check_dtypes,
        check_divisibility=check_divisibility,
        constexpr_params=constexpr_params,
        descriptors=descriptors,
        handle=handle,
    )
    return jit_module(m, backend=backend)[fname]


def build(
    kernels: Union[Mapping[str, Any], Sequence[Any]],
    path: Union[str, os.PathLike],
    *,
    name: str = "triton_kernels",
    **options: Any,
) -> None:
    """Builds a shared library of host functions, one per kernel, with their cubins inside:
    it loads with ``tvm_ffi.load_module(path)`` alone (no triton, no safecall, no compiler).

    Parameters
    ----------
    kernels : mapping of str to kernel, or sequence of kernels
        ``{function_name: kernel}``, or kernels named after themselves.
    path : path
        The ``.so`` to write (linked in-process).
    name : str
        The module's name.
    **options
        As for :func:`function` (``grid``, ``check_dtypes``, ...; not ``handle``: a library
        embeds its cubins).
    """

    _refuse_handle("build", options)
    build_module(module(kernels, name, **options), path)
