"""``safecall.triton.jit``: the dispatcher chooses the specialization Triton's own ``run`` chooses
and sends the CUDA driver double the same launches, for a table of calls (aligned and
misaligned pointers, ints equal to 1, divisible and not by 16, at the i32/i64/u64 boundaries,
``None``, floats, constexprs and keywords, a ``lambda META`` grid, an empty grid, several
specializations of one kernel interleaved, host ``TensorDescriptor``s, an autotuned kernel
after tuning, launch hooks with a kernel's ``launch_metadata=``) and for seeded draws of
many argument kinds, keywords, options and grids, call shapes and heuristics layers; what it cannot decide
exactly (pre-run hooks, warm-up, argument kinds it does not model) goes through Triton's path,
counted. Runs ``triton_dispatch_run.py`` in a process of its own per Triton release."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support import TESTS
from test_triton_driver import VERSIONS, _python, release_python, triton_unavailable

RUNNER = TESTS / "support" / "triton_dispatch_run.py"


@pytest.fixture(scope="module", params=VERSIONS)
def result(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("triton_dispatch")
    python, path = release_python(request.param, tmp)
    env = {k: v for k, v in os.environ.items() if k != "SAFECALL_TRITON_DRIVER"}
    env.update(TRITON_CACHE_DIR=str(tmp / "cache"), PYTHONPATH=path, TRITON_DEFAULT_FP_FUSION="1")
    out = tmp / "result.json"
    proc = subprocess.run([python, str(RUNNER), str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return dict(json.loads(out.read_text()), requested=request.param)


def test_the_dispatcher_chooses_tritons_specialization(result):
    for name, case in result["cases"].items():
        triton_kernel, miss, hit = case["kernels"]
        assert miss == triton_kernel and hit == triton_kernel, name


def test_the_launches_are_byte_identical(result):
    for name, case in result["cases"].items():
        by_triton, by_miss, by_hit = case["launches"]
        assert by_miss == by_triton and by_hit == by_triton, name
        assert len(by_triton) == (0 if name == "empty grid" else 1), name


def test_specializations_differ_where_tritons_do(result):
    kernels = {name: case["kernels"][0] for name, case in result["cases"].items()}
    assert kernels["i32 divisible by 16"] != kernels["i32 not divisible"]
    assert kernels["i32 equal to 1"] != kernels["i32 not divisible"]
    assert kernels["misaligned pointer"] != kernels["i32 not divisible"]
    assert kernels["x of float64"] not in (kernels["i32 not divisible"], kernels["misaligned pointer"])
    assert kernels["i64 min of i64"] != kernels["i32 max"]
    assert kernels["num_warps=8"] != kernels["i32 not divisible"]
    assert kernels["n by keyword"] == kernels["i32 not divisible"]
    # A host descriptor specializes on its dtype and block shape only (`tensordesc<fp16[64, 64]>`).
    assert kernels["host descriptors, another shape, nan padding"] == kernels["host descriptors"]
    assert kernels["host descriptors, another block"] != kernels["host descriptors"]


def test_host_tensor_descriptors_are_served_from_the_table(result):
    for name in ("host descriptors", "host descriptors, another shape, nan padding", "host descriptors, another block"):
        triton_launch, miss_launch, hit_launch = result["cases"][name]["launches"]
        assert hit_launch == triton_launch, name
    # Two keys (the other shape and padding are the first key again): each recorded once, then
    # hit: 4 calls of the table, then 3 interleaved.
    assert result["stats"]["host_desc_copy"] == {"miss": 2, "hit": 7}


def test_interleaved_calls_hit_the_same_kernels(result):
    for name, case in result["interleaved"].items():
        assert case["kernel"] == result["cases"][name]["kernels"][0], name
    for counts in result["stats"].values():
        assert set(counts) == {"hit", "miss"}
        assert counts["hit"] >= counts["miss"]


def test_an_autotuned_kernel_dispatches_its_best_config(result):
    assert result["kernel[grid] once installed"] == "BoundDispatch"
    tuned = result["autotuned"]
    before, after = tuned["stats_before"], tuned["stats_after"]
    # Tuning launches each of the two configs once (each a miss: a new BLOCK), then the best
    # config is launched three times from the table.
    assert after["miss"] - before["miss"] == 2
    assert after["hit"] - before["hit"] == 3
    assert len(tuned["launches"]) == 5
    assert len({json.dumps(launch, sort_keys=True) for launch in tuned["launches"][2:]}) == 1
    # The autotuner's own layer: the first call tunes through Triton's Autotuner.run, the two
    # others are served natively; the launches and the best config are Triton's own.
    assert tuned["tuner stats"] == {"not tuned": 1}
    assert tuned["kernel[grid]"] == "BoundDispatch"
    reference = result["autotuned reference"]
    assert tuned["launches"] == reference["launches"]
    assert tuned["best"] == reference["best"]


def test_a_tuned_config_changed_after_tuning_is_followed(result):
    changed = result["config changed after tuning"]
    for what in ("num_warps", "kwargs"):
        runs = changed["runs"][what]
        assert len(runs["dispatch"]) == 1 and runs["dispatch"] == runs["triton"], what
    # Fewer warps: a smaller block and another specialization of the kernel; another BLOCK:
    # another one again (each a miss of the kernel's own dispatcher, which Triton compiled).
    assert changed["runs"]["num_warps"]["dispatch"][0]["block"][0] == 64
    for what in ("num_warps", "kwargs"):
        assert changed["runs"][what]["misses after"] - changed["runs"][what]["misses before"] == 1, what
    # Both served by the native autotune layer (only the first, untuned call went to Triton's).
    assert changed["tuner stats"] == {"not tuned": 1}


def test_the_autotune_key_follows_the_keywords_order(result):
    keyed = result["autotune key from keywords"]
    # Two keys, as Triton makes them (the dtypes in the keywords' order)...
    assert len(keyed["triton"]["keys"]) == 2 and keyed["dispatch"]["keys"] == keyed["triton"]["keys"]
    assert keyed["dispatch"]["launches"] == keyed["triton"]["launches"]
    # ...each tuned through Triton's Autotuner.run, the third call served natively.
    assert keyed["dispatch"]["not tuned"] == 2


def test_launch_hooks_get_tritons_metadata_from_the_table(result):
    """With enter and exit hooks registered (a profiler's), the first call goes through Triton's
    run (a miss), the next from the table, with a tuple and a ``lambda META`` grid: every hook
    call gets what Triton's own path gave (its kernel's ``launch_metadata=`` function's part
    included), every launch is the same; a hook registered by the grid is called, one that
    raises stops the launch."""
    hooks = result["hooks"]
    assert (hooks["misses"], hooks["hits"], hooks["fallbacks"]) == (1, 4, {})
    metadata = {"name": "metered", "function": hooks["function"], "stream": 0, "grid": [8], "n": 1000, "num_warps": 4}
    # The last call's grid registers the enter hook: read after the grid, as Triton reads it.
    assert hooks["seen"] == [["enter", metadata], ["exit", "metered"]] * 3 + [["enter", metadata]]
    assert len(hooks["launches"]) == 5
    assert all(launch == hooks["launches"][0] for launch in hooks["launches"])
    # An enter hook that raises: raised, nothing launched, from the table as through Triton's run.
    assert hooks["raised"] == ["the profiler failed", 0] * 2


def test_what_it_cannot_decide_goes_through_triton_counted(result):
    stats = result["final stats"]
    assert "fallback: launch hooks" not in stats["copy"]
    assert stats["copy"]["fallback: warmup"] == 1
    assert stats["scalars"]["fallback: argument type str in a tuple"] == 1
    assert stats["host_desc_copy"]["fallback: argument type SubDescriptor"] == 1
    assert result["fallback launches"] == 1  # the descriptor subclass's; warm-up launches nothing
    assert result["tuple error"]  # Triton's own error for the tuple, raised as Triton raises it


def test_scalars_of_other_python_types_choose_and_launch_as_triton(result):
    """Int and float subclasses, objects with only ``__index__`` or ``__float__``, a bool or a
    float for an int, an int subclass as a constexpr: Triton's run, the dispatcher's first call
    and its second choose the same kernel and send the same launches (or raise the same error);
    what the dispatcher does not model (every subclass and ``__index__``/``__float__``-only
    type) went through Triton's run, counted by type. (Triton's own run refuses the
    ``__index__``- and ``__float__``-only objects: its specializer knows ints and floats only.)"""
    for name, (by_triton, first, second) in result["foreign"].items():
        assert first == by_triton and second == by_triton, name
    launched = [name for name, (by_triton, _, _) in result["foreign"].items() if not isinstance(by_triton, str)]
    assert len(launched) >= 6, result["foreign"]
    stats = result["foreign stats"]
    for kind in ("IntSubclass", "IndexOnly", "FloatSubclass", "FloatOnly"):
        assert stats["scalars"].get(f"fallback: argument type {kind}", 0) >= 2, stats
    assert stats["copy"].get("fallback: argument type IntSubclass", 0) >= 2, stats


def test_pointer_arguments_in_every_form_choose_and_launch_as_triton(result):
    """300 seeded pointer arguments (``triton_fakes.random_pointer``: ints at and beyond 64
    bits, subclasses, bools, ``None``, objects whose ``data_ptr()`` returns anything or raises,
    with a dtype or without): Triton's run, the dispatcher's miss and its hit choose the same
    kernel, make the same launches and pointer checks, or raise the same error (type and
    message; a ``data_ptr()`` that is no int is the specializer's ``TypeError: an integer is
    required``)."""
    forms = result["pointer forms"]
    assert len(forms) == 300
    for i, (by_triton, miss, hit) in enumerate(forms):
        assert miss == by_triton and hit == by_triton, (i, by_triton, miss, hit)
    launched = sum(isinstance(t[0], int) and any(r["call"] == "cuLaunchKernelEx" for r in t[1]) for t, _, _ in forms)
    assert 20 <= launched <= 270, launched
    assert any(t[0] == "TypeError: an integer is required" for t, _, _ in forms)


def test_tuple_arguments_choose_and_launch_as_triton_from_the_table(result):
    """80 seeded calls of ``tuple_copy`` with tuple arguments (pointers in every form, a
    misaligned one, ``None``, named tuples, ints equal to 1, divisible by 16, at the i32, i64
    and u64 edges and beyond,
    floats, bools; a list, a str in a tuple, an element nested 40 deep): Triton's run, the
    dispatcher's miss and its hit choose the same kernel, make the same launches and pointer
    checks (the hit with as many ``data_ptr()`` calls), or raise the same error; the tuples it keys are
    served from its table, the others go through Triton's run, counted by reason."""
    forms = result["tuple forms"]
    assert len(forms) == 80
    for i, (ptrs, sizes, (by_triton, miss, hit)) in enumerate(forms):
        assert miss[:2] == by_triton[:2] and hit[:2] == by_triton[:2], (i, ptrs, sizes, by_triton, miss, hit)
        # A miss reads each tensor's data_ptr() for the key, then goes through Triton's run,
        # which reads it again; a hit (the second call of a launched form) as often as Triton.
        if isinstance(by_triton[0], int):
            assert hit[2] == by_triton[2], (i, ptrs, sizes, by_triton, hit)
    launched = [f for f in forms if isinstance(f[2][0][0], int) and any(r["call"] == "cuLaunchKernelEx" for r in f[2][0][1])]
    assert len(launched) >= 30, len(launched)
    # Every launched form's second dispatch was served from the table (the first was a miss,
    # or a hit of an earlier form's key).
    stats = result["tuple stats"]
    assert stats.get("hit", 0) >= len(launched), stats
    assert stats.get("fallback: argument type str in a tuple", 0) >= 2, stats
    assert stats.get("fallback: tuples nested more than 32 deep", 0) >= 2, stats
    assert stats.get("fallback: argument type list", 0) >= 2, stats
    # data_ptr() called for the key and again by the launcher, as by Triton.
    assert any(f[2][0][2] >= 4 for f in launched)


def test_endless_reentry_raises_recursion_error_as_tritons_path_does(result):
    """A kernel called again from its own ``data_ptr()``, grid function or launch enter hook,
    without end, at the default recursion limit: Triton's run and the dispatch (served from its
    table) both raise ``RecursionError``; through a ``data_ptr()`` the dispatch goes no deeper
    than Triton's path (each re-entry counted as Triton's Python frames are; uncounted it went
    twice as deep, and a raised limit ran the C stack out); the recursion count is restored."""
    reentry = result["reentry"]
    for route in ("data_ptr", "grid", "hook"):
        for path in ("triton", "dispatch"):
            assert reentry[f"{route} {path}"]["outcome"] == "RecursionError", (route, path, reentry)
            assert reentry[f"{route} {path}"]["depth"] >= 50, (route, path, reentry)
    assert reentry["data_ptr dispatch"]["depth"] <= reentry["data_ptr triton"]["depth"], reentry
    assert reentry["count restored"]


def test_a_grid_function_writing_meta_launches_as_in_triton(result):
    """A grid function that writes into its ``META`` (``n`` and a tensor replaced): Triton's
    run launches the dictionary's values after the grid, and so does the dispatch, on its miss
    and from its table (before, the table's launch carried the caller's arguments)."""
    by_triton, miss, hit, counts = result["reentry"]["grid writes META"]
    assert len(by_triton) == 1 and miss == by_triton and hit == by_triton, (by_triton, miss, hit)
    # The second dispatch at least was served from the table (the first too where an earlier
    # call recorded the key).
    assert counts.get("hit", 0) >= 1 and set(counts) <= {"hit", "miss"}, counts
    args = by_triton[0]["args"]
    assert args[0] == "00500000007f0000" and args[2] == "05000000", args


def test_gluon_descriptors_choose_and_launch_as_triton_from_the_table(result):
    """Kernels taking Gluon's host descriptors (Triton 3.8+): a tiled one with its shared
    layout (then another base, shape and padding, then another block) and an im2col one (then
    other corners and element strides): Triton's run, the dispatcher's first call and its
    second choose the same kernel and send the same launches, maps encoded on every launch;
    another block is another specialization, the rest hit the table. Before 3.8 (where this
    is not tested) they go through Triton's run."""
    gluon = result["gluon"]
    if tuple(int(p) for p in result["triton"].split(".")[:2]) < (3, 8):
        assert gluon == {}
        return
    stats = gluon.pop("stats")
    assert len(gluon) == 5
    for name, (by_triton, first, second) in gluon.items():
        assert first == by_triton and second == by_triton and len(by_triton[1]) == 1, name
    assert stats == {"tiled_copy": {"miss": 2, "hit": 4}, "im2col_copy": {"miss": 1, "hit": 3}}, stats


def test_replaced_knob_groups_count_as_in_triton(result):
    """``knobs.runtime`` and ``knobs.compilation`` replaced by fresh copies (Triton's
    ``fresh_knobs`` test helper) after the key was in the dispatcher's table: ``debug`` set on
    the new ``knobs.runtime`` compiles and launches the debug kernel, an enter hook set there
    is called for each launch, through the dispatch as through Triton's run (before, the
    dispatcher kept reading the groups it was made with); with Triton's groups put back, the
    non-debug kernel again."""
    groups = result["knob groups"]
    for name in ("fresh groups, debug", "fresh runtime, enter hook"):
        by_triton, first, second, counts = groups[name]
        assert first == by_triton and second == by_triton, (name, by_triton, first, second)
        # The new setting's key missed once, then hit (debug); the hook's calls hit.
        assert counts.get("hit", 0) >= 1 and set(counts) <= {"hit", "miss"}, (name, counts)
    assert groups["fresh groups, debug"][0][1] is True
    assert groups["fresh runtime, enter hook"][0][3] == 1
    by_triton, first, second = groups["after"]
    assert first == by_triton and second == by_triton and by_triton[1] is False, groups["after"]
    # The module counts its assignments (safecall's class for it); a dispatcher made without
    # that count looks the groups up on every call, and sees even a group put into the
    # module's dictionary directly.
    assert groups["watched"] == "_WatchedKnobs"
    # A miss during which a data_ptr() turned debug on: Triton chose the debug kernel, which
    # was not recorded under the key read before; the call with debug off gets the other.
    assert groups["changed during a miss"] == [False, False]
    assert groups["unwatched"] == [True, True]


def test_a_pointer_in_do_not_specialize_is_read_by_the_launcher_as_in_triton(result):
    """200 seeded forms for a pointer in ``do_not_specialize``: Triton's key does not call its
    ``data_ptr()`` (its launcher does, and a ``data_ptr()`` that raises is the launcher's
    ``TypeError``), and neither does the dispatcher's; the same kernel, launches, pointer
    checks or error, message included, on Triton's run, the dispatcher's miss and its hit."""
    forms = result["unspecialized pointer forms"]
    assert len(forms) == 200
    for i, (form, by_triton, miss, hit) in enumerate(forms):
        assert miss == by_triton and hit == by_triton, (i, form, by_triton, miss, hit)
    launched = sum(isinstance(t[0], int) and any(r["call"] == "cuLaunchKernelEx" for r in t[1]) for _, t, _, _ in forms)
    assert 10 <= launched <= 180, launched
    raised = {t[0] for _, t, _, _ in forms if isinstance(t[0], str)}
    assert "TypeError: Pointer argument must be either uint64 or have data_ptr method" in raised, raised


def test_grids_in_every_form_choose_and_launch_as_triton(result):
    """300 seeded grids (tuples and lists of 0 to 4 entries: ints at and beyond 32 and 64 bits,
    negative, 0, int subclasses, ``__index__``-only objects, floats, bools, ``None``, a str; a
    bare entry; a function returning such a tuple; ``None``): Triton's run and the dispatcher's two calls
    launch the same or raise the same error, message included (a ``None`` grid: 3.6 and 3.7
    assert, 3.8+ take its length; the dispatcher lets Triton's run say which, counted)."""
    forms = result["grid forms"]
    assert len(forms) == 300
    for i, (by_triton, first, second) in enumerate(forms):
        assert first == by_triton and second == by_triton, (i, by_triton, first, second)
    launched = sum(bool(t[1]) for t, _, _ in forms)
    assert 20 <= launched <= 280, launched


def test_an_autotuned_kernel_keyed_by_equal_values_of_other_types_launches_as_triton(result):
    """An autotuned kernel whose key argument comes as an int, an int subclass, a float or a
    bool of the same value (keys Triton's autotuner holds equal): each call through Triton's
    ``Autotuner.run`` twice and through the dispatcher twice, with benchmarkers that answer
    alike: the same launches, call by call (a key's first call tunes, launching every config
    then the best; later ones launch the best config once)."""
    *calls, stats = result["autotuned key forms"]
    assert len(calls) == 40
    for value, first, second, by_miss, by_hit in calls:
        assert by_miss == first and by_hit == second, value
        assert len(second) == 1, (value, second)
    tunings = sum(len(first) > 1 for _, first, *_ in calls)
    # Four key values (1000, 1024, 1, 7) in four types each: each tuned once, by each path.
    assert tunings == 4 and stats.get("not tuned") == 4, (tunings, stats)
    values = [value for value, *_ in calls]
    assert {v.split()[0] for v in values} == {"int", "IntSubclass", "float", "bool"}, values


def test_call_shapes_choose_and_launch_as_triton(result):
    """160 seeded calls of two kernels (``triton_dispatch_calls``): arguments by position and
    by keyword in any order, one left out, one too many, one given twice, an unknown keyword
    (``grid`` among them), launch options of every value, constexprs equal to their defaults
    in other types. Triton's own ``run`` and the dispatcher's two calls choose the same kernel
    and launch the same, or raise the same error, message included (a keyword ``grid`` is the
    error Triton's ``kernel[grid]`` raises, naming Triton's method)."""
    draws = result["call shapes"]
    assert len(draws) == 160
    for i, (change, (by_triton, first, second)) in enumerate(draws):
        assert first == by_triton and second == by_triton, (i, change, by_triton, first, second)
    changes = {change for change, _ in draws}
    assert changes == {"none", "missing", "extra", "twice", "unknown"}, changes
    launched = sum(isinstance(outcomes[0][0], int) and bool(outcomes[0][1]) for _, outcomes in draws)
    assert 40 <= launched <= 130, launched
    assert any("multiple values for keyword argument 'grid'" in str(o[0][0]) for _, o in draws)
    for name, stats in result["call shapes stats"].items():
        assert stats["hit"] >= 20 and stats["fallback: binding"] >= 20, (name, stats)


def test_call_shapes_through_run_choose_and_launch_as_triton(result):
    """80 seeded call shapes through ``kernel.run(*args, grid=, warmup=False, **kwargs)`` (the
    call Inductor and Helion make): as Triton's own ``run``, but for the documented wording of
    Python's own argument errors, which name the dispatcher's native ``run`` (normalized)."""
    draws = result["call shapes through run"]
    assert len(draws) == 80
    for i, (change, (by_triton, first, second)) in enumerate(draws):
        assert first == by_triton and second == by_triton, (i, change, by_triton, first, second)
    assert 20 <= sum(isinstance(o[0][0], int) for _, o in draws) <= 70


def test_heuristics_layers_in_every_form_run_and_launch_as_triton(result):
    """120 seeded ``@triton.heuristics`` layers, one or two deep, over two kernels: heuristics
    of constexprs, runtime arguments (overriding a caller's), launch options, unknown names,
    ``grid``, and ones that raise; called in every shape. Through Triton's own
    ``Heuristics.run`` and twice through the dispatcher: the same kernel and launches or the
    same error, and the heuristics called the same number of times with the same arguments in
    the same order (a heuristic named ``grid`` sends the call to Triton's ``Heuristics.run``
    before any heuristic runs, so none runs twice)."""
    draws = result["heuristics forms"]
    assert len(draws) == 120
    for i, (change, (by_triton, first, second)) in enumerate(draws):
        assert first == by_triton and second == by_triton, (i, change, by_triton, first, second)
    launched = sum(isinstance(outcomes[0][0], int) and bool(outcomes[0][1]) for _, outcomes in draws)
    assert 30 <= launched <= 100, launched
    assert sum(bool(outcomes[0][2]) for _, outcomes in draws) >= 100  # the heuristics ran
    stats = result["heuristics forms stats"]
    assert stats.get("a heuristic named grid or warmup", 0) >= 5 and stats.get("keyword grid or warmup", 0) >= 1, stats


def test_autotuned_kernels_in_every_form_run_and_launch_as_triton(result):
    """60 seeded autotuned kernels (one to three configs, keys of zero to two arguments,
    pointers and ints among them), each called four times in seeded shapes (the first call
    tunes, the third has another ``n``), by Triton's own ``Autotuner.run`` and by the
    dispatcher, with benchmarkers that answer alike: call by call the same kernel and launches
    or the same error, and the autotuner left the same (its tuned keys, ``best_config`` and
    ``nargs``, which Triton sets to the arguments by name and back to ``None`` once the launch
    returned). One difference is documented, and normalized here: a keyword given both by the
    caller and the config is Python's ``TypeError`` naming the callable, the dispatcher's
    ``TritonDispatch.run`` where the dispatch is installed."""
    draws = result["autotune forms"]
    assert len(draws) == 60
    for i, (spec, by_triton, by_dispatch) in enumerate(draws):
        for j, (t, d) in enumerate(zip(by_triton, by_dispatch)):
            assert d == t, (i, spec, j, t, d)
    calls = [run for _, by_triton, _ in draws for run in by_triton]
    assert 60 <= sum(isinstance(run[0], int) for run in calls) <= 200
    assert sum(len(run[1]) > 1 for run in calls) >= 15  # calls that tuned (several launches)
    assert any(isinstance(run[2][2], list) for run in calls)  # a failed call left nargs set


def test_heuristics_over_autotuned_kernels_run_and_launch_as_triton(result):
    """40 seeded ``@triton.heuristics`` layers over autotuned kernels, and autotuned layers
    over heuristics (heuristics of a runtime argument, of ``BLOCK`` over a config without one,
    of an unknown name or a launch option), three calls each in seeded shapes, through
    Triton's ``Heuristics.run`` and ``Autotuner.run`` and through the dispatch (an autotuned
    layer over heuristics, which ``safecall.triton.jit`` refuses, as ``kernel[grid]`` with the
    dispatch installed: Triton's ``Autotuner.run`` over the layer's dispatcher): call by call
    the same kernel, launches or error (the keyword-given-twice message normalized, as
    documented; a keyword ``grid`` names Triton's ``Autotuner.run``), the same heuristic calls
    and the autotuner left the same."""
    draws = result["heuristics over autotune"]
    assert len(draws) == 40
    assert {spec["outermost"] for spec, _, _ in draws} == {"heuristics", "autotune"}
    for i, (spec, by_triton, by_dispatch) in enumerate(draws):
        for j, (t, d) in enumerate(zip(by_triton, by_dispatch)):
            assert d == t, (i, spec, j, t, d)
    calls = [run for _, by_triton, _ in draws for run in by_triton]
    assert 30 <= sum(isinstance(run[0], int) for run in calls) <= 110
    assert sum(len(run[1]) > 1 for run in calls) >= 5  # calls that tuned


def test_a_run_without_grid_or_warmup_fails_as_tritons(result):
    """A kernel's, an autotuned kernel's and a heuristics layer's ``run`` without ``grid``,
    without ``warmup`` or without both goes to Triton's own ``run``, which raises where its
    inner ``JITFunction.run`` does, after setting ``nargs`` (the autotuner) or running the
    heuristics; with both it is served. The same outcomes, messages included (Triton's, naming
    ``JITFunction.run()``), and ``nargs`` as Triton's methods, call by call."""
    assert set(result["runs without grid or warmup"]) == {"jit", "autotuned", "heuristics"}
    for name, (by_triton, by_dispatch) in result["runs without grid or warmup"].items():
        assert by_dispatch == by_triton, name
        errors = [call[0] for call in by_triton[:3]]
        assert all(str(e).startswith("TypeError: JITFunction.run() missing") for e in errors), (name, errors)
        assert isinstance(by_triton[3][0], int), name


def test_run_has_the_signature_of_tritons_method(result):
    """``inspect.signature`` of a dispatcher's ``run`` and of the installed ``kernel.run`` (a
    builtin) is that of Triton's method it stands for: ``JITFunction.run``'s, and
    ``Autotuner.run``'s and ``Heuristics.run``'s."""
    signatures = result["run signatures"]
    assert signatures["jit"] == ["(*args, grid, warmup, **kwargs)"] * 3, signatures
    assert signatures["autotuned"] == signatures["heuristics"] == ["(*args, **kwargs)"] * 3, signatures


def test_run_leaves_a_c_callers_keyword_dict_as_it_was(result):
    """A C caller's own keyword dictionary (``PyObject_Call``) given to a dispatcher's ``run``:
    the launch happens, and ``grid`` and ``warmup`` are still in the caller's dictionary."""
    assert result["C caller's dict"] == {"kept": True, "launches": 1, "kernel": "CompiledKernel"}


def test_run_keeps_grid_and_warmup_out_of_the_key(result):
    """``d.run(..., grid=<a new function each call>, warmup=False)`` four times: ``grid`` and
    ``warmup`` are the protocol's keywords, not launch options in the key (the dispatcher
    binds the caller's dictionary leaving them out), so one entry at most is recorded and the
    other calls hit it."""
    new_grid = result["run with a new grid each call"]
    assert new_grid["recorded"] <= 1 and new_grid["counts"].get("hit", 0) >= 3, new_grid


def test_launch_hooks_in_every_form_see_and_launch_as_triton(result):
    """100 seeded launch-hook setups (``triton.knobs.runtime``'s enter and exit hooks: chains of
    hooks that record ``metadata.get()``, raise, register another hook during the call; a plain
    function or ``None`` in a chain's place; grids that register a hook) on a kernel with and
    without ``launch_metadata=``: Triton's run and the dispatcher's two calls launch the same
    or raise the same, and the hooks are called in the same order with the same metadata. The
    dispatcher's calls were served from its table (no fallback). The reference is Triton's
    ``run`` over the installed driver's launcher (this runner installs it); Triton's own
    launchers are compared with safecall's for hooks of other kinds in
    ``test_triton_driver.py``."""
    draws = result["hook forms"]
    assert len(draws) == 100
    for i, (spec, (by_triton, first, second)) in enumerate(draws):
        assert first == by_triton and second == by_triton, (i, spec, by_triton, first, second)
    assert 30 <= sum(isinstance(o[0][0], int) for _, o in draws) <= 95
    assert sum(bool(o[0][2]) for _, o in draws) >= 60  # the hooks ran
    assert any(o[0][0] == "RuntimeError: the profiler failed" for _, o in draws)
    for name, stats in result["hook forms stats"].items():
        assert set(stats) == {"hit"} and stats["hit"] >= 40, (name, stats)


def test_the_runs_used_the_release_they_name(result):
    assert result["triton"].startswith(result["requested"] + "."), (result["triton"], result["requested"])


def test_clear_forgets_the_recorded_kernels(result):
    cleared = result["after clear"]
    assert cleared["kernels"] == [result["cases"]["a bias pointer"]["kernels"][0]] * 2
    assert cleared["after"]["miss"] == cleared["before"]["miss"] + 1
    assert cleared["after"]["hit"] == cleared["before"]["hit"] + 1


def test_the_kernels_debug_attribute_is_part_of_the_key(result):
    by_triton, by_dispatch = result["debug attribute"]["kernels"]
    assert by_dispatch == by_triton
    assert by_triton != result["cases"]["i32 not divisible"]["kernels"][0]


def test_an_environment_knob_is_read_on_every_call(result):
    knob = result["environment knob"]
    if not result["triton"].startswith("3.9."):
        assert knob is None  # releases before 3.9 fold no environment-backed knob into the options
        return
    assert knob["set by triton"] != knob["first"]
    assert knob["set"] == [knob["set by triton"]] * 2
    assert knob["zero"] == knob["first"]
    assert knob["overridden"] == [knob["set by triton"]] * 2
    assert knob["unset"] == knob["first"]
    # One miss (the variable set), then hits only.
    assert knob["after"]["miss"] - knob["before"]["miss"] == 1
    assert knob["after"]["hit"] - knob["before"]["hit"] == 4


def test_a_grid_lambda_is_computed_from_its_trace(result):
    traced = result["traced grid"]
    # cdiv(5000, 128) = 40: three dispatched launches without a call of triton.cdiv (the trace
    # computed them), then Triton's run, which calls it.
    assert traced["int"] == {"cdiv calls": 1, "grids": [[40, 1, 1]] * 4, "errors": [None] * 4}
    # Over a float the grid itself runs on every call; its 40.0 is refused as Triton refuses it.
    assert traced["float"]["cdiv calls"] == 4 and traced["float"]["grids"] == []
    assert len(set(traced["float"]["errors"])) == 1 and traced["float"]["errors"][0].startswith("TypeError")
    # A replaced triton.cdiv is what the grid calls: the trace is not used.
    assert traced["cdiv replaced"] == {"grids": [[7, 1, 1]]}


def test_installed_subscripts_and_runs_run_no_python_frame(result):
    installed = result["installed kernel[grid]"]
    assert installed["types"] == ["BoundDispatch"] * 3
    # No frame of safecall's: the subscripts run no Python at all; the `run` call reads the
    # test tensors' own `data_ptr()` methods once per tensor (and, before Triton 3.8, the
    # tests' torch stand-in, which Triton's driver asks for the stream).
    frames = installed["python frames"]
    assert not [f for f in frames if f.startswith(("_triton_", "triton.py", "__init__.py:getitem"))], frames
    assert [f for f in frames if f.endswith(":data_ptr")] == ["triton_dispatch_run.py:data_ptr"] * 2
    assert installed["class attribute"] == "DispatchedMethod"
    # On the class, the Python function it stands for, named (and documented) as the method it
    # replaces, so that Python's errors naming the callable read as Triton's.
    assert installed["class access"] == "__getitem__"
    # `run` requires `warmup` as Triton's does.
    assert "warmup" in installed["run without warmup"]


def test_the_active_driver_is_read_on_every_call(result):
    first, second = result["set_active"]["streams"]
    assert first == 0x5151 and second != 0x5151
    assert result["set_active"]["hits"] == 2


def test_a_heuristics_layer_is_served_as_tritons(result):
    heuristics = result["heuristics"]
    for row in heuristics["calls"]:
        assert row["dispatch"] == row["triton"]
        assert len(row["triton"]["launches"]) == 1
    kernels = [row["triton"]["kernel"] for row in heuristics["calls"]]
    # BLOCK 64 and stride 1 for n = 1000, BLOCK 128 and stride 2 for n = 5000: two kernels.
    assert kernels[0] == kernels[2] and kernels[1] == kernels[3] and kernels[0] != kernels[1]
    assert heuristics["stats"] == {}  # nothing went through Heuristics.run
    assert heuristics["error"] == "KeyError: 'missing'"
    assert result["heuristics kernel[grid] once installed"] == "BoundDispatch"


def test_equal_dtypes_are_one_key(result):
    case = result["equal dtypes"]
    by_triton, *by_dispatch = case["kernels"]
    assert by_dispatch == [by_triton] * 3
    assert case["after"]["miss"] - case["before"]["miss"] == 1
    assert case["after"]["hit"] - case["before"]["hit"] == 2


def test_keys_survive_the_identity_caches_starting_over(result):
    case = result["many types"]
    assert case["middle"]["miss"] - case["before"]["miss"] == 4200
    assert case["after"]["hit"] - case["middle"]["hit"] == 10
    assert case["after"]["miss"] == case["middle"]["miss"]
    assert case["recorded"] >= 4200
    assert case["kernels"] == [result["cases"]["i32 not divisible"]["kernels"][0]] * 10


def test_a_hit_reads_each_data_ptr_once(result):
    # Triton's own path calls it twice per tensor (its key, then its launcher).
    assert result["data_ptr calls per hit"] == 2


def test_generated_arguments_choose_tritons_kernel(result):
    generated = result["generated"]
    for i, (by_triton, first, second) in enumerate(generated["choices"]):
        assert first == by_triton and second == by_triton, i
    assert generated["kernels"] >= 10  # the draws cover many specializations


def test_seeded_draws_of_many_argument_kinds_choose_and_launch_as_triton(result):
    mixed = result["generated mixed"]
    for i, run in enumerate(mixed["first"] + mixed["second"]):
        by_triton, *dispatched = run["kernels"]
        assert all(k == by_triton for k in dispatched), i
        reference, *sent = run["launches"]
        assert reference and all(launches == reference for launches in sent), i
    # The second pass's keys are the first pass's classes: each is in the table, and nothing
    # of either pass went through Triton's path but the first pass's misses.
    assert [run["draw"] for run in mixed["second"] if run["missed"]] == []
    first, stats = mixed["stats first"], mixed["stats"]
    assert set(stats) <= {"hit", "miss"} and stats["miss"] == first["miss"], stats
    assert stats["hit"] == first["hit"] + len(mixed["second"])
    # Each of the 40 draws is a specialization of its own, for Triton and for the table.
    assert mixed["kernels"] == 40 and first == {"miss": 40, "hit": 40}, (mixed["kernels"], first)


def test_kernel_attributes_are_read_from_the_instance_only_where_that_is_exact():
    from safecall._triton_dispatch import _instance_state

    class Plain:
        def __init__(self):
            self.debug, self.hooks = None, []

    class Property:
        debug = property(lambda self: True)

        def __init__(self):
            self.__dict__["debug"] = None  # shadowed by the property

    class Custom(Plain):
        def __getattribute__(self, name):
            return object.__getattribute__(self, name)

    plain = Plain()
    assert _instance_state(plain, ("debug", "hooks")) is vars(plain)
    # A data descriptor wins over the instance dictionary; a custom lookup may do anything;
    # an attribute the instance lacks comes from its class.
    assert _instance_state(Property(), ("debug",)) is None
    assert _instance_state(Custom(), ("debug",)) is None
    assert _instance_state(plain, ("debug", "missing")) is None
    # A method (a non-data descriptor) is shadowed by the instance's attribute, as Python does.
    plain.run = 1
    Plain.run = lambda self: 0
    assert _instance_state(plain, ("run",)) is vars(plain) and plain.run == 1


def test_kernel_grid_is_kept_for_the_same_grid_tuple(result):
    case = result["kept kernel[grid]"]
    assert case["same"] == [True, False, False, False]
    assert case["grids"] == [[7, 1, 1], [8, 1, 1]]


def test_a_kernel_released_by_the_table_may_call_the_dispatcher(tmp_path):
    """Triton 3.8+ unload a kernel's module when its ``CompiledKernel`` is released, through the
    driver (and ``knobs.runtime.kernel_unload_hook``): when the dispatcher's table holds the
    last reference, ``clear()`` releases it, and that Python code may call the dispatcher
    again. The table's lock is not held then (it was: the same thread waited on itself)."""
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    code = (
        "import faulthandler\n"
        "faulthandler.dump_traceback_later(60, exit=True)\n"
        "from support import fake_cuda\n"
        "fake = fake_cuda.load()\n"
        "import safecall.triton\n"
        "safecall.triton.install()\n"
        "import triton\n"
        "from support.triton_fakes import Float32Pointer as T\n"
        "from support.triton_kernels import copy\n"
        "d = safecall.triton.jit(copy)\n"
        "d[(8,)](T(0x7F0000001000), T(0x7F0000002000), 1000, BLOCK=128)\n"
        "utils = triton.runtime.driver.active.utils\n"
        "unload = utils.unload_module\n"
        "def unload_and_ask(module):\n"
        "    print('unloading, recorded', d._native.recorded)\n"
        "    unload(module)\n"
        "utils.unload_module = unload_and_ask\n"
        "for cache in copy.device_caches.values():\n"
        "    cache[0].clear()\n"
        "d.clear()\n"
        "print('cleared, recorded', d._native.recorded)\n"
    )
    proc = _python(code, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["unloading, recorded 0", "cleared, recorded 0"]
