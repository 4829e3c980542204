"""Checks that run on every CUDA GPU: the PTX example, allocation, half-precision
arguments, the shared-memory opt-in, cooperative grids, priorities and the driver's errors."""

from __future__ import annotations

import math
import struct
from typing import Any, Dict, Tuple

import safecall as sc

from ._context import Context, ptx
from ._memory import CudaAllocator, DeviceArray
from ._report import Skip

#: The sizes ``add_one`` runs over (partial blocks, one block, many).
ADD_ONE_SIZES = (1, 255, 256, 1000, 1 << 20)


def _add_one_module() -> sc.ModuleBuilder:
    m = sc.ModuleBuilder("selftest_add_one")
    m.device_binary("kernels", "ptx", ptx("add_one"), ["add_one", "empty"])
    f = m.function("add_one", doc="y = x + 1 (float32), 256 threads per block.")
    x = f.tensor("x", ["n"], "float32", device="cuda", index=sc.i32)
    y = f.tensor("y", ["n"], "float32", device="cuda")
    n = sc.var("n")
    with f.if_(n > 0):
        f.launch("kernels", "add_one", x.data, y.data, sc.cast(sc.u32, n), grid=[sc.ceil_div(n, 256)], block=[256])
    g = m.function("empty", doc="A kernel that does nothing, on one thread.")
    g.tensor("x", ["n"], "float32", device="cuda")
    g.launch("kernels", "empty", grid=1, block=1)
    return m


def add_one(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """The PTX example over several sizes, then the errors of two bad calls."""
    fns = ctx.jit(_add_one_module())
    for n in ADD_ONE_SIZES:
        values = [float(i % 4096) - 7.5 for i in range(n)]
        x = ctx.array("float32", values)
        y = ctx.zeros(4 * n)
        fns.add_one(x.tensor("float32", [n]), y.tensor("float32", [n]))
        ctx.driver.sync()
        got = y.read("float32")
        ctx.expect(got == [v + 1 for v in values], lambda: f"n={n}: y != x + 1 (first values {got[:4]})")
    x = ctx.array("float32", [0.0] * 4)
    short = ctx.zeros(12)
    ctx.raises(
        ValueError,
        lambda: fns.add_one(x.tensor("float32", [4]), short.tensor("float32", [3])),
        "add_one: argument 'y' (#1): shape[0] is 3, expected 4 (= n, bound by x.shape[0])",
    )
    return f"y = x + 1 for n in {list(ADD_ONE_SIZES)}; a shape mismatch is a ValueError", {"launches": len(ADD_ONE_SIZES)}


def _alloc_module() -> sc.ModuleBuilder:
    m = sc.ModuleBuilder("selftest_alloc")
    m.device_binary("kernels", "ptx", ptx("add_one"), ["add_one"])
    f = m.function("add_two", doc="y = x + 2 in a new tensor, through a scratch tensor.")
    x = f.tensor("x", ["n"], "float32", device="cuda", index=sc.i32)
    f.returns("tensor")
    n = sc.var("n")
    scratch = f.empty("scratch", [x.shape[0]], "float32", x.device)
    y = f.empty("y", [x.shape[0]], "float32", x.device)
    with f.if_(n > 0):
        grid = [sc.ceil_div(n, 256)]
        f.launch("kernels", "add_one", x.data, scratch.data, sc.cast(sc.u32, n), grid=grid, block=[256])
        f.launch("kernels", "add_one", scratch.data, y.data, sc.cast(sc.u32, n), grid=grid, block=[256])
    f.return_(y)
    return m


def alloc(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """A host function allocating its output and a scratch tensor: from PyTorch's allocator
    when torch sees the GPU, else from ``cuMemAlloc`` through the environment allocator."""
    fns = ctx.jit(_alloc_module())
    n = 1000
    if ctx.torch is not None:
        torch = ctx.torch
        x = torch.arange(n, dtype=torch.float32, device=f"cuda:{ctx.device}")
        y = fns.add_two(x)
        torch.cuda.synchronize()
        out = torch.from_dlpack(y)
        ctx.expect(bool(torch.equal(out, x + 2)), lambda: "y != x + 2")
        return "outputs from PyTorch's caching allocator (torch tensor argument)", {"n": n}
    values = [float(i) for i in range(n)]
    x = ctx.array("float32", values)
    with CudaAllocator(ctx.driver) as allocator:
        y = fns.add_two(x.tensor("float32", [n]))
        ctx.driver.sync()
        got = DeviceArray.__new__(DeviceArray)
        got.driver, got.nbytes, got.ptr = ctx.driver, 4 * n, y.data_ptr()
        result = got.read("float32")
        shape = list(y.shape)
        ctx.require(shape == [n], lambda: f"the output's shape is {shape}")
        ctx.require(allocator.allocated == 2, lambda: f"{allocator.allocated} tensors allocated, expected 2")
        ctx.require(allocator.live == 1, lambda: f"{allocator.live} tensors live after the call, expected 1 (y)")
        del y
        ctx.require(allocator.live == 0, lambda: f"{allocator.live} tensors live after dropping y")
    ctx.expect(result == [v + 2 for v in values], lambda: f"y != x + 2 (first values {result[:4]})")
    return "outputs from cuMemAlloc through a DLPack allocator (no torch); scratch released at return", {"n": n}


def _f16_bits(value: float) -> int:
    return struct.unpack("<H", struct.pack("<e", value))[0]


def _bf16_bits(value: float) -> int:
    """The bfloat16 nearest ``value`` (ties to even), from its float32 bits."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if math.isnan(value):
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


#: (f16 argument, bf16 argument): normal, subnormal, rounding and boundary values.
HALF_CASES = ((1.5, 3.140625), (-0.1, 1e-3), (65504.0, -3.3895313892515355e38), (6e-8, 1.0 / 3.0))


def halves(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """f16 and bf16 scalar arguments: the bits the kernel receives and its conversions."""
    m = sc.ModuleBuilder("selftest_halves")
    m.device_binary("kernels", "ptx", ptx("basic"), ["halves"])
    f = m.function("halves", doc="Passes a and b to the kernel, which writes their bits back.")
    out = f.param("out", sc.data_ptr)
    a = f.param("a", sc.f16)
    b = f.param("b", sc.bf16)
    f.launch("kernels", "halves", out, a, b, grid=1, block=1, device=ctx.device)
    fns = ctx.jit(m)
    for fa, fb in HALF_CASES:
        buf = ctx.zeros(16)
        fns.halves(buf.ptr, fa, fb)
        ctx.driver.sync()
        raw = ctx.driver.download(buf.ptr, 16)
        ua, ub, va, vb, magic = struct.unpack("<HHffI", raw)
        want_a, want_b = _f16_bits(fa), _bf16_bits(fb)
        ctx.expect(magic == 0x600DF00D, lambda: f"the kernel did not run (marker {magic:#x})")
        ctx.expect((ua, ub) == (want_a, want_b), lambda: f"({fa}, {fb}) arrived as bits ({ua:#06x}, {ub:#06x}), expected ({want_a:#06x}, {want_b:#06x})")
        want_va = struct.unpack("<e", struct.pack("<H", want_a))[0]
        want_vb = struct.unpack("<f", struct.pack("<I", want_b << 16))[0]
        ctx.expect((va, vb) == (want_va, want_vb), lambda: f"the kernel read ({va}, {vb}), expected ({want_va}, {want_vb})")
    return "f16/bf16 arguments arrive rounded to nearest even, 2 bytes each", {"cases": len(HALF_CASES)}


#: The kernel's static shared memory (``smem_reverse``'s ``.shared`` array).
STATIC_SHARED = 4096


def shared_memory(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """Static + dynamic shared memory at the device's opt-in limit, then one word past it."""
    limit = ctx.driver.attribute("max_shared_memory_per_block_optin", ctx.device)
    if limit <= 48 * 1024:
        raise Skip(f"the device's opt-in limit is {limit} bytes, not above 48 KiB")
    m = sc.ModuleBuilder("selftest_smem")
    m.device_binary("kernels", "ptx", ptx("basic"), ["smem_reverse"])
    f = m.function("smem_reverse", doc="Fills and reads back n_words of dynamic shared memory.")
    out = f.param("out", sc.data_ptr)
    words = f.param("n_words", sc.u32)
    f.launch("kernels", "smem_reverse", out, words, grid=1, block=256, shared_mem=sc.cast(sc.u32, words) * 4, device=ctx.device)
    fns = ctx.jit(m)
    n = (limit - STATIC_SHARED) // 4
    buf = ctx.zeros(4 * n)
    fns.smem_reverse(buf.ptr, n)
    ctx.driver.sync()
    got = buf.read("uint32")
    want = [3 * (n - 1 - j) + 1 + ((j & 1023) ^ 0x5A5A) for j in range(n)]
    ctx.expect(got == want, lambda: f"wrong words (first differing at {next(j for j in range(n) if got[j] != want[j])})")
    message = ctx.raises(ValueError, lambda: fns.smem_reverse(buf.ptr, n + 1))
    expected = f"allows at most {limit} bytes of shared memory per block and the kernel uses {STATIC_SHARED} of them statically"
    ctx.require(expected in message, lambda: f"the error does not say {expected!r}: {message}")
    return f"{STATIC_SHARED} static + {4 * n} dynamic bytes (the opt-in limit {limit}); one word more: {message}", {"dynamic_bytes": 4 * n}


def cooperative(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """A cooperative grid whose blocks wait for each other, then one too large to fit."""
    if not ctx.driver.attribute("cooperative_launch", ctx.device):
        raise Skip("the device does not support cooperative launches")
    sms = ctx.driver.attribute("multiprocessor_count", ctx.device)
    m = sc.ModuleBuilder("selftest_coop")
    m.device_binary("kernels", "ptx", ptx("basic"), ["coop_count"])
    f = m.function("coop_count", doc="Every block counts itself, then waits for all the others.")
    counter = f.param("counter", sc.data_ptr)
    out = f.param("out", sc.data_ptr)
    blocks = f.param("blocks", sc.u32)
    f.launch("kernels", "coop_count", counter, out, grid=[blocks], block=64, cooperative=True, device=ctx.device)
    fns = ctx.jit(m)
    counter_buf = ctx.zeros(4)
    out_buf = ctx.zeros(4 * sms)
    fns.coop_count(counter_buf.ptr, out_buf.ptr, sms)
    ctx.driver.sync()
    got = out_buf.read("uint32")
    ctx.expect(got == [sms] * sms, lambda: f"blocks saw counts {sorted(set(got))}, expected {sms} everywhere")
    too_many = sms * 64
    message = ctx.raises(RuntimeError, lambda: fns.coop_count(counter_buf.ptr, out_buf.ptr, too_many))
    ctx.require("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" in message, lambda: f"unexpected error: {message}")
    return f"{sms} co-resident blocks met at a grid barrier; {too_many} blocks: {message}", {"blocks": sms}


def priority(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """A launch with the priority attribute (the highest and the lowest) runs."""
    m = sc.ModuleBuilder("selftest_priority")
    m.device_binary("kernels", "ptx", ptx("basic"), ["fill_u32"])
    f = m.function("fill", doc="out[i] = value + i, launched with the given priority.")
    out = f.param("out", sc.data_ptr)
    n = f.param("n", sc.u32)
    value = f.param("value", sc.u32)
    prio = f.param("prio", sc.i32)
    f.launch("kernels", "fill_u32", out, n, value, grid=[sc.ceil_div(n, 256)], block=256, priority=prio, device=ctx.device)
    fns = ctx.jit(m)
    count = 1000
    for p, value_ in ((-1, 7), (0, 1 << 20)):
        buf = ctx.zeros(4 * count)
        fns.fill(buf.ptr, count, value_, p)
        ctx.driver.sync()
        got = buf.read("uint32")
        ctx.expect(got == [value_ + i for i in range(count)], lambda: f"priority {p}: wrong values {got[:4]}")
    return "launches with priority -1 and 0 ran", {}


#: A cubin cut short after its ELF identification: no driver can load it.
BAD_IMAGE = b"\x7fELF\x02\x01\x01" + bytes(57)


def driver_errors(ctx: Context) -> Tuple[str, Dict[str, Any]]:
    """Errors the driver and the generated checks report, provoked safely."""
    m = sc.ModuleBuilder("selftest_errors")
    m.device_binary("bad", "cubin", BAD_IMAGE, ["broken"])
    f = m.function("load_bad", doc="Launches a kernel of an image no driver loads.")
    f.launch("bad", "broken", grid=1, block=1, device=ctx.device)
    m.device_binary("kernels", "ptx", ptx("add_one"), ["empty"])
    g = m.function("big_block", doc="Launches with too many threads per block.")
    threads = g.param("threads", sc.u32)
    g.launch("kernels", "empty", grid=1, block=[threads], device=ctx.device)
    fns = ctx.jit(m)
    bad = ctx.raises(RuntimeError, fns.load_bad)
    # A driver that loads lazily (the default since CUDA 12.2) reads the image at the kernel's
    # lookup rather than at the load: either call may report it.
    ctx.require(
        "CUDA_ERROR_INVALID_IMAGE" in bad and ("cuLibraryLoadData" in bad or "cuLibraryGetKernel" in bad),
        lambda: f"the bad image's error is not CUDA_ERROR_INVALID_IMAGE from the load or the kernel lookup: {bad}",
    )
    big = ctx.raises(ValueError, lambda: fns.big_block(2048))
    fns.big_block(1024)
    ctx.driver.sync()
    return f"bad image: {bad}; block of 2048: {big}", {}


CHECKS = [
    ("ptx add_one", add_one),
    ("allocating host function", alloc),
    ("f16/bf16 arguments", halves),
    ("shared memory opt-in", shared_memory),
    ("cooperative grid", cooperative),
    ("launch priority", priority),
    ("driver errors", driver_errors),
]
