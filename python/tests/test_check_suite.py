"""The shared check suite (tests/checks: every parameter kind, every error kind with its exact
message, returns, globals, callbacks) through ``safecall.jit`` and the real ``tvm_ffi``: the
functions are ``tvm_ffi.Function``s bound to the ``libtvm_ffi`` that ``tvm_ffi`` loaded."""

import builtins

import pytest
import tvm_ffi

import safecall
from cases import CHECKS, has_top_level_tensor, runs_on_python, suites
from conftest import ROOT, backends
import allocator
from values import Args, callback, check_after, check_value

BUILTIN_KINDS = {
    "ValueError",
    "TypeError",
    "RuntimeError",
    "AttributeError",
    "KeyError",
    "IndexError",
    "AssertionError",
    "MemoryError",
}

_JIT = {}


def jitted(backend, module):
    key = (backend, module)
    if key not in _JIT:
        path = CHECKS / f"{module}.scir"
        _JIT[key] = safecall.jit(
            safecall.parse(path.read_text(), str(path.relative_to(ROOT))), backend=backend
        )
    return _JIT[key]


def _params():
    out = []
    for backend in backends():
        for suite in suites():
            for case in suite["cases"]:
                if not runs_on_python(case):
                    continue
                modes = ["direct", "ffi"] if has_top_level_tensor(case) else ["direct"]
                for mode in modes:
                    out.append(
                        pytest.param(
                            backend,
                            suite,
                            case,
                            mode,
                            id=f"{backend}-{suite['module']}-{case['name']}-{mode}",
                        )
                    )
    return out


@pytest.mark.parametrize("backend,suite,case,mode", _params())
def test_case(backend, suite, case, mode):
    for name, callback_name in suite.get("globals", {}).items():
        tvm_ffi.register_global_func(name, callback(callback_name), override=True)
    function = jitted(backend, suite["module"])[case["fn"]]
    assert isinstance(function, tvm_ffi.Function)
    args = Args(case["args"], mode)
    if "raises" in case:
        kind = case["raises"]["kind"]
        message = args.expand(case["raises"]["message"])
        expected = getattr(builtins, kind) if kind in BUILTIN_KINDS else RuntimeError
        with pytest.raises(Exception) as info, allocator.for_case(case):
            function(*args.values)
        exc = info.value
        assert type(exc) is expected, f"raised {type(exc).__name__}: {exc}"
        text = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        assert text == message
    else:
        with allocator.for_case(case):
            got = function(*args.values)
            check_value(case["returns"], got, args)
            del got
        check_after(case.get("after", []), args)


def test_every_suite_has_cases():
    assert len(_params()) > 300 * len(backends())
