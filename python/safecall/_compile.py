"""The entry points from a module to code: :func:`jit` (``tvm_ffi.Function``s in process),
:func:`build` (objects and libraries), :func:`emit` (intermediate forms as text),
:func:`metadata`, and :class:`JitModule`. ``safecall`` re-exports them."""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple, Union

import tvm_ffi

from . import _native
from ._native import Module
from ._parse import parse
from .builder import ModuleBuilder

__all__ = ["JitModule", "ModuleLike", "build", "emit", "jit", "metadata"]

ModuleLike = Union[Module, ModuleBuilder, str]


def _module(module: ModuleLike) -> Module:
    if isinstance(module, Module):
        return module
    if isinstance(module, ModuleBuilder):
        return module.build()
    if isinstance(module, str):
        return parse(module)
    raise TypeError(
        f"expected a safecall.Module, a ModuleBuilder or IR text, got {type(module).__name__}"
    )


def _address(name: str, value: Any) -> int:
    """An address from an int, a ctypes function pointer or a cffi pointer."""
    if isinstance(value, int):
        address = value
    else:
        import ctypes

        if isinstance(value, ctypes._CFuncPtr):  # ctypes function pointers
            address = ctypes.cast(value, ctypes.c_void_p).value or 0
        elif isinstance(value, ctypes.c_void_p):
            address = value.value or 0
        elif type(value).__module__.startswith("_cffi"):
            import cffi  # only reached for cffi objects, so cffi is importable

            address = int(cffi.FFI().cast("uintptr_t", value))
        else:
            raise TypeError(
                f"symbols[{name!r}]: expected an address (int, ctypes function pointer or cffi "
                f"pointer), got {type(value).__name__}"
            )
    if address <= 0:
        raise ValueError(f"symbols[{name!r}]: the address is null")
    return address


@functools.lru_cache(maxsize=256)
def _positional_signature(names: Tuple[str, ...]) -> Any:
    """An ``inspect.Signature`` of positional-only parameters ``names`` (immutable, so shared
    by every function with those names: the specializations of one kernel)."""
    import inspect

    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])


def _documented(module: Module, name: str, fn: tvm_ffi.Function) -> tvm_ffi.Function:
    """``fn``, still a plain ``tvm_ffi.Function``, with what ``help()`` and ``inspect`` read: its
    signature and doc comment as ``__doc__``, ``__name__``, and ``__signature__`` (parameter
    names; their IR types are in the first line of the doc)."""
    doc = module.doc(name)
    fn.__doc__ = module.signature(name) + (f"\n\n{doc}" if doc else "")
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__signature__ = _positional_signature(tuple(module.arg_names(name)))
    return fn


class JitModule(Mapping[str, tvm_ffi.Function]):
    """The functions of a JIT-compiled module, as ``tvm_ffi.Function``s (by name, or as
    attributes).

    Each function keeps the compiled code alive: dropping this object while keeping a function
    is fine, and the code is freed with the last function.
    """

    def __init__(self, module: Module, code: Any, addresses: Sequence[tuple]):
        self.module = module
        #: The compiled code (what keeps the functions alive) and each function's safe-call
        #: address, for callers that call the entries natively (the Triton driver's launcher).
        self.code = code
        self.addresses: Dict[str, int] = dict(addresses)
        # Each function's `tvm_ffi.Function`, made on first use (about 20 us per function,
        # which the Triton driver, reading only `addresses`, never pays).
        self._functions: Dict[str, tvm_ffi.Function] = {}

    def _function(self, name: str) -> tvm_ffi.Function:
        fn = self._functions.get(name)
        if fn is None:
            address = self.addresses[name]
            fn = _documented(
                self.module, name, tvm_ffi.Function.__from_extern_c__(address, keep_alive_object=self.code)
            )
            self._functions[name] = fn
        return fn

    def __getitem__(self, name: str) -> tvm_ffi.Function:
        try:
            return self._function(name)
        except KeyError:
            raise KeyError(
                f"module `{self.module.name}` has no function `{name}` "
                f"(it has: {', '.join(self.addresses)})"
            ) from None

    def __getattr__(self, name: str) -> tvm_ffi.Function:
        if name in self.__dict__.get("addresses", {}):
            return self._function(name)
        raise AttributeError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.addresses)

    def __len__(self) -> int:
        return len(self.addresses)

    def signature(self, name: str) -> str:
        """``name(param: type, ...)``, as error messages show it."""
        return self.module.signature(name)

    def metadata(self, name: str) -> dict:
        """The metadata a library built from the module serves for ``name``: ``type_schema``
        (a JSON string), ``arg_names`` and ``signature``."""
        return metadata(self.module, name)

    def get_function_metadata(self, name: str) -> dict:
        """:meth:`metadata` under ``tvm_ffi.Module``'s name for it, so code written against a
        loaded library reads a JIT module the same way."""
        return self.metadata(name)

    def doc(self, name: str) -> Optional[str]:
        """The doc comment of ``name``, or None."""
        return self.module.doc(name)

    def __repr__(self) -> str:
        return f"<safecall.JitModule {self.module.name} ({', '.join(self.addresses)})>"


def jit(
    module: ModuleLike,
    *,
    symbols: Optional[Mapping[str, Any]] = None,
    backend: str = "cranelift",
    opt: Union[str, int, None] = None,
    cpu: Optional[str] = None,
    target_features: Optional[str] = None,
    process_symbols: bool = True,
    tier_up: Union[bool, str] = False,
) -> JitModule:
    """JIT-compiles a module; its functions are ``tvm_ffi.Function``s.

    On x86-64, Cranelift's code comes from the baseline compiler by default (the fastest
    compile); an explicit ``opt`` makes Cranelift compile it at that level instead, and
    ``tier_up`` compiles it again in the background.

    Parameters
    ----------
    module : Module, ModuleBuilder or str
        The module: parsed, built, or IR text.
    symbols : mapping of str to address, optional
        The names of ``extern fn``s (and ``call_packed direct`` symbols) to their addresses:
        ints, ctypes function pointers, cffi pointers.
    backend : {"cranelift", "llvm"}, default "cranelift"
        Cranelift compiles in microseconds; LLVM (when :data:`HAS_LLVM`) optimizes more.
    opt : str or int, optional
        Cranelift's ``"none"``, ``"speed"`` or ``"speed_and_size"``; LLVM's 0 to 3.
    cpu, target_features : str, optional
        LLVM's CPU and features (the host's by default).
    process_symbols : bool, default True
        Look up names missing from ``symbols`` in the process.
    tier_up : bool or {"background", "on_request"}, default False
        Cranelift only: compile with the first tier now, and again with Cranelift (at ``opt``,
        else ``"speed"``) on the process's tier-up thread, at once (``True`` or
        ``"background"``) or once ``JitModule.code.tier_up()`` asks for it (``"on_request"``:
        say, after enough calls to pay for the compile); the functions switch to that code
        when it is ready (``JitModule.code.tiered_up``), with no pause and nothing else to do
        for the caller. For host functions that must be callable at once and are then called
        many times (a kernel's launcher). Off x86-64 there is no baseline tier: Cranelift
        compiles the code once, at ``opt`` or its fast settings, and nothing tiers up.

    Returns
    -------
    JitModule
        The module's functions by name.

    Raises
    ------
    IRError
        The IR does not parse or verify.
    CompileError
        An option is invalid, a symbol is unresolved, or code generation failed.
    """
    m = _module(module)
    table = {name: _address(name, value) for name, value in (symbols or {}).items()}
    code, addresses = _native.jit(
        m, table, backend, opt, cpu, target_features, process_symbols, tier_up
    )
    return JitModule(m, code, addresses)


def build(
    module: ModuleLike,
    path: Union[str, os.PathLike],
    *,
    backend: str = "cranelift",
    opt: Union[str, int, None] = None,
    cpu: Optional[str] = None,
    target_features: Optional[str] = None,
    system_lib_prefix: Optional[str] = None,
    main: Optional[str] = None,
    link_args: Optional[Sequence[str]] = None,
    cc: Optional[str] = None,
    link_runtime: Union[str, os.PathLike, None] = None,
    linker: Optional[str] = None,
) -> None:
    """Compiles a module to ``path``: an object file when it ends in ``.o``, else a shared
    library that ``tvm_ffi.load_module`` loads (the options of ``safecall build``: docs/cli.md).

    Parameters
    ----------
    module : Module, ModuleBuilder or str
        The module: parsed, built, or IR text.
    path : str or os.PathLike
        The output, ``NAME.o`` or ``NAME.so``.
    backend, opt, cpu, target_features
        As for :func:`jit`.
    system_lib_prefix : str, optional
        Also register the functions in TVM-FFI's system library under this prefix.
    main : str, optional
        Also export this host function as ``__tvm_ffi_main`` (``lib["main"]``).
    link_args : sequence of str, optional
        More arguments for the C compiler's link (implies ``linker="cc"``).
    cc : str, optional
        The C compiler to link with (implies ``linker="cc"``).
    link_runtime : str or os.PathLike, optional
        Link ``libsafecall_runtime.so`` from this directory instead of leaving the TVM-FFI C
        API to the loading process (``--link-runtime=DIR``; such a library is for Rust
        programs, not Python).
    linker : {"in-process", "cc"}, optional
        The library is linked in-process (no C compiler needed) or by the C compiler (the
        default when ``cc`` or ``link_args`` is given).

    Raises
    ------
    IRError
        The IR does not parse or verify.
    CompileError
        An option is invalid, or code generation, linking or writing failed.
    """
    _native.build(
        _module(module),
        os.fspath(path),
        backend,
        opt,
        cpu,
        target_features,
        system_lib_prefix,
        main,
        list(link_args) if link_args is not None else None,
        cc,
        os.fspath(link_runtime) if link_runtime is not None else None,
        linker,
    )


def emit(
    module: ModuleLike,
    what: str = "ir",
    *,
    backend: str = "cranelift",
    opt: Union[str, int, None] = None,
    cpu: Optional[str] = None,
    target_features: Optional[str] = None,
) -> str:
    """An intermediate form of a module as text.

    Parameters
    ----------
    module : Module, ModuleBuilder or str
        The module: parsed, built, or IR text.
    what : {"ir", "lowered", "backend", "asm"}, default "ir"
        The printed IR, the lowered form, the backend's IR (Cranelift IR or LLVM IR) or the
        machine code as assembly.
    backend, opt, cpu, target_features
        As for :func:`jit`.

    Returns
    -------
    str
        The text.
    """
    return _native.emit(_module(module), what, backend, opt, cpu, target_features)


def metadata(module: ModuleLike, name: str) -> dict:
    """The metadata of function ``name`` (``type_schema``, ``arg_names``, ``signature``)."""
    return json.loads(_module(module).metadata_json(name))
