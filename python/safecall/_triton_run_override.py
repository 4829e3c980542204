"""A ``run`` that is not Triton's, where the dispatch serves ``kernel[grid](...)``: Triton's own
``__getitem__`` calls ``self.run(...)`` and ``Autotuner.run`` and ``Heuristics.run`` call
``self.fn.run(...)``, so a subclass overriding ``run``, an instance given its own (through the
installed :class:`safecall._native.DispatchedRun` descriptor) or a ``run`` replaced on the
class is called there, through Python (the native dispatchers' ``run overridden`` flag)."""

from __future__ import annotations

import threading
from typing import Any, Dict


def dispatched_run() -> type:
    from ._native import DispatchedRun

    return DispatchedRun


#: Held while an instance's own ``run`` is set, taken away or bound with its dispatcher.
RUN_LOCK = threading.RLock()


#: The slow path's reason for a call that goes through the object's own ``run`` (the native
#: side's ``triton_overridden``).
RUN_OVERRIDDEN = "run overridden"
#: Set in an instance's dictionary while it has a ``run`` of its own (``kernel.run = f`` where
#: the dispatch is installed; the function itself is kept as ``_safecall_run``).
OWN_RUN = "_safecall_own_run"


def base_class(obj: Any) -> type:
    """The Triton class of a dispatched object whose ``run`` the dispatch serves."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    return next(base for base in (JITFunction, Autotuner, Heuristics) if isinstance(obj, base))


def shipped(run: Any) -> bool:
    """Whether ``run`` is a function of Triton's own package (not a wrapper of one)."""
    import os

    import triton

    code = getattr(run, "__code__", None)
    home = os.path.dirname(os.path.abspath(triton.__file__)) + os.sep
    return code is not None and not hasattr(run, "__wrapped__") and os.path.abspath(code.co_filename).startswith(home)


def run_overridden(obj: Any) -> bool:
    """Whether ``obj.run`` is not its Triton class's ``run`` as Triton shipped it or as
    :func:`safecall._triton_dispatch.install_dispatch` serves it: the instance has its own (``kernel.run = f``), a
    subclass overrides it, or it was replaced on the class. Then ``kernel[grid](...)`` and the
    layers above call ``obj.run`` through Python, as Triton's own ``__getitem__``,
    ``Autotuner.run`` and ``Heuristics.run`` do (``self.run(...)``, ``self.fn.run(...)``)."""
    from ._native import DispatchedRun

    state = vars(obj)
    if state.get(OWN_RUN) or "run" in state:
        return True
    base = base_class(obj)
    for klass in type(obj).__mro__:
        if "run" in vars(klass):
            run = vars(klass)["run"]
            return klass is not base or not (isinstance(run, DispatchedRun) or shipped(run))
    return True


def set_own_run(obj: Any, value: Any) -> None:
    """``obj.run = value`` where the dispatch is installed: kept where the ``run`` descriptor
    finds it, and ``kernel[grid](...)`` and the layers above then call it."""
    with RUN_LOCK:
        state = vars(obj)
        state.pop("run", None)
        state["_safecall_run"] = value
        state[OWN_RUN] = True
        refresh_overridden(obj)


def delete_own_run(obj: Any) -> None:
    """``del obj.run`` where the dispatch is installed: the class's ``run`` again."""
    with RUN_LOCK:
        state = vars(obj)
        if not state.pop(OWN_RUN, False) and state.pop("run", OWN_RUN) is OWN_RUN:
            raise AttributeError(f"'{type(obj).__name__}' object has no attribute 'run'")
        d = own_dispatcher(obj)
        if d:
            state["_safecall_run"] = d._native.run
        else:
            state.pop("_safecall_run", None)
        refresh_overridden(obj)


def own_dispatcher(obj: Any) -> Any:
    """``obj``'s dispatcher where it has one made for it, else ``None``."""
    d = vars(obj).get("_safecall_dispatcher")
    return d if d and d.owner is obj else None


def refresh_overridden(obj: Any) -> None:
    d = own_dispatcher(obj)
    if d:
        d._native.set_run_overridden(run_overridden(obj))


def state_without_dispatch(obj: Any) -> Dict[str, Any]:
    """``__getstate__`` of Triton's classes where the dispatch is installed: the instance's
    dictionary as Triton's classes (which define none) give it to ``copy`` and ``pickle``,
    without the dispatcher and its bound methods (a copy makes its own), its own ``run`` under
    that name."""
    state = {k: v for k, v in vars(obj).items() if not k.startswith("_safecall_")}
    if vars(obj).get(OWN_RUN):
        state["run"] = vars(obj)["_safecall_run"]
    return state


def check_runs_shipped() -> None:
    """Raises ``RuntimeError`` where the ``run`` of ``JITFunction``, ``Autotuner`` or
    ``Heuristics`` is not Triton's own (a tracer's wrapper put on the class): the dispatch
    would serve ``kernel[grid](...)`` without calling it. For an install (none made yet)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, Autotuner, Heuristics):
        run = vars(cls).get("run")
        if not shipped(run):
            raise RuntimeError(
                f"safecall.triton.install(dispatch=True): {cls.__name__}.run is not Triton's own ({run!r}), "
                "and the dispatch would launch without calling it; install the dispatch before replacing it "
                "(a replacement made after the install is then called by the kernels first called after it)"
            )
