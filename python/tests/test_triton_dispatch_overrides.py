"""``install(dispatch=True)`` calls a ``run`` that is not Triton's as Triton's own path does:
a subclass of ``JITFunction``, ``Autotuner`` or ``Heuristics`` overriding ``run`` (also under
an autotune or heuristics layer), an instance given its own by ``unittest.mock.patch.object``
(then taken away), ``JITFunction.run`` wrapped on the class after the install; and a kernel
compiled under ``AsyncCompileMode`` returns Triton's ``CompiledKernel`` once compiled. Each
call's result, the overriding methods' calls and the launches are compared with stock
Triton's in a process of its own, per Triton release. A class's ``run`` wrapped before the
install is the install's error."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support import TESTS
from test_triton_driver import VERSIONS, release_python

RUNNER = TESTS / "support" / "triton_dispatch_overrides.py"


def _run(mode, python, path, tmp):
    env = {k: v for k, v in os.environ.items() if k != "SAFECALL_TRITON_DRIVER"}
    env.update(TRITON_CACHE_DIR=str(tmp / f"cache-{mode}"), PYTHONPATH=path, TRITON_DEFAULT_FP_FUSION="1")
    out = tmp / f"{mode}.json"
    proc = subprocess.run([python, str(RUNNER), mode, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module", params=VERSIONS)
def runs(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("triton_dispatch_overrides")
    python, path = release_python(request.param, tmp)
    return {mode: _run(mode, python, path, tmp) for mode in ("stock", "dispatch", "wrapped-first")}


def _outcomes(run, prefix):
    return [o for o in run["outcomes"] if o[0].startswith(prefix)]


def test_the_calls_return_log_and_launch_as_stock_tritons(runs):
    stock, dispatch = runs["stock"]["outcomes"], runs["dispatch"]["outcomes"]
    assert [o[0] for o in dispatch] == [o[0] for o in stock]
    for ours, theirs in zip(dispatch, stock):
        assert ours == theirs, ours[0]


def test_a_subclass_run_is_called_on_every_call(runs):
    for label, _returned, log, launches in _outcomes(runs["dispatch"], "subclass kernel[grid]"):
        assert log == ["LoggingJIT.run"], label
        # The override's num_warps=8: 256 threads per block.
        assert [launch[2] for launch in launches] == [[256, 1, 1]], label
    for prefix, name in (("subclass autotuner", "LoggingAutotuner.run"), ("subclass heuristics", "LoggingHeuristics.run"),
                         ("autotuner over a subclass", "LoggingJIT.run"), ("heuristics over a subclass", "LoggingJIT.run")):
        outcomes = _outcomes(runs["dispatch"], prefix)
        assert outcomes and all(name in log for _, _, log, _ in outcomes), prefix


def test_the_overrides_own_calls_are_still_dispatched(runs):
    # Each kernel[grid] goes through the override (counted), whose super().run is served from
    # the table after the first call.
    stats = runs["dispatch"]["stats"]["subclass"]
    assert stats.get("fallback: run overridden") == 3, stats
    assert stats.get("hit", 0) >= 2, stats


def test_an_instance_run_is_called_while_it_is_set(runs):
    for label in ("kernel", "kernel under heuristics"):
        by_label = {o[0]: o for o in runs["dispatch"]["outcomes"]}
        assert by_label[f"{label} before the patch"][2] == [], label
        assert by_label[f"{label} patched 0"][2] == ["spy"], label
        assert by_label[f"{label} patched 1"][2] == ["spy"], label
        assert by_label[f"{label} after the patch"][2] == [], label
    stats = runs["dispatch"]["stats"]["plain"]
    assert stats.get("fallback: run overridden") == 2, stats


def test_an_instance_run_from_before_the_install_is_called_until_taken_away(runs):
    by_label = {o[0]: o for o in runs["dispatch"]["outcomes"]}
    assert by_label["own run from before 0"][2] == ["early_spy"]
    assert by_label["own run from before 1"][2] == ["early_spy"]
    assert by_label["own run from before, read"][1] is True
    assert by_label["own run from before, taken away"][2] == []


def test_a_copy_has_its_own_dispatcher_and_run(runs):
    by_label = {o[0]: o for o in runs["dispatch"]["outcomes"]}
    assert by_label["copy with its own run"][2] == ["copy_spy"]
    assert by_label["original after the copy"][2] == []
    assert by_label["run set to None"][1].startswith("TypeError")


def test_a_class_run_wrapped_after_the_install_is_called(runs):
    outcomes = _outcomes(runs["dispatch"], "class run wrapped")
    assert len(outcomes) == 2 and all(log == ["traced_run"] and launches for _, _, log, launches in outcomes)


def test_a_kernel_compiled_asynchronously_is_returned_compiled_later(runs):
    by_label = {o[0]: o for o in runs["dispatch"]["outcomes"]}
    if "async first call" not in by_label:
        pytest.skip(f"Triton {runs['dispatch']['version']} has no AsyncCompileMode")
    assert by_label["async later call 0"][1] == "CompiledKernel"
    assert by_label["async later call 1"][1] == "CompiledKernel"


def test_a_class_run_wrapped_before_the_install_is_an_error(runs):
    error = runs["wrapped-first"]["error"]
    assert error is not None and "JITFunction.run is not Triton's own" in error and "traced_run" in error
