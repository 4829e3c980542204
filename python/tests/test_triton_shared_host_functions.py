"""The installed driver's launchers share a host function between the kernels of one form.

Triton compiles a kernel again for each specialization: pointers 16-byte aligned or not, ints
divisible by 16 or not. Each specialization is a new ``CompiledKernel`` with its own cubin,
``CUfunction`` and launcher, but its launcher would be the same host function: same name,
arguments and metadata but the ``hash``, same parameter table in the cubin. The host function
takes the ``CUfunction`` as an argument, so the launchers of all of them share one
(``safecall._triton_host_function._FORMS``): a new specialization of a launched kernel costs no IR,
verification or JIT. These tests launch two specializations through safecall's driver on the
CUDA driver double (the differential's kernels and set-up) and check that each launches its
own ``CUfunction`` with Triton's launch, through one host function, on the native launcher and
on the general one (a kernel with scratch memory); and that kernels of other metadata or other
names get their own."""

from __future__ import annotations

import platform
import time
from typing import Any, Tuple

import pytest

from support import fake_cuda
from support.triton_fakes import cuda_tensors
from support.triton_kernels import loose_copy
from test_triton_differential import (
    ALLOCATOR, CASES, STREAM, _active, _safecall_driver, compiled, double_for_triton,
)

import triton  # noqa: E402  (after the differential's skip: it needs Triton)
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from safecall import _triton_host_function  # noqa: E402
from safecall.triton import TRITON_ABI  # noqa: E402


@pytest.fixture(scope="module")
def fake():
    """The differential's double, set up as there."""
    yield from double_for_triton()


@pytest.fixture
def forms(monkeypatch):
    """An empty cache of host functions for the test (the process's is left as it was)."""
    fresh: dict = {}
    monkeypatch.setattr(_triton_host_function, "_FORMS", fresh)
    return fresh


def _built(forms: dict) -> list:
    """The host functions in ``forms``."""
    return [shared.built for group in forms.values() for shared in group]


@pytest.fixture
def functions(fake):
    """Launch records that name the ``CUfunction`` launched, during the test."""
    fake.safecall_fake_cuda_record_functions(1)
    yield
    fake.safecall_fake_cuda_record_functions(0)


def _compile(case_name: str, divisible: Tuple[int, ...] = (), **options: Any) -> Any:
    """The case's kernel compiled with Triton's divisibility assumption on ``divisible`` (a
    specialization of its own) and with ``options`` over the case's."""
    case = CASES[case_name]
    attrs = {(i,): [list(TRITON_ABI.divisibility)] for i in divisible}
    src = ASTSource(case.kernel, signature=dict(case.signature), constexprs=dict(case.constants), attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={**dict(case.options), **options})


def _launch(fake: Any, monkeypatch: Any, kernel: Any, case_name: str) -> Tuple[dict, int]:
    """``kernel`` launched with the case's arguments through a launcher of safecall's driver, as
    ``CompiledKernel.run`` calls it: its launch record and the ``CUfunction`` it was loaded as."""
    case = CASES[case_name]
    driver, function = _safecall_driver(fake, monkeypatch, kernel)
    args = cuda_tensors(dict(case.signature), case.args)
    fake.safecall_fake_cuda_reset()
    with _active(monkeypatch, driver):
        launcher = driver.launcher_cls(kernel.src, kernel.metadata)
        launcher(*case.grid, STREAM, function, kernel.packed_metadata, None, None, None, *args)
    [record] = fake_cuda.launches(fake)
    return record, function


@pytest.fixture
def builds(monkeypatch):
    """The names of the kernels whose host function's IR is built, during the test."""
    built: list = []
    launch_module = _triton_host_function.launch_module

    def counted(name: str, *args: Any) -> Any:
        built.append(name)
        return launch_module(name, *args)

    monkeypatch.setattr(_triton_host_function, "launch_module", counted)
    return built


@pytest.mark.parametrize("case_name", ["plain pointers", "global scratch (device-side TMA descriptors)"])
def test_the_specializations_of_a_kernel_share_one_host_function(fake, monkeypatch, forms, functions, builds, case_name):
    """Two specializations (pointers aligned or not), each loaded as its own ``CUfunction``:
    the second launch builds nothing, and each launch is its own kernel's, equal to Triton's
    own launcher's but for the handle each driver loaded."""
    ALLOCATOR.requests.clear()
    loose, aligned = _compile(case_name), _compile(case_name, divisible=(0, 1, 2))
    assert loose.hash != aligned.hash
    first, first_function = _launch(fake, monkeypatch, loose, case_name)
    [shared] = _built(forms)
    second, second_function = _launch(fake, monkeypatch, aligned, case_name)
    assert builds == [loose.name], "the second specialization built a host function"
    assert _built(forms) == [shared]
    assert first_function != second_function
    assert (first["function"], second["function"]) == (first_function, second_function)
    # Triton's own launcher, on the same specialization.
    case = CASES[case_name]
    fake.safecall_fake_cuda_reset()
    aligned[case.grid](*cuda_tensors(dict(case.signature), case.args), stream=STREAM)
    [theirs] = fake_cuda.launches(fake)
    assert {**second, "function": None} == {**theirs, "function": None}


def test_kernels_of_other_metadata_or_names_get_their_own(fake, monkeypatch, forms, builds):
    """Another ``num_warps`` (another block), another launch flag (PDL), or another kernel of
    the same arguments and metadata (another name in the launch and its messages): a host
    function each."""
    case = CASES["plain pointers"]
    other_name = triton.compile(
        ASTSource(loose_copy, signature=dict(case.signature), constexprs=dict(case.constants)),
        target=GPUTarget("cuda", 90, 32),
    )
    _launch(fake, monkeypatch, compiled("plain pointers"), "plain pointers")
    _launch(fake, monkeypatch, _compile("plain pointers", num_warps=8), "plain pointers")
    _launch(fake, monkeypatch, _compile("plain pointers", launch_pdl=True), "plain pointers")
    _launch(fake, monkeypatch, other_name, "plain pointers")
    assert builds == ["copy", "copy", "copy", "loose_copy"] and len(_built(forms)) == 4


def test_a_binary_of_other_parameters_is_not_shared(fake, monkeypatch, forms):
    """The form holds the kernel's parameter table as the cubin declares it: the same kernel,
    name and metadata whose cubin declared other parameters is verified against its own (here
    the tables are made to differ where the sharing reads them, both when the second kernel
    comes: its own, then the first kernel's)."""
    tables = iter(["the second cubin's table", "the first cubin's table"])
    monkeypatch.setattr(_triton_host_function, "kernel_params", lambda format, data, name: next(tables))
    kernel = compiled("plain pointers")
    _launch(fake, monkeypatch, kernel, "plain pointers")
    _launch(fake, monkeypatch, kernel, "plain pointers")
    assert len(_built(forms)) == 2
    assert next(tables, None) is None, "both tables were read"


def test_a_binary_of_unknown_parameters_is_built_for_itself(fake, monkeypatch, forms, functions, builds):
    """Where the binary's table cannot be read, nothing is shared: each kernel's host function
    is built and verified for the kernel alone, launches its own ``CUfunction``, and is not
    kept once its table was found unknown."""
    monkeypatch.setattr(_triton_host_function, "kernel_params", lambda format, data, name: None)
    kernel = compiled("plain pointers")
    launches = [_launch(fake, monkeypatch, kernel, "plain pointers") for _ in range(3)]
    assert builds == ["copy"] * 3
    assert [record["function"] for record, _ in launches] == [function for _, function in launches]
    # The first one's table is read when the second comes: only the first is kept.
    assert len(_built(forms)) == 1


def test_the_tier_up_counts_every_launch_through_the_shared_host_function(fake, monkeypatch, forms):
    """A shared host function's optimized code is asked for after 1 000 launches through it,
    whichever launchers made them: two specializations launched 600 times each (neither alone
    reaching 1 000) switch to it, both (they launch through one host function)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("only x86-64 has the baseline tier the launcher starts with and tiers up from")
    case = CASES["plain pointers"]
    launchers = []
    for kernel in (_compile("plain pointers"), _compile("plain pointers", divisible=(0, 1, 2))):
        driver, function = _safecall_driver(fake, monkeypatch, kernel)
        args = cuda_tensors(dict(case.signature), case.args)
        with _active(monkeypatch, driver):
            launcher = driver.launcher_cls(kernel.src, kernel.metadata)
            launcher(*case.grid, STREAM, function, kernel.packed_metadata, None, None, None, *args)
        launchers.append((driver, launcher, function, kernel, args))
    assert len(_built(forms)) == 1
    natives = [launcher.__self__ for _, launcher, *_ in launchers]
    assert [type(n).__name__ for n in natives] == ["TritonLaunch"] * 2
    fake.safecall_fake_cuda_quiet(1)
    try:
        for driver, launcher, function, kernel, args in launchers:
            with _active(monkeypatch, driver):
                for _ in range(599):
                    launcher(*case.grid, STREAM, function, kernel.packed_metadata, None, None, None, *args)
    finally:
        fake.safecall_fake_cuda_quiet(0)
    deadline = time.monotonic() + 120
    while not natives[0].tiered_up and time.monotonic() < deadline:
        time.sleep(0.005)
    assert [n.tiered_up for n in natives] == [True, True]
