"""Triton's everyday path on a real GPU: stock Triton's NVIDIA driver against safecall's
installed one (``safecall.triton.install()``) and safecall's with the dispatch
(``install(dispatch=True)``: each case run twice, the second from the dispatcher's table), side by side, each in a process of its own with
an empty Triton cache, on the machine's own Triton and PyTorch.

    python3 benches/gpu_triton.py [--json PATH] [--calls N] [--rounds N] [--repeat N]

For each driver it runs a table of kernels as users call them (``kernel[grid](...)`` on torch
tensors: a vector add at several lengths and a misaligned view, a softmax, an f16 matmul that
opts in to more than 48 KiB of shared memory, float, f16 and 64-bit integer scalars, a host
``TensorDescriptor`` and a device-side ``tl.make_tensor_descriptor`` with Triton's allocator),
checks each result against PyTorch, and keeps a digest of every output. The parent then checks
that both drivers computed bit-identical outputs, and prints, per driver:

- the first touch of ``triton.runtime.driver.active`` (stock Triton compiles its C driver there);
- the first ``kernel[grid](...)`` of a new 8-argument kernel (Triton's compile included in both);
- host time per steady-state ``kernel[grid](...)`` of the vector add (with a tuple grid and
  with a ``lambda META`` grid calling ``triton.cdiv``) and of an 8-argument
  kernel (median of the rounds, launches queued without synchronizing), and of the vector
  add's launcher alone (``CompiledKernel.run`` with the arguments the JIT passes), and of a
  ``kernel[grid](...)`` taking a host ``TensorDescriptor``, in
  microseconds.

Exit status 1 when a case failed or the drivers disagree. Needs a CUDA GPU, torch and triton.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import zlib


def child(mode: str, calls: int, rounds: int) -> dict:
    start = time.perf_counter()
    if mode in ("safecall", "dispatch"):
        import safecall.triton

        safecall.triton.install(dispatch=mode == "dispatch")
    import torch
    import triton
    import triton.language as tl

    out: dict = {"mode": mode, "triton": triton.__version__, "torch": torch.__version__, "cases": {}}
    t0 = time.perf_counter()
    active = triton.runtime.driver.active
    active.get_current_device()
    out["driver"] = type(active).__module__ + "." + type(active).__name__
    out["first_touch_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
    out["import_ms"] = round((t0 - start) * 1e3, 2)
    dev = torch.device("cuda")
    gen = torch.Generator(device="cpu").manual_seed(11)

    def rand(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype).to(dev)

    def digest(t) -> str:
        return hashlib.sha256(t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @triton.jit
    def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            kk = k * BK + rk
            x = tl.load(a + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            y = tl.load(b + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def scalars(x_ptr, out_ptr, alpha, h, big, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m) * alpha + h.to(tl.float32)
        tl.store(out_ptr + offs, v, mask=m)
        tl.store(out_ptr + n, (big % 1000).to(tl.float32), mask=tl.program_id(0) == 0)

    @triton.jit
    def wide(a, b, c, d, e, f, g, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        s = tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m) + tl.load(c + offs, mask=m)
        s += tl.load(d + offs, mask=m) + tl.load(e + offs, mask=m) + tl.load(f + offs, mask=m)
        tl.store(g + offs, s, mask=m)

    @triton.jit
    def host_desc_copy(src_desc, dst_ptr, ld, BM: tl.constexpr, BN: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        tile = src_desc.load([pm * BM, pn * BN])
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        tl.store(dst_ptr + rm[:, None] * ld + rn[None, :], tile * 2.0)

    @triton.jit
    def device_desc_copy(src_ptr, dst_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        dst.store([pm * BM, pn * BN], src.load([pm * BM, pn * BN]) + 1.0)

    def case(name, fn):
        try:
            t = time.perf_counter()
            if mode == "dispatch":
                gen.manual_seed(zlib.crc32(name.encode()))
                fn()  # the first call of a key goes through Triton's run; the second is served by the table
            gen.manual_seed(zlib.crc32(name.encode()))  # the same inputs on every driver and call
            ok, detail, result = fn()
            torch.cuda.synchronize()
            out["cases"][name] = {"ok": bool(ok), "detail": detail, "digest": digest(result), "ms": round((time.perf_counter() - t) * 1e3, 1)}
        except Exception as e:  # noqa: BLE001 (each case reports; the next one still runs)
            out["cases"][name] = {"ok": False, "detail": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-2000:]}

    def run_add(n, offset=0):
        x, y = rand(n + offset)[offset:], rand(n + offset)[offset:]
        o = torch.empty(n + offset, device=dev)[offset:]
        add[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
        return bool(torch.equal(o, x + y)), f"n={n} offset={offset}", o

    for n in (1, 16, 1000, 98432, 1 << 20):
        case(f"add n={n}", lambda n=n: run_add(n))
    case("add misaligned view", lambda: run_add(4099, offset=1))

    def run_softmax():
        x = rand(1823, 781)
        y = torch.empty_like(x)
        softmax[(x.shape[0],)](y, x, x.stride(0), y.stride(0), x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=8)
        err = (y - torch.softmax(x, dim=1)).abs().max().item()
        return err < 1e-6, f"max abs error {err:.2e}", y

    case("softmax 1823x781", run_softmax)

    def run_matmul():
        M, N, K = 512, 384, 1024
        a, b = rand(M, K, dtype=torch.float16), rand(K, N, dtype=torch.float16)
        c = torch.empty(M, N, device=dev, dtype=torch.float32)
        grid = lambda META: (triton.cdiv(M, META["BM"]), triton.cdiv(N, META["BN"]))  # noqa: E731
        k = matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BM=128, BN=128, BK=64, num_warps=8, num_stages=4)
        ref = a.float() @ b.float()
        err = (c - ref).abs().max().item()
        return err < 5e-2, f"max abs error {err:.2e}, shared {k.metadata.shared} bytes", c

    case("matmul f16 (shared > 48 KiB)", run_matmul)

    def run_scalars():
        n = 3000
        x = rand(n)
        o = torch.zeros(n + 1, device=dev)
        big = (1 << 40) + 123
        scalars[(triton.cdiv(n, 512),)](x, o, 1.5, 0.25, big, n, BLOCK=512)
        want = x * 1.5 + 0.25
        ok = torch.allclose(o[:n], want, rtol=1e-6, atol=1e-6) and o[n].item() == float(big % 1000)
        return ok, f"alpha=1.5, h=0.25, big=2^40+123 -> {o[n].item()}", o

    case("float, int64 scalars", run_scalars)

    def run_host_desc():
        from triton.tools.tensor_descriptor import TensorDescriptor

        x = rand(256, 192)
        y = torch.empty_like(x)
        desc = TensorDescriptor.from_tensor(x, block_shape=[64, 64])
        host_desc_copy[(4, 3)](desc, y, y.stride(0), BM=64, BN=64)
        return torch.equal(y, x * 2.0), "256x192 in 64x64 tiles", y

    case("host TensorDescriptor", run_host_desc)

    def run_device_desc():
        def alloc(size, alignment, stream):
            return torch.empty(size, device=dev, dtype=torch.int8)

        triton.set_allocator(alloc)
        x = rand(128, 256)
        y = torch.empty_like(x)
        device_desc_copy[(2, 4)](x, y, 128, 256, BM=64, BN=64)
        return torch.equal(y, x + 1.0), "128x256 through tl.make_tensor_descriptor", y

    case("device tl.make_tensor_descriptor", run_device_desc)

    # An autotuned vector add (Triton's own benchmarker picks the config on the GPU).
    tuned_add = triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024}, num_warps=8)],
                                key=["n"])(add)

    def run_tuned(n=70001):
        xs, ys = rand(n), rand(n)
        o = torch.empty(n, device=dev)
        tuned_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](xs, ys, o, n)
        return bool(torch.equal(o, xs + ys)), f"n={n}, best {tuned_add.best_config}", o

    case("autotuned add", run_tuned)

    # A @triton.heuristics layer choosing the block size from n.
    heuristic_add = triton.heuristics({"BLOCK": lambda args: 1024 if args["n"] > 4096 else 128})(add)

    def run_heuristics():
        outs = []
        for n in (1000, 70001, 1000):
            xs, ys = rand(n), rand(n)
            o = torch.empty(n, device=dev)
            heuristic_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](xs, ys, o, n)
            outs.append((bool(torch.equal(o, xs + ys)), o))
        return all(ok for ok, _ in outs), "n=1000 (BLOCK 128), 70001 (BLOCK 1024), 1000 again", outs[1][1]

    case("heuristics add", run_heuristics)

    # First call of a new 8-argument kernel: Triton's compile in both, plus stock 3.5/3.6's C
    # launcher build, or safecall's host function.
    bufs = [rand(4096) for _ in range(7)]
    t = time.perf_counter()
    wide[(4,)](*bufs, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    out["first_call_8_args_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    case("wide 8 args", lambda: (torch.equal(bufs[6], (bufs[0] + bufs[1] + bufs[2]) + (bufs[3] + bufs[4] + bufs[5])), "g = (a+b+c) + (d+e+f)", bufs[6]))

    # Steady state: host time per kernel[grid](...) of the vector add.
    x, y, o = rand(1024), rand(1024), torch.empty(1024, device=dev)
    add[(1,)](x, y, o, 1024, BLOCK=1024)
    torch.cuda.synchronize()
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            add[(1,)](x, y, o, 1024, BLOCK=1024)
        per.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    out["kernel_grid_us"] = round(statistics.median(per), 3)
    # The same with the everyday grid: a lambda over META calling triton.cdiv, made per call.
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            add[lambda META: (triton.cdiv(1024, META["BLOCK"]),)](x, y, o, 1024, BLOCK=1024)
        per.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    out["kernel_grid_lambda_us"] = round(statistics.median(per), 3)
    out["kernel_grid_rounds_us"] = [round(p, 3) for p in per]
    wide_args = bufs + [4096]
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            wide[(4,)](*wide_args, BLOCK=1024)
        per.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    out["kernel_grid_8_args_us"] = round(statistics.median(per), 3)
    # The launcher alone, as the JIT calls it (the vector add's compiled kernel).
    compiled = add[(1,)](x, y, o, 1024, BLOCK=1024)
    hooks = triton.knobs.runtime
    launch = (1, 1, 1, active.get_current_stream(torch.cuda.current_device()), compiled.function,
              compiled.packed_metadata, None, hooks.launch_enter_hook, hooks.launch_exit_hook, x, y, o, 1024, 1024)
    run = compiled.run
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            run(*launch)
        per.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    out["launcher_us"] = round(statistics.median(per), 3)
    # Steady state with a host TensorDescriptor (its CUtensorMap encoded on every launch).
    from triton.tools.tensor_descriptor import TensorDescriptor

    xd = rand(256, 192)
    yd = torch.empty_like(xd)
    desc = TensorDescriptor.from_tensor(xd, block_shape=[64, 64])
    host_desc_copy[(4, 3)](desc, yd, yd.stride(0), BM=64, BN=64)
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            host_desc_copy[(4, 3)](desc, yd, yd.stride(0), BM=64, BN=64)
        per.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    out["kernel_grid_desc_us"] = round(statistics.median(per), 3)
    out["driver_at_end"] = type(triton.runtime.driver.active).__name__
    if mode == "dispatch":
        totals: dict = {}
        totals["autotune: through Autotuner.run"] = sum(safecall.triton.jit(tuned_add).stats().values())
        totals["heuristics: through Heuristics.run"] = sum(safecall.triton.jit(heuristic_add).stats().values())
        for k in (add, softmax, matmul, scalars, wide, host_desc_copy, device_desc_copy):
            for reason, count in safecall.triton.jit(k).stats().items():
                totals[reason] = totals.get(reason, 0) + count
        out["dispatch_stats"] = totals
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each driver, alternating (figures: medians)")
    ap.add_argument("--child", choices=["stock", "safecall", "dispatch"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a.calls, a.rounds)))
        return 0
    results: dict = {}
    timed = ("import_ms", "first_touch_ms", "first_call_8_args_ms", "kernel_grid_us", "kernel_grid_8_args_us", "launcher_us",
             "kernel_grid_desc_us", "kernel_grid_lambda_us")
    # The drivers alternate, --repeat times: each figure is the median of its repeats (host
    # timings on a shared machine drift between processes more than within one).
    for _ in range(a.repeat):
        for mode in ("stock", "safecall", "dispatch"):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TRITON_CACHE_DIR=cache, PYTHONUNBUFFERED="1")
                env.pop("SAFECALL_TRITON_DRIVER", None)
                cmd = [sys.executable, __file__, "--child", mode, "--calls", str(a.calls), "--rounds", str(a.rounds)]
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
                line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
                if p.returncode or not line:
                    print(f"{mode}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
                    results[mode] = {"error": p.stderr[-5000:]}
                    continue
                r = json.loads(line[0][7:])
                if mode not in results:
                    results[mode] = dict(r, repeats={k: [] for k in timed})
                for k in timed:
                    results[mode]["repeats"][k].append(r[k])
    for r in results.values():
        for k, values in r.get("repeats", {}).items():
            r[k] = round(statistics.median(values), 2)
    failed = 0
    stock, ours = results.get("stock", {}), results.get("safecall", {})
    for mode, r in results.items():
        if "error" in r:
            failed += 1
            continue
        print(f"== {mode}: driver {r['driver']} (at end {r['driver_at_end']}), triton {r['triton']}, torch {r['torch']}")
        for name, c in r["cases"].items():
            failed += not c["ok"]
            print(f"  {'PASS' if c['ok'] else 'FAIL'} {name:34} {c['detail']}")
            if "trace" in c:
                print(c["trace"])
    for other in ("safecall", "dispatch"):
        theirs = results.get(other, {})
        for name, c in theirs.get("cases", {}).items():
            s = stock.get("cases", {}).get(name, {})
            if s.get("digest") and c.get("digest") and s["digest"] != c["digest"]:
                failed += 1
                print(f"  DIFFER {name}: stock {s['digest']} {other} {c['digest']}")
        if stock.get("cases") and theirs.get("cases"):
            same = sum(1 for n, c in theirs["cases"].items() if c.get("digest") and c.get("digest") == stock["cases"].get(n, {}).get("digest"))
            print(f"outputs bit-identical between stock and {other}: {same} of {len(theirs['cases'])} cases")
    dispatch = results.get("dispatch", {})
    if "dispatch_stats" in dispatch:
        print(f"dispatch: {dispatch['dispatch_stats']}")
    keys = timed
    print(f"{'figure':24} {'stock':>10} {'safecall':>10} {'dispatch':>10}")
    for k in keys:
        print(f"{k:24} {stock.get(k, '-')!s:>10} {ours.get(k, '-')!s:>10} {dispatch.get(k, '-')!s:>10}")
    if a.repeat > 1:
        for mode, r in results.items():
            print(f"repeats, {mode}: " + "; ".join(f"{k} {v}" for k, v in r.get("repeats", {}).items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
