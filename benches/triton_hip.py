"""Host time per launch from Python of an AMD kernel: ``safecall.triton.function`` against
Triton 3.9's own AMD launcher (``HIPLauncher``, its ``driver.c`` built with ``cc``), side by
side in one process, on the HIP runtime double (tests/fake_hip) in benchmark mode (its entry
points do next to nothing; figures are host time only, no GPU).

The kernel is a vector add compiled for gfx942 (Triton links the code object in-process; no
ROCm needed). Triton's side is one ``HIPLauncher`` call (what ``CompiledKernel.run`` makes per
launch after the JIT layer) with objects that have ``data_ptr()`` (what it reads from a
``torch.Tensor``, each checked with ``hipPointerGetAttribute``) and with plain int addresses
(no checks at all); safecall's installed AMD driver's launcher (``safecall.triton.install(
backend="hip")``'s ``launcher_cls``, the native launcher over a generated host function) is
called exactly as Triton's, with the same objects; ``safecall.triton.function``'s is
``launch(grid, x, y, out, n, BLOCK)`` with ``tvm_ffi.Tensor`` arguments (dtype, device,
alignment and shape checked in generated code). A row times Triton's
``CompiledKernel[grid](...)`` (its per-launch Python layer above the launcher); the last two
the JIT layer above that: ``kernel[grid](...)`` through Triton's ``run`` on its own driver,
and through safecall's dispatch (``safecall.triton.jit``) on safecall's.

Run it from the repository root with a release build of the package (the script builds the
double in release mode, as ``benches/triton_driver.py`` does for CUDA: its entry points then
cost next to nothing, as a runtime's do; ``--debug-double`` uses the one ``cargo test`` builds)::

    cd python && ../.venv/bin/maturin develop --release && cd ..
    .venv/bin/python benches/triton_hip.py

Each figure is the median of 7 runs of 20000 launches, timed with ``timeit`` (the launch
statement compiled into the timing loop, as a user writes it: no wrapper function per call on
either side).

Target (issue 40): at least 5x less host time per launch than Triton's AMD launcher.
"""

from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import timeit

ROOT = pathlib.Path(__file__).resolve().parents[1]
if "--debug-double" not in sys.argv:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "safecall-fake-hip"], cwd=ROOT, check=True)
    os.environ["SAFECALL_FAKE_HIP_PATH"] = str(ROOT / "target" / "release" / "libsafecall_fake_hip.so")
# The test tree's `support` package (the HIP double, the launcher's cases, CUDA tensors at fake
# addresses), as pytest's `pythonpath` option gives it to the tests.
sys.path.insert(0, str(ROOT / "python" / "tests"))
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from support import fake_hip, triton_hip  # noqa: E402

N, REPEAT = 20000, 7


def per_call_us(stmt: str, namespace: dict, number: int = N, repeat: int = REPEAT) -> float:
    """The median over ``repeat`` runs of ``number`` executions of the statement ``stmt`` (a
    launch, written as its user writes it) with the names of ``namespace``, in microseconds per
    execution. ``timeit`` compiles the statement into its loop, so that what is timed is the
    call itself, not also a wrapper function's frame per call (about 0.02-0.03 us, which both
    sides would pay)."""
    timer = timeit.Timer(stmt, globals=namespace)
    timer.timeit(1)
    return statistics.median(timer.repeat(repeat, number)) / number * 1e6


def main() -> None:
    fake = fake_hip.load()
    libhip = fake_hip.libhip_dir(fake_hip.PATH, ROOT / "target" / "triton-libhip") / "libamdhip64.so"
    os.environ["TRITON_LIBHIP_PATH"] = str(libhip)
    import safecall.triton as sct
    import tvm_ffi
    from triton.backends.amd.driver import HIPLauncher
    from support.triton_fakes import CudaTensor

    driver = triton_hip._activate_hip_driver()
    case = triton_hip.CASES["vector add"]
    kernel = case.compile(triton_hip._kernels())
    md = kernel.metadata
    _, function, *_ = driver.utils.load_binary(md.name, kernel.asm["hsaco"], md.shared, 0)
    launcher = HIPLauncher(case.source(triton_hip._kernels()), md)
    fake.safecall_fake_hip_quiet(1)
    grid, stream = (4, 1, 1), 0
    x, y, out = triton_hip.X, triton_hip.Y, triton_hip.OUT
    ox, oy, oo = triton_hip.Tensor(x), triton_hip.Tensor(y), triton_hip.Tensor(out)
    packed = kernel.packed_metadata
    # Each side called as its user calls it, arguments spelled out (no unpacking in the loop).

    triton_objects = "launcher(4, 1, 1, stream, function, packed, None, None, None, ox, oy, oo, 1000, 256)"

    triton_ints = "launcher(4, 1, 1, stream, function, packed, None, None, None, x, y, out, 1000, 256)"

    # safecall's installed AMD driver: its utils load the same code object; its launcher_cls
    # takes what Triton's takes.
    import triton
    from safecall._triton_driver import driver_class

    ours_driver = driver_class("hip")()
    triton.runtime.driver.set_active(ours_driver)
    _, our_function, *_ = ours_driver.utils.load_binary(md.name, kernel.asm["hsaco"], md.shared, 0)
    our_launcher = ours_driver.launcher_cls(case.source(triton_hip._kernels()), md)
    # The first launch builds the host function from the code object our utils loaded.
    our_launcher(4, 1, 1, stream, our_function, packed, None, None, None, ox, oy, oo, 1000, 256)
    triton.runtime.driver.set_active(driver)

    safecall_objects = "our_launcher(4, 1, 1, stream, our_function, packed, None, None, None, ox, oy, oo, 1000, 256)"

    safecall_ints = "our_launcher(4, 1, 1, stream, our_function, packed, None, None, None, x, y, out, 1000, 256)"

    # The same launch with `tvm_ffi.Tensor`s at the same addresses (rocm:0), whose `data_ptr()`
    # is a C method, as torch's is: the Python frame of `Tensor.data_ptr` is then gone from both
    # launchers (each still checks every pointer with `hipPointerGetAttribute`).
    from safecall.testing import RawTensor

    cx, cy, co = (tvm_ffi.from_dlpack(RawTensor(a, (10, 0), (2, 32, 1), [1000], None, 0)) for a in (x, y, out))

    triton_c_objects = "launcher(4, 1, 1, stream, function, packed, None, None, None, cx, cy, co, 1000, 256)"

    safecall_c_objects = "our_launcher(4, 1, 1, stream, our_function, packed, None, None, None, cx, cy, co, 1000, 256)"

    launch = sct.function(kernel)
    tx, ty, to = (tvm_ffi.from_dlpack(CudaTensor(a, "float32", shape=(1000,), device_type=10)) for a in (x, y, out))

    safecall_call = "launch(grid, tx, ty, to, 1000, 256)"

    # Triton's per-launch path above the launcher: CompiledKernel[grid](...) (launch metadata,
    # hooks), with the stream given (no torch here to ask for the current one).
    runner = kernel[grid]

    triton_compiled_kernel = "runner(ox, oy, oo, 1000, 256, stream=stream)"

    # The JIT layer above the launchers: `kernel[grid](...)` through Triton's own `run` on
    # Triton's driver, and the same call through safecall's dispatch on safecall's driver (each
    # side its own JITFunction of the same kernel, compiled on its first call).
    from support.triton_fakes import ElementType

    stock_jit, our_jit = triton_hip._kernels()["add"], triton_hip._kernels()["add"]
    tx_, ty_, to_ = (triton_hip.Tensor(a) for a in (x, y, out))
    for t in (tx_, ty_, to_):
        t.dtype = ElementType("float32")  # what Triton's JIT reads besides data_ptr()
    triton.runtime.driver.set_active(driver)

    triton_kernel_grid = "stock_jit[(4,)](tx_, ty_, to_, 1000, BLOCK=256)"

    jit_rows = [("Triton kernel[grid](...), data_ptr() objects", per_call_us(triton_kernel_grid, locals()))]
    triton.runtime.driver.set_active(ours_driver)
    dispatched = sct.jit(our_jit)

    safecall_kernel_grid = "dispatched[(4,)](tx_, ty_, to_, 1000, BLOCK=256)"

    jit_rows.append(("safecall.triton.jit(kernel)[grid](...), the same", per_call_us(safecall_kernel_grid, locals())))
    triton.runtime.driver.set_active(driver)

    rows = [
        ("Triton HIPLauncher, data_ptr() objects", per_call_us(triton_objects, locals())),
        ("Triton HIPLauncher, int addresses", per_call_us(triton_ints, locals())),
        ("safecall.triton.function, tvm_ffi.Tensor", per_call_us(safecall_call, locals())),
        ("Triton CompiledKernel[grid](...), data_ptr()", per_call_us(triton_compiled_kernel, locals())),
        ("safecall driver's launcher, data_ptr() objects", per_call_us(safecall_objects, locals())),
        ("safecall driver's launcher, int addresses", per_call_us(safecall_ints, locals())),
        ("Triton HIPLauncher, C data_ptr() (tvm_ffi.Tensor)", per_call_us(triton_c_objects, locals())),
        ("safecall driver's launcher, C data_ptr()", per_call_us(safecall_c_objects, locals())),
    ]
    # Last (the double's devices become gfx1250 for the rest of the run): a gfx1250 kernel with
    # two host TensorDescriptors, passed as TDM descriptors; Triton's launcher makes each with
    # its C `create_tdm_descriptor` per launch, safecall's host function encodes them.
    tdm_rows = _tdm_rows(fake, driver, ours_driver)
    fake.safecall_fake_hip_quiet(0)
    print(f"host time per launch, median of {REPEAT} x {N} calls (HIP double, benchmark mode):")
    for label, us in rows + jit_rows + tdm_rows:
        print(f"  {label:50s} {us:7.2f} us")
    ours = rows[2][1]
    print(
        f"  Triton launcher (data_ptr objects) / safecall.triton.function: {rows[0][1] / ours:.2f}x; (ints): "
        f"{rows[1][1] / ours:.2f}x; CompiledKernel[grid] / safecall: {rows[3][1] / ours:.2f}x"
    )
    print(
        f"  Triton launcher / safecall driver's launcher, same arguments: data_ptr objects "
        f"{rows[0][1] / rows[4][1]:.2f}x; ints {rows[1][1] / rows[5][1]:.2f}x; "
        f"C data_ptr() objects {rows[6][1] / rows[7][1]:.2f}x"
    )
    print(f"  Triton kernel[grid](...) / safecall's dispatch: {jit_rows[0][1] / jit_rows[1][1]:.2f}x")
    print(f"  Triton launcher / safecall driver's launcher, two TDM descriptors: {tdm_rows[0][1] / tdm_rows[1][1]:.2f}x")


def _tdm_rows(fake, driver, ours_driver):
    """Per-launch host time of the TDM case "TDM descriptors, rank 2 (gfx1250)" (two
    descriptors, an ``i32``): Triton's ``HIPLauncher`` and safecall's driver's launcher, called
    with the same ``TensorDescriptor`` objects."""
    import triton
    from triton.backends.amd.driver import HIPLauncher

    case = triton_hip.CASES["TDM descriptors, rank 2 (gfx1250)"]
    case.use_target(fake)
    fake.safecall_fake_hip_quiet(1)
    kernel = case.compile(triton_hip._kernels())
    md, packed = kernel.metadata, kernel.packed_metadata
    src = case.source(triton_hip._kernels())
    args = triton_hip.triton_args(case.launches[0].args)
    _, function, *_ = driver.utils.load_binary(md.name, kernel.asm["hsaco"], md.shared, 0)
    launcher = HIPLauncher(src, md)
    triton.runtime.driver.set_active(ours_driver)
    _, our_function, *_ = ours_driver.utils.load_binary(md.name, kernel.asm["hsaco"], md.shared, 0)
    our_launcher = ours_driver.launcher_cls(src, md)
    our_launcher(4, 1, 1, 0, our_function, packed, None, None, None, *args)

    theirs = "launcher(4, 1, 1, 0, function, packed, None, None, None, *args)"

    ours = "our_launcher(4, 1, 1, 0, our_function, packed, None, None, None, *args)"

    rows = [("Triton HIPLauncher, two TDM descriptors", None), ("safecall driver's launcher, the same", per_call_us(ours, locals()))]
    triton.runtime.driver.set_active(driver)
    rows[0] = (rows[0][0], per_call_us(theirs, locals()))
    return rows


if __name__ == "__main__":
    main()
