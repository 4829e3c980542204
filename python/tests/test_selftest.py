"""``python -m safecall.selftest`` against the CUDA driver test double, so that the self-test
cannot rot between runs on real GPUs: every check runs (none fails, none is skipped), each
launch reaches the driver with the settings the check asked for, and every error message the
self-test provokes is the exact one."""

import collections
import json
import os
import struct
import subprocess
import sys

import pytest

from support import ROOT, fake_cuda


@pytest.fixture(scope="module")
def run_on_double():
    fake = fake_cuda.fresh()
    if os.environ.get("SAFECALL_LIBAMDHIP64_PATH"):
        # An earlier test in this process loaded the HIP double (which the self-test then
        # finds): its state on this thread (a case's GPU architecture) is cleared.
        from support import fake_hip

        fake_hip.fresh()
    from safecall import selftest

    lines = []
    report = selftest.run(echo=lines.append, triton=True)
    return report, fake_cuda.records(fake), lines


def _by_name(report):
    return {r.name: r for r in report.results}


def test_every_check_runs_on_the_double(run_on_double):
    report, _, lines = run_on_double
    assert report.on_double
    statuses = {r.name: r.status for r in report.results}
    assert statuses.pop("jit host function (no GPU)") == "pass"
    assert statuses and all(s == "launched" for s in statuses.values()), "\n".join(lines)
    assert report.failed == []
    assert lines[2].startswith("device 0: safecall fake CUDA device 0, compute capability 9.0, driver 13000")


def _launches(records, kernel):
    return [r for r in records if r["call"] == "cuLaunchKernelEx" and r["kernel"] == kernel]


def test_the_launches_reach_the_driver_as_asked(run_on_double):
    _, records, _ = run_on_double
    counts = collections.Counter(r["kernel"] for r in records if r["call"] == "cuLaunchKernelEx")
    assert counts["add_one"] == 5 + 2  # the sizes, then the allocating function's two
    assert [l["grid"][0] for l in _launches(records, "add_one")[:5]] == [1, 1, 1, 4, 4096]
    coop = _launches(records, "coop_count")
    assert [(l["grid"][0], l["cooperative"]) for l in coop] == [(132, 1), (132 * 64, 1)]
    assert [l["priority"] for l in _launches(records, "fill_u32")] == [-1, 0]
    clusters = [(l["grid"], l["cluster"], l["cluster_policy"]) for l in _launches(records, "cluster_ids")]
    assert clusters == [
        ([4, 2, 1], [2, 1, 1], 0),
        ([4, 4, 2], [2, 2, 1], 1),
        ([8, 2, 2], [4, 1, 2], 2),
        ([32, 1, 1], [16, 1, 1], 0),
    ]
    producer, consumer = _launches(records, "pdl_producer"), _launches(records, "pdl_consumer")
    assert len(producer) == len(consumer) == 3
    assert all(p["pdl"] is None and c["pdl"] == 1 and p["stream"] == c["stream"] != 0 for p, c in zip(producer, consumer))
    (smem,) = _launches(records, "smem_reverse")
    assert smem["shared_mem"] == 227 * 1024 - 4096
    assert len(_launches(records, "tma_tile_copy")) == 6


def test_half_arguments_arrive_as_their_nearest_bits(run_on_double):
    from safecall.selftest import _checks_basic

    _, records, _ = run_on_double
    got = [(l["args"][1], l["args"][2]) for l in _launches(records, "halves")]
    want = [
        (struct.pack("<e", a).hex(), struct.pack("<H", _checks_basic._bf16_bits(b)).hex())
        for a, b in _checks_basic.HALF_CASES
    ]
    assert got == want
    # The reference rounding itself: ties to even, and the largest finite bf16.
    assert _checks_basic._bf16_bits(1.0 + 2**-8) == 0x3F80
    assert _checks_basic._bf16_bits(1.0 + 3 * 2**-8) == 0x3F82
    assert _checks_basic._bf16_bits(-3.3895313892515355e38) == 0xFF7F


def test_tma_descriptors_carry_the_views_and_the_fill(run_on_double):
    _, records, _ = run_on_double
    encodes = [r for r in records if r["call"] == "cuTensorMapEncodeTiled"]
    # The Triton descriptor kernel's two (box 32 x 32, 128-byte swizzle), after the TMA check's.
    triton = [(e["dims"], e["strides"], e["box"], e["swizzle"]) for e in encodes[6:]]
    assert triton == [([200, 100], [800], [32, 32], 3)] * 2
    encodes = encodes[:6]
    assert [(e["dims"], e["strides"], e["oob_fill"]) for e in encodes] == [
        ([72, 40], [288], 0),
        ([36, 20], [576], 0),
        ([60, 29], [288], 0),
        ([72, 40], [288], 1),
        ([36, 20], [576], 1),
        ([60, 29], [288], 1),
    ]
    assert all(e["box"] == [16, 8] for e in encodes)


def test_the_messages_are_exact(run_on_double):
    report, _, _ = run_on_double
    checks = _by_name(report)
    assert checks["driver errors"].detail == (
        "bad image: cannot load device binary 'bad' (cubin, 64 bytes): cuLibraryLoadData returned "
        "CUDA_ERROR_INVALID_IMAGE (error 200: device kernel image is invalid); block of 2048: "
        "big_block: launch of kernels.empty: block is (2048, 1, 1), but block[0] must be 1 to 1024"
    )
    assert checks["cooperative grid"].detail.endswith(
        "8448 blocks: coop_count: launch of kernels.coop_count failed on CUDA device 0 with grid "
        "(8448, 1, 1), block (64, 1, 1), shared_mem 0: cuLaunchKernelEx returned "
        "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (error 720: too many blocks in cooperative launch)"
    )
    assert checks["shared memory opt-in"].detail.endswith(
        "one word more: smem_reverse: launch of kernels.smem_reverse: shared_mem is 228356 bytes, but "
        "CUDA device 0 allows at most 232448 bytes of shared memory per block and the kernel uses "
        "4096 of them statically (at most 228352 dynamic bytes)"
    )


def test_the_command_line_writes_json_and_exits_zero(tmp_path):
    fake_cuda.skip_unless_available()
    out = tmp_path / "selftest.json"
    env = dict(os.environ, SAFECALL_LIBCUDA_PATH=str(fake_cuda.PATH))
    proc = subprocess.run(
        [sys.executable, "-m", "safecall.selftest", "--bench", "--json", str(out)],
        env=env, capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["environment"]["driver_double"] is True
    assert doc["summary"] == proc.stdout.splitlines()[-2]
    checks = [r for r in doc["results"] if not r["name"].startswith("bench:")]
    bench = {r["name"]: r for r in doc["results"] if r["name"].startswith("bench:")}
    assert {r["status"] for r in checks} == {"pass", "launched"}
    assert bench["bench: safecall launch"]["status"] == "launched"
    assert bench["bench: safecall launch"]["figures"]["us_per_launch"] > 0
    # The rows that need a GPU, cuda.bindings or torch say why they did not run.
    assert all(r["status"] in ("launched", "skip") and (r["status"] != "skip" or r["detail"]) for r in bench.values())


def test_without_a_driver_it_says_so_and_exits_zero(tmp_path):
    env = dict(
        os.environ,
        SAFECALL_LIBCUDA_PATH=str(tmp_path / "no-libcuda.so"),
        SAFECALL_LIBAMDHIP64_PATH=str(tmp_path / "no-libamdhip64.so"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "safecall.selftest"], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("jit host function (no GPU)         PASS")
    assert lines[2].startswith(f"no NVIDIA GPU: cannot load the CUDA driver `{tmp_path}/no-libcuda.so`:")
    assert lines[3].startswith(f"no AMD GPU: no HIP runtime: {tmp_path}/no-libamdhip64.so: cannot open shared object file")
    assert lines[3].endswith("; the AMD checks did not run")
    assert lines[4] == "1 checks: 1 passed, 0 launched on the driver double (results not checked), 0 skipped, 0 failed"


def test_the_amd_checks_run_on_the_hip_double(monkeypatch):
    """With a HIP runtime (the double), the AMD example launches from the offload bundle over
    every size, on device 0, 256 threads per block."""
    from support import fake_hip
    from safecall import selftest

    # Set through monkeypatch (fake_hip.load sets it too), so later tests run without it.
    monkeypatch.setenv("SAFECALL_LIBAMDHIP64_PATH", str(fake_hip.PATH))
    hip = fake_hip.fresh()
    lines = []
    report = selftest.run(echo=lines.append, triton=False)
    results = {r.name: r for r in report.results}
    assert results["hip add_one"].status == "launched", "\n".join(lines)
    assert any(line.startswith("HIP runtime ") and "2 device(s)" in line for line in lines)
    records = fake_hip.records(hip)
    (load,) = [r for r in records if r["call"] == "hipModuleLoadData"]
    assert (load["device"], load["image"]) == (0, "offload bundle")
    launches = [r for r in records if r["call"] == "hipModuleLaunchKernel"]
    assert [(r["kernel"], r["grid"], r["block"]) for r in launches] == [
        ("add_one", [-(-n // 256), 1, 1], [256, 1, 1]) for n in (1, 255, 256, 1000, 1 << 20)
    ]


def test_the_triton_kernels_launch_as_triton_would(run_on_double):
    _, records, _ = run_on_double
    shape = {
        k: [(l["grid"], l["block"], l["shared_mem"]) for l in _launches(records, k)]
        for k in ("add_kernel", "softmax_kernel", "matmul_kernel", "desc_copy_kernel")
    }
    assert shape == {
        "add_kernel": [([10, 1, 1], [128, 1, 1], 0)],
        "softmax_kernel": [([64, 1, 1], [128, 1, 1], 16)],
        "matmul_kernel": [([4, 1, 1], [256, 1, 1], 98304)],
        "desc_copy_kernel": [([4, 4, 1], [128, 1, 1], 8200)],
    }
    optins = [r["value"] for r in records if r["call"] == "cuKernelSetAttribute" and r["kernel"] == "matmul_kernel"]
    assert optins == [98304]


def test_the_json_is_written_after_each_check(tmp_path):
    """A check that hangs a GPU must leave the results before it on disk: `run` rewrites the
    JSON after every result, not only at the end."""
    from safecall import selftest

    path = tmp_path / "partial.json"
    seen = []

    def echo(line):
        # A result's line is printed before its JSON is written: the file then holds the
        # results before it.
        if line.split()[-1:] and any(f" {s} " in line for s in ("PASS", "LAUNCHED", "SKIP", "FAIL")):
            seen.append(len(json.loads(path.read_text())["results"]) if path.exists() else 0)

    report = selftest.run(echo=echo, triton=False, json_path=str(path))
    assert len(seen) == len(report.results) > 5
    assert seen == list(range(len(report.results)))
    assert len(json.loads(path.read_text())["results"]) == len(report.results)


def test_on_another_architecture_the_machines_triton_compiles_the_kernels(run_on_double):
    """A device that is not sm_90: the Triton checks compile the same sources with this
    machine's Triton 3.9 for its architecture (here sm_80, on the double) and launch them."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        if fake_cuda.in_ci():
            pytest.fail("triton is not installed")
        pytest.skip("triton is not installed")
    from safecall.selftest import _checks_triton
    from safecall.selftest._context import Context
    from safecall.selftest._driver import Driver
    from safecall.selftest._report import Report

    driver = Driver.load()
    driver.use(0)
    ctx = Context(driver, Report(echo=lambda line: None, on_double=True))
    ctx.capability = (8, 0)
    saved = dict(_checks_triton._FUNCTIONS)
    _checks_triton._FUNCTIONS.clear()
    try:
        fake = fake_cuda.load()
        fake.safecall_fake_cuda_reset()
        driver.use(0)
        _checks_triton.vector_add(ctx)
        (launch,) = [r for r in fake_cuda.records(fake) if r["call"] == "cuLaunchKernelEx"]
        assert (launch["kernel"], launch["grid"], launch["block"]) == ("add_kernel", [10, 1, 1], [128, 1, 1])
        loads = [r for r in fake_cuda.records(fake) if r["call"] == "cuLibraryLoadData"]
        shipped = (_checks_triton.SM90 / "add_kernel.cubin").read_bytes()
        assert loads and loads[-1]["image_len"] != len(shipped)  # an sm_80 cubin, not the shipped one
    finally:
        _checks_triton._FUNCTIONS.clear()
        _checks_triton._FUNCTIONS.update(saved)


def test_lost_tells_a_sticky_error_from_a_reported_one():
    from safecall.selftest._driver import Driver

    class Lib:
        def __init__(self, codes):
            self.codes = list(codes)

        def cuCtxSynchronize(self):
            return self.codes.pop(0)

    for codes, want in (([0], None), ([700, 0], None), ([700, 700], "E700")):
        d = Driver.__new__(Driver)
        d.lib, d.error_text = Lib(codes), lambda code: f"E{code}"
        assert d.lost() == want, codes


def test_a_lost_context_stops_the_remaining_checks(monkeypatch):
    fake_cuda.fresh()
    from safecall import selftest
    from safecall.selftest._driver import Driver

    calls = []

    def lost(self):
        calls.append(1)
        return "CUDA_ERROR_ILLEGAL_ADDRESS (error 700: an illegal memory access was encountered)" if len(calls) == 2 else None

    monkeypatch.setattr(Driver, "lost", lost)
    report = selftest.run(True, echo=lambda line: None, triton=False)
    names = [r.name for r in report.results]
    at = names.index("cuda context")
    assert names[at - 1] == "allocating host function"
    assert report.results[at].status == "fail"
    assert report.results[at].detail == (
        "lost after 'allocating host function': "
        "CUDA_ERROR_ILLEGAL_ADDRESS (error 700: an illegal memory access was encountered)"
    )
    rest = report.results[at + 1 :]
    assert [r.name for r in rest][:2] == ["f16/bf16 arguments", "shared memory opt-in"]
    # The AMD checks run after the CUDA ones, on their own runtime (the HIP double, when an
    # earlier test loaded it: dlopen("libamdhip64.so") finds its soname in the process).
    rest = [r for r in rest if not r.name.startswith("hip ")]
    assert rest[-1].name == "bench"
    assert all(r.status == "skip" and r.detail == "the CUDA context was lost after 'allocating host function'" for r in rest)
    assert not any(r.name.startswith("bench:") for r in report.results)
