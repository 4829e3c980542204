"""``kernel[grid](...)`` without Triton's JIT layer on the hot path: a per-kernel table from a
key computed from the call's arguments to the specialization Triton compiled for them.

Triton's ``JITFunction.run`` binds the arguments, computes the specialization of each one
(``native_specialize_impl``), turns the list and the options into a string key, looks it up,
checks the globals the kernel read, evaluates the grid, builds the launch metadata and calls
the launcher: 9 to 19 us of host time per call before the launcher runs. The
:class:`Dispatcher` computes a key that is at least as fine as Triton's (two calls with the same
key always get the same specialization from Triton) from a few checks per argument, looks the
compiled kernel up in its own table and calls its launcher directly. A key it has not seen goes
through Triton's own ``run`` (which compiles, or finds the kernel in its cache, and launches),
and the kernel Triton chose is recorded for the key. With a launch hook registered (a
profiler's, e.g. proton's), a launch from the table carries what Triton's ``run`` passes:
``kernel.launch_metadata(grid, stream, *args)`` and the hooks. Anything it cannot decide
exactly as Triton would goes through Triton's ``run`` every time, counted by reason
(:meth:`Dispatcher.stats`): pre-run hooks registered, an argument kind it does
not model (Gluon's tensor descriptors before Triton 3.8, objects without ``data_ptr``, a tuple
holding an unmodelled kind or nested more than 32 deep, a tuple on AMD), an unhashable constexpr,
warm-up calls, a global the kernel read that changed.

The key, per parameter in declaration order:

- a constexpr: its type and value (floats by their bits, so ``0.0`` and ``-0.0`` differ as in
  Triton's string key);
- ``None``, a ``bool``, a ``float``: the kind alone;
- an ``int``: whether it is 1, whether it is divisible by 16, and its width class (i32, i64,
  u64, beyond);
- an object with ``data_ptr()`` and ``dtype`` (a ``torch.Tensor``, Triton's ``TensorWrapper``):
  its type, its dtype and whether ``data_ptr()`` is 16-byte aligned (where the parameter is in
  ``do_not_specialize``, its type and dtype alone: Triton's specializer does not call
  ``data_ptr()`` then, its launcher does, with its own errors, and so does the dispatch); for AMD targets with
  ``knobs.amd.use_buffer_ops`` on, also ``HIPBackend.is_within_2gb`` of it unless the
  parameter is in ``do_not_specialize`` (Triton's ``"S"``: the kernel addresses it with 32-bit
  buffer offsets);
- a host ``triton.tools.tensor_descriptor.TensorDescriptor`` (exactly that type): its base
  tensor's dtype and its block shape, which is all Triton's ``tensordesc<DTYPE[BLOCK]>``
  specialization holds (the launcher encodes the shape, strides, padding and base address on
  every launch); Gluon's (tiled and im2col, Triton 3.8+), which carry a layout: also the
  rank of their shape and their layout (by ``==``; Triton's key holds its ``repr``);
- a tuple (a named tuple too: its type is part of the key): its length, then each element as
  above, tensors with their alignment whatever the parameter's ``do_not_specialize`` (Triton's
  specializer reads every tensor in a tuple), nested tuples alike;

preceded by the Triton knobs that Triton adds to the options on each call (``debug``, the
instrumentation mode, ...) and the kernel's own ``debug`` attribute, then the device, and
followed by the keyword options (``num_warps``, ``num_stages``, ...).
The native side holds it as machine words (``python/src/triton_key.rs``): numbers by value,
other objects by a code given to each distinct value (by ``==`` and ``hash``), so a call does
not hash or compare Python objects.
``do_not_specialize`` and annotations only make Triton's key coarser, so the table then holds
more entries for one kernel, never a wrong one.
"""

from __future__ import annotations

import collections
import inspect
import threading
import types
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ._triton_run_override import (
    OWN_RUN,
    RUN_LOCK,
    RUN_OVERRIDDEN,
    base_class,
    delete_own_run,
    dispatched_run,
    run_overridden,
    set_own_run,
    state_without_dispatch,
)
from ._triton_run_override import check_runs_shipped as _check_runs_shipped

__all__ = ["AutotuneDispatcher", "Dispatcher", "HeuristicsDispatcher", "dispatcher", "install_dispatch"]

_EMPTY = inspect.Parameter.empty


def _constexpr_key(v: Any) -> Any:
    """A constexpr's (or an option's) part of the key: ``(type, value)``; floats by ``repr``
    and tuples element by element (the native side calls this for those two)."""
    t = type(v)
    if t is float:
        return (t, repr(v))
    if isinstance(v, tuple):
        return (t, tuple(_constexpr_key(x) for x in v))
    return (t, v)


def _env_bool_variable(group: Any, name: str) -> Optional[str]:
    """The environment variable of ``group.name`` when that attribute is Triton's
    ``env_bool`` descriptor as shipped (its value: the instance's override, else
    ``getenv_bool(variable, default)``, which the native side then reads only when the
    variable's text changed); ``None`` for any other attribute, read as it is on every call."""
    from triton import knobs

    env_base, env_bool = getattr(knobs, "env_base", None), getattr(knobs, "env_bool", None)
    descriptor = inspect.getattr_static(type(group), name, None)
    if (env_bool is None or type(descriptor) is not env_bool or getattr(descriptor, "name", None) != name
            or type(group).__getattribute__ is not object.__getattribute__):
        return None
    shipped = (env_bool.__get__ is env_base.__get__ and env_bool.transform is env_base.transform
               and env_bool.get.__module__ == knobs.__name__ and knobs.getenv_bool.__module__ != knobs.__name__)
    key = getattr(descriptor, "key", None)
    return key if shipped and isinstance(key, str) else None


_KNOBS_VERSION: Any = None
_WATCH_LOCK = threading.Lock()


def _watch_knobs(knobs: Any) -> Any:
    """The count of ``knobs``' attribute assignments and deletions (a native
    ``KnobsVersion``), with ``knobs`` (``triton.knobs``) given the class that counts them,
    :class:`_WatchedKnobs`; ``None`` where the module has a class of its own already (the
    dispatchers then look its knob groups up on every call)."""
    global _KNOBS_VERSION
    # One count for the process, made before the class that bumps it is put in place (two
    # threads making their first dispatchers must not each make one).
    with _WATCH_LOCK:
        if _KNOBS_VERSION is None:
            from ._native import KnobsVersion

            _KNOBS_VERSION = KnobsVersion()
        if type(knobs) is not _WatchedKnobs:
            if type(knobs) is not types.ModuleType:
                return None
            knobs.__class__ = _WatchedKnobs
        return _KNOBS_VERSION


class _WatchedKnobs(types.ModuleType):
    """``triton.knobs``' class once a dispatcher exists: a module that counts the assignments
    and deletions of its attributes, so that dispatchers find knob groups put in place of
    Triton's (``knobs.runtime = knobs.runtime.copy().reset()``, as Triton's ``fresh_knobs``
    test helper does) without looking each up on every call."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        _KNOBS_VERSION.bump()

    def __delattr__(self, name: str) -> None:
        super().__delattr__(name)
        _KNOBS_VERSION.bump()


def _amd_range(fn: Any) -> Optional[Tuple[Any, str, Optional[str], Any, list, Callable[[Any], bool]]]:
    """What the native side needs for AMD's pointer-range part of ``fn``'s tensors' keys
    (``python/src/triton_amd_range.rs``): ``("amd", "use_buffer_ops", its variable,
    HIPBackend.is_within_2gb, per parameter whether Triton specializes it, targets_amd)``,
    ``is_within_2gb`` ``None`` where the AMD backend is not the one Triton 3.6-3.9 ship (its
    kernels then go through Triton's ``run``); ``None`` where this Triton has no AMD backend."""
    try:
        from triton import knobs
        from triton.backends.amd.compiler import HIPBackend
        from triton.backends.compiler import BaseBackend
    except ImportError:
        return None
    group = getattr(knobs, "amd", None)
    if group is None or not hasattr(group, "use_buffer_ops"):
        return None
    specialized = [not p.do_not_specialize for p in fn.params]
    within_2gb = inspect.getattr_static(HIPBackend, "is_within_2gb", None)
    tensor_specialization = inspect.getattr_static(HIPBackend, "get_tensor_specialization", None)
    shipped = (
        isinstance(within_2gb, staticmethod)
        and isinstance(tensor_specialization, staticmethod)
        and getattr(tensor_specialization.__func__, "__module__", None) == HIPBackend.__module__
        and inspect.getattr_static(BaseBackend, "get_tensor_specialization", None) is not None
    )
    return ("amd", "use_buffer_ops", _env_bool_variable(group, "use_buffer_ops"),
            HIPBackend.is_within_2gb if shipped else None, specialized, _targets_amd)


def _targets_amd(driver: Any) -> bool:
    """Whether ``driver`` (an active Triton driver) compiles for AMD GPUs."""
    return getattr(driver.get_current_target(), "backend", None) == "hip"


def _descriptor_type() -> Any:
    """Triton's host ``TensorDescriptor`` class, or ``None`` where this release has none."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


def _gluon_descriptor_types() -> list:
    """Gluon's host descriptor types the dispatcher keys (tiled and im2col), on the releases
    where that is tested (Triton 3.8 and later); empty otherwise (their calls then go through
    Triton's path)."""
    import triton

    if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 8):
        return []
    try:
        from triton.experimental.gluon.nvidia import hopper
    except ImportError:
        return []
    names = ("TensorDescriptor", "TensorDescriptorIm2Col")
    return [t for t in (getattr(hopper, n, None) for n in names) if isinstance(t, type)]


class Dispatcher:
    """The table of one ``JITFunction`` (see the module docs). Called as the kernel is:
    ``d[grid](*args, **kwargs)`` or ``d.run(*args, grid=grid, warmup=False, **kwargs)``; the
    calls served from the table run in :class:`safecall._native.TritonDispatch`, the others
    here, through Triton's own ``run``."""

    def __init__(self, fn: Any):
        import triton
        from triton import knobs

        from ._native import TritonDispatch
        from ._triton_grid import trace_grid

        self.fn = fn
        params = list(fn.signature.parameters.values())
        self.names = [p.name for p in params]
        self._stats: collections.Counter = collections.Counter()
        # The knobs Triton folds into the options on every call, as this release names them.
        knob_reads = [
            (group, name, _env_bool_variable(getattr(knobs, group), name))
            for group, name in (("runtime", "debug"), ("compilation", "instrumentation_mode"),
                                ("compilation", "fpsan_homomorphic_casts"))
            if hasattr(getattr(knobs, group, None), name)
        ]
        self._native = TritonDispatch(
            self.names, [p.default for p in params], _EMPTY, [_specialization(p) for p in fn.params],
            fn, _instance_state(fn, ("pre_run_hooks", "debug", "used_global_vals")), knobs, _watch_knobs(knobs),
            knobs.HookChain,
            knob_reads,
            triton.runtime.driver, _driver_state(triton.runtime.driver),
            _descriptor_type(), _gluon_descriptor_types(), trace_grid, _constexpr_key,
            self._globals_changed, self._slow, _amd_range(fn),
        )
        self.run = self._native.run

    @property
    def owner(self) -> Any:
        """The object this dispatcher was made for."""
        return self.fn

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return self._native.bind(grid)

    def stats(self) -> Dict[str, int]:
        """Calls so far: ``hit`` (launched from the table), ``miss`` (through Triton's ``run``,
        then recorded) and ``fallback: REASON`` (through Triton's ``run``, not recorded)."""
        counts = dict(self._stats)
        if self._native.hits:
            counts["hit"] = self._native.hits
        return counts

    def clear(self) -> None:
        """Forgets every recorded kernel (as clearing ``kernel.device_caches`` does for
        Triton's own cache, which the table does not watch): the next call of each key goes
        through Triton's ``run`` again."""
        self._native.clear()

    def _slow(self, reason: Optional[str], args: Tuple[Any, ...], kwargs: Dict[str, Any], grid: Any, warmup: Any,
              key: Optional[Any] = None) -> Any:
        """A call the table does not serve: through Triton's own ``JITFunction.run`` (the
        unpatched method where the dispatch is installed), called here directly, so that a
        caller's keyword ``grid`` or ``warmup`` is the error Triton's ``kernel[grid]`` raises,
        naming Triton's method, and a ``run`` without them raises Triton's error (``kwargs``
        then as the caller gave them); a miss (``key`` given) then records the kernel Triton
        chose."""
        self._stats["miss" if reason is None else "fallback: " + reason] += 1
        if reason == RUN_OVERRIDDEN:
            return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
        run = _ORIGINAL_RUN.get("run") or type(self.fn).run
        if reason == "grid or warmup missing":
            return run(self.fn, *args, **kwargs)
        kernel = run(self.fn, *args, grid=grid, warmup=warmup, **kwargs)
        # Not a kernel still compiling under `AsyncCompileMode` (Triton's `FutureKernel`, which
        # Triton's cache holds until the mode's exit puts the `CompiledKernel` in its place).
        if key is not None and kernel is not None and type(kernel).__name__ != "FutureKernel":
            self._native.record(key, kernel)
        return kernel

    def _globals_changed(self) -> bool:
        missing = object()
        return any(globals_dict.get(name, missing) != value
                   for (name, _), (value, globals_dict) in self.fn.used_global_vals.items())


class AutotuneDispatcher:
    """The dispatch of a ``@triton.autotune`` kernel over a ``@triton.jit`` function: tuning
    stays Triton's (a key not tuned yet goes through ``Autotuner.run``, which benchmarks the
    configs through the kernel's :class:`Dispatcher`); a tuned key is served natively
    (:class:`safecall._native.AutotuneDispatch`: Triton's autotune key, the best config from
    the autotuner's own cache, ``best_config`` set, the config's keywords added) and handed to
    the kernel's :class:`Dispatcher`. Configs with a ``pre_hook``, warm-up, a keyword given
    both by the caller and the config and a caller's keyword ``grid`` or ``warmup`` go through
    ``Autotuner.run``, counted."""

    def __init__(self, tuner: Any):
        from ._native import AutotuneDispatch

        self.tuner = tuner
        self.inner = dispatcher(tuner.fn)
        self._stats: collections.Counter = collections.Counter()
        from triton import Config

        shipped = Config.__dict__.get("all_kwargs")
        shipped = shipped if getattr(shipped, "__module__", None) == "triton.runtime.autotuner" else None
        self._native = AutotuneDispatch(tuner, list(tuner.arg_names), list(tuner.keys), self.inner._native, self._slow,
                                        Config, shipped, _instance_state(tuner, ("nargs",), present=False))
        self.run = self._native.run

    @property
    def owner(self) -> Any:
        """The object this dispatcher was made for."""
        return self.tuner

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return self._native.bind(grid)

    def stats(self) -> Dict[str, int]:
        """Calls that went through ``Autotuner.run``, by reason (``not tuned``, ...); the
        others show in the inner dispatcher's :meth:`Dispatcher.stats`."""
        return dict(self._stats)

    def _slow(self, reason: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], grid: Any, warmup: Any) -> Any:
        self._stats[reason] += 1
        if reason == RUN_OVERRIDDEN:
            return self.tuner.run(*args, grid=grid, warmup=warmup, **kwargs)
        run = _ORIGINAL_RUN.get("autotune") or type(self.tuner).run
        if reason == "grid or warmup missing":
            # As the caller gave them (one or both in ``kwargs``, or not at all).
            return run(self.tuner, *args, **kwargs)
        return run(self.tuner, *args, grid=grid, warmup=warmup, **kwargs)


class HeuristicsDispatcher:
    """The dispatch of a ``@triton.heuristics`` kernel over a dispatched one (a ``@triton.jit``
    function, an autotuned one, another heuristics layer):
    :class:`safecall._native.HeuristicsDispatch` does what ``Heuristics.run`` does (each
    heuristic called as Triton calls it, its value added to the keyword arguments) and calls
    the inner dispatcher directly. A keyword or a heuristic named ``grid`` or ``warmup`` goes
    through Triton's ``Heuristics.run``, counted."""

    def __init__(self, heuristics: Any):
        from ._native import HeuristicsDispatch

        self.heuristics = heuristics
        self.inner = dispatcher(heuristics.fn)
        self._stats: collections.Counter = collections.Counter()
        self._native = HeuristicsDispatch(heuristics, self.inner._native, self._slow)
        self.run = self._native.run

    @property
    def owner(self) -> Any:
        """The object this dispatcher was made for."""
        return self.heuristics

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return self._native.bind(grid)

    def stats(self) -> Dict[str, int]:
        """Calls that went through ``Heuristics.run``, by reason; the others show in the inner
        dispatcher's ``stats()``."""
        return dict(self._stats)

    def _slow(self, reason: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], grid: Any, warmup: Any) -> Any:
        self._stats[reason] += 1
        if reason == RUN_OVERRIDDEN:
            return self.heuristics.run(*args, grid=grid, warmup=warmup, **kwargs)
        run = _ORIGINAL_RUN.get("heuristics") or type(self.heuristics).run
        if reason == "grid or warmup missing":
            # As the caller gave them (one or both in ``kwargs``, or not at all).
            return run(self.heuristics, *args, **kwargs)
        return run(self.heuristics, *args, grid=grid, warmup=warmup, **kwargs)


def _specialization(param: Any) -> str:
    """How Triton specializes a ``KernelParam``: ``"constexpr"``, ``"type only"`` (in
    ``do_not_specialize``: a tensor's ``data_ptr()`` is not read for the key) or ``"value"``."""
    if param.is_constexpr:
        return "constexpr"
    return "type only" if param.do_not_specialize else "value"


def _instance_state(obj: Any, names: Sequence[str], present: bool = True) -> Optional[Dict[str, Any]]:
    """``vars(obj)`` where each of ``names`` is a plain instance attribute of ``obj`` (in its
    ``__dict__``, looked up by ``object.__getattribute__``, with no data descriptor of that
    name on its classes; with ``present`` false, also where it is not set yet), which the
    dispatcher then reads and writes there directly (a dictionary lookup instead of Python's
    attribute protocol); else ``None``."""
    cls = type(obj)
    state = getattr(obj, "__dict__", None)
    if cls.__getattribute__ is not object.__getattribute__ or not isinstance(state, dict):
        return None
    if not present and cls.__setattr__ is not object.__setattr__:
        return None
    for name in names:
        if present and name not in state:
            return None
        for klass in cls.__mro__:
            attr = type(klass.__dict__.get(name))
            if hasattr(attr, "__set__") or hasattr(attr, "__delete__"):
                return None
    return state


def _driver_state(driver: Any) -> Optional[Dict[str, Any]]:
    """``vars(driver)`` where ``driver.active`` is Triton's property as shipped (``_active``
    when set, else the default driver made and kept there), which the dispatcher then reads
    directly; else ``None`` (the dispatcher reads ``driver.active``)."""
    prop = type(driver).__dict__.get("active")
    shipped = isinstance(prop, property) and getattr(prop.fget, "__module__", None) == "triton.runtime.driver"
    state = getattr(driver, "__dict__", None)
    return state if shipped and isinstance(state, dict) and "_active" in state else None


def _dispatchable(fn: Any) -> bool:
    """Whether ``fn`` is a ``@triton.jit`` function, or autotune and heuristics layers over
    one (each layer then has a native dispatcher)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    if isinstance(fn, JITFunction):
        return True
    if isinstance(fn, Autotuner):
        return isinstance(fn.fn, JITFunction)
    if isinstance(fn, Heuristics):
        return _dispatchable(fn.fn)
    return False


def dispatcher(fn: Any) -> Any:
    """The dispatcher of a ``@triton.jit`` function (a :class:`Dispatcher`), of a
    ``@triton.autotune`` kernel over one (an :class:`AutotuneDispatcher`) or of a
    ``@triton.heuristics`` layer over either (a :class:`HeuristicsDispatcher`), made on first
    use and kept on it."""
    d = getattr(fn, "_safecall_dispatcher", None)
    # Not one made for another object (`copy.copy(kernel)` without the dispatch installed
    # copies the attribute; with it, `__getstate__` leaves it out).
    if not d or d.owner is not fn:
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        if not _dispatchable(fn):
            raise TypeError(
                "safecall.triton.jit: expected a @triton.jit function, or @triton.autotune over one, or "
                f"@triton.heuristics over either, got {type(fn).__name__}"
            )
        if isinstance(fn, JITFunction):
            d = Dispatcher(fn)
        elif isinstance(fn, Autotuner):
            d = AutotuneDispatcher(fn)
        else:
            assert isinstance(fn, Heuristics)
            d = HeuristicsDispatcher(fn)
        with RUN_LOCK:
            state = vars(fn)
            if "run" in state and isinstance(vars(base_class(fn)).get("run"), dispatched_run()):
                # Its own `run`, given before the install (the class's descriptor hides it).
                state["_safecall_run"] = state.pop("run")
                state[OWN_RUN] = True
            fn._safecall_dispatcher = d
            d._native.set_run_overridden(run_overridden(fn))
            # What `kernel[grid]` and `kernel.run(...)` find once `install_dispatch` made
            # `__getitem__` and `run` descriptors: the native methods, with no Python frame (the
            # instance's own `run` where it has one).
            state["_safecall_getitem"] = d._native.bind
            if not state.get(OWN_RUN):
                state["_safecall_run"] = d._native.run
    return d


def _named_as(replacement: Callable[..., Any], original: Callable[..., Any]) -> None:
    """Gives ``replacement`` the name, module and docs of the Triton method it replaces, so
    that an error Python words with the callable's name (a keyword given twice to
    ``kernel[grid](...)``: ``Autotuner.run() got multiple values for keyword argument
    'grid'``) reads as Triton's."""
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(replacement, attribute, getattr(original, attribute))


#: Triton's own ``JITFunction.run`` once :func:`install_dispatch` replaced it.
_ORIGINAL_RUN: Dict[str, Callable[..., Any]] = {}


def check_runs_shipped() -> None:
    """:func:`safecall._triton_run_override.check_runs_shipped`, where no install was made."""
    if "run" not in _ORIGINAL_RUN:
        _check_runs_shipped()


def install_dispatch() -> None:
    """Routes every ``JITFunction.run`` of the process (``kernel[grid](...)``, Helion's and
    Inductor's ``.run``) through the kernel's :class:`Dispatcher`, every ``Autotuner.run`` over
    a ``JITFunction`` through its :class:`AutotuneDispatcher`, and every ``Heuristics.run``
    over either through its :class:`HeuristicsDispatcher` (``__getitem__`` alike).
    Idempotent."""
    from triton.runtime.jit import JITFunction

    from ._native import DispatchedMethod, DispatchedRun

    if "run" in _ORIGINAL_RUN:
        return
    check_runs_shipped()
    original = JITFunction.run
    _ORIGINAL_RUN["run"] = original

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return dispatcher(self).run(*args, grid=grid, warmup=warmup, **kwargs)

    def getitem(self: Any, grid: Any) -> Callable[..., Any]:
        return dispatcher(self)[grid]

    _named_as(run, original)
    _named_as(getitem, JITFunction.__getitem__)
    JITFunction.run = DispatchedRun("_safecall_run", run, set_own_run, delete_own_run)
    JITFunction.__getitem__ = DispatchedMethod("_safecall_getitem", getitem)

    from triton.runtime.autotuner import Autotuner

    tune = Autotuner.run
    _ORIGINAL_RUN["autotune"] = tune

    def autotune_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.fn, JITFunction):
            return dispatcher(self).run(*args, **kwargs)
        return tune(self, *args, **kwargs)

    tune_getitem = Autotuner.__getitem__

    def autotune_getitem(self: Any, grid: Any) -> Callable[..., Any]:
        if isinstance(self.fn, JITFunction):
            return dispatcher(self)[grid]
        return tune_getitem(self, grid)

    _named_as(autotune_run, tune)
    _named_as(autotune_getitem, tune_getitem)
    Autotuner.run = DispatchedRun("_safecall_run", autotune_run, set_own_run, delete_own_run)
    Autotuner.__getitem__ = DispatchedMethod("_safecall_getitem", autotune_getitem)

    from triton.runtime.autotuner import Heuristics

    heuristics_run = Heuristics.run
    _ORIGINAL_RUN["heuristics"] = heuristics_run

    def heuristics_dispatcher(self: Any) -> Any:
        """The layer's dispatcher, or ``None`` where it is over something not dispatched
        (remembered, so that such a layer is examined once)."""
        d = self.__dict__.get("_safecall_dispatcher")
        if d is None or (d and d.owner is not self):
            d = dispatcher(self) if _dispatchable(self) else False
            self.__dict__["_safecall_dispatcher"] = d
        return d or None

    def dispatched_heuristics_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        d = heuristics_dispatcher(self)
        return heuristics_run(self, *args, **kwargs) if d is None else d.run(*args, **kwargs)

    heuristics_getitem = Heuristics.__getitem__

    def dispatched_heuristics_getitem(self: Any, grid: Any) -> Callable[..., Any]:
        d = heuristics_dispatcher(self)
        return heuristics_getitem(self, grid) if d is None else d[grid]

    _named_as(dispatched_heuristics_run, heuristics_run)
    _named_as(dispatched_heuristics_getitem, heuristics_getitem)
    Heuristics.run = DispatchedRun("_safecall_run", dispatched_heuristics_run, set_own_run, delete_own_run)
    for cls in (JITFunction, Autotuner, Heuristics):
        if "__getstate__" not in vars(cls):
            cls.__getstate__ = state_without_dispatch
    Heuristics.__getitem__ = DispatchedMethod("_safecall_getitem", dispatched_heuristics_getitem)
