"""``safecall.triton.install()``: stock Triton code, ``kernel[grid](...)``, runs on safecall's
driver with no C compiler, and sends the driver exactly what Triton's own driver sends.

Each side runs ``triton_driver_run.py`` in a process of its own against the CUDA driver double
(device handles numbered as ordinals, as real drivers do), with an empty Triton cache: once
with Triton's own driver (which builds ``driver.c`` with the machine's C compiler), once with
safecall's installed and a ``PATH`` holding only stand-ins for ``cc``, ``gcc``, ``clang``
(and their C++ names) that record any call. Every launch record (kernel, context, grid, block,
cluster, shared memory, stream, launch attributes, every argument's bytes), the scratch
allocator's requests, the hook calls and every ``utils`` entry point's result or error must be
equal, and no compiler may have run.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys

import pytest

from support import ROOT, TESTS, fake_cuda
from support.triton_fakes import tma_workaround_clears

RUNNER = TESTS / "support" / "triton_driver_run.py"
TRITON_VERSION = "3.9.0"
#: The other Tritons, each in a venv of its own: 3.6 (PyTorch 2.11's) is created by `cargo xtask
#: test` and required in CI; 3.7 and 3.8 by `cargo xtask triton-versions`, skipped without them.
OTHER_TRITONS = {v: ROOT / f".venv-triton{v.replace('.', '')}" / "bin" / "python" for v in ("3.6", "3.7", "3.8")}
#: The names Triton's build looks a compiler up by (``CC``, ``clang``, ``gcc``), and their kin.
COMPILERS = ("cc", "gcc", "clang", "c++", "g++", "clang++", "tcc")


def triton_unavailable(double=fake_cuda, tested="the driver"):
    """Why the Triton driver tests cannot run here (None when they can): triton missing or
    another release than ``TRITON_VERSION``, or the runtime ``double`` not built."""
    try:
        import triton
    except ImportError:
        return f"triton is not installed (pip install triton=={TRITON_VERSION})"
    if triton.__version__ != TRITON_VERSION:
        return f"triton {triton.__version__} is installed; {tested} is tested with {TRITON_VERSION}"
    return double.missing_reason()



#: The releases the differential runs on: 3.9 and 3.6 always (CI has both); 3.7 and 3.8 where
#: `cargo xtask triton-versions` made their venvs.
VERSIONS = ["3.9", "3.6"] + [v for v in ("3.7", "3.8") if OTHER_TRITONS[v].exists()]


def release_python(version, tmp):
    """``(python, PYTHONPATH)`` for a runner process of Triton ``version`` (this venv's for
    3.9, else ``OTHER_TRITONS``'), or the test skipped (failed under CI) with the reason."""
    reason = triton_unavailable()
    python = sys.executable
    if reason is None and version != "3.9":
        venv = OTHER_TRITONS[version]
        python = str(venv)
        if not venv.exists():
            reason = f"{venv} is missing (cargo xtask test creates it)"
    if reason is not None:
        if fake_cuda.in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    if python == sys.executable:
        return python, os.pathsep.join(sys.path)
    # The other venv sees safecall (and nothing else of this one) through a directory holding
    # a link to the package, and the tests' helpers.
    import safecall

    (tmp / "pkg").mkdir()
    (tmp / "pkg" / "safecall").symlink_to(pathlib.Path(safecall.__file__).parent)
    return python, os.pathsep.join([str(tmp / "pkg"), str(TESTS)])


@pytest.fixture(scope="module", params=VERSIONS)
def runs(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("triton_driver")
    python, path = release_python(request.param, tmp)
    compiler = os.environ.get("SAFECALL_TEST_TRITON_CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        if fake_cuda.in_ci():
            pytest.fail("stock Triton's driver needs a C compiler for the reference run")
        pytest.skip("stock Triton's driver needs a C compiler for the reference run")
    stock = _run("stock", tmp / "stock", {"CC": compiler}, python=python, path=path)
    traps = tmp / "traps"
    traps.mkdir()
    log = tmp / "compilers.log"
    for name in COMPILERS:
        trap = traps / name
        trap.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexit 1\n')
        trap.chmod(0o755)
    ours = _run("safecall", tmp / "safecall", {"PATH": str(traps)}, drop=("CC", "CXX"), python=python, path=path)
    return stock, ours, log, tmp / "safecall" / "cache"


def _run(mode, dir, env_changes, drop=(), *, python, path):
    dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in drop and k != "SAFECALL_TRITON_DRIVER"}
    env.update(env_changes, TRITON_CACHE_DIR=str(dir / "cache"), PYTHONPATH=path)
    out = dir / "result.json"
    proc = subprocess.run([python, str(RUNNER), mode, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{mode} run failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text())


#: The cases whose launches on Triton 3.6 differ from 3.6's own in one bit of each descriptor:
#: safecall applies 3.7+'s driver workaround (bit 21 of qword 1 cleared for tensors under 128
#: KiB on drivers up to 13010), which 3.6's launcher does not.
BIT21_ON_36 = {"host tensor descriptors", "host descriptors, nan padding"}


def _without_bit21(record):
    """A launch record with bit 21 of qword 1 of each 128-byte argument (a CUtensorMap) cleared."""
    def clear(arg):
        if arg is None or len(arg) != 256:
            return arg
        raw = bytearray(bytes.fromhex(arg))
        raw[8 + 2] &= ~(1 << 5)  # bit 21 of the little-endian qword at byte 8
        return raw.hex()

    return dict(record, args=[clear(a) for a in record["args"]])


def _cases(stock):
    return [k for k in stock if k not in ("utils", "driver", "hook calls", "hook kinds", "launchers", "descriptor errors", "triton", "errors", "errors, safecall's own", "grid errors",
                                   "pointer forms", "pointer checks", "protocol errors", "tier-up", "random scalars",
                                   "random foreign scalars", "random pointer forms", "random pointer forms, general launcher",
                                   "random encodes", "random im2col encodes", "random calls", "packed metadata")]


def test_launch_hooks_of_other_kinds_are_called_as_tritons_launchers_call_them(runs):
    """A ``HookChain`` subclass with a ``__call__`` of its own and an object whose ``calls`` is
    an empty list, in the knobs' place, are called around each launch by both launchers (the
    native one and the general one), as Triton's call them; an empty ``HookChain`` of
    Triton's class does nothing (each launcher skips it) until its ``calls`` is given a new,
    non-empty list."""
    stock, ours, _, _ = runs
    assert ours["hook kinds"] == stock["hook kinds"]
    kinds = stock["hook kinds"]
    assert len(kinds["a HookChain subclass"]) == 4 and len(kinds["an object with calls"]) == 4, kinds
    assert kinds["an empty HookChain"] == []
    assert len(kinds["a HookChain whose calls were replaced"]) == 2, kinds


def test_the_runs_used_the_drivers_they_name(runs):
    stock, ours, _, _ = runs
    assert stock["driver"] == "CudaDriver"
    assert ours["driver"] == "SafecallCudaDriver"
    assert stock["triton"] == ours["triton"]


def test_kernel_grid_launches_are_byte_identical(runs):
    stock, ours, _, _ = runs
    cases = _cases(stock)
    assert len(cases) >= 15
    bit21 = BIT21_ON_36 if stock["triton"].startswith("3.6.") else set()
    for case in cases:
        assert stock[case]["error"] is None, (case, stock[case]["error"])
        if case in bit21:
            assert ours[case] != stock[case], case
            clear = [_without_bit21(r) for r in stock[case]["launches"]]
            assert ours[case]["launches"] == clear, case
            assert ours[case]["error"] is None and ours[case]["scratch"] == stock[case]["scratch"], case
            assert ours[case]["loads"] == stock[case]["loads"], case
        else:
            # The launches, the scratch memory and the binaries loaded: only load_binary's, as
            # with Triton's driver (the host function launches the CUfunction it returned).
            assert ours[case] == stock[case], case
    # Every case but those whose kernel an earlier case compiled loads one binary per kernel.
    assert sum(stock[k]["loads"] for k in cases) >= len(cases) // 2, [stock[k]["loads"] for k in cases]
    assert [k for k in cases if not stock[k]["launches"]] == ["empty grid"]
    # Two calls of each case (the first compiles), the empty grid too, each with its enter hook;
    # the autotuned case launches each of its 3 configs once before the best one twice.
    # The error cases (test_bad_arguments_fail_as_with_tritons_driver) run the enter hook too,
    # as Triton's driver does: each once, except an integer 3.6 refuses (it parses scalars
    # before the hook).
    errors = len(stock["errors"]) + len(stock["errors, safecall's own"])
    assert stock["hook calls"] == 2 * len(cases) + 3 + errors - (1 if stock["triton"] < "3.7" else 0)
    assert ours["hook calls"] == stock["hook calls"]
    tuned = [(l["grid"], l["block"]) for l in stock["autotuned (3 configs, then the best)"]["launches"]]
    assert tuned == [([47, 1, 1], [128, 1, 1]), ([24, 1, 1], [128, 1, 1]), ([12, 1, 1], [256, 1, 1])] + [
        ([24, 1, 1], [128, 1, 1])
    ] * 2


def test_host_descriptors_launch_natively(runs):
    stock, ours, _, _ = runs
    assert ours["launchers"] == {"copy": ["TritonLaunch"], "host_desc_copy": ["TritonLaunch"],
                                 "desc_copy": ["SafecallLauncher"], "tuple_copy": ["SafecallLauncher"]}
    assert set(stock["launchers"]["host_desc_copy"]) != {"TritonLaunch"}


def test_host_descriptors_on_a_target_without_tma_launch_decomposed(runs):
    """A kernel compiled for sm_80 takes each host descriptor as Triton decomposes it: the base
    pointer, the shape and strides as i64, the padding flag (3.7+: and round_f32_to_tf32's),
    then the shape as i32 and the strides as i64 again (the byte-identical launches are
    checked with the other cases)."""
    stock, ours, _, _ = runs
    [launch, again] = ours["host descriptors decomposed (sm_80), nan padding"]["launches"]
    assert again == launch
    flags = 1 if stock["triton"].startswith("3.6.") else 2

    def decomposed(address, shape, strides, nan):
        i64 = [v.to_bytes(8, "little").hex() for v in (*shape, *strides)]
        return ([address.to_bytes(8, "little").hex()] + i64 + ["01" if nan else "00"] + ["00"] * (flags - 1)
                + [v.to_bytes(4, "little").hex() for v in shape] + i64[len(shape):])

    assert launch["args"] == (decomposed(0x7F00_0006_0000, [256, 64], [64, 1], True)
                              + decomposed(0x7F00_0007_0000, [200, 48], [48, 1], False)
                              + [(256).to_bytes(4, "little").hex(), "00" * 8, "00" * 8])


def test_calls_breaking_the_launcher_protocol_are_type_errors(runs):
    stock, ours, _, _ = runs
    for name in ("too few arguments", "a keyword argument"):
        assert stock["protocol errors"][name].startswith("TypeError: "), name
        assert ours["protocol errors"][name].startswith("TypeError: "), name
    at_least = ("TypeError: the launcher takes 9 arguments and at least the kernel's first 3 (its last parameters are "
                "constexprs), got {}")
    exact = "TypeError: the launcher takes 13 arguments (9 and the kernel's 4), got {}"
    expected = at_least if stock["triton"] >= "3.7" else exact
    assert ours["protocol errors"]["too few arguments"] == expected.format(4)
    assert "keyword" in ours["protocol errors"]["a keyword argument"]
    # Triton 3.6's launcher takes the exact count (3.7+'s: the cases of the everyday test).
    counts = [k for k in stock["protocol errors"] if k.startswith("CompiledKernel")]
    assert len(counts) == (3 if stock["triton"] < "3.7" else 0)
    for name in counts:
        assert stock["protocol errors"][name].startswith("TypeError: "), name
        assert ours["protocol errors"][name].startswith("TypeError: "), name
    assert ours["protocol errors"]["a runtime argument left out"] == expected.format(11)
    assert ours["protocol errors"]["host descriptors, trailing constexprs left out"] == (
        None if stock["triton"].startswith("3.7.") else
        "TypeError: the launcher takes 14 arguments (9 and the kernel's 5), got 12")
    # Both launch normally afterwards (the native launcher returns None, as Triton's does).
    assert stock["protocol errors"]["a launch after them"] is None
    assert ours["protocol errors"]["a launch after them"] is None


def test_packed_metadata_other_than_the_kernels_is_refused(runs):
    """Triton's launchers launch with the packed metadata they are given; safecall's host
    functions hold the kernel's, so both of its launchers refuse other values (never a launch
    with the kernel's values in silence) and launch with the kernel's own or an equal tuple."""
    stock, ours, _, _ = runs
    newer = stock["triton"] >= "3.7"
    stock, ours = stock["packed metadata"], ours["packed metadata"]
    for name in ("the kernel's own", "an equal tuple", "the kernel's own, general launcher"):
        assert ours[name] == stock[name] and stock[name]["error"] is None, name
    # A list: 3.7+'s launcher parses any sequence of ints, 3.6's wants a tuple; as safecall's.
    if newer:
        assert ours["an equal list"] == stock["an equal list"] == stock["the kernel's own"]
    else:
        assert stock["an equal list"]["error"] == "TypeError: kernel_metadata must be a tuple"
        assert ours["an equal list"]["error"].startswith("TypeError: kernel `copy`: the packed metadata must be a tuple of 3 ints")
    # Floats equal to the kernel's ints: 3.9's launcher refuses them (`i`), as safecall's.
    assert stock["equal floats"]["error"].startswith("TypeError: ") and stock["equal floats"]["launches"] == []
    assert ours["equal floats"]["error"].startswith("TypeError: kernel `copy`: the packed metadata must be a tuple")
    assert stock["8 warps"]["launches"] == [[[256, 1, 1], 0]], stock
    assert stock["None"]["error"].startswith("TypeError: ")
    for name in ("8 warps", "8 warps, general launcher"):
        assert ours[name]["launches"] == [], name
        assert ours[name]["error"].startswith("ValueError: kernel `"), ours[name]
        assert "safecall's launcher launches with the kernel's own packed metadata (4, 1, " in ours[name]["error"]
    assert ours["None"]["launches"] == []
    assert ours["None"]["error"].startswith("TypeError: kernel `copy`: the packed metadata must be a tuple")


def test_a_kernel_launched_often_gets_optimized_code_and_launches_the_same(runs):
    stock, ours, _, _ = runs
    assert "tier-up" not in stock
    tier_up = ours["tier-up"]
    assert tier_up["tiered up before"] is False
    # Only x86-64 has the baseline tier the launcher starts with (elsewhere Cranelift's code
    # runs from the start).
    assert tier_up["tiered up"] is (platform.machine() in ("x86_64", "AMD64"))
    assert len(tier_up["launch before"]) == 1
    assert tier_up["launch after"] == tier_up["launch before"]
    # The optimized code uses the first tier's caches (device handle, primary context): its
    # launch makes exactly the driver calls of the baseline code's launch.
    assert tier_up["calls after"] == tier_up["calls before"], tier_up
    assert tier_up["calls after"].count("cuLaunchKernelEx") == 1, tier_up


def test_bad_host_descriptors_are_refused_with_their_reason(runs):
    stock, ours = runs[0]["descriptor errors"], runs[1]["descriptor errors"]
    # A base on the CPU launches on both: Triton's launcher reads `base.data_ptr()` unchecked.
    assert stock["base on the CPU"] is None and ours["base on the CPU"] is None
    # The rest both refuse; safecall's messages say what is wrong.
    assert all(stock[case] is not None for case in stock if case != "base on the CPU")
    assert ours["base without data_ptr"] == "AttributeError: 'object' object has no attribute 'data_ptr'"
    assert ours["strides shorter than the shape"] == "ValueError: a TensorDescriptor's shape has 2 dimensions but its strides 1"
    assert ours["rank 6"] == "ValueError: a TensorDescriptor's shape has more than 5 dimensions"
    assert ours["rank 3 for a rank-2 parameter"].startswith("ValueError: launch: argument 'arg0' (#4): ndim is 3, expected 2\n")


def test_bad_arguments_fail_as_with_tritons_driver(runs):
    stock, ours, _, _ = runs
    assert ours["errors"] == stock["errors"]
    # A grid beyond a C int: Triton's OverflowError, before the enter hook (before, safecall's
    # launchers ran the hook, then the host function raised a ValueError).
    assert ours["grid errors"] == stock["grid errors"]
    assert stock["grid errors"]["beyond i32"] == "OverflowError: signed integer is greater than maximum"
    assert stock["grid errors"]["hook calls"] == 0
    assert stock["errors"]["no data_ptr"] == "TypeError: Pointer argument must be either uint64 or have data_ptr method"
    assert stock["errors"]["a negative grid"] is None
    # The host function's own error comes back as the Python exception of its kind.
    assert ours["errors, safecall's own"]["two negative grid entries"].startswith(
        "ValueError: launch: launch of kernel.copy: grid is (-1, -1, 1), but grid[0] must be 1 to 2147483647"
    )


def test_random_scalars_launch_or_fail_as_with_tritons_driver(runs):
    """300 seeded draws of every scalar of the scalar kernel, at and beyond each type's range
    (``triton_fakes.random_scalar``), through each driver's launcher for it: the same argument
    bytes, or the same exception type, each time; both outcomes occur."""
    stock, ours, _, _ = runs
    draws = stock["random scalars"]["draws"]
    assert ours["random scalars"] == stock["random scalars"]
    assert any(isinstance(d, list) and d for d in draws) and any(isinstance(d, str) for d in draws), draws[:5]


def test_scalars_of_other_python_types_launch_or_fail_as_with_tritons_driver(runs):
    """300 seeded launches of a kernel compiled with every integer width, fp32 and fp64, each
    with one scalar of another Python type (``triton_fakes.foreign_scalar``: objects with only
    ``__index__`` or ``__float__``, int and float subclasses, a float for an int, an int for a
    float, a str, ``None``) and the others valid on every release (``valid_scalar``): the
    launcher sends the same bytes as Triton's, or raises the same exception type; both occur."""
    stock, ours, _, _ = runs
    draws = stock["random foreign scalars"]
    mismatched = [i for i, (theirs, mine) in enumerate(zip(draws, ours["random foreign scalars"])) if theirs != mine]
    assert not mismatched, [(i, draws[i], ours["random foreign scalars"][i]) for i in mismatched[:5]]
    assert len(ours["random foreign scalars"]) == len(draws) == 300
    assert any(isinstance(d, list) and d for d in draws) and any(isinstance(d, str) for d in draws), draws[:5]


def test_pointer_arguments_in_every_form_launch_or_fail_as_with_tritons_driver(runs):
    """200 seeded pointer arguments (``triton_fakes.random_pointer``: ints at and beyond the
    64-bit range, int subclasses, bools, ``None``, objects whose ``data_ptr()`` returns ints,
    subclasses, ``__index__``-only objects, floats, ``None`` or a str, or raises, an
    ``AttributeError`` among them; ``__index__``-only objects, floats and strs themselves; a
    ``data_ptr`` that is no method): the same error (type and message), the same launches and
    the same number of the driver's pointer checks as Triton's own driver; a ``data_ptr()``
    that raises is Triton's ``TypeError`` (the original error its cause).

    One documented difference: an address outside 0 to 2^64 - 1 (an int, or what
    ``data_ptr()`` returned) is safecall's ``OverflowError`` at once, launching nothing; Triton's
    ``PyLong_AsUnsignedLongLong`` leaves that error pending and reads on, so that what it
    raises depends on the arguments after it (here the next pointer's ``data_ptr()`` call
    fails under the pending error: a ``TypeError``), and it may check the wrapped address with
    the driver first. Neither launches."""
    import random

    from support.triton_fakes import PointerLike, address_out_of_range, random_pointer

    stock, ours, _, _ = runs
    draws = stock["random pointer forms"]
    # The native launcher and the general one, the same.
    assert ours["random pointer forms, general launcher"] == ours["random pointer forms"]
    mine = ours["random pointer forms"]
    assert len(mine) == len(draws) == 200
    rng = random.Random(4040)  # the runner's draws, again
    forms = [random_pointer(rng) for _ in range(200)]

    differences = 0
    for form, theirs, (outcome, checks) in zip(forms, draws, mine):
        if address_out_of_range(form):
            differences += 1
            assert outcome["error"].startswith("OverflowError: ") and not outcome["launches"] and checks == 0, (form, outcome)
            assert theirs[0]["error"] and not theirs[0]["launches"], (form, theirs)
        else:
            assert [outcome, checks] == theirs, (form, theirs, outcome, checks)
    assert 0 < differences < 100, differences
    raised = [mine[i][0]["error"] for i, f in enumerate(forms) if isinstance(f, PointerLike) and isinstance(f.result, Exception)]
    assert raised and all(e == "TypeError: Pointer argument must be either uint64 or have data_ptr method" for e in raised)
    assert any(d[0]["launches"] for d in draws) and any(d[0]["error"] for d in draws), draws[:3]


def test_seeded_calls_of_many_argument_kinds_launch_as_with_tritons_driver(runs):
    """80 ``kernel[grid](...)`` calls of a kernel of many parameter kinds (``triton_draws``:
    pointer dtypes and alignment, every int width class, floats, bools, None, keywords in any
    order, launch options, grid tuples and functions), 40 new specializations and then 40
    calls in the same classes: the same launches as Triton's own driver, call by call."""
    stock, ours, _, _ = runs
    assert len(stock["random calls"]) == len(ours["random calls"]) == 80
    assert all(isinstance(c, list) and len(c) == 1 for c in stock["random calls"]), stock["random calls"]
    for i, (theirs, mine) in enumerate(zip(stock["random calls"], ours["random calls"])):
        assert mine == theirs, i


def test_random_tma_encodes_answer_as_tritons_utils(runs):
    """200 seeded calls of the tiled encoder (``fill_tma_descriptor_tiled``; 3.6's
    ``fill_tma_descriptor``), inside and outside what it accepts: the same map bytes, or the
    same error and message, each time, but for the deliberate difference of docs/triton.md: on
    3.7+, bit 21 of a map whose tensor Triton's 32-bit span computation takes for small while it
    spans 128 KiB or more is cleared by Triton and kept by safecall (each such map differs in
    that bit only). Both outcomes occur."""
    stock, ours, _, _ = runs
    workaround = not stock["triton"].startswith("3.6.")
    encodes, wrapped = stock["random encodes"], 0
    assert len(ours["random encodes"]) == len(encodes) == 200
    for i, (theirs, mine) in enumerate(zip(encodes, ours["random encodes"])):
        assert mine["tensor"] == theirs["tensor"], i
        shape, strides, elem = theirs["tensor"]
        expected = theirs["result"]
        if workaround and tma_workaround_clears(shape, strides, elem, 32) != tma_workaround_clears(shape, strides, elem, None):
            if isinstance(expected, str) and len(expected) == 256 and ":" not in expected:
                raw = bytearray.fromhex(expected)
                raw[10] ^= 0x20  # bit 21 of the second 64-bit word
                expected, wrapped = raw.hex(), wrapped + 1
        assert mine["result"] == expected, i
    results = [e["result"] for e in encodes]
    assert any(len(r) == 256 and ":" not in r for r in results), results[:3]
    assert any(r.startswith("RuntimeError: ") for r in results), results[:3]
    assert wrapped > 0 or not workaround


def test_random_im2col_encodes_answer_as_tritons_utils(runs):
    """150 seeded calls of the im2col encoder (``fill_tma_descriptor_im2col``, Triton 3.7+),
    inside and outside what it accepts: the same map bytes, or the same error and message, each
    time; both outcomes occur. (Triton 3.6's utils have no im2col encoder; safecall's serve
    one on every release.)"""
    stock, ours, _, _ = runs
    encodes = stock["random im2col encodes"]
    assert len(ours["random im2col encodes"]) == len(encodes) == 150
    if stock["triton"].startswith("3.6."):
        assert all(e.startswith("absent:") for e in encodes)
        return
    for i, (theirs, mine) in enumerate(zip(encodes, ours["random im2col encodes"])):
        assert mine == theirs, i
    assert any(len(e) == 256 and ":" not in e for e in encodes), encodes[:3]
    assert any(e.startswith("RuntimeError: ") for e in encodes), encodes[:3]


def test_every_pointer_form_tritons_driver_takes_launches_the_same(runs):
    stock, ours, _, _ = runs
    assert ours["pointer forms"] == stock["pointer forms"]
    assert all(r["error"] is None and len(r["launches"]) == 1 for r in stock["pointer forms"].values())
    # Triton checks every data_ptr() address with the driver (both pointers); safecall skips
    # the check of a torch tensor on the device, and only of that one.
    assert stock["pointer checks"]["a torch tensor on the device"] == 2
    assert ours["pointer checks"]["a torch tensor on the device"] == 1
    assert ours["pointer checks"]["a torch tensor in host memory the device maps"] == 2


def test_every_utils_entry_point_answers_as_tritons(runs):
    stock, ours, _, _ = runs
    # Triton 3.6's utils have 5 of 3.9's entry points; safecall's serve all of them.
    served = {k: v for k, v in stock["utils"].items() if not str(v).startswith("absent:")}
    assert {k: ours["utils"][k] for k in served} == served
    assert len(served) == {"3.6": 11, "3.7": 14, "3.8": 20, "3.9": 21}[stock["triton"][:3]]
    assert sorted(stock["utils"]["get_device_properties"]) == [
        "max_num_regs", "max_shared_mem", "mem_bus_width", "mem_clock_rate", "multiprocessor_count",
        "sm_clock_rate", "warpSize",
    ]
    assert stock["utils"]["fill_tma_descriptor_tiled rank mismatch"] == "RuntimeError: Rank mismatch"
    assert stock["utils"]["load_binary unknown kernel"] == "RuntimeError: Triton Error [CUDA]: named symbol not found"


def test_no_compiler_ran(runs):
    _, ours, log, cache = runs
    assert not log.exists(), f"a compiler ran: {log.read_text()}"
    built = [p.name for p in cache.rglob("*.so")]
    assert built == [], f"Triton built native modules: {built}"


def test_an_unsupported_triton_is_refused():
    from safecall._triton_driver import check_triton_version
    from safecall.triton import TritonVersionError

    check_triton_version("3.9.0")
    check_triton_version("3.6.0")
    with pytest.raises(TritonVersionError) as e:
        check_triton_version("3.5.1")
    assert str(e.value) == (
        "safecall.triton.install(): Triton 3.5.1 is installed; the safecall driver serves Triton 3.6, 3.7, 3.8 "
        "and 3.9 (the launcher and utils interfaces it is tested against)"
    )


def _python(code, env_changes, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SAFECALL_TRITON_DRIVER"}
    env.update(env_changes, TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(sys.path))
    env["SAFECALL_LIBCUDA_PATH"] = str(fake_cuda.PATH)
    env["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, tmp_path / "libcuda"))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)


def test_installing_after_tritons_own_driver_was_built_is_an_error(tmp_path):
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    code = (
        "import triton, safecall.triton\n"
        "triton.runtime.driver.active\n"
        "try:\n    safecall.triton.install()\nexcept RuntimeError as e:\n    print(e)\n"
    )
    proc = _python(code, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "safecall.triton.install(): Triton's own driver (CudaDriver) was already built in this process; "
        "install safecall's before anything touches triton.runtime.driver.active (or set SAFECALL_TRITON_DRIVER=1)"
    )


def test_install_also_makes_the_default_and_reset_active_safecalls(tmp_path):
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    code = (
        "import safecall.triton, triton\n"
        "d = safecall.triton.install()\n"
        "from triton.runtime.driver import driver\n"
        "driver.reset_active()\n"
        "print(driver.active is d, driver.default is d, safecall.triton.installed(), safecall.triton.install() is d)\n"
        "print(triton.backends.backends['nvidia'].driver.__name__)\n"
    )
    proc = _python(code, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["True True True True", "SafecallCudaDriver"]


def test_the_environment_variable_installs_it_at_start_up(tmp_path):
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    import site

    pth = [p for p in map(pathlib.Path, site.getsitepackages()) if (p / "safecall_triton_driver.pth").exists()]
    if not pth:
        reason = "safecall_triton_driver.pth is not installed (the wheel installs it; `maturin develop` does not)"
        if fake_cuda.in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    code = "import triton\nprint(type(triton.runtime.driver.active).__name__)\n"
    on = _python(code, {"SAFECALL_TRITON_DRIVER": "1", "PATH": str(tmp_path)}, tmp_path)
    assert on.returncode == 0 and on.stdout.strip() == "SafecallCudaDriver", on.stderr
    assert on.stderr == "" or "safecall:" not in on.stderr
    # The installed dispatch's class attribute (its function is named as Triton's method).
    code = ("import inspect\nimport triton\nfrom triton.runtime.jit import JITFunction\n"
            "print(type(inspect.getattr_static(JITFunction, '__getitem__')).__name__)\n")
    dispatch = _python(code, {"SAFECALL_TRITON_DRIVER": "dispatch", "PATH": str(tmp_path)}, tmp_path)
    assert dispatch.returncode == 0 and dispatch.stdout.strip() == "DispatchedMethod", dispatch.stderr
    plain = _python(code, {"SAFECALL_TRITON_DRIVER": "1", "PATH": str(tmp_path)}, tmp_path)
    assert plain.returncode == 0 and plain.stdout.strip() == "function", plain.stderr


def test_without_a_driver_library_the_queries_say_what_is_missing(tmp_path):
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    missing = tmp_path / "no-libcuda.so.1"
    code = (
        "import safecall.triton, triton\n"
        "safecall.triton.install()\n"
        "for query in (triton.runtime.driver.active.get_current_device, triton.runtime.driver.active.utils.get_current_device):\n"
        "    try:\n        query()\n    except RuntimeError as e:\n        print(str(e).split(':')[0] + ': ' + str(e).split(': ')[1].split(':')[0])\n"
    )
    env = dict(os.environ)
    env.update(SAFECALL_LIBCUDA_PATH=str(missing), PYTHONPATH=os.pathsep.join(sys.path), TRITON_CACHE_DIR=str(tmp_path / "c"))
    # No HIP runtime either (an earlier test may have pointed safecall at the HIP double),
    # so that install() chooses the CUDA driver.
    env.pop("SAFECALL_LIBAMDHIP64_PATH", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"safecall's Triton driver: cannot load `{missing}`"] * 2


def test_strict_mode_checks_as_safecall_triton_function_does(tmp_path):
    """``install(strict=True)``: each kernel through ``safecall.triton.function``'s host function
    (its checks and messages, an fp16 that rounds to infinity among them), launching the handle
    ``load_binary`` loaded (the cubin loaded once, as with Triton's driver), on that handle's
    device only."""
    reason = triton_unavailable()
    if reason is not None:
        pytest.skip(reason)
    code = (
        "from support import fake_cuda\n"
        "fake = fake_cuda.load()\n"
        "fake.safecall_fake_cuda_ordinal_handles(1)\n"
        "import safecall.triton\n"
        "safecall.triton.install(strict=True)\n"
        "import triton\n"
        "from support.triton_fakes import DescriptorBase as T\n"
        "from support.triton_kernels import copy\n"
        "x, y = T(0x7F0000001000, 'float32', [1024]), T(0x7F0000002000, 'float32', [1024])\n"
        "copy[(8,)](x, y, 1000, BLOCK=128)\n"
        "launch = [r for r in fake_cuda.records(fake) if r['call'] == 'cuLaunchKernelEx'][-1]\n"
        "print(launch['kernel'], launch['grid'], launch['args'][2])\n"
        "copy[(8,)](x, y, 1000, BLOCK=128)\n"
        "calls = [r['call'] for r in fake_cuda.records(fake)]\n"
        "print(sum(c in ('cuModuleLoadData', 'cuLibraryLoadData') for c in calls), calls.count('cuLaunchKernelEx'))\n"
        "compiled = next(iter(copy.device_caches[0][0].values()))\n"
        "hooks = triton.knobs.runtime\n"
        "def run(x, y):\n"
        "    compiled.run(8, 1, 1, 0, compiled.function, compiled.packed_metadata, None, hooks.launch_enter_hook,\n"
        "                 hooks.launch_exit_hook, x, y, 1000, 128)\n"
        "try:\n"
        "    run(T(0x7F0000001000, 'float16', [1024]), y)\n"
        "except TypeError as e:\n"
        "    print(str(e).splitlines()[0])\n"
        "from support.triton_fakes import CudaTensor\n"
        "x1, y1 = T(0x7F0000001000, 'float32', [1024]), T(0x7F0000002000, 'float32', [1024])\n"
        "x1.tensor, y1.tensor = (CudaTensor(t.data_ptr(), 'float32', [1024], device_id=1) for t in (x1, y1))\n"
        "try:\n"
        "    run(x1, y1)\n"
        "except ValueError as e:\n"
        "    print(str(e).splitlines()[0])\n"
        "from support.triton_kernels import half_annotated\n"
        "try:\n"
        "    half_annotated[(1,)](x, 70000.0, BLOCK=128)\n"
        "except ValueError as e:\n"
        "    print(str(e).splitlines()[0])\n"
    )
    proc = _python(code, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "copy [8, 1, 1] e8030000",
        # Two launches, one load: load_binary's.
        "1 2",
        "copy: argument 'x_ptr' (#1): dtype is float16, expected float32",
        "copy: argument 'x_ptr' (#1): device is cuda:1, expected cuda:0 (the device the kernel's handle was loaded on)",
        # An fp16 scalar that would round to infinity (Triton's own launcher: OverflowError).
        "half_annotated: argument 'h' (#2): 70000.0 is out of range for fp16: it rounds to infinity (the largest finite "
        "fp16 is 65504; Triton's launcher refuses it too)",
    ]


def test_the_fast_call_launcher_releases_what_each_launch_made():
    """The native launcher as Triton calls it (the builtin of ``TritonLaunch.function()``, which
    pyo3 does not count as an entry point): an integer outside its kind's fast range goes
    through the Python rule on every launch, and the rule's result is released each time."""
    import sys

    import safecall
    from safecall._native import TritonLaunch

    fns = safecall.jit("module m;\nfn launch(gx: i64, gy: i64, gz: i64, st: i64, a: i64, "
                       "s1: i64, s2: i64, function: i64) { return; }\n")
    result = 10**15 + 7  # what the rule returns, one object every time

    class NoTensor:
        pass

    launch = TritonLaunch([12], lambda function, key: (fns.addresses["launch"], fns.code), object,
                          NoTensor, "libcuda.so.1", lambda rule, value: result, True, [], False).function()
    assert type(launch).__name__ == "builtin_function_or_method"
    before = sys.getrefcount(result)
    for _ in range(1000):
        assert launch(1, 1, 1, 0, 5, None, None, None, None, -1) is None
    assert sys.getrefcount(result) == before
    with pytest.raises(TypeError, match="takes no keyword arguments"):
        launch(1, 1, 1, 0, 5, None, None, None, None, -1, extra=1)


def test_im2col_corners_must_be_ints_as_tritons_encoder_requires():
    """``fillTMADescriptorIm2col`` takes only ``int``s (``PyLong_Check``) for the corners and
    element strides; the installed driver reads a descriptor's the same way."""
    from safecall._triton_launcher import _ints

    assert _ints([-1, True, 2], "m") == (-1, 1, 2)
    for bad in ([0.0, 1], ["1", 2]):
        with pytest.raises(TypeError, match="^pixelBoxLower elements must be int$"):
            _ints(bad, "pixelBoxLower elements must be int")
