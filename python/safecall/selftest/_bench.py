"""``--bench``: host time per launch from Python, side by side in one run, on one kernel
(``empty`` of kernels/add_one.ptx, one thread that does nothing):

- a safecall host function (tvm_ffi's call, the argument checks, ``cuLaunchKernelEx``);
- the same launch through ``cuLaunchKernelEx`` from ``cuda.bindings.driver`` (the floor a
  Python program can reach; it binds to whichever ``libcuda.so.1`` the process loaded, the
  double too);
- Triton's own launcher on an empty Triton kernel (``kernel[(1,)]()``) where Triton is present;
- PyTorch's smallest kernel (``x.fill_(0)`` of one element) where PyTorch is present;

and the GPU time of ``add_one`` over 2^20 floats launched through safecall and through
``cuda.bindings`` (CUDA events): the same kernel, so the same time. Each figure is the median
of 5 rounds of ``LAUNCHES`` launches, the launches queued without synchronizing."""

from __future__ import annotations

import ctypes
import statistics
import time
from typing import Any, Callable, Dict, Optional

from ._checks_basic import _add_one_module
from ._context import Context, ptx
from ._report import FAIL, LAUNCHED, PASS, SKIP, Result

#: Launches per round, and rounds per figure.
LAUNCHES = 20_000
ROUNDS = 5


def _per_launch_us(ctx: Context, launch: Callable[[], Any], sync: Callable[[], None]) -> float:
    launch()
    sync()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            launch()
        rounds.append((time.perf_counter() - start) / LAUNCHES * 1e6)
        sync()
    return round(statistics.median(rounds), 3)


def _row(ctx: Context, name: str, measure: Callable[[], Optional[Dict[str, Any]]]) -> None:
    start = time.perf_counter()
    try:
        figures = measure()
        status = PASS if figures is not None else SKIP
        detail = "" if figures is not None else "not available"
        if figures is not None and "skip" in figures:
            status, detail, figures = SKIP, figures.pop("skip"), {}
    except Exception as e:  # noqa: BLE001  (a broken row is a failure line, not a crash)
        status, detail, figures = FAIL, f"{type(e).__name__}: {e}", {}
    if status == PASS and ctx.on_double:
        status = LAUNCHED
    ctx.report.add(Result(f"bench: {name}", status, detail, figures or {}, round(time.perf_counter() - start, 4)))


class _CudaBindings:
    """The same kernels loaded and launched through ``cuda.bindings.driver``."""

    def __init__(self, ctx: Context):
        from cuda.bindings import driver as cu

        self.cu = cu
        self._ok(cu.cuInit(0))
        dev = self._ok(cu.cuDeviceGet(ctx.device))
        self._ok(cu.cuCtxSetCurrent(self._ok(cu.cuDevicePrimaryCtxRetain(dev))))
        self.module = self._ok(cu.cuModuleLoadData(ptx("add_one") + b"\0"))
        self.empty = self._ok(cu.cuModuleGetFunction(self.module, b"empty"))
        self.add_one = self._ok(cu.cuModuleGetFunction(self.module, b"add_one"))

    def _ok(self, result: Any) -> Any:
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"cuda.bindings: {err}")
        return rest[0] if len(rest) == 1 else (rest or None)

    def config(self, grid: int, block: int) -> Any:
        cfg = self.cu.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block, 1, 1
        cfg.sharedMemBytes = 0
        cfg.hStream = self.cu.CUstream(0)
        cfg.numAttrs = 0
        return cfg

    def launcher(self) -> Callable[[], Any]:
        cfg, fn, launch = self.config(1, 1), self.empty, self.cu.cuLaunchKernelEx
        return lambda: launch(cfg, fn, 0, 0)


def run(ctx: Context) -> None:
    """Adds the benchmark rows to the report. On the driver double, its quiet mode is on while
    they run (no records: each driver call then does next to nothing, as a driver's host side)."""
    if ctx.on_double:
        quiet = ctx.driver.lib.safecall_fake_cuda_quiet
        quiet(1)
        try:
            _rows(ctx)
        finally:
            quiet(0)
    else:
        _rows(ctx)


def _rows(ctx: Context) -> None:
    fns = ctx.jit(_add_one_module())
    one = ctx.zeros(4)
    x = one.tensor("float32", [1])
    sync = ctx.driver.sync

    _row(ctx, "safecall launch", lambda: {"us_per_launch": _per_launch_us(ctx, lambda: fns.empty(x), sync)})

    bindings: Dict[str, Any] = {}

    def floor() -> Optional[Dict[str, Any]]:
        try:
            import cuda.bindings.driver  # noqa: F401
        except ImportError:
            return {"skip": "cuda.bindings is not installed (pip install cuda-bindings)"}
        bindings["cb"] = _CudaBindings(ctx)
        return {"us_per_launch": _per_launch_us(ctx, bindings["cb"].launcher(), sync)}

    _row(ctx, "cuda.bindings launch", floor)
    _row(ctx, "triton launch", lambda: _triton_row(ctx))
    _row(ctx, "torch fill_(0)", lambda: _torch_row(ctx))
    _row(ctx, "gpu time add_one", lambda: _gpu_time_row(ctx, fns, bindings.get("cb")))


def _triton_row(ctx: Context) -> Optional[Dict[str, Any]]:
    if ctx.on_double:
        return {"skip": "Triton's own driver is not pointed at the double here"}
    try:
        import triton
    except ImportError:
        return {"skip": "triton is not installed"}
    if ctx.torch is None:
        return {"skip": "Triton's launcher needs torch for its stream and device here"}

    @triton.jit
    def _empty_kernel():
        pass

    launch = lambda: _empty_kernel[(1,)]()  # noqa: E731
    return {"us_per_launch": _per_launch_us(ctx, launch, ctx.torch.cuda.synchronize), "triton": triton.__version__}


def _torch_row(ctx: Context) -> Optional[Dict[str, Any]]:
    if ctx.torch is None:
        return {"skip": "PyTorch with CUDA is not installed"}
    torch = ctx.torch
    t = torch.zeros(1, device=f"cuda:{ctx.device}")
    return {"us_per_launch": _per_launch_us(ctx, lambda: t.fill_(0.0), torch.cuda.synchronize)}


def _gpu_time_row(ctx: Context, fns: Any, cb: Optional[_CudaBindings]) -> Optional[Dict[str, Any]]:
    if ctx.on_double:
        return {"skip": "the double has no GPU time"}
    if cb is None:
        return {"skip": "needs cuda.bindings for the second launch path"}
    n = 1 << 20
    xs, ys = ctx.zeros(4 * n), ctx.zeros(4 * n)
    xt, yt = xs.tensor("float32", [n]), ys.tensor("float32", [n])
    params = (ctypes.c_uint64 * 2)(xs.ptr, ys.ptr)
    count = ctypes.c_uint32(n)
    ptrs = (ctypes.c_void_p * 3)(ctypes.addressof(params), ctypes.addressof(params) + 8, ctypes.addressof(count))
    cfg, fn = cb.config((n + 255) // 256, 256), cb.add_one
    theirs = lambda: cb.cu.cuLaunchKernelEx(cfg, fn, ctypes.addressof(ptrs), 0)  # noqa: E731
    ours = lambda: fns.add_one(xt, yt)  # noqa: E731
    return {"safecall_us": _event_time_us(ctx, ours), "cuda_bindings_us": _event_time_us(ctx, theirs)}


def _event_time_us(ctx: Context, launch: Callable[[], Any], launches: int = 200) -> float:
    """The GPU time per launch between two CUDA events around ``launches`` launches."""
    lib = ctx.driver.lib
    for name, args in (
        ("cuEventCreate", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]),
        ("cuEventRecord", [ctypes.c_void_p, ctypes.c_void_p]),
        ("cuEventSynchronize", [ctypes.c_void_p]),
        ("cuEventElapsedTime", [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]),
        ("cuEventDestroy_v2", [ctypes.c_void_p]),
    ):
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    start, end = ctypes.c_void_p(), ctypes.c_void_p()
    ctx.driver.check(lib.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
    ctx.driver.check(lib.cuEventCreate(ctypes.byref(end), 0), "cuEventCreate")
    try:
        launch()
        ctx.driver.sync()
        ctx.driver.check(lib.cuEventRecord(start, None), "cuEventRecord")
        for _ in range(launches):
            launch()
        ctx.driver.check(lib.cuEventRecord(end, None), "cuEventRecord")
        ctx.driver.check(lib.cuEventSynchronize(end), "cuEventSynchronize")
        ms = ctypes.c_float()
        ctx.driver.check(lib.cuEventElapsedTime(ctypes.byref(ms), start, end), "cuEventElapsedTime")
        return round(ms.value * 1000 / launches, 3)
    finally:
        lib.cuEventDestroy_v2(start)
        lib.cuEventDestroy_v2(end)
