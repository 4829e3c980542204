"""Checks of Hopper's launch features (compute capability 9.0 and later): thread-block
clusters and their scheduling policies, programmatic dependent launch (PDL) and TMA
descriptors built by the host function."""

from __future__ import annotations

import ctypes
import math
from typing import Any, Dict, List, Sequence, Tuple

import safecall as sc

from ._context import Context, ptx

#: (grid, cluster, policy): portable sizes, a 3-D grid, the policies, the non-portable 16.
CLUSTER_CASES: Sequence[Tuple[Tuple[int, int, int], Tuple[int, int, int], str]] = (
    ((4, 2, 1), (2, 1, 1), "default"),
    ((4, 4, 2), (2, 2, 1), "spread"),
    ((8, 2, 2), (4, 1, 2), "load_balancing"),
    ((32, 1, 1), (16, 1, 1), "default"),
)


def _cluster_expected(grid: Sequence[int], cluster: Sequence[int]) -> List[int]:
    gx, gy, gz = grid
    cx, cy, cz = cluster
    words: List[int] = []
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                rank = (x % cx) + (y % cy) * cx + (z % cz) * cx * cy
                words += [x, y, z, rank, x // cx, y // cy, z // cz, cx * cy * cz]
    return words


def clusters(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """Each block writes its cluster rank and cluster id; they must follow the cluster dims."""
    ctx.needs_capability(9, "thread-block clusters")
    fns = {}
    for policy in ("default", "spread", "load_balancing"):
        m = sc.ModuleBuilder(f"selftest_cluster_{policy}")
        m.device_binary("kernels", "ptx", ptx("hopper"), ["cluster_ids"])
        f = m.function("cluster_ids", doc="Each block writes its ids, launched in clusters.")
        out = f.param("out", sc.data_ptr)
        g = [f.param(f"g{i}", sc.u32) for i in range(3)]
        c = [f.param(f"c{i}", sc.u32) for i in range(3)]
        f.launch("kernels", "cluster_ids", out, grid=g, block=32, cluster=c, cluster_policy=policy, device=ctx.device)
        fns[policy] = ctx.jit(m).cluster_ids
    done: List[str] = []
    for grid, cluster, policy in CLUSTER_CASES:
        blocks = grid[0] * grid[1] * grid[2]
        buf = ctx.zeros(32 * blocks)
        try:
            fns[policy](buf.ptr, *grid, *cluster)
        except RuntimeError as e:
            if math.prod(cluster) > 8 and "CLUSTER" in str(e):
                done.append(f"{cluster} refused by this device ({str(e).split(chr(10))[0]})")
                continue
            raise
        ctx.driver.sync()
        got = buf.read("uint32")
        want = _cluster_expected(grid, cluster)
        ctx.expect(got == want, lambda: f"grid {grid} cluster {cluster}: first block ids {got[:8]}, expected {want[:8]}")
        done.append(f"{cluster} {policy}")
    return "cluster ranks and ids match: " + ", ".join(done), {"cases": len(CLUSTER_CASES)}


def _stream(ctx: Context) -> int:
    """A new non-blocking stream (PDL orders launches within one stream)."""
    lib = ctx.driver.lib
    lib.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    lib.cuStreamCreate.restype = ctypes.c_int
    s = ctypes.c_void_p()
    ctx.driver.check(lib.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")
    return s.value or 0


def _stream_destroy(ctx: Context, stream: int) -> None:
    lib = ctx.driver.lib
    lib.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]
    lib.cuStreamDestroy_v2.restype = ctypes.c_int
    ctx.driver.check(lib.cuStreamDestroy_v2(stream), "cuStreamDestroy")


def pdl(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """A producer and a consumer launched with PDL on one stream: the consumer's
    ``griddepcontrol.wait`` sees everything the producer wrote."""
    ctx.needs_capability(9, "programmatic dependent launch")
    m = sc.ModuleBuilder("selftest_pdl")
    m.device_binary("kernels", "ptx", ptx("hopper"), ["pdl_producer", "pdl_consumer"])
    f = m.function("pair", doc="buf[i] = i + 1, then out[i] = 2 * buf[i] with PDL.")
    buf = f.param("buf", sc.data_ptr)
    out = f.param("out", sc.data_ptr)
    n = f.param("n", sc.u32)
    stream = f.param("stream", sc.stream)
    grid = [sc.ceil_div(n, 256)]
    f.launch("kernels", "pdl_producer", buf, n, grid=grid, block=256, stream=stream, device=ctx.device)
    f.launch("kernels", "pdl_consumer", buf, out, n, grid=grid, block=256, stream=stream, pdl=True, device=ctx.device)
    fns = ctx.jit(m)
    count = 1 << 16
    s = _stream(ctx)
    try:
        for _ in range(3):
            b = ctx.zeros(4 * count)
            o = ctx.zeros(4 * count)
            fns.pair(b.ptr, o.ptr, count, s)
            ctx.driver.sync()
            got = o.read("uint32")
            ctx.expect(got == [2 * (i + 1) for i in range(count)], lambda: f"the consumer read {got[:4]}...")
    finally:
        _stream_destroy(ctx, s)
    return f"3 producer/consumer pairs of {count} words on one stream", {"n": count}


#: The TMA kernel's box: 8 rows of 16 float32 (512 bytes).
BOX_ROWS, BOX_COLS = 8, 16


def _tma_module(ctx: Context, fill: str) -> Any:
    m = sc.ModuleBuilder(f"selftest_tma_{fill}")
    m.device_binary("kernels", "ptx", ptx("hopper"), ["tma_tile_copy"])
    f = m.function("copy", doc="Copies src tile by tile through TMA into the dense out.")
    src = f.param("src", sc.tensor(["rows", "cols"], "float32", device="cuda", strides="any", byte_offset="any"))
    out = f.param("out", sc.tensor(["out_rows", "out_cols"], "float32", device="cuda"))
    rows, cols, out_cols = sc.var("rows"), sc.var("cols"), sc.var("out_cols")
    desc = sc.tensormap(src, box=(BOX_ROWS, BOX_COLS), oob_fill=fill)
    grid = [sc.ceil_div(cols, BOX_COLS), sc.ceil_div(rows, BOX_ROWS)]
    f.launch("kernels", "tma_tile_copy", desc, out.data, sc.cast(sc.u32, out_cols), grid=grid, block=128)
    return ctx.jit(m)


def tma(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """TMA tile copies of compact, strided and offset views, with zero and NaN fill."""
    ctx.needs_capability(9, "TMA")
    base_rows, base_cols = 40, 72
    values = [float(r * 1000 + c) for r in range(base_rows) for c in range(base_cols)]
    base = ctx.array("float32", values)
    # (name, rows, cols, row stride in elements, element offset).
    views = (
        ("compact", base_rows, base_cols, base_cols, 0),
        ("strided", base_rows // 2, 36, 2 * base_cols, 0),
        ("offset", 29, 60, base_cols, 3 * base_cols + 4),
    )
    done = []
    for fill in ("none", "nan"):
        fns = _tma_module(ctx, fill)
        for name, rows, cols, stride, offset in views:
            gx, gy = -(-cols // BOX_COLS), -(-rows // BOX_ROWS)
            out_rows, out_cols = gy * BOX_ROWS, gx * BOX_COLS
            out = ctx.zeros(4 * out_rows * out_cols)
            ctx.driver.memset(out.ptr, 0x55, 4 * out_rows * out_cols)
            src = base.tensor("float32", [rows, cols], [stride, 1], 4 * offset)
            fns.copy(src, out.tensor("float32", [out_rows, out_cols]))
            ctx.driver.sync()
            got = out.read("float32")
            for r in range(out_rows):
                for c in range(out_cols):
                    v = got[r * out_cols + c]
                    if r < rows and c < cols:
                        want = values[offset + r * stride + c]
                        ok = v == want
                    else:
                        want = "NaN" if fill == "nan" else 0.0
                        ok = math.isnan(v) if fill == "nan" else v == 0.0
                    ctx.expect(ok, lambda: f"{name} view, fill {fill}: out[{r}][{c}] is {v}, expected {want}")
            done.append(f"{name}/{fill}")
    return "tiles copied exactly, out of bounds filled: " + ", ".join(done), {"copies": len(done)}


CHECKS = [
    ("clusters", clusters),
    ("programmatic dependent launch", pdl),
    ("tma descriptors", tma),
]
