"""The shared check cases, called through the real ``tvm_ffi`` on every backend's libraries:
numpy arrays (or DLPack producers for what numpy cannot describe) passed directly, and
converted to ``tvm_ffi.Tensor`` first."""

import builtins

import pytest
import tvm_ffi

from cases import has_top_level_tensor, libraries, runs_on_python, suites
from conftest import COUNTS
import allocator
from values import Args, callback, check_after, check_value

# Error kinds Python raises as the builtin exception of the same name; others are
# RuntimeErrors.
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


def _params():
    out = []
    for backend, directory in libraries():
        for suite in suites():
            for name, callback_name in suite.get("globals", {}).items():
                tvm_ffi.register_global_func(name, callback(callback_name), override=True)
            for case in suite["cases"]:
                if not runs_on_python(case):
                    continue
                modes = ["direct", "ffi"] if has_top_level_tensor(case) else ["direct"]
                for mode in modes:
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
        out.append(
            pytest.param(
                None, None, None, None,
                marks=pytest.mark.skip(
                    reason="SAFECALL_CHECK_LIBS is not set: run through `cargo test --test check_suite`"
                ),
            )
        )
    return out


_MODULES = {}


def load(path):
    if path not in _MODULES:
        _MODULES[path] = tvm_ffi.load_module(str(path))
    return _MODULES[path]


@pytest.mark.parametrize("backend,library,case,mode", _params())
def test_case(backend, library, case, mode):
    function = load(library)[case["fn"]]
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
    COUNTS[("calls", backend)] += 1
    if mode == "direct":
        COUNTS[("cases", backend)] += 1
