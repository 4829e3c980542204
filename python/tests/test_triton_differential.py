"""safecall launches a Triton kernel exactly as Triton's own launcher does.

Kernels of our own, written in Triton, are compiled for sm_90 on this machine (no GPU, no
torch: Triton's bundled ``ptxas`` writes the cubin). Each is launched twice against the CUDA
driver double (tests/fake_cuda): once by Triton 3.9's own launcher (``CompiledKernel[grid]``,
which Triton builds from its ``driver.c`` with the system C compiler on first use, so this
test needs ``cc``/``gcc`` at run time, and which binds to the double through
``TRITON_LIBCUDA_PATH``), once by a safecall function built from the same cubin and metadata
(``safecall.triton.function``, with its default checks). The two ``cuLaunchKernelEx`` records (context, grid, block, cluster, dynamic
shared memory, stream, launch attributes, and every kernel argument's bytes, cut by the
parameter sizes the double reads from the cubin's ``EIATTR_KPARAM_INFO`` records) must be
equal, and both must match what the ABI table (``safecall.triton.TRITON_ABI``) predicts.
Pointer arguments are CUDA tensors with fake addresses (a DLPack producer with a
``data_ptr()``), so both launchers get the same objects.

Triton takes a kernel's global scratch memory from ``triton.set_allocator``'s allocator, safecall
from the TVM-FFI environment allocator: the test installs one of each, both handing out the
same fake address, and checks both were asked for the same bytes.

Outside CI the test skips with its reason when triton 3.9.0, a C compiler or the double is
missing; with ``CI=true`` each of these is a failure (``cargo xtask test`` installs triton).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
from typing import Any, Dict, List, Optional, Tuple

import pytest

from support import ROOT, fake_cuda
import safecall.triton as sct
from safecall.triton import TRITON_ABI
from support.triton_fakes import (
    DescriptorBase,
    FakeAddressAllocator,
    descriptor_fields,
    cuda_tensors,
    expected_args,
    expected_launch,
    is_descriptor,
    random_strides,
    tma_workaround_clears,
    safecall_args,
    scratch_requests,
)

#: The Triton release the test venv pins (``xtask``).
TRITON_VERSION = "3.9.0"

# Before triton is imported: the driver Triton's launcher links, and its caches, under target/.
os.environ["TRITON_LIBCUDA_PATH"] = str(ROOT / "target" / "triton-libcuda")
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
# `cargo xtask python --installed` runs the suite with no compiler on PATH (what safecall
# itself needs); Triton's own launcher still needs one, and gets it here, for Triton only.
if os.environ.get("SAFECALL_TEST_TRITON_CC"):
    os.environ.setdefault("CC", os.environ["SAFECALL_TEST_TRITON_CC"])


def _unavailable() -> str | None:
    try:
        import triton
    except ImportError:
        return f"triton is not installed (pip install triton=={TRITON_VERSION})"
    if triton.__version__ != TRITON_VERSION:
        return f"triton {triton.__version__} is installed; these facts are for {TRITON_VERSION}"
    if not (os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")):
        return "Triton's launcher needs a C compiler (gcc, clang or $CC) at run time"
    return fake_cuda.missing_reason()


_REASON = _unavailable()
if _REASON is not None:
    if fake_cuda.in_ci():
        raise RuntimeError(f"CI=true: {_REASON}")
    pytest.skip(_REASON, allow_module_level=True)

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from support.triton_kernels import axpy, copy, desc_copy, half_scale, host_desc_copy, matmul, pdl_copy, scalars  # noqa: E402

#: The stream both launchers are given.
STREAM = 0x5000


# ---- kernels (triton_kernels.py) -----------------------------------------------------------


def _descriptor(
    address: int,
    shape: Tuple[int, ...],
    dtype: str,
    block: List[int],
    strides: Optional[List[int]] = None,
    **fields: Any,
) -> Any:
    """Triton's ``TensorDescriptor`` of a CUDA tensor at a fake address (compact strides unless
    given; ``fields``: ``padding``, ``round_f32_to_tf32``)."""
    return TensorDescriptor.from_tensor(DescriptorBase(address, dtype, shape, strides), block, **fields)


# ---- cases --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """A kernel compiled one way and launched with one list of arguments (pointers as ints:
    the test passes CUDA tensors at those addresses)."""

    kernel: Any
    signature: Tuple[Tuple[str, str], ...]
    constants: Tuple[Tuple[str, Any], ...]
    args: Tuple[Any, ...]
    grid: Tuple[int, int, int]
    options: Tuple[Tuple[str, Any], ...] = ()
    #: Arguments Triton specialized as divisible by 16 (``tt.divisibility``).
    divisible: Tuple[int, ...] = ()


COPY_SIG = (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr"))
COPY_ARGS = (0x7F00_0000_1000, 0x7F00_0000_2000, 1000, 128)

SCALARS_SIG = (
    ("out_ptr", "*fp64"),
    ("a", "i8"),
    ("b", "i16"),
    ("c", "i32"),
    ("d", "i64"),
    ("e", "u8"),
    ("f", "u16"),
    ("g", "u32"),
    ("h", "u64"),
    ("x", "fp32"),
    ("y", "fp64"),
    ("flag", "i1"),
)

CASES: Dict[str, Case] = {
    "plain pointers": Case(copy, COPY_SIG, (("BLOCK", 128),), COPY_ARGS, (8, 1, 1)),
    "scalar mix": Case(
        scalars,
        SCALARS_SIG,
        (),
        (0x7F00_0000_3000, -5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**63 - 5, 0.1, -2.5e-300, True),
        (1, 1, 1),
    ),
    "u64 at or above 2^63": Case(
        scalars,
        SCALARS_SIG,
        (),
        (0x7F00_0000_3000, 0, 0, 0, 0, 0, 0, 0, 2**64 - 1, 0.0, 0.0, False),
        (1, 1, 1),
    ),
    "None and 1 specialized": Case(
        axpy,
        (
            ("x_ptr", "*fp32"),
            ("y_ptr", "*fp32"),
            ("bias_ptr", "constexpr"),
            ("n", "i64"),
            ("stride", "constexpr"),
            ("alpha", "fp32"),
            ("BLOCK", "constexpr"),
        ),
        (("bias_ptr", None), ("stride", 1), ("BLOCK", 256)),
        (0x7F00_0000_1000, 0x7F00_0000_2000, None, 2**33, 1, 1.5, 256),
        (5, 2, 3),
    ),
    "num_warps=8, >48 KiB shared": Case(
        matmul,
        (("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp32"), ("K", "i32"))
        + tuple((n, "constexpr") for n in ("BM", "BN", "BK")),
        (("BM", 128), ("BN", 128), ("BK", 64)),
        (0x7F00_0001_0000, 0x7F00_0002_0000, 0x7F00_0003_0000, 512, 128, 128, 64),
        (4, 2, 1),
        (("num_warps", 8), ("num_stages", 3)),
    ),
    "divisibility 16 (aligned pointers, n % 16 == 0)": Case(
        copy, COPY_SIG, (("BLOCK", 128),), (0x7F00_0000_1000, 0x7F00_0000_2000, 1024, 128), (8, 1, 1), (), (0, 1, 2)
    ),
    "PDL": Case(pdl_copy, COPY_SIG, (("BLOCK", 128),), COPY_ARGS, (8, 1, 1), (("launch_pdl", True),)),
    "cooperative grid": Case(
        copy, COPY_SIG, (("BLOCK", 128),), COPY_ARGS, (8, 1, 1), (("launch_cooperative_grid", True),)
    ),
    "num_ctas=2 (cluster + SPREAD)": Case(
        copy, COPY_SIG, (("BLOCK", 128),), COPY_ARGS, (4, 1, 1), (("num_ctas", 2),)
    ),
    "fp16 and bf16 scalars": Case(
        half_scale,
        (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32"), ("h", "fp16"), ("b", "bf16"), ("BLOCK", "constexpr")),
        (("BLOCK", 128),),
        # Values both bf16 conversions agree on (Triton truncates, the IR rounds).
        (0x7F00_0000_1000, 0x7F00_0000_2000, 1000, 0.333251953125, -1.5, 128),
        (8, 1, 1),
    ),
    "host TensorDescriptor (TMA)": Case(
        host_desc_copy,
        (
            ("x_desc", "tensordesc<fp16[64, 64]>"),
            ("y_desc", "tensordesc<fp16[64, 64]>"),
            ("M", "i32"),
            ("BM", "constexpr"),
            ("BN", "constexpr"),
        ),
        (("BM", 64), ("BN", 64)),
        (
            _descriptor(0x7F00_0010_0000, (256, 64), "float16", [64, 64]),
            _descriptor(0x7F00_0020_0000, (256, 64), "float16", [64, 64]),
            256,
            64,
            64,
        ),
        (4, 1, 1),
    ),
    "host TensorDescriptor of a strided bf16 view": Case(
        host_desc_copy,
        (
            ("x_desc", "tensordesc<bf16[32, 16]>"),
            ("y_desc", "tensordesc<bf16[32, 16]>"),
            ("M", "i32"),
            ("BM", "constexpr"),
            ("BN", "constexpr"),
        ),
        (("BM", 32), ("BN", 16)),
        (
            _descriptor(0x7F00_0010_0040, (100, 48), "bfloat16", [32, 16], [64, 1]),
            _descriptor(0x7F00_0020_0000, (100, 48), "bfloat16", [32, 16]),
            100,
            32,
            16,
        ),
        (4, 1, 1),
    ),
    "host TensorDescriptor, padding='nan' and round_f32_to_tf32": Case(
        host_desc_copy,
        (
            ("x_desc", "tensordesc<fp32[32, 32]>"),
            ("y_desc", "tensordesc<fp32[32, 32]>"),
            ("M", "i32"),
            ("BM", "constexpr"),
            ("BN", "constexpr"),
        ),
        (("BM", 32), ("BN", 32)),
        (
            _descriptor(0x7F00_0010_0000, (128, 32), "float32", [32, 32], padding="nan", round_f32_to_tf32=True),
            _descriptor(0x7F00_0020_0000, (128, 32), "float32", [32, 32], padding="nan"),
            128,
            32,
            32,
        ),
        (4, 1, 1),
    ),
    "global scratch (device-side TMA descriptors)": Case(
        desc_copy,
        (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("M", "i32"), ("N", "i32"), ("BM", "constexpr"), ("BN", "constexpr")),
        (("BM", 64), ("BN", 64)),
        (0x7F00_0000_1000, 0x7F00_0001_1000, 256, 64, 64, 64),
        (4, 1, 1),
    ),
}

#: The address the test's allocator hands Triton for global scratch memory.
SCRATCH_ADDRESS = 0x7F00_5C00_0000


class ScratchAllocator:
    """An allocator for ``triton.set_allocator`` that records each request and returns
    :data:`SCRATCH_ADDRESS` (the double never touches memory)."""

    def __init__(self) -> None:
        self.requests: List[Tuple[int, int, Any]] = []

    def __call__(self, size: int, align: int, stream: Any) -> int:
        self.requests.append((size, align, stream))
        return SCRATCH_ADDRESS


@functools.lru_cache(maxsize=None)
def compiled(case_name: str) -> Any:
    case = CASES[case_name]
    attrs = {(i,): [list(TRITON_ABI.divisibility)] for i in case.divisible}
    src = ASTSource(case.kernel, signature=dict(case.signature), constexprs=dict(case.constants), attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(case.options))


# ---- the driver double --------------------------------------------------------------------


ALLOCATOR = ScratchAllocator()


@pytest.fixture(scope="module")
def fake():
    """The double, loaded before Triton's launcher binds to ``libcuda.so.1``."""
    yield from double_for_triton()


def double_for_triton() -> Any:
    """:func:`fake`'s body (also ``test_triton_scalars.py``'s): the double, Triton's utils
    answering for its devices, the scratch allocator set; restored after the ``yield``."""
    double = fake_cuda.load()
    fake_cuda.libcuda_dir(fake_cuda.PATH, ROOT / "target" / "triton-libcuda")
    utils = triton.runtime.driver.active.utils
    device_properties = utils.get_device_properties
    # Triton passes the CUdevice that cuCtxGetDevice returned where it expects an ordinal
    # (the two are equal on NVIDIA's driver; the double numbers devices from 100 on purpose).
    utils.get_device_properties = lambda device: device_properties(device - fake_cuda.DEVICE_HANDLE_BASE)
    previous_allocator = triton.runtime._allocation._allocator.get()
    triton.set_allocator(ALLOCATOR)
    yield double
    triton.set_allocator(previous_allocator)
    utils.get_device_properties = device_properties


# ---- what both sides must show ------------------------------------------------------------


def describe(theirs: Dict[str, Any], ours: Dict[str, Any]) -> str:
    keys = sorted(set(theirs) | set(ours))
    rows = [f"  {k}: triton {theirs.get(k)!r} / safecall {ours.get(k)!r}" for k in keys if theirs.get(k) != ours.get(k)]
    return "launch records differ:\n" + "\n".join(rows)


@pytest.mark.parametrize("case_name", list(CASES))
def test_safecall_launches_like_tritons_own_launcher(fake, case_name):
    import tvm_ffi

    case = CASES[case_name]
    kernel = compiled(case_name)
    signature = dict(case.signature)
    args = cuda_tensors(signature, case.args)

    fake.safecall_fake_cuda_reset()
    ALLOCATOR.requests.clear()
    kernel[case.grid](*args, stream=STREAM)
    [theirs] = fake_cuda.launches(fake)
    their_encodes = _encodes(fake)
    descriptors = sum(is_descriptor(t) for t in signature.values())
    assert len(their_encodes) == descriptors, "Triton encodes each descriptor once per launch"
    predicted = expected_launch(kernel, case.grid)
    assert {k: theirs[k] for k in predicted} == predicted, "the ABI table is wrong about Triton"
    scratch = scratch_requests(kernel, case.grid)
    assert ALLOCATOR.requests == [(size, align, STREAM) for size, align in scratch.values()]
    addresses = {name: SCRATCH_ADDRESS for name in scratch}
    packed = expected_args(signature, case.args, addresses)
    # A descriptor's bytes are the driver's (None in the table's prediction).
    assert len(theirs["args"]) == len(packed) and all(
        p is None or p == a for a, p in zip(theirs["args"], packed)
    ), "the ABI table packs arguments unlike Triton"
    assert theirs["stream"] == STREAM and theirs["ctx"] == "primary:0"

    launch = sct.function(kernel, descriptors=descriptor_fields(signature, case.args))
    fake.safecall_fake_cuda_reset()
    # Safecall's scratch comes from the TVM-FFI environment allocator (PyTorch's under torch).
    with FakeAddressAllocator(SCRATCH_ADDRESS) as env, tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), STREAM):
        launch(case.grid, *safecall_args(args))
    [ours] = fake_cuda.launches(fake)
    assert ours == theirs, describe(theirs, ours)
    assert _encodes(fake) == their_encodes, "the descriptors are encoded differently"
    # The same requests as Triton's: bytes of uint8 on the launch device, each freed once.
    assert env.requests == [([size], (1, 8, 1), (2, 0)) for size, _ in scratch.values()]
    assert env.frees == len(scratch)


def _random_descriptor(rng: Any, dtype: str, block: List[int], **fields: Any) -> Any:
    """A ``TensorDescriptor`` drawn from ``rng`` within what Triton's class and TMA accept: a
    16-byte aligned address below 2^48, dims to 2^31 - 1 (the ``i32`` shape argument's
    limit), outer strides multiples of 16 bytes below 2^40 bytes (``cuTensorMapEncodeTiled``'s
    limit), from compact to scattered."""
    elem = {"float16": 2, "bfloat16": 2, "float32": 4}[dtype]
    step, limit = 16 // elem, (1 << 40) // elem
    address = rng.randrange(1 << 12, 1 << 48) & ~15
    shape = [rng.randrange(1, 1 << 31) if rng.random() < 0.25 else rng.randrange(1, 300) for _ in block]
    strides = random_strides(rng, shape, lambda: step, limit, 0.3)
    return _descriptor(address, tuple(shape), dtype, block, strides, **fields)


@contextlib.contextmanager
def _active(monkeypatch: Any, driver: Any) -> Any:
    """``driver`` as Triton's active driver inside the block, the previous one after it."""
    previous = triton.runtime.driver.active
    monkeypatch.setattr(triton.runtime.driver, "_active", driver)
    try:
        yield
    finally:
        monkeypatch.setattr(triton.runtime.driver, "_active", previous)


def _safecall_driver(fake: Any, monkeypatch: Any, kernel: Any) -> Tuple[Any, int]:
    """safecall's installed CUDA driver (not left active) and the handle its own
    ``utils.load_binary`` loaded ``kernel`` as, for calling its launchers as Triton's
    ``CompiledKernel.run`` calls a launcher. safecall's utils take a device ordinal where
    Triton's pass the CUdevice (equal on NVIDIA's driver): the double's handles are made
    ordinals for the load."""
    from safecall._triton_driver import driver_class

    driver = driver_class("cuda")()
    md = kernel.metadata
    with _active(monkeypatch, driver):
        fake.safecall_fake_cuda_ordinal_handles(1)
        try:
            _, function, *_ = driver.utils.load_binary(md.name, kernel.asm["cubin"], md.shared, 0)
        finally:
            fake.safecall_fake_cuda_ordinal_handles(0)
    return driver, function


#: The TMA cases the random test draws descriptors for: (case, dtype, block, each descriptor's
#: fields).
RANDOM_TMA = [
    ("host TensorDescriptor (TMA)", "float16", [64, 64], ({}, {})),
    ("host TensorDescriptor of a strided bf16 view", "bfloat16", [32, 16], ({}, {})),
    (
        "host TensorDescriptor, padding='nan' and round_f32_to_tf32",
        "float32",
        [32, 32],
        ({"padding": "nan", "round_f32_to_tf32": True}, {"padding": "nan"}),
    ),
]


@pytest.mark.parametrize("name,dtype,block,fields", RANDOM_TMA, ids=[c[0] for c in RANDOM_TMA])
def test_random_host_descriptors_launch_like_tritons_own_launcher(fake, monkeypatch, name, dtype, block, fields):
    """Forty launches of a TMA kernel with two descriptors drawn from a fixed seed (dims to
    2^31 - 1, strides to the 40-bit limit, addresses below 2^48): each launch record and each
    ``cuTensorMapEncodeTiled`` record (dims, strides, box, element strides, the enums) of
    safecall's function, and of the installed driver's launcher, equal Triton's launcher's,
    but for one known difference: bit 21 of a
    descriptor that Triton's 32-bit span computation takes for small (and clears) while the
    tensor spans 128 KiB or more, which safecall leaves set (docs/triton.md). The seed draws
    such descriptors; each is checked to differ in that bit only."""
    import random

    import tvm_ffi

    rng = random.Random(40)
    kernel, signature = compiled(name), dict(CASES[name].signature)
    rest = CASES[name].args[2:]
    elem = {"float16": 2, "bfloat16": 2, "float32": 4}[dtype]
    launch = sct.function(kernel, descriptors=descriptor_fields(signature, CASES[name].args))
    ours_driver, function = _safecall_driver(fake, monkeypatch, kernel)
    with _active(monkeypatch, ours_driver):
        launcher = ours_driver.launcher_cls(kernel.src, kernel.metadata)
    wrapped = 0
    for _ in range(40):
        args = cuda_tensors(signature, (*(_random_descriptor(rng, dtype, block, **f) for f in fields), *rest))
        grid = (rng.randrange(1, 9), 1, 1)
        fake.safecall_fake_cuda_reset()
        kernel[grid](*args, stream=STREAM)
        [theirs], their_encodes = fake_cuda.launches(fake), _encodes(fake)
        fake.safecall_fake_cuda_reset()
        with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), STREAM):
            launch(grid, *safecall_args(args))
        [ours] = fake_cuda.launches(fake)
        assert _encodes(fake) == their_encodes, [d.shape for d in args[:2]]
        fake.safecall_fake_cuda_reset()
        with _active(monkeypatch, ours_driver):
            launcher(*grid, STREAM, function, kernel.packed_metadata, None, None, None, *args)
        assert fake_cuda.launches(fake) == [ours]
        assert _encodes(fake) == their_encodes
        # Each descriptor is 5 arguments (the CUtensorMap, then 2 dims and 2 strides).
        expected = dict(theirs, args=list(theirs["args"]))
        for i, d in enumerate(args[:2]):
            if tma_workaround_clears(d.shape, d.strides, elem, 32) != tma_workaround_clears(d.shape, d.strides, elem, None):
                wrapped += 1
                word = bytearray.fromhex(expected["args"][5 * i])
                word[10] ^= 0x20  # bit 21 of the second 64-bit word
                expected["args"][5 * i] = word.hex()
        assert ours == expected, describe(expected, ours)
    assert wrapped > 0, "the seed draws no descriptor where the two span computations disagree"


def _encodes(fake: Any) -> List[Dict[str, Any]]:
    """The ``cuTensorMapEncodeTiled`` records, without where the map was stored."""
    calls = [r for r in fake_cuda.records(fake) if r["call"] == "cuTensorMapEncodeTiled"]
    return [{k: v for k, v in r.items() if k != "map_align"} for r in calls]


def test_the_cases_cover_what_the_issues_ask(fake):
    """Shared memory above the default, more than one CTA, PDL and cooperative flags: each
    case compiles to what its name says (a kernel that compiled differently would make its
    case meaningless)."""
    assert compiled("num_warps=8, >48 KiB shared").metadata.shared > TRITON_ABI.shared_opt_in_above
    assert compiled("num_warps=8, >48 KiB shared").metadata.num_warps == 8
    assert compiled("num_ctas=2 (cluster + SPREAD)").metadata.num_ctas == 2
    assert compiled("PDL").metadata.launch_pdl
    assert compiled("cooperative grid").metadata.launch_cooperative_grid
    assert len(compiled("host TensorDescriptor (TMA)").metadata.tensordesc_meta) == 2
    divisible = sct.from_compiled(compiled("divisibility 16 (aligned pointers, n % 16 == 0)")).divisible
    assert divisible == {"x_ptr", "y_ptr", "n"}
    for name in CASES:
        md = compiled(name).metadata
        scratch = name == "global scratch (device-side TMA descriptors)"
        assert compiled(name).metadata.triton_version == TRITON_VERSION
        assert (md.global_scratch_size > 0, md.profile_scratch_size) == (scratch, 0), name


def test_the_double_reads_tritons_cubins_whole(fake):
    """The driver API gives an image no length: the double finds a cubin's end from its ELF
    headers, and each kernel's parameters from ``EIATTR_KPARAM_INFO`` (the differential's
    argument bytes are cut by those sizes)."""
    import ctypes

    fake.safecall_fake_cuda_reset()
    fake.safecall_fake_cuda_set_user_context(0)
    for name in CASES:
        kernel = compiled(name)
        cubin = kernel.asm["cubin"]
        module, function = ctypes.c_size_t(), ctypes.c_size_t()
        assert fake.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)) == 0, name
        assert fake.cuModuleGetFunction(ctypes.byref(function), module, kernel.metadata.name.encode()) == 0
        assert fake.cuModuleUnload(module) == 0
    loads = [r for r in fake_cuda.records(fake) if r["call"] == "cuModuleLoadData"]
    assert [(r["image"], r["image_len"]) for r in loads] == [("cubin", len(compiled(n).asm["cubin"])) for n in CASES]
