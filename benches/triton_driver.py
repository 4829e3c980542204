"""Host time of Triton's everyday launch path on safecall's installed driver against Triton's
own, side by side, on the CUDA driver double in its quiet mode, built in release mode (each
driver call does next to nothing, so the figures are the host paths themselves;
``--debug-double`` takes the debug build ``cargo test`` makes instead).

    (cd python && ../.venv/bin/maturin develop --release)   # `cargo xtask test` leaves a debug build,
                                                            # which makes the dispatch 4-5x slower
    .venv/bin/python benches/triton_driver.py [--rounds N] [--calls N]
    PYTHONPATH=python .venv-triton36/bin/python benches/triton_driver.py   # Triton 3.6

(Triton 3.6's own driver needs torch: where it is absent, the tests' stand-in answers for it.)

For each driver, in a process of its own (an empty Triton cache each): ``kernel[grid](...)``
per call, steady state, the same call through safecall's dispatcher
(``safecall.triton.jit(kernel)[grid](...)``, on either driver's launcher), ``kernel.run(...)`` as Inductor
and Helion call it, the same two with the dispatch installed (``install(dispatch=True)``, safecall's
side only), and the launcher alone (``CompiledKernel.run(...)`` with the arguments
the JIT hands it), for kernels of 2, 3, 8 and 16 arguments, a ``lambda META`` grid calling
``triton.cdiv``, a launch hook registered (as a profiler does), a ``@triton.heuristics`` one, one of two host ``TensorDescriptor``s and an
autotuned one; and, for the first call of a new
kernel, the time of the launcher's construction and first launch (compile excluded), of a new
signature (8 arguments, and 4 host TMA descriptors) and of a new specialization of a launched one
(pointers assumed 16-byte aligned). Each child
gives the median of its rounds, in microseconds; each call timed with ``timeit``, its statement
compiled into the timing loop as a user writes it (no wrapper function per call on either side).
The children run in ``--pairs`` pairs (4), alternating which driver goes first; a row shows the
medians over the pairs, their ratio and the range of the pairs' own ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

ROOT = pathlib.Path(__file__).resolve().parents[1]


def setup(mode: str):
    """The double (quiet off, one handle per device ordinal), Triton with the tests' torch
    stand-in where it needs torch (before 3.8), and, for ``mode`` "safecall", safecall's driver
    installed: the double's library and ``safecall.triton``. Needs ``TRITON_CACHE_DIR``."""
    # The test tree's `support` package, as pytest's `pythonpath` option gives it to the tests.
    sys.path.insert(0, str(ROOT / "python" / "tests"))
    from support import fake_cuda

    fake = fake_cuda.load()
    fake.safecall_fake_cuda_ordinal_handles(1)
    cache = pathlib.Path(os.environ["TRITON_CACHE_DIR"])
    os.environ["TRITON_LIBCUDA_PATH"] = str(fake_cuda.libcuda_dir(fake_cuda.PATH, cache / "libcuda"))
    import triton as version

    if tuple(int(p) for p in version.__version__.split(".")[:2]) < (3, 8):
        from support.triton_fakes import torch_stand_in

        torch_stand_in()
    import safecall.triton as safecall_triton

    if mode == "safecall":
        safecall_triton.install()
    return fake, safecall_triton


def kernels() -> dict:
    """The timed kernels by argument count, each with its arguments (pointers as objects with a
    Python ``data_ptr()`` and a ``dtype``, as ``triton.reinterpret``'s wrappers)."""
    import triton
    import triton.language as tl

    class T:
        def __init__(self, address):
            self.address, self.dtype = address, tl.float32

        def data_ptr(self):
            return self.address

    @triton.jit
    def k2(x, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)

    @triton.jit
    def k3(x, y, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)

    @triton.jit
    def k8(a, b, c, d, e, f, n, m, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(a + o) + tl.load(b + o) + tl.load(c + o) + tl.load(d + o) + tl.load(e + o)
        tl.store(f + o, v * n + m)

    @triton.jit
    def k16(a, b, c, d, e, f, g, h, i, j, k, l, n, m, p, q, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(a + o) + tl.load(b + o) + tl.load(c + o) + tl.load(d + o) + tl.load(e + o)
        v += tl.load(f + o) + tl.load(g + o) + tl.load(h + o) + tl.load(i + o) + tl.load(j + o)
        v += tl.load(k + o)
        tl.store(l + o, v * n + m + p + q)

    ptrs = [T(0x7F00_0000_0000 + 0x10000 * i) for i in range(12)]
    return {
        2: (k2, ptrs[:1] + [1000]),
        3: (k3, ptrs[:2] + [1000]),
        8: (k8, ptrs[:6] + [3, 5]),
        16: (k16, ptrs[:12] + [3, 5, 7, 9]),
    }


def child(mode: str, rounds: int, calls: int) -> dict:
    fake, safecall_triton = setup(mode)
    import triton
    import triton.language as tl

    timed = kernels()
    k3, k8 = timed[3][0], timed[8][0]
    out: dict = {}
    for n, (kernel, args) in timed.items():
        call = "kernel[(4,)](*args, BLOCK=128)"
        kernel[(4,)](*args, BLOCK=128)  # compiles, loads, builds the launcher
        fake.safecall_fake_cuda_quiet(1)
        compiled = next(iter(kernel.device_caches[0][0].values()))
        run_args = (4, 1, 1, 0, compiled.function, compiled.packed_metadata, None,
                    triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook, *args, 128)

        launcher = "compiled.run(*run_args)"

        dispatched = safecall_triton.jit(kernel)

        dispatch = "dispatched[(4,)](*args, BLOCK=128)"

        out[f"kernel[grid]() {n} args"] = _median(call, locals(), rounds, calls)
        if n == 3:
            # Inductor's and Helion's call: `JITFunction.run` with the grid as a keyword.
            out["kernel.run(*args, grid=, warmup=False) 3 args"] = _median(
                "kernel.run(*args, grid=(4,), warmup=False, BLOCK=128)", locals(), rounds, calls)
        out[f"safecall.triton.jit(kernel)[grid]() {n} args"] = _median(dispatch, locals(), rounds, calls)
        out[f"CompiledKernel.run {n} args"] = _median(launcher, locals(), rounds, calls)
        if n >= 8:
            # The same launch with `tvm_ffi.Tensor`s at the same addresses (cuda:0), whose
            # `data_ptr()` is a C method, as torch's is: the Python frame of `T.data_ptr` is
            # then gone from both launchers (each still checks every pointer with the driver).
            import tvm_ffi
            from safecall.testing import RawTensor

            pointers = sum(not isinstance(a, int) for a in args)
            tensors = [tvm_ffi.from_dlpack(RawTensor(p.address, (2, 0), (2, 32, 1), [256], None, 0)) for p in args[:pointers]]
            tensor_args = (*run_args[:9], *tensors, *run_args[9 + pointers:])
            out[f"CompiledKernel.run {n} args, C data_ptr()"] = _median(
                "compiled.run(*tensor_args)", locals(), rounds, calls)
        fake.safecall_fake_cuda_quiet(0)
    # The everyday grid: a lambda over META calling triton.cdiv, made anew per call as in a
    # wrapper function (Triton calls it; the dispatch computes it from its trace).
    k3_args = timed[3][1]
    dispatched3 = safecall_triton.jit(k3)

    def lambda_grid(n):
        return lambda META: (triton.cdiv(n, META["BLOCK"]),)

    # A @triton.heuristics layer computing the constexpr (Heuristics.run above the JIT).
    with_heuristics = triton.heuristics({"BLOCK": lambda args: 128 if args["n"] > 512 else 64})(k3)
    with_heuristics[(4,)](*k3_args)
    heuristics_dispatch = safecall_triton.jit(with_heuristics)
    fake.safecall_fake_cuda_quiet(1)
    out["@heuristics kernel[grid]() 3 args"] = _median("with_heuristics[(4,)](*k3_args)", locals(), rounds, calls)
    out["safecall.triton.jit(@heuristics kernel)[grid]() 3 args"] = _median(
        "heuristics_dispatch[(4,)](*k3_args)", locals(), rounds, calls)
    out["kernel[lambda META: cdiv]() 3 args"] = _median("k3[lambda_grid(1000)](*k3_args, BLOCK=128)", locals(), rounds, calls)
    out["safecall.triton.jit(kernel)[lambda META: cdiv]() 3 args"] = _median(
        "dispatched3[lambda_grid(1000)](*k3_args, BLOCK=128)", locals(), rounds, calls)
    # A launch hook registered, as a profiler registers one: Triton's run computes the launch
    # metadata and its launcher calls the hook; the dispatch does the same from its table.
    profiled = []
    triton.knobs.runtime.launch_enter_hook.add(profiled.append)
    out["kernel[grid]() 3 args, launch hook"] = _median("k3[(4,)](*k3_args, BLOCK=128)", locals(), rounds, calls)
    out["safecall.triton.jit(kernel)[grid]() 3 args, launch hook"] = _median(
        "dispatched3[(4,)](*k3_args, BLOCK=128)", locals(), rounds, calls)
    triton.knobs.runtime.launch_enter_hook.remove(profiled.append)
    profiled.clear()
    fake.safecall_fake_cuda_quiet(0)
    # Two host TMA descriptors (the launcher encodes both on every call).
    from support.triton_fakes import DescriptorBase
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def kdesc(x_desc, y_desc, M, BM: tl.constexpr, BN: tl.constexpr):
        i = tl.program_id(0) * BM
        y_desc.store([i, 0], x_desc.load([i, 0]))

    descs = [TensorDescriptor.from_tensor(DescriptorBase(0x7F00_0100_0000 + 0x100000 * i, "float16", [256, 64]), [64, 64])
             for i in range(2)]
    kdesc[(4,)](*descs, 256, BM=64, BN=64)
    desc_dispatch = safecall_triton.jit(kdesc)
    fake.safecall_fake_cuda_quiet(1)
    out["kernel[grid]() 2 host descriptors"] = _median("kdesc[(4,)](*descs, 256, BM=64, BN=64)", locals(), rounds, calls)
    out["safecall.triton.jit(kernel)[grid]() 2 host descriptors"] = _median(
        "desc_dispatch[(4,)](*descs, 256, BM=64, BN=64)", locals(), rounds, calls)
    compiled = next(iter(kdesc.device_caches[0][0].values()))
    desc_args = (4, 1, 1, 0, compiled.function, compiled.packed_metadata, None,
                 triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook, *descs, 256, 64, 64)
    out["CompiledKernel.run 2 host descriptors"] = _median("compiled.run(*desc_args)", locals(), rounds, calls)
    fake.safecall_fake_cuda_quiet(0)
    # An autotuned kernel (two configs, a stand-in benchmarker), once tuned: Triton's
    # Autotuner.run above its JIT, and the same through safecall's dispatch.
    tuned = triton.autotune(
        configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
        do_bench=lambda kernel_call, quantiles: (kernel_call(), [1.0, 1.0, 1.0])[1],
    )(k3)
    args3 = timed[3][1]
    tuned[(4,)](*args3)
    tuned_dispatch = safecall_triton.jit(tuned)
    fake.safecall_fake_cuda_quiet(1)
    out["autotuned kernel[grid]() 3 args"] = _median("tuned[(4,)](*args3)", locals(), rounds, calls)
    out["safecall.triton.jit(autotuned)[grid]() 3 args"] = _median("tuned_dispatch[(4,)](*args3)", locals(), rounds, calls)
    fake.safecall_fake_cuda_quiet(0)
    # The first launch of a new signature, compile excluded: each signature compiled first
    # (no launcher built), then the launcher built and called once, timed. Triton 3.9 shares
    # one C launcher; 3.6 compiles one per signature with cc, safecall builds a host function.
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # Then the same signature compiled again as Triton specializes it for 16-byte aligned
    # pointers: a new kernel (cubin, CUfunction, launcher) of a launched kernel's form.
    kinds = ["i32", "i64", "fp32", "u64", "fp64"]
    firsts, specs = [], []
    divisible = {(i,): [["tt.divisibility", 16]] for i in range(6)}
    for i, kind in enumerate(kinds):
        signature = {name: "*fp32" for name in "abcdef"}
        signature.update(n=kind, m=kinds[(i + 2) % len(kinds)], BLOCK="constexpr")
        for attrs, times in ((None, firsts), (divisible, specs)):
            compiled = triton.compile(ASTSource(k8, signature, constexprs={"BLOCK": 128}, attrs=attrs),
                                      target=GPUTarget("cuda", 90, 32))
            module, function, *_ = triton.runtime.driver.active.utils.load_binary(
                compiled.name, compiled.asm["cubin"], compiled.metadata.shared, 0)
            start = time.perf_counter()
            launcher = triton.runtime.driver.active.launcher_cls(compiled.src, compiled.metadata)
            launcher(4, 1, 1, 0, function, compiled.packed_metadata, None, None, None, *timed[8][1], 128)
            times.append((time.perf_counter() - start) * 1e6)
    out["first launch of a new signature (launcher built + launched), 8 args"] = round(statistics.median(firsts), 1)
    out["first launch of a new specialization of a launched signature, 8 args"] = round(statistics.median(specs), 1)
    # The same first launch for a kernel with 4 host TMA descriptors, a new block shape (a new
    # signature) each time: the launcher encodes 4 descriptors; safecall's builds their host function.
    @triton.jit
    def four_first(a, b, c, d, M, BM: tl.constexpr, BN: tl.constexpr):
        i = tl.program_id(0) * BM
        d.store([i, 0], a.load([i, 0]) + b.load([i, 0]) + c.load([i, 0]))

    firsts_tma = []
    for bm in (16, 32, 64, 128, 256):
        signature = {name: f"tensordesc<fp16[{bm}, 64]>" for name in "abcd"}
        signature.update(M="i32", BM="constexpr", BN="constexpr")
        compiled = triton.compile(ASTSource(four_first, signature, constexprs={"BM": bm, "BN": 64}),
                                  target=GPUTarget("cuda", 90, 32))
        module, function, *_ = triton.runtime.driver.active.utils.load_binary(
            compiled.name, compiled.asm["cubin"], compiled.metadata.shared, 0)
        descs4 = [TensorDescriptor.from_tensor(DescriptorBase(0x7F00_0200_0000 + 0x100000 * i, "float16", [256, 64]),
                                               [bm, 64]) for i in range(4)]
        start = time.perf_counter()
        launcher = triton.runtime.driver.active.launcher_cls(compiled.src, compiled.metadata)
        launcher(4, 1, 1, 0, function, compiled.packed_metadata, None, None, None, *descs4, 256, bm, 64)
        firsts_tma.append((time.perf_counter() - start) * 1e6)
    out["first launch of a new signature, 4 host TMA descriptors"] = round(statistics.median(firsts_tma), 1)
    if mode == "safecall" and triton.__version__.startswith(safecall_triton.SUPPORTED_TRITON + "."):
        # A new specialization with four host TMA descriptors: safecall.triton.function's
        # host function built (IR, verification, lowering, JIT), compile excluded.
        @triton.jit
        def four(a, b, c, d, M, BM: tl.constexpr, BN: tl.constexpr):
            i = tl.program_id(0) * BM
            d.store([i, 0], a.load([i, 0]) + b.load([i, 0]) + c.load([i, 0]))

        signature = {name: "tensordesc<fp16[64, 64]>" for name in "abcd"}
        signature.update(M="i32", BM="constexpr", BN="constexpr")
        compiled = triton.compile(ASTSource(four, signature, constexprs={"BM": 64, "BN": 64}),
                                  target=GPUTarget("cuda", 90, 32))
        builds = []
        for _ in range(rounds * 3):
            start = time.perf_counter()
            safecall_triton.function(compiled)
            builds.append((time.perf_counter() - start) * 1e6)
        out["host function of a new kernel with 4 TMA descriptors (built)"] = round(statistics.median(builds), 1)
    if mode == "safecall":
        # Stock code with the dispatch installed (`install(dispatch=True)`, no code change):
        # `kernel[grid]` and `kernel.run` reach the kernel's dispatcher with no Python frame.
        safecall_triton.install(dispatch=True)
        k3, k3_args = timed[3]
        fake.safecall_fake_cuda_quiet(1)
        out["installed dispatch: kernel[grid]() 3 args"] = _median("k3[(4,)](*k3_args, BLOCK=128)", locals(), rounds, calls)
        out["installed dispatch: kernel.run(*args, grid=, warmup=False) 3 args"] = _median(
            "k3.run(*k3_args, grid=(4,), warmup=False, BLOCK=128)", locals(), rounds, calls)
        fake.safecall_fake_cuda_quiet(0)
    return out


def _median(stmt: str, namespace: dict, rounds: int, calls: int) -> float:
    """The median over ``rounds`` of the time per execution of ``stmt`` (a call, written as its
    user writes it) with the names of ``namespace``, in microseconds. ``timeit`` compiles the
    statement into its loop: what is timed is the call, not also a wrapper function's frame per
    call (about 0.02-0.03 us, which both sides would pay)."""
    timer = timeit.Timer(stmt, globals=namespace)
    timer.timeit(1)
    return round(statistics.median(timer.repeat(rounds, calls)) / calls * 1e6, 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--pairs", type=int, default=4,
                        help="pairs of child runs (stock and safecall, alternating which goes first)")
    parser.add_argument("--child", choices=["stock", "safecall"])
    parser.add_argument("--debug-double", action="store_true",
                        help="the double as `cargo test` builds it (its entry points cost hundreds of instructions)")
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    if args.child:
        print(json.dumps(child(args.child, args.rounds, args.calls)))
        return
    if not args.debug_double:
        # A release build of the double: its entry points cost next to nothing, as a driver's
        # do, so the figures are the host paths (a debug build adds ~0.1 us per launch).
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "safecall-fake-cuda"], cwd=ROOT, check=True)
        os.environ["SAFECALL_FAKE_CUDA_PATH"] = str(ROOT / "target" / "release" / "libsafecall_fake_cuda.so")
    # Pairs of child runs, the order alternating (stock first, then safecall first, ...), so that
    # a machine slowing down or speeding up during the run (a 2-core machine's neighbours, its
    # clock) weighs on both sides alike; each row gives the medians over the pairs and the
    # range of the pairs' own ratios.
    runs = {"stock": [], "safecall": []}
    for pair in range(args.pairs):
        for mode in ("stock", "safecall") if pair % 2 == 0 else ("safecall", "stock"):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TRITON_CACHE_DIR=cache, TRITON_DEFAULT_FP_FUSION="1")
                env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--rounds", str(args.rounds), "--calls", str(args.calls)],
                    env=env, capture_output=True, text=True, check=True,
                )
                runs[mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{'host time per call (us), medians over ' + str(args.pairs) + ' pairs of runs':<64} "
          f"{'stock':>9} {'safecall':>9} {'ratio':>7}  pairs' ratios")
    for key in runs["safecall"][0]:
        b = round(statistics.median(r[key] for r in runs["safecall"]), 3)
        if key not in runs["stock"][0]:
            print(f"{key:<64} {'-':>9} {b:>9}")
            continue
        a = round(statistics.median(r[key] for r in runs["stock"]), 3)
        pairs = sorted(s[key] / r[key] for s, r in zip(runs["stock"], runs["safecall"]))
        print(f"{key:<64} {a:>9} {b:>9} {a / b:>7.2f}  {pairs[0]:.2f}-{pairs[-1]:.2f}")
    # The JIT-dispatch target: safecall's dispatch against stock Triton's own `kernel[grid]()`
    # (the stock child's row), per pair.
    print(f"\n{'stock kernel[grid]() / safecall dispatch (the same call)':<64} {'stock':>9} {'safecall':>9} {'ratio':>7}  pairs' ratios")
    for stock_key, key in _DISPATCH_TARGETS:
        if stock_key not in runs["stock"][0] or key not in runs["safecall"][0]:
            continue
        a = round(statistics.median(r[stock_key] for r in runs["stock"]), 3)
        b = round(statistics.median(r[key] for r in runs["safecall"]), 3)
        pairs = sorted(s[stock_key] / r[key] for s, r in zip(runs["stock"], runs["safecall"]))
        print(f"{key:<64} {a:>9} {b:>9} {a / b:>7.2f}  {pairs[0]:.2f}-{pairs[-1]:.2f}")


#: (the stock child's row, the safecall child's row) compared by the JIT-dispatch target.
_DISPATCH_TARGETS = [
    *((f"kernel[grid]() {n} args", f"safecall.triton.jit(kernel)[grid]() {n} args") for n in (2, 3, 8, 16)),
    ("kernel[grid]() 3 args", "installed dispatch: kernel[grid]() 3 args"),
    ("kernel.run(*args, grid=, warmup=False) 3 args", "installed dispatch: kernel.run(*args, grid=, warmup=False) 3 args"),
]

if __name__ == "__main__":
    main()
