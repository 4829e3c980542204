"""The shared check suite (tests/checks: every parameter kind, every error kind with its exact
message, returns, globals, callbacks) through ``safecall.jit`` and the real ``tvm_ffi``: the
functions are ``tvm_ffi.Function``s bound to the ``libtvm_ffi`` that ``tvm_ffi`` loaded."""

import pytest
import tvm_ffi

import safecall
from safecall.testing.checks import python_calls, register_globals, run_case
from support import ROOT, backends
from support.checks import CHECKS, suites

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
            for case, mode in python_calls(suite):
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
    register_globals(suite)
    function = jitted(backend, suite["module"])[case["fn"]]
    assert isinstance(function, tvm_ffi.Function)
    run_case(function, case, mode)


def test_every_suite_has_cases():
    assert len(_params()) > 300 * len(backends())
