"""``python -m safecall.selftest``: does safecall work on this machine?

It launches real kernels through safecall's generated host code and checks what they
computed: the PTX example over several sizes, a host function that allocates its outputs
(through PyTorch's allocator, or ``cuMemAlloc`` without torch), f16/bf16 arguments, the
shared-memory opt-in at the device's limit, cooperative grids, priorities, the driver's
errors, and on Hopper (compute capability 9.0) clusters, PDL and TMA descriptors; then Triton
kernels through :mod:`safecall.triton`; on an AMD GPU (a HIP runtime with a device), the AMD
example from a clang offload bundle. Every check prints one line (what, result, figure);
``--json PATH`` writes them; ``--bench`` adds host time per launch beside the driver's own
floor, Triton's launcher and PyTorch's smallest kernel. The exit status is non-zero when a
check failed. Without a GPU it says so and exits 0 after the checks that need none.

The kernels are hand-written PTX (``kernels/``) and cubins compiled by Triton 3.9 for sm_90
(``triton_kernels/``); their READMEs say how each was made. No compiler runs.

Examples
--------
>>> from safecall import selftest
>>> callable(selftest.main)
True
"""

from __future__ import annotations

import argparse
import platform
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ._report import FAIL, LAUNCHED, PASS, SKIP, Report, Result

__all__ = ["FAIL", "LAUNCHED", "PASS", "SKIP", "Report", "Result", "main", "run"]


def _environment(report: Report) -> None:
    import safecall
    import tvm_ffi

    env = report.environment
    env["python"] = platform.python_version()
    env["machine"] = platform.machine()
    env["safecall"] = getattr(safecall, "__version__", "unknown")
    env["tvm_ffi"] = getattr(tvm_ffi, "__version__", "unknown")
    for name in ("torch", "triton", "numpy"):
        try:
            module = __import__(name)
            env[name] = getattr(module, "__version__", "present")
        except Exception:  # noqa: BLE001  (absent or broken: the check says so)
            env[name] = None


def _no_gpu_checks(report: Report) -> None:
    """The checks that need no GPU: safecall compiles and calls host code here."""
    import safecall as sc

    def jit_call() -> Tuple[str, dict]:
        m = sc.ModuleBuilder("selftest_cpu")
        f = m.function("add", doc="a + b")
        a = f.param("a", sc.i64)
        b = f.param("b", sc.i64)
        f.returns(sc.i64)
        f.return_(a + b)
        fns = sc.jit(m.build())
        got = fns.add(40, 2)
        if got != 42:
            raise AssertionError(f"add(40, 2) returned {got}")
        try:
            fns.add(1)
        except TypeError as e:
            return "JIT-compiled host function called, its argument check raised: " + str(e).split("\n")[0], {}
        raise AssertionError("a missing argument raised nothing")

    report.run("jit host function (no GPU)", jit_call, gpu=False)


def run(
    bench: bool = False,
    *,
    echo: Callable[[str], None] = print,
    device: int = 0,
    triton: bool = True,
    json_path: Optional[str] = None,
) -> Report:
    """Runs the self-test and returns its report.

    Parameters
    ----------
    bench : bool, default False
        Also time launches from Python (``--bench``).
    echo : callable, default print
        Receives each line as it is made.
    device : int, default 0
        The CUDA device ordinal the GPU checks use.
    triton : bool, default True
        Run the Triton checks.
    json_path : str, optional
        Write the results as JSON there after each check (and the summary at the end).

    Returns
    -------
    Report
        Every check's result; ``report.failed`` lists the failures.
    """
    from ._driver import optional_driver

    driver, why = optional_driver()
    report = Report(echo, on_double=bool(driver and driver.is_double), json_path=json_path)
    _environment(report)
    echo(f"safecall self-test: Python {report.environment['python']}, tvm_ffi {report.environment['tvm_ffi']}, "
         f"torch {report.environment['torch']}, triton {report.environment['triton']}")
    _no_gpu_checks(report)
    if driver is None:
        report.environment["gpu"] = None
        echo(f"no NVIDIA GPU: {why}; the GPU checks did not run")
    else:
        _gpu_checks(report, driver, device, bench, triton)
    _amd_checks(report, echo)
    return report


def _amd_checks(report: Report, echo: Callable[[str], None]) -> None:
    """The AMD checks, when a HIP runtime with a device is present (none: one line says why)."""
    from . import _checks_amd
    from ._hip import optional_hip

    hip, why = optional_hip()
    report.environment["amd_gpu"] = None if hip is None else hip.path
    if hip is None:
        echo(f"no AMD GPU: {why}; the AMD checks did not run")
        return
    what = "the HIP runtime test double (kernels compute nothing: results are not checked)" if hip.is_double else "GPU"
    echo(f"HIP runtime {hip.path}: {hip.device_count} device(s) ({what})")
    on_double = report.on_double
    report.on_double = hip.is_double
    for title, check in _checks_amd.CHECKS:
        report.run(title, lambda check=check: check(hip))
    report.on_double = on_double


def _gpu_checks(report: Report, driver: Any, device: int, bench: bool, triton: bool) -> None:
    from . import _checks_basic, _checks_hopper, _checks_triton
    from ._context import Context

    driver.use(device)
    name = driver.name(device)
    cc = driver.capability(device)
    report.environment.update(
        gpu=name,
        compute_capability=f"{cc[0]}.{cc[1]}",
        driver_version=driver.version(),
        driver_path=driver.path,
        driver_double=driver.is_double,
    )
    what = "the CUDA driver test double (kernels compute nothing: results are not checked)" if driver.is_double else "GPU"
    report.echo(f"device {device}: {name}, compute capability {cc[0]}.{cc[1]}, driver {driver.version()} ({what})")
    ctx = Context(driver, report, device)
    checks: List[Tuple[str, Any]] = list(_checks_basic.CHECKS) + list(_checks_hopper.CHECKS)
    if triton:
        checks += list(_checks_triton.CHECKS)
    for i, (title, check) in enumerate(checks):
        report.run(title, lambda check=check: check(ctx))
        lost = driver.lost()
        if lost is not None:
            # A kernel fault is sticky: every later check would fail with it, so none runs.
            report.add(Result("cuda context", FAIL, f"lost after '{title}': {lost}"))
            for rest, _ in checks[i + 1 :] + [("bench", None)] * bench:
                report.add(Result(rest, SKIP, f"the CUDA context was lost after '{title}'"))
            return
        try:
            ctx.release()
        except Exception as e:  # noqa: BLE001  (a failed free is a failure of its own)
            report.add(Result(f"{title}: release", FAIL, f"{type(e).__name__}: {e}"))
    if bench:
        from . import _bench

        _bench.run(ctx)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line: ``python -m safecall.selftest [--bench] [--json PATH]``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        0 when no check failed, 1 otherwise.
    """
    parser = argparse.ArgumentParser(prog="python -m safecall.selftest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", action="store_true", help="also time launches from Python")
    parser.add_argument("--json", metavar="PATH", help="write every result as JSON to PATH")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    parser.add_argument("--no-triton", action="store_true", help="skip the Triton checks")
    args = parser.parse_args(argv)
    report = run(args.bench, device=args.device, triton=not args.no_triton, json_path=args.json)
    print(report.summary())
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    return 1 if report.failed else 0

