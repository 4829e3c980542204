"""The runner of safecall's check cases: a function call, its arguments and what it must
return or raise, written as JSON (the format of ``tests/checks/README.md`` in the
repository, where every case runs on every delivery path: AOT libraries, the JIT, Python).

The same cases serve a compiler's own tests: describe each call of a safecall-built function
as a case and run it with :func:`run_case`. Needs numpy (``pip install safecall[test]``).

>>> import safecall
>>> from safecall.testing.checks import run_case
>>> f = safecall.jit(safecall.parse("module m; fn twice(n: i64) -> i64 { return n * 2; }"))["twice"]
>>> run_case(f, {"name": "twice", "fn": "twice", "args": [{"int": 21}], "returns": {"int": 42}})
>>> run_case(f, {"name": "no args", "fn": "twice", "args": [],
...              "raises": {"kind": "TypeError",
...                         "message": "twice: expected 1 argument, got 0\\n  when calling twice(n: i64)"}})
"""

from __future__ import annotations

import builtins
import contextlib
import json
import pathlib
from typing import Any, Callable, Dict, Iterator, List, Mapping, Tuple, Union

import tvm_ffi

from ._allocator import RecordingAllocator, _install
from ._check_values import Args, callback, check_after, check_value

__all__ = ["load_suites", "python_calls", "register_globals", "run_case"]

#: Error kinds Python raises as the builtin exception of the same name; the others arrive as
#: RuntimeErrors.
BUILTIN_KINDS = frozenset(
    {
        "ValueError",
        "TypeError",
        "RuntimeError",
        "AttributeError",
        "KeyError",
        "IndexError",
        "AssertionError",
        "MemoryError",
    }
)


def load_suites(directory: Union[str, pathlib.Path]) -> List[Dict[str, Any]]:
    """Reads every suite (``*.json``) of a directory of cases.

    Parameters
    ----------
    directory : str or pathlib.Path
        The directory, e.g. ``tests/checks`` of the repository.

    Returns
    -------
    list of dict
        The suites, sorted by file name; each names its ``module`` (the ``.scir`` file beside
        it) and lists its ``cases``.

    Examples
    --------
    >>> from safecall.testing.checks import load_suites
    >>> load_suites("/nonexistent")
    []
    """
    return [json.loads(p.read_text()) for p in sorted(pathlib.Path(directory).glob("*.json"))]


def python_calls(suite: Mapping[str, Any]) -> List[Tuple[Dict[str, Any], str]]:
    """The calls a suite makes from Python: each case that runs there, once per mode.

    A case with a tensor among its top-level arguments runs twice: mode ``"direct"`` passes
    numpy arrays (or :class:`~safecall.testing.RawTensor` producers), mode ``"ffi"`` the
    ``tvm_ffi.Tensor``s made from them. Cases marked ``"only"`` without ``"python"`` are left
    out.

    Parameters
    ----------
    suite : mapping
        A suite, as :func:`load_suites` reads it.

    Returns
    -------
    list of (dict, str)
        ``(case, mode)`` pairs, in the suite's order.

    Examples
    --------
    >>> from safecall.testing.checks import python_calls
    >>> suite = {"cases": [{"name": "a", "args": [{"tensor": {"shape": [2]}}]},
    ...                    {"name": "b", "args": [], "only": ["rust"]}]}
    >>> [(case["name"], mode) for case, mode in python_calls(suite)]
    [('a', 'direct'), ('a', 'ffi')]
    """
    out = []
    for case in suite["cases"]:
        if "python" not in case.get("only", ["python"]):
            continue
        tensors = any(isinstance(a, dict) and "tensor" in a for a in case["args"])
        for mode in ["direct", "ffi"] if tensors else ["direct"]:
            out.append((case, mode))
    return out


def register_globals(suite: Mapping[str, Any]) -> None:
    """Registers the suite's global functions (its ``globals``: name -> callback name) with
    ``tvm_ffi.register_global_func``, replacing functions of the same name.

    Parameters
    ----------
    suite : mapping
        A suite, as :func:`load_suites` reads it.

    Returns
    -------
    None

    Examples
    --------
    >>> import tvm_ffi
    >>> from safecall.testing.checks import register_globals
    >>> register_globals({"globals": {"demo.echo": "echo"}})
    >>> tvm_ffi.get_global_func("demo.echo")(5)
    5
    """
    for name, callback_name in suite.get("globals", {}).items():
        tvm_ffi.register_global_func(name, callback(callback_name), override=True)


def run_case(function: Callable[..., Any], case: Mapping[str, Any], mode: str = "direct") -> None:
    """Calls ``function`` with the case's arguments and checks what it returns or raises.

    The arguments are built from the case's descriptors; the environment allocator is the
    case's (``"allocator"``: ``"cpu"``, ``{"fails": message}``, or none) for the call, and
    afterwards every tensor it allocated must have been freed exactly once. An expected error
    must have the builtin type of its ``kind`` (other kinds arrive as RuntimeError) and exactly
    its ``message``; an expected result must match its descriptor, and the tensors named in
    ``after`` must hold their values.

    Parameters
    ----------
    function : callable
        The function to call: a ``tvm_ffi.Function``, from ``safecall.jit`` or a loaded
        library.
    case : mapping
        The case (``args`` and either ``returns`` or ``raises``; ``after``, ``allocator``).
    mode : {"direct", "ffi"}, default "direct"
        How tensors are passed: numpy arrays or DLPack producers, or ``tvm_ffi.Tensor``s.

    Returns
    -------
    None

    Raises
    ------
    AssertionError
        When the call does not do what the case says.

    Examples
    --------
    See the module's.
    """
    args = Args(case["args"], mode)
    if "raises" in case:
        kind = case["raises"]["kind"]
        message = args.expand(case["raises"]["message"])
        expected = getattr(builtins, kind) if kind in BUILTIN_KINDS else RuntimeError
        exc = None
        with _allocator(case):
            try:
                function(*args.values)
            except Exception as e:  # the expected error, checked below
                exc = e
        assert exc is not None, f"{case['name']}: expected {kind}, nothing raised"
        assert type(exc) is expected, f"raised {type(exc).__name__}: {exc}"
        text = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        assert text == message, f"{case['name']}: raised {kind} {text!r}, expected {message!r}"
    else:
        with _allocator(case):
            got = function(*args.values)
            check_value(case["returns"], got, args)
            del got
        check_after(case.get("after", []), args)


@contextlib.contextmanager
def _allocator(case: Mapping[str, Any]) -> Iterator[None]:
    """The case's allocator on this thread for the block (none when the case names none);
    afterwards every allocation it made must have been freed exactly once."""
    spec = case.get("allocator")
    if spec is None:
        _install(None)
        yield
        return
    allocator = RecordingAllocator(fail=None if spec == "cpu" else spec["fails"])
    try:
        with allocator:
            yield
    finally:
        allocator.check_freed()
