"""Triton 3.9's own AMD launcher on the HIP runtime double (tests/fake_hip): no GPU, no ROCm.

:func:`launch_records` runs this file as a script in a process of its own (Triton's active
driver, its cached runtime path and the HIP launcher module are process-wide), which:

1. compiles each kernel of :data:`CASES` for its target, ``GPUTarget("hip", "gfx942", 64)``
   but for the multi-CTA cases' gfx1250 (Triton links the code object in-process with its
   bundled lld);
2. builds Triton's ``HIPUtils`` (it compiles ``backends/amd/driver.c`` with ``cc`` and
   ``dlopen``s ``TRITON_LIBHIP_PATH``, a link named ``libamdhip64.so`` to the double) and makes a
   ``HIPDriver`` the active driver (without ``GPUDriver.__init__``, which needs torch);
3. loads each code object with Triton's ``utils.load_binary`` and launches it with each of its
   argument sets through Triton's ``HIPLauncher``;
4. writes what the double recorded, per case, with the compiled metadata, as JSON.

    python triton_hip.py OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Tuple

from . import ROOT, TESTS, fake_hip

#: The Triton release these facts are for.
TRITON_VERSION = "3.9.0"
#: ``GPUTarget`` of the double's devices.
TARGET = ("hip", "gfx942", 64)
#: The stream most launches are given.
STREAM = 0x5000


class Tensor:
    """A device tensor at a fake address: what Triton's launcher reads of one (``data_ptr()``,
    which it then checks with ``hipPointerGetAttribute``)."""

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


@dataclasses.dataclass(frozen=True)
class Desc:
    """A host ``TensorDescriptor`` of a ROCm tensor at a fake address (made when launched:
    Triton's class needs Triton): on gfx1250 a TDM descriptor."""

    address: int
    dtype: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    block: Tuple[int, ...]
    padding: str = "zero"

    def base(self) -> Any:
        """The base tensor: ``data_ptr()``, ``dtype`` and DLPack (device ``kDLROCM``)."""
        from .triton_fakes import DescriptorBase

        return DescriptorBase(self.address, self.dtype, self.shape, self.strides, device_type=10)

    def triton(self) -> Any:
        """Triton's ``TensorDescriptor`` of :meth:`base`."""
        from triton.tools.tensor_descriptor import TensorDescriptor

        return TensorDescriptor.from_tensor(self.base(), list(self.block), padding=self.padding)


def triton_args(args: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """A launch's arguments as Triton's launcher takes them (each :class:`Desc` made a
    ``TensorDescriptor``)."""
    return tuple(a.triton() if isinstance(a, Desc) else a for a in args)


@dataclasses.dataclass(frozen=True)
class Launch:
    """One launch: the grid, the stream and every kernel argument (constexprs included, as
    Triton's launcher takes them)."""

    grid: Tuple[int, int, int]
    stream: int
    args: Tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Case:
    """A kernel of ``triton_kernels.py`` (or of :func:`_kernels`), its signature and
    constexprs, and its launches."""

    kernel: str
    signature: Tuple[Tuple[str, str], ...]
    constexprs: Tuple[Tuple[str, Any], ...]
    launches: Tuple[Launch, ...]
    #: ``triton.compile`` options (``num_warps``, ``launch_cooperative_grid``, ...).
    options: Tuple[Tuple[str, Any], ...] = ()
    #: Indices of the parameters compiled as divisible by 16 (``tt.divisibility``).
    divisible: Tuple[int, ...] = ()
    #: The ``GPUTarget`` compiled for (``num_ctas`` above 1 needs an architecture with
    #: clusters: gfx1250, 32-wide wavefronts).
    target: Tuple[str, str, int] = TARGET

    @property
    def num_ctas(self) -> int:
        """The ``num_ctas`` option (1 when not given)."""
        return int(dict(self.options).get("num_ctas", 1))

    def use_target(self, fake: Any) -> None:
        """Makes the double's devices this case's processor, on this thread, until its next
        reset (a code object loads only on its own processor)."""
        fake_hip.set_arch(fake, self.target[1])

    def source(self, kernels: Dict[str, Any]) -> Any:
        """The ``ASTSource`` Triton's JIT would make for these arguments."""
        from triton.compiler import ASTSource

        attrs = {(i,): [["tt.divisibility", 16]] for i in self.divisible}
        return ASTSource(kernels[self.kernel], signature=dict(self.signature), constexprs=dict(self.constexprs), attrs=attrs)

    def compile(self, kernels: Dict[str, Any]) -> Any:
        """The kernel compiled for :attr:`target`."""
        import triton
        from triton.backends.compiler import GPUTarget

        return triton.compile(self.source(kernels), target=GPUTarget(*self.target), options=dict(self.options))


X, Y, OUT = 0x7F00_0000_1000, 0x7F00_0000_2000, 0x7F00_0000_3000
#: The vector add's signature and constexprs (``BLOCK=256``), which several cases share.
ADD_256 = (
    (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr")),
    (("BLOCK", 256),),
)

def random_tdm_launches(seed: int, dtype: str, block: Tuple[int, ...], rest: Tuple[Any, ...], count: int = 25) -> Tuple[Launch, ...]:
    """``count`` launches of a one-descriptor TDM kernel (the descriptor first, then ``rest``)
    with descriptors drawn from ``seed``: what Triton's ``TensorDescriptor`` accepts and its
    launcher passes on unchanged, from small to its limits (16-byte aligned addresses below
    2^48, dims to 2^31 - 1, as the ``i32`` shape argument allows, outer strides multiples of
    16 bytes to 2^48 - 1 elements, as the descriptor's 48-bit fields allow)."""
    import random

    from .triton_fakes import random_strides

    rng = random.Random(seed)
    step = 16 // {"float16": 2, "float32": 4}[dtype]
    launches = []
    for _ in range(count):
        address = rng.randrange(1 << 12, 1 << 48) & ~15
        shape = [rng.randrange(1, 1 << 31) if rng.random() < 0.25 else rng.randrange(1, 300) for _ in block]
        strides = random_strides(rng, shape, lambda: step, 1 << 48, 0.3)
        grid = (rng.randrange(1, 9), 1, 1)
        desc = Desc(address, dtype, tuple(shape), tuple(strides), block)
        launches.append(Launch(grid, rng.choice((0, STREAM)), (desc, *rest)))
    return tuple(launches)


CASES: Dict[str, Case] = {
    "vector add": Case(
        "add",
        *ADD_256,
        (
            Launch((4, 1, 1), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 1000, 256)),
            Launch((1, 1, 1), 0, (X, Y, OUT, 7, 256)),
            Launch((3, 2, 1), STREAM, (Tensor(X + 64), Y, None, -1, 256)),
        ),
    ),
    "scalar mix": Case(
        "scalars",
        (
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
        ),
        (),
        (
            Launch(
                (1, 1, 1),
                STREAM,
                (Tensor(OUT), -5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**63 - 5, 0.1, -2.5e-300, True),
            ),
        ),
    ),
    "num_warps=8, LDS (matmul)": Case(
        "matmul",
        (("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp32"), ("K", "i32"))
        + tuple((n, "constexpr") for n in ("BM", "BN", "BK")),
        (("BM", 64), ("BN", 64), ("BK", 32)),
        (Launch((4, 2, 1), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 512, 64, 64, 32)),),
        (("num_warps", 8), ("num_stages", 2)),
    ),
    "divisibility 16, i64 and 1 specialized": Case(
        "axpy",
        (
            ("x_ptr", "*fp32"),
            ("y_ptr", "*fp32"),
            ("bias_ptr", "*fp32"),
            ("n", "i64"),
            ("stride", "constexpr"),
            ("alpha", "fp32"),
            ("BLOCK", "constexpr"),
        ),
        (("stride", 1), ("BLOCK", 256)),
        (Launch((5, 2, 3), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 2**33, 1, 1.5, 256)),),
        (),
        (0, 1, 2),
    ),
    "cooperative grid": Case(
        "add",
        *ADD_256,
        (Launch((8, 1, 1), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 2000, 256)),),
        (("launch_cooperative_grid", True),),
    ),
    # Clusters of num_ctas blocks: hipDrvLaunchKernelEx with the grid's x times num_ctas.
    "num_ctas=2 (gfx1250 clusters)": Case(
        "add",
        *ADD_256,
        (
            Launch((4, 1, 1), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 1000, 256)),
            Launch((3, 2, 1), 0, (X, Y, OUT, 7, 256)),
        ),
        (("num_ctas", 2),),
        target=("hip", "gfx1250", 32),
    ),
    "num_ctas=4, cooperative (gfx1250)": Case(
        "add",
        *ADD_256,
        (Launch((2, 1, 1), STREAM, (Tensor(X), Tensor(Y), Tensor(OUT), 2000, 256)),),
        (("num_ctas", 4), ("launch_cooperative_grid", True)),
        target=("hip", "gfx1250", 32),
    ),
    # Host descriptors on gfx1250: TDM descriptors (48 bytes at rank 2, 80 at rank 3), each
    # followed by its shape (i32) and strides (i64); Triton's compiler pads their LDS tiles.
    "TDM descriptors, rank 2 (gfx1250)": Case(
        "host_desc_copy",
        (("x_desc", "tensordesc<fp16[64, 64]>"), ("y_desc", "tensordesc<fp16[64, 64]>"), ("M", "i32"))
        + (("BM", "constexpr"), ("BN", "constexpr")),
        (("BM", 64), ("BN", 64)),
        (
            Launch(
                (4, 1, 1),
                STREAM,
                (Desc(X, "float16", (256, 64), (64, 1), (64, 64)), Desc(OUT, "float16", (200, 96), (128, 1), (64, 64), "nan"), 256, 64, 64),
            ),
            Launch((1, 1, 1), 0, (Desc(Y, "float16", (70000, 8), (8, 1), (64, 64)), Desc(OUT, "float16", (64, 64), (64, 1), (64, 64)), 7, 64, 64)),
        ),
        (("num_warps", 4),),
        target=("hip", "gfx1250", 32),
    ),
    "TDM descriptor, rank 3 (gfx1250)": Case(
        "tdm3_copy",
        (("x_desc", "tensordesc<fp32[2, 16, 64]>"), ("out_ptr", "*fp32"), ("B0", "constexpr"), ("B1", "constexpr"), ("B2", "constexpr")),
        (("B0", 2), ("B1", 16), ("B2", 64)),
        (Launch((1, 1, 1), STREAM, (Desc(X, "float32", (3, 20, 64), (2560, 128, 1), (2, 16, 64)), Tensor(OUT), 2, 16, 64)),),
        (("num_warps", 8),),
        target=("hip", "gfx1250", 32),
    ),
    "TDM descriptor, rank 1 (gfx1250)": Case(
        "tdm1_copy",
        (("x_desc", "tensordesc<fp32[256]>"), ("out_ptr", "*fp32"), ("N", "constexpr")),
        (("N", 256),),
        (Launch((1, 1, 1), STREAM, (Desc(X, "float32", (1000,), (1,), (256,)), Tensor(OUT), 256)),),
        (("num_warps", 8),),
        target=("hip", "gfx1250", 32),
    ),
    # The outermost stride above 2^32 (its high 16 bits in group 3).
    "TDM descriptor, rank 5 (gfx1250)": Case(
        "tdm5_copy",
        (("x_desc", "tensordesc<fp16[2, 2, 2, 4, 64]>"), ("out_ptr", "*fp16"), ("N", "constexpr")),
        (("N", 2048),),
        (
            Launch(
                (1, 1, 1),
                STREAM,
                (Desc(X, "float16", (2, 3, 5, 7, 100), (2**40, 3584, 704, 128, 1), (2, 2, 2, 4, 64)), Tensor(OUT), 2048),
            ),
        ),
        (("num_warps", 16),),
        target=("hip", "gfx1250", 32),
    ),
    # Descriptors drawn at random (seeded), one case per rank: the encoder's fields against
    # Triton's own at every size and position of the values.
    "TDM descriptor, random, rank 1 (gfx1250)": Case(
        "tdm1_copy",
        (("x_desc", "tensordesc<fp32[256]>"), ("out_ptr", "*fp32"), ("N", "constexpr")),
        (("N", 256),),
        random_tdm_launches(1, "float32", (256,), (Tensor(OUT), 256)),
        (("num_warps", 8),),
        target=("hip", "gfx1250", 32),
    ),
    "TDM descriptors, random, rank 2 (gfx1250)": Case(
        "host_desc_copy",
        (("x_desc", "tensordesc<fp16[64, 64]>"), ("y_desc", "tensordesc<fp16[64, 64]>"), ("M", "i32"))
        + (("BM", "constexpr"), ("BN", "constexpr")),
        (("BM", 64), ("BN", 64)),
        tuple(
            Launch(a.grid, a.stream, (a.args[0], b.args[0], 7, 64, 64))
            for a, b in zip(random_tdm_launches(2, "float16", (64, 64), ()), random_tdm_launches(22, "float16", (64, 64), ()))
        ),
        (("num_warps", 4),),
        target=("hip", "gfx1250", 32),
    ),
    "TDM descriptor, random, rank 3 (gfx1250)": Case(
        "tdm3_copy",
        (("x_desc", "tensordesc<fp32[2, 16, 64]>"), ("out_ptr", "*fp32"), ("B0", "constexpr"), ("B1", "constexpr"), ("B2", "constexpr")),
        (("B0", 2), ("B1", 16), ("B2", 64)),
        random_tdm_launches(3, "float32", (2, 16, 64), (Tensor(OUT), 2, 16, 64)),
        (("num_warps", 8),),
        target=("hip", "gfx1250", 32),
    ),
    "TDM descriptor, random, rank 5 (gfx1250)": Case(
        "tdm5_copy",
        (("x_desc", "tensordesc<fp16[2, 2, 2, 4, 64]>"), ("out_ptr", "*fp16"), ("N", "constexpr")),
        (("N", 2048),),
        random_tdm_launches(5, "float16", (2, 2, 2, 4, 64), (Tensor(OUT), 2048)),
        (("num_warps", 16),),
        target=("hip", "gfx1250", 32),
    ),
    "fp16 and bf16 scalars": Case(
        "half_scale",
        (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32"), ("h", "fp16"), ("b", "bf16"), ("BLOCK", "constexpr")),
        (("BLOCK", 128),),
        # Values both bf16 conversions agree on (Triton truncates, the IR rounds).
        (Launch((8, 1, 1), 0, (Tensor(X), Tensor(Y), 1000, 0.333251953125, -1.5, 128)),),
    ),
}


#: The cases whose scalars :func:`random_scalar_draws` draws (seeded): each launched through
#: Triton's own launcher in the runner and through safecall's in the test.
RANDOM_SCALAR_CASES = {"scalar mix": 7, "fp16 and bf16 scalars": 8}
#: Draws per case.
RANDOM_SCALAR_DRAWS = 150


def random_scalar_draws(name: str) -> List[Tuple[Any, ...]]:
    """The case's first launch's arguments with every scalar drawn anew
    (``triton_fakes.random_scalar``, seeded by :data:`RANDOM_SCALAR_CASES`), then as many with
    one scalar of another Python type (``triton_fakes.foreign_scalar``) and the others valid:
    the same draws in every process."""
    import random

    from .triton_fakes import foreign_scalar, random_scalar, valid_scalar

    rng = random.Random(RANDOM_SCALAR_CASES[name])
    case = CASES[name]
    args = case.launches[0].args
    draws = [
        tuple(
            a if ty.startswith("*") or ty == "constexpr" else random_scalar(rng, ty)
            for a, (_, ty) in zip(args, case.signature)
        )
        for _ in range(RANDOM_SCALAR_DRAWS)
    ]
    scalars = [i for i, (_, ty) in enumerate(case.signature) if not ty.startswith("*") and ty != "constexpr"]
    for _ in range(RANDOM_SCALAR_DRAWS):
        odd = rng.choice(scalars)
        draws.append(tuple(
            a if ty.startswith("*") or ty == "constexpr" else (foreign_scalar(rng, ty) if i == odd else valid_scalar(rng, ty))
            for i, (a, (_, ty)) in enumerate(zip(args, case.signature))
        ))
    return draws


def launch_outcome(fake: Any, launch: Callable[[], Any]) -> Any:
    """What one launch did: its launch records, or the name of the exception it raised."""
    fake.safecall_fake_hip_reset()
    try:
        launch()
    except Exception as e:  # noqa: BLE001  (the error is the outcome)
        return type(e).__name__
    return fake_hip.launches(fake)


def missing_reason() -> str | None:
    """Why Triton's AMD launcher cannot run on the double here, or None when it can."""
    try:
        import triton
    except ImportError:
        return f"triton is not installed (pip install triton=={TRITON_VERSION})"
    if triton.__version__ != TRITON_VERSION:
        return f"triton {triton.__version__} is installed; these facts are for {TRITON_VERSION}"
    if not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "Triton's launcher needs a C compiler (cc, gcc, clang or $CC) at run time"
    return fake_hip.missing_reason()


def skip_unless_available() -> None:
    """Skips the calling test module when :func:`missing_reason` says why (fails in CI)."""
    import pytest

    reason = missing_reason()
    if reason is not None:
        if fake_hip.in_ci():
            raise RuntimeError(f"CI=true: {reason}")
        pytest.skip(reason, allow_module_level=True)


def launch_records() -> Dict[str, Any]:
    """Runs :data:`CASES` through Triton's own launcher on the double, in a process of its own;
    returns its report: ``setup`` (the records of building the launcher: version query and
    ``hipGetProcAddress`` calls), ``cases`` (per case, ``metadata`` and ``records``) and
    ``wrong_device`` (a launch on device 1 of a function loaded on device 0: Triton's error and
    the records)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
        env.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
        # As `python -m support.triton_hip` from python/tests, where `support` is a package.
        run = subprocess.run([sys.executable, "-m", __name__, out], check=False, env=env, cwd=TESTS, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"the Triton HIP runner failed:\n{run.stdout}\n{run.stderr}")
        with open(out) as f:
            return json.load(f)


# ---- the runner (this module as a script) --------------------------------------------------


def _kernels() -> Dict[str, Any]:
    import triton
    import triton.language as tl
    from .triton_kernels import axpy, half_scale, host_desc_copy, matmul, scalars, tdm1_copy, tdm3_copy, tdm5_copy

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)

    return {
        "add": add,
        "scalars": scalars,
        "matmul": matmul,
        "axpy": axpy,
        "half_scale": half_scale,
        "host_desc_copy": host_desc_copy,
        "tdm1_copy": tdm1_copy,
        "tdm3_copy": tdm3_copy,
        "tdm5_copy": tdm5_copy,
    }


def _activate_hip_driver() -> Any:
    """Triton's ``HIPDriver`` as the active driver, its utils built against the double."""
    import triton
    from triton.backends.amd.driver import HIPDriver, HIPLauncher, HIPUtils

    class Driver(HIPDriver):
        """``HIPDriver`` without ``GPUDriver.__init__`` (torch's device and stream queries):
        the current device is the double's."""

        def __init__(self) -> None:
            self.utils = HIPUtils()
            self.launcher_cls = HIPLauncher

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: int) -> int:
            return 0

    driver = Driver()
    triton.runtime.driver.set_active(driver)
    return driver


def _run(out: str) -> None:
    import ctypes

    fake = fake_hip.load()
    libhip = fake_hip.libhip_dir(fake_hip.PATH, ROOT / "target" / "triton-libhip") / "libamdhip64.so"
    os.environ["TRITON_LIBHIP_PATH"] = str(libhip)
    fake.safecall_fake_hip_reset()

    from triton.backends.amd.driver import HIPLauncher

    driver = _activate_hip_driver()
    report: Dict[str, Any] = {"setup": fake_hip.records(fake), "cases": {}}
    kernels = _kernels()
    for name, case in CASES.items():
        src = case.source(kernels)
        compiled = case.compile(kernels)
        md = compiled.metadata
        fake.safecall_fake_hip_reset()
        case.use_target(fake)
        module, function, *_ = driver.utils.load_binary(md.name, compiled.asm["hsaco"], md.shared, 0)
        launcher = HIPLauncher(src, md)
        for launch in case.launches:
            call = (
                "hipDrvLaunchKernelEx"
                if md.num_ctas > 1
                else "hipModuleLaunchCooperativeKernel"
                if md.launch_cooperative_grid
                else "hipModuleLaunchKernel"
            )
            launcher(*launch.grid, launch.stream, function, compiled.packed_metadata, None, None, None, *triton_args(launch.args))
            assert any(r["call"] == call for r in fake_hip.records(fake)), call
        fields = (
            "name",
            "num_warps",
            "num_ctas",
            "shared",
            "warp_size",
            "global_scratch_size",
            "profile_scratch_size",
            "launch_cooperative_grid",
        )
        report["cases"][name] = {
            "metadata": {f: getattr(md, f) for f in fields},
            "records": fake_hip.records(fake),
        }
        if name in RANDOM_SCALAR_CASES:
            report.setdefault("random scalars", {})[name] = [
                launch_outcome(fake, lambda: launcher(1, 1, 1, STREAM, function, compiled.packed_metadata, None, None, None, *args))
                for args in random_scalar_draws(name)
            ]
        if name == "vector add":
            fake.safecall_fake_hip_reset()
            fake.hipSetDevice(ctypes.c_int(1))
            launch = case.launches[0]
            try:
                launcher(*launch.grid, launch.stream, function, compiled.packed_metadata, None, None, None, *launch.args)
                error = None
            except RuntimeError as e:
                error = str(e)
            report["wrong_device"] = {"error": error, "records": fake_hip.records(fake)}
            fake.safecall_fake_hip_reset()
        driver.utils.unload_module(module)
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    _run(sys.argv[1])
