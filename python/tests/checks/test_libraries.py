"""The shared check cases, called through the real ``tvm_ffi`` on every backend's libraries
(built by ``tests/check_suite.rs``): numpy arrays (or DLPack producers for what numpy cannot
describe) passed directly, and converted to ``tvm_ffi.Tensor`` first."""

import pytest
import tvm_ffi

from safecall.testing.checks import python_calls, register_globals, run_case
from support.checks import COUNTS, NO_LIBRARIES, libraries, suites


def _params():
    out = []
    for backend, directory in libraries():
        for suite in suites():
            register_globals(suite)
            for case, mode in python_calls(suite):
                out.append(
                    pytest.param(
                        backend,
                        directory / f"{suite['module']}.so",
                        case,
                        mode,
                        id=f"{backend}-{suite['module']}-{case['name']}-{mode}",
                    )
                )
    if not out:
        out.append(pytest.param(None, None, None, None, marks=pytest.mark.skip(reason=NO_LIBRARIES)))
    return out


_MODULES = {}


def load(path):
    if path not in _MODULES:
        _MODULES[path] = tvm_ffi.load_module(str(path))
    return _MODULES[path]


@pytest.mark.parametrize("backend,library,case,mode", _params())
def test_case(backend, library, case, mode):
    run_case(load(library)[case["fn"]], case, mode)
    COUNTS[("calls", backend)] += 1
    if mode == "direct":
        COUNTS[("cases", backend)] += 1
