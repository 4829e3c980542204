"""``safecall.triton.install(backend="hip")``: stock Triton code for AMD GPUs,
``kernel[grid](...)``, runs on safecall's driver with no C compiler, and sends the HIP runtime
exactly what Triton 3.9's own AMD driver sends.

Each side runs ``triton_hip_driver_run.py`` in a process of its own against the HIP runtime
double (tests/fake_hip), with an empty Triton cache: once with Triton's own ``HIPDriver``
(which builds ``driver.c`` with the machine's C compiler), once with safecall's installed and
a ``PATH`` holding only stand-ins for ``cc``, ``gcc``, ``clang`` (and their C++ names) that
record any call, once more with the backend left for ``install()`` to choose. Every launch
record (entry, kernel, device, grid, block, shared memory, stream, every argument's bytes),
every pointer check, the hook calls, the errors and every ``utils`` entry point's result must be
equal, and no compiler may have run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from support import TESTS, fake_hip
from test_triton_driver import COMPILERS, triton_unavailable

RUNNER = TESTS / "support" / "triton_hip_driver_run.py"


def _unavailable():
    return triton_unavailable(fake_hip, "the AMD driver")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    reason = _unavailable()
    compiler = os.environ.get("SAFECALL_TEST_TRITON_CC") or shutil.which("cc") or shutil.which("gcc")
    if reason is None and compiler is None:
        reason = "stock Triton's AMD driver needs a C compiler for the reference run"
    if reason is not None:
        if fake_hip.in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("triton_hip_driver")
    stock = _run("stock", tmp / "stock", {"CC": compiler})
    traps = tmp / "traps"
    traps.mkdir()
    log = tmp / "compilers.log"
    for name in COMPILERS:
        trap = traps / name
        trap.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexit 1\n')
        trap.chmod(0o755)
    no_compiler = {"PATH": str(traps)}
    ours = _run("safecall", tmp / "safecall", no_compiler, drop=("CC", "CXX"))
    auto = _run("auto", tmp / "auto", no_compiler, drop=("CC", "CXX"))
    return stock, ours, auto, log, [tmp / "safecall" / "cache", tmp / "auto" / "cache", tmp / "stock" / "cache"]


def _run(mode, dir, env_changes, drop=()):
    dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in drop and k != "SAFECALL_TRITON_DRIVER"}
    # No CUDA driver to be found (even on a machine with one): `install()` without a backend
    # must choose the HIP runtime.
    env.pop("TRITON_LIBCUDA_PATH", None)
    env["SAFECALL_LIBCUDA_PATH"] = str(dir / "no-cuda-driver" / "libcuda.so.1")
    env.update(env_changes, TRITON_CACHE_DIR=str(dir / "cache"), PYTHONPATH=os.pathsep.join(sys.path))
    out = dir / "result.json"
    proc = subprocess.run([sys.executable, str(RUNNER), mode, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{mode} run failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text())


def test_the_runs_used_the_drivers_they_name(runs):
    stock, ours, auto, _, _ = runs
    assert stock["driver"] == "Driver"  # Triton's HIPDriver, made active without torch
    assert ours["driver"] == auto["driver"] == "SafecallHipDriver"


@pytest.mark.parametrize("which", ["safecall", "auto"])
def test_kernel_grid_launches_are_byte_identical(runs, which):
    stock, ours, auto, _, _ = runs
    ours = ours if which == "safecall" else auto
    assert list(ours["cases"]) == list(stock["cases"])
    for case, records in stock["cases"].items():
        assert ours["cases"][case] == records, case
    launches = [r for rs in stock["cases"].values() for r in rs if r["call"] in fake_hip.LAUNCH_CALLS]
    assert len(launches) == 17
    assert max(len(r["args"]) for r in launches) == 47  # 45 arguments and the two scratch pointers
    assert {r["call"] for r in launches} == set(fake_hip.LAUNCH_CALLS)
    # num_ctas=2 on gfx1250: clusters of 2 blocks, the grid's x doubled, 32-wide wavefronts.
    clustered = [r for r in stock["cases"]["num_ctas=2 on gfx1250 (clusters)"] if r["call"] in fake_hip.LAUNCH_CALLS]
    assert [(r["grid"], r["block"], r["cluster"], r["cooperative"]) for r in clustered] == [
        ([8, 1, 1], [128, 1, 1], [2, 1, 1], 0),
        ([6, 2, 1], [128, 1, 1], [2, 1, 1], 1),
    ]
    # TDM descriptors on gfx1250: 48 bytes at rank 2, 80 at rank 3, each followed by its
    # shape and strides.
    tdm = [r for r in stock["cases"]["TDM descriptors on gfx1250"] if r["call"] in fake_hip.LAUNCH_CALLS]
    assert [[len(a) // 2 for a in r["args"]] for r in tdm] == [
        [48, 4, 4, 8, 8, 48, 4, 4, 8, 8, 4, 8, 8],
        [80, 4, 4, 4, 8, 8, 8, 8, 8, 8],
    ]
    # An empty grid launches nothing (its pointers are still checked, as Triton checks them).
    assert {r["call"] for r in stock["cases"]["empty grid"]} == {"hipPointerGetAttribute"}
    assert ours["hook calls"] == stock["hook calls"] and len(stock["hook calls"]) >= 10


@pytest.fixture(scope="module")
def dispatched(runs, tmp_path_factory):
    """The runner with ``install(backend="hip", dispatch=True)``, a ``PATH`` with no compiler."""
    tmp = tmp_path_factory.mktemp("triton_hip_dispatch")
    (tmp / "bin").mkdir()
    return _run("dispatch", tmp / "dispatch", {"PATH": str(tmp / "bin")}, drop=("CC", "CXX"))


def test_the_dispatch_on_amd_launches_what_tritons_run_launches(runs, dispatched):
    """``install(backend="hip", dispatch=True)``: every case twice, the first through Triton's
    ``run`` (misses, recorded), the second from the dispatchers' tables, each launch, pointer
    check and hook call as the driver alone makes them (itself byte-identical to Triton's own
    AMD driver, above); nothing falls back."""
    _, ours, _, _, _ = runs
    cases = {k: v for k, v in ours["cases"].items() if k != "launcher pointer forms"}
    for run in ("cases", "second pass"):
        assert {k: dispatched[run][k] for k in cases} == cases, run
    assert dispatched["hook calls"] == dispatched["second pass hook calls"] == ours["hook calls"]
    stats = dispatched["stats"]
    assert not [k for counts in stats.values() for k in counts if k.startswith("fallback")], stats
    # Each call of the second pass that launched in the first is a hit.
    calls = sum(len(launches) for launches in _second_pass_launches(dispatched))
    assert sum(counts.get("hit", 0) for counts in stats.values()) >= calls


def test_seeded_calls_of_many_argument_kinds_launch_as_with_tritons_amd_driver(runs, dispatched):
    """80 ``kernel[grid](...)`` calls of a kernel of many parameter kinds on gfx942
    (``triton_draws``: 40 new specializations, then 40 calls in the same classes): safecall's
    driver sends what Triton's own AMD driver sends, call by call, and so does the dispatch,
    whose second 40 calls are hits."""
    stock, ours, _, _, _ = runs
    calls = stock["random calls"]
    assert len(calls) == 80 and all(isinstance(c, list) and c for c in calls), calls
    assert ours["random calls"] == calls
    *served, stats = dispatched["random calls"]
    assert served == calls
    assert stats == {"miss": 40, "hit": 40}, stats


def _second_pass_launches(dispatched):
    """Per case of the second pass, its launches (a call that raised in the first pass, never
    recorded, goes through Triton's run again)."""
    return [[r for r in records if r.get("call", "") in fake_hip.LAUNCH_CALLS]
            for records in dispatched["second pass"].values()]


def test_the_dispatch_on_amd_keys_pointers_within_2_gib(dispatched):
    """AMD's ``"S"`` specialization (``knobs.amd.use_buffer_ops`` and a tensor's
    ``ptr_range()`` within 2 GiB, 2^31 - 1 bytes included): with the knob on, tensors within
    and beyond 2 GiB get two kernels, each chosen from the table as Triton's ``run`` chooses it;
    with it off (on the knob, or in the environment alone), one. A ``do_not_specialize``
    pointer's range is never asked, as in Triton."""
    ranges = dispatched["pointer ranges"]
    chosen = ranges["chosen"]
    assert all(same for same, _ in chosen), chosen
    within, beyond, off = chosen[0][1], chosen[1][1], chosen[5][1]
    assert len({within, beyond, off}) == 3
    assert [h for _, h in chosen] == [within, beyond, within, beyond, within] + [off] * 5 + [off] * 2
    stats = dispatched["stats after ranges"]
    before = dispatched["stats"]["add"]
    assert (stats["miss"] - before["miss"], stats["hit"] - before["hit"]) == (3, 9)
    assert ranges["unspecialized"] == ["ok", "ok"] and ranges["unspecialized by Triton"]
    assert ranges["unspecialized stats"] == {"miss": 1, "hit": 1}


def test_the_dispatch_on_amd_serves_autotuned_kernels(dispatched):
    """An autotuned AMD kernel: tuned through Triton's ``Autotuner.run`` on its first call, then
    served by the dispatch's autotune layer, with the pointer checks, launches and best config
    of Triton's own autotuner."""
    tuned = dispatched["autotuned"]
    assert tuned["dispatch"] == tuned["triton"]
    launches = [r for r in tuned["triton"] if r["call"] == "hipModuleLaunchKernel"]
    # Tuning launches each of the two configs once, then the best is launched three times.
    # (64 threads per warp: 4 warps, then 8.)
    assert len(launches) == 5 and [r["block"][0] for r in launches] == [256, 512, 256, 256, 256]
    assert tuned["best"][0] == tuned["best"][1]
    # The first call tunes through Triton's layer; the others are served natively (none falls back).
    assert tuned["tuner stats"] == {"not tuned": 1}


def test_seeded_calls_on_amd_choose_and_launch_as_tritons_run(dispatched):
    """The CUDA dispatch runner's seeded draws of how kernels are called
    (``triton_dispatch_calls``: call shapes, also through ``kernel.run(...)``, with AMD's launch
    options; heuristics layers; autotuned kernels and both nestings with heuristics; a layer's
    ``run`` without ``grid`` or ``warmup``; launch hooks) on gfx942: call by call, Triton's own
    ``run`` methods and the dispatch's two calls choose the same kernel, make the same pointer
    checks and launches, or raise the same error, message included; the heuristics and hooks
    see the same, and the autotuners are left the same."""
    calls = dispatched["seeded calls"]
    for section, n in (("call shapes", 160), ("call shapes through run", 80), ("heuristics forms", 120),
                       ("hook forms", 100)):
        draws = calls[section]
        assert len(draws) == n, section
        for i, (change, (by_triton, first, second)) in enumerate(draws):
            assert first == by_triton and second == by_triton, (section, i, change, by_triton, first, second)
        assert sum(isinstance(o[0][0], int) and bool(o[0][1]) for _, o in draws) >= n // 4, section
    for section, n in (("autotune forms", 60), ("heuristics over autotune", 40)):
        assert len(calls[section]) == n, section
        for i, (spec, by_triton, by_dispatch) in enumerate(calls[section]):
            assert by_dispatch == by_triton, (section, i, spec)
    assert set(calls["runs without grid or warmup"]) == {"jit", "autotuned", "heuristics"}
    for name, (by_triton, by_dispatch) in calls["runs without grid or warmup"].items():
        assert by_dispatch == by_triton, name
        assert all(str(call[0]).startswith("TypeError: JITFunction.run() missing") for call in by_triton[:3]), name
    errors = {str(o[0][0]) for _, o in calls["call shapes"]}
    # AMD's own refusals: a cluster launch gfx942 does not have (`HIPBackend.parse_options`),
    # and a CUDA option the AMD compiler does not know.
    assert "ValueError: num_ctas > 1 not supported on gfx942" in errors, errors
    assert "KeyError: 'Keyword argument maxnreg was specified but unrecognised'" in errors, errors
    for name, stats in calls["call shapes stats"].items():
        assert stats["hit"] >= 20 and stats["fallback: binding"] >= 20, (name, stats)
    for name, stats in calls["hook forms stats"].items():
        assert set(stats) <= {"hit", "miss"} and stats["hit"] >= 40, (name, stats)


def test_errors_are_tritons(runs):
    stock, ours, _, _, _ = runs
    assert ours["errors"] == stock["errors"]
    assert stock["errors"]["no data_ptr"] == "TypeError: Pointer argument must be either uint64 or have data_ptr method"
    # Host memory (the runtime's hipErrorInvalidValue): a ValueError and no launch. Triton's
    # message formats an argument index it never passes; safecall's leaves it out.
    assert ours["host memory"] == stock["host memory"] == {"outcome": "ValueError", "launches": []}


def test_pointer_arguments_in_every_form_launch_or_fail_as_with_tritons_amd_driver(runs):
    """200 seeded pointer arguments (``triton_fakes.random_pointer``) through the launcher:
    the same error (type and message), launch and pointer-check records as Triton's own AMD
    driver, but for the documented difference of an address outside 0 to 2^64 - 1 (as in
    ``test_triton_driver.py``): safecall's ``OverflowError`` at once, where Triton's error
    depends on the arguments after it; neither launches."""
    import random

    from support.triton_fakes import address_out_of_range, random_pointer

    stock, ours, auto, _, _ = runs
    assert auto["random pointer forms"] == ours["random pointer forms"]
    rng = random.Random(4040)  # the runner's draws, again
    forms = [random_pointer(rng) for _ in range(200)]
    assert len(stock["random pointer forms"]) == len(ours["random pointer forms"]) == 200
    differences = 0
    for form, theirs, mine in zip(forms, stock["random pointer forms"], ours["random pointer forms"]):
        if address_out_of_range(form):
            differences += 1
            assert mine[0].startswith("OverflowError: ") and not mine[1], (form, mine)
            assert theirs[0] != "ok" and not [r for r in theirs[1] if "Launch" in r["call"]], (form, theirs)
        else:
            assert mine == theirs, (form, theirs, mine)
    assert 0 < differences < 100, differences
    assert any(t[0] == "ok" for t in stock["random pointer forms"])


def test_pointer_arguments_in_every_form_choose_and_launch_as_tritons_run_on_amd(runs, dispatched):
    """The same 200 pointer forms through ``kernel[grid](...)``, each called twice: the
    dispatch (a miss, then a hit) launches, checks pointers and fails exactly as Triton's own
    ``run`` does on the same driver (AMD's JIT also reads each pointer's ``ptr_range()`` when it
    has one); again with ``knobs.amd.use_buffer_ops`` off, where the key has no pointer-range
    part but the specializer is still AMD's, in Python."""
    _, ours, _, _, _ = runs
    for key in ("random pointer calls", "random pointer calls, no buffer ops"):
        assert len(dispatched[key]) == len(ours[key]) == 200
        for i, (by_run, by_dispatch) in enumerate(zip(ours[key], dispatched[key])):
            assert by_dispatch == by_run, (key, i, by_run, by_dispatch)
        launched = sum(bool(first[1]) and first[0] == "ok" for first, _ in ours[key])
        assert 10 <= launched <= 180, launched


def test_a_negative_grid_reaches_the_launch_as_tritons_does(runs):
    """Triton's AMD driver.c passes a negative grid dimension as an unsigned int (-1 is
    2^32 - 1) to the runtime; safecall's launch passes the same value, which HIP's rule on the
    threads per dimension (grid x block below 2^32, the runtime computes the work size in 32
    bits) refuses before the runtime is called; the double has no such check, so Triton's
    launch is recorded."""
    stock, ours, _, _, _ = runs
    assert stock["negative grid"] == {"outcome": "ok", "launches": [[[4294967295, 1, 1], [256, 1, 1]]]}
    assert ours["negative grid"] == {
        "outcome": "ValueError: launch: launch of kernel.add: grid (4294967295, 1, 1) with block (256, 1, 1) has "
                   "1099511627520 threads in dimension 0; HIP allows at most 4294967295",
        "launches": [],
    }


def test_every_utils_entry_point_answers_as_tritons(runs):
    stock, ours, _, _, _ = runs
    assert ours["utils"] == stock["utils"]
    assert list(stock["utils"]["get_device_properties"]) == [
        "max_shared_mem", "max_num_regs", "multiprocessor_count", "sm_clock_rate", "mem_clock_rate",
        "mem_bus_width", "arch", "warpSize", "max_threads_per_sm", "cooperativeLaunch",
    ]
    assert stock["utils"]["get_device_properties 7"] == "RuntimeError: Triton Error [HIP]:  Code: 101, Messsage: invalid device ordinal"
    assert stock["utils"]["get_current_target"] == "GPUTarget(backend='hip', arch='gfx942', warp_size=64)"


def test_no_compiler_ran(runs):
    _, _, _, log, caches = runs
    assert not log.exists(), f"a compiler ran: {log.read_text()}"
    *ours, stock = caches
    for cache in ours:
        built = [p.name for p in cache.rglob("*.so")]
        assert built == [], f"Triton built native modules: {built}"
    # The reference run did build Triton's driver with the compiler.
    assert [p.name.split(".")[0] for p in stock.rglob("*.so")] == ["hip_utils"]


def test_the_amd_driver_needs_triton_3_9():
    from safecall._triton_driver import check_triton_version
    from safecall.triton import TritonVersionError

    check_triton_version("3.9.0", "hip")
    with pytest.raises(TritonVersionError, match=r"the safecall AMD driver serves Triton 3\.9 \("):
        check_triton_version("3.8.0", "hip")


def test_install_refuses_what_it_does_not_serve(tmp_path):
    """An unknown backend is a clear error, before anything is set."""
    code = (
        "import safecall.triton, triton\n"
        "for kw in ({'backend': 'rocm'},):\n"
        "    try:\n"
        "        safecall.triton.install(**kw)\n"
        "    except ValueError as e:\n"
        "        print(e)\n"
        "print(triton.runtime.driver._active)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "safecall.triton.install(): backend 'rocm'; expected 'cuda' or 'hip'",
        "None",
    ]


@pytest.mark.parametrize("hip,expected", [("6.4.43482", "hip"), (None, "cuda")])
def test_with_torch_imported_the_backend_is_torchs(monkeypatch, hip, expected):
    """As Triton chooses its driver: a ROCm build of torch (``torch.version.hip`` set) means
    AMD, any other means CUDA; nothing is loaded or initialised to decide."""
    import types

    from safecall._triton_driver import _choose_backend

    torch = types.SimpleNamespace(version=types.SimpleNamespace(hip=hip))
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert _choose_backend() == expected


def test_triton_default_backend_selects_the_driver(monkeypatch):
    """``TRITON_DEFAULT_BACKEND`` decides first, as in Triton's ``_create_driver``."""
    from safecall._triton_driver import _choose_backend

    monkeypatch.setitem(sys.modules, "torch", None)
    for name, expected in (("amd", "hip"), ("nvidia", "cuda")):
        monkeypatch.setenv("TRITON_DEFAULT_BACKEND", name)
        assert _choose_backend() == expected


def _hip_run(code, tmp_path, **env_changes):
    """``code`` in a fresh process with the HIP double as the runtime (``fake``), triton
    installed, the environment changed by ``env_changes``: the finished process."""
    reason = _unavailable()
    if reason is not None:
        if fake_hip.in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    prelude = (
        "import os, ctypes\n"
        "from support import fake_hip\n"
        "fake = fake_hip.load()\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TRITON_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("SAFECALL_TRITON_DRIVER", None)
    env.pop("TRITON_DEFAULT_BACKEND", None)
    env.pop("AMDGCN_USE_BUFFER_OPS", None)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=600, env=env)


def _hip_python(code, tmp_path):
    """:func:`_hip_run`'s standard output lines, the process having succeeded."""
    out = _hip_run(code, tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_a_hip_runtime_older_than_6_is_refused_as_triton_refuses_it(tmp_path):
    lines = _hip_python(
        "fake.safecall_fake_hip_set_driver_version(50731921)\n"
        "from safecall._triton_hip import HipUtils\n"
        "try:\n"
        "    HipUtils().get_device_properties(0)\n"
        "except RuntimeError as e:\n"
        "    print(e)\n",
        tmp_path,
    )
    assert lines == ["libamdhip64 version 5.7.31921 is not supported! Required major version is >=6."]


def test_a_cooperative_kernel_needs_a_device_that_supports_it(tmp_path):
    """As Triton's ``HIPLauncher``: an ``AssertionError`` when the launcher is made."""
    lines = _hip_python(
        "import safecall.triton\n"
        "driver = safecall.triton.install(backend='hip')\n"
        "props = driver.utils.get_device_properties\n"
        "driver.utils.get_device_properties = lambda d: dict(props(d), cooperativeLaunch=0)\n"
        "from support.triton_hip import CASES, _kernels\n"
        "case = CASES['cooperative grid']\n"
        "kernel = case.compile(_kernels())\n"
        "try:\n"
        "    driver.launcher_cls(case.source(_kernels()), kernel.metadata)\n"
        "except AssertionError as e:\n"
        "    print('AssertionError:', e)\n",
        tmp_path,
    )
    assert lines[-1] == "AssertionError: Cooperative launch requested but not supported by device"


def test_the_start_up_hook_installs_the_amd_driver_and_the_dispatch(tmp_path):
    """``SAFECALL_TRITON_DRIVER=dispatch`` on an AMD machine (no CUDA driver, the HIP double as
    the runtime): the start-up hook installs the AMD driver and the dispatch, silently."""
    out = _hip_run(
        "import safecall._triton_hook\n"
        "import triton\n"
        "from triton.runtime.jit import JITFunction\n"
        "print(type(triton.runtime.driver.active).__name__)\n"
        "import inspect\n"
        "print(type(inspect.getattr_static(JITFunction, '__getitem__')).__name__)\n",
        tmp_path,
        SAFECALL_TRITON_DRIVER="dispatch",
        SAFECALL_LIBCUDA_PATH=str(tmp_path / "none" / "libcuda.so.1"),
        # For the wheel's `.pth` hook too, which runs before the code.
        SAFECALL_LIBAMDHIP64_PATH=str(fake_hip.PATH),
    )
    assert out.returncode == 0, out.stderr
    # The installed dispatch's class attribute (its function is named as Triton's method).
    assert out.stdout.splitlines() == ["SafecallHipDriver", "DispatchedMethod"]
    assert "safecall:" not in out.stderr, out.stderr


def test_strict_mode_on_amd_checks_as_safecall_triton_function_does(tmp_path):
    """``install(backend="hip", strict=True)``: each kernel through ``safecall.triton.function``'s
    host function (ROCm tensors of the kernel's dtypes, its messages); the block is
    ``warp_size * num_warps``; the ``hipFunction_t`` ``load_binary`` loaded is launched (the
    code object loaded once), on its device only."""
    lines = _hip_python(
        "import safecall.triton\n"
        "safecall.triton.install(backend='hip', strict=True)\n"
        "import triton\n"
        "from support.triton_fakes import CudaTensor, ElementType\n"
        "from support.triton_hip import _kernels\n"
        "class T:\n"
        "    def __init__(self, address, dtype, device_id=0):\n"
        "        self.tensor = CudaTensor(address, dtype, (1024,), device_type=10, device_id=device_id)\n"
        "        self.dtype = ElementType(dtype)\n"
        "    def data_ptr(self):\n"
        "        return self.tensor.data_ptr()\n"
        "    def __dlpack__(self, **kw):\n"
        "        return self.tensor.__dlpack__(**kw)\n"
        "    def __dlpack_device__(self):\n"
        "        return self.tensor.__dlpack_device__()\n"
        "add = _kernels()['add']\n"
        "x, y, z = (T(a, 'float32') for a in (0x7F0000001000, 0x7F0000002000, 0x7F0000003000))\n"
        "add[(8,)](x, y, z, 1000, BLOCK=128)\n"
        "launch = [r for r in fake_hip.records(fake) if r['call'] == 'hipModuleLaunchKernel'][-1]\n"
        "print(launch['kernel'], launch['grid'], launch['block'], launch['args'][3])\n"
        "add[(8,)](x, y, z, 1000, BLOCK=128)\n"
        "calls = [r['call'] for r in fake_hip.records(fake)]\n"
        "print(calls.count('hipModuleLoadData'), calls.count('hipModuleLaunchKernel'))\n"
        "compiled = next(iter(add.device_caches[0][0].values()))\n"
        "hooks = triton.knobs.runtime\n"
        "def run(*args):\n"
        "    compiled.run(8, 1, 1, 0, compiled.function, compiled.packed_metadata, None, hooks.launch_enter_hook,\n"
        "                 hooks.launch_exit_hook, *args, 1000, 128)\n"
        "try:\n"
        "    run(T(0x7F0000001000, 'float16'), y, z)\n"
        "except TypeError as e:\n"
        "    print(str(e).splitlines()[0])\n"
        "try:\n"
        "    run(*(T(a, 'float32', device_id=1) for a in (0x7F0000001000, 0x7F0000002000, 0x7F0000003000)))\n"
        "except ValueError as e:\n"
        "    print(str(e).splitlines()[0])\n",
        tmp_path,
    )
    assert lines[-4:] == [
        "add [8, 1, 1] [256, 1, 1] e8030000",
        # Two launches, one load: load_binary's.
        "1 2",
        "add: argument 'x_ptr' (#1): dtype is float16, expected float32",
        "add: argument 'x_ptr' (#1): device is rocm:1, expected rocm:0 (the device the kernel's handle was loaded on)",
    ]


def test_launching_threads_and_a_changing_knob_never_deadlock(tmp_path):
    """The dispatch on AMD from three threads while a fourth keeps rewriting
    ``AMDGCN_USE_BUFFER_OPS`` (the same value in other words): each new text is read again
    through Triton's knob descriptor, which may switch threads, so no lock of the dispatcher's
    may be held across it (one was: this hung within a second)."""
    lines = _hip_python(
        "import sys, threading, time, faulthandler\n"
        "import safecall.triton\n"
        "safecall.triton.install(backend='hip', dispatch=True)\n"
        "from support.triton_hip import _kernels\n"
        "from support.triton_fakes import Float32Pointer as T\n"
        "add = _kernels()['add']\n"
        "x, y, z = T(0x7F0000001000), T(0x7F0000002000), T(0x7F0000003000)\n"
        "fake.safecall_fake_hip_quiet(1)\n"
        "add[(1,)](x, y, z, 10, BLOCK=64)\n"
        "faulthandler.dump_traceback_later(30, exit=True)\n"
        "sys.setswitchinterval(1e-6)\n"
        "stop = []\n"
        "def flip():\n"
        "    i = 0\n"
        "    while not stop:\n"
        "        os.environ['AMDGCN_USE_BUFFER_OPS'] = ['1', 'true', 'on', 'yes'][i % 4]\n"
        "        i += 1\n"
        "def launch():\n"
        "    while not stop:\n"
        "        add[(1,)](x, y, z, 10, BLOCK=64)\n"
        "threads = [threading.Thread(target=flip)] + [threading.Thread(target=launch) for _ in range(3)]\n"
        "for t in threads:\n"
        "    t.start()\n"
        "time.sleep(3)\n"
        "stop.append(True)\n"
        "for t in threads:\n"
        "    t.join()\n"
        "stats = safecall.triton.jit(add).stats()\n"
        "print('done', stats['miss'], stats['hit'] > 100)\n",
        tmp_path,
    )
    assert lines == ["done 1 True"]
