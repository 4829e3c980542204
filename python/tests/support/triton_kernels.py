"""Triton kernels of our own for the tests that launch them against the CUDA driver double:
the differential of ``safecall.triton`` against Triton's launcher
(``test_triton_differential.py``) and of the installed driver against Triton's own
(``test_triton_driver.py``, whose runner imports this file in a process without a compiler).
Importing it needs triton only."""

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["y_ptr"])
def loose_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # y's pointer not specialized: Triton's key does not read its `data_ptr()`, its launcher does.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _copy_metadata(grid, metadata, args):
    """What a profiler's kernel reports per launch (the ``launch_metadata=`` protocol proton uses)."""
    return {"grid": list(grid), "n": args["n"], "num_warps": metadata.num_warps}


@triton.jit(launch_metadata=_copy_metadata)
def metered(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def scalars(out_ptr, a, b, c, d, e, f, g, h, x, y, flag):
    acc = a.to(tl.float64) + b.to(tl.float64) + c.to(tl.float64) + d.to(tl.float64)
    acc += e.to(tl.float64) + f.to(tl.float64) + g.to(tl.float64) + h.to(tl.float64)
    acc += x.to(tl.float64) + y
    if flag:
        acc = -acc
    tl.store(out_ptr, acc)


@triton.jit
def axpy(x_ptr, y_ptr, bias_ptr, n, stride, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, alpha * x, mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * (BN * tl.num_programs(1)) + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * (BN * tl.num_programs(1)) + rn[None, :], acc)


@triton.jit
def pdl_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    gdc_wait()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    gdc_launch_dependents()


@triton.jit
def desc_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Device-side TMA descriptors live in the launch's global scratch memory.
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd.store([tl.program_id(0) * BM, 0], xd.load([tl.program_id(0) * BM, 0]))


@triton.jit
def host_desc_copy(x_desc, y_desc, M, BM: tl.constexpr, BN: tl.constexpr):
    # Host-side TMA descriptors: each a CUtensorMap built by the launcher, then shape and strides.
    pid = tl.program_id(0)
    y_desc.store([pid * BM, 0], x_desc.load([pid * BM, 0]))


@triton.jit
def tdm3_copy(x_desc, out_ptr, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    # A rank-3 host descriptor (on gfx1250: an 80-byte TDM descriptor), then a pointer.
    x = x_desc.load([0, 0, 0])
    o = tl.arange(0, B0)[:, None, None] * (B1 * B2) + tl.arange(0, B1)[None, :, None] * B2 + tl.arange(0, B2)[None, None, :]
    tl.store(out_ptr + o, x)


@triton.jit
def tdm1_copy(x_desc, out_ptr, N: tl.constexpr):
    # A rank-1 host descriptor (on gfx1250: a 48-byte TDM descriptor).
    tl.store(out_ptr + tl.arange(0, N), x_desc.load([0]))


@triton.jit
def tdm5_copy(x_desc, out_ptr, N: tl.constexpr):
    # A rank-5 host descriptor (on gfx1250: an 80-byte TDM descriptor, group 3 filled).
    tl.store(out_ptr + tl.arange(0, N), tl.reshape(x_desc.load([0, 0, 0, 0, 0]), (N,)))


@triton.jit
def half_scale(x_ptr, y_ptr, n, h, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * h.to(tl.float32) + b.to(tl.float32), mask=mask)


@triton.jit
def wide(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11, n12, n13, n14, n15, n16, n17, n18, n19, n20, n21, n22, n23, n24):
    """45 arguments: more than the native launcher keeps on its stack (its heap paths)."""
    total = n0 + n1 + n2 + n3 + n4 + n5 + n6 + n7 + n8 + n9 + n10 + n11 + n12 + n13 + n14 + n15 + n16 + n17 + n18 + n19 + n20 + n21 + n22 + n23 + n24
    tl.store(p0 + tl.program_id(0), total)
    tl.store(p1 + tl.program_id(0), total)
    tl.store(p2 + tl.program_id(0), total)
    tl.store(p3 + tl.program_id(0), total)
    tl.store(p4 + tl.program_id(0), total)
    tl.store(p5 + tl.program_id(0), total)
    tl.store(p6 + tl.program_id(0), total)
    tl.store(p7 + tl.program_id(0), total)
    tl.store(p8 + tl.program_id(0), total)
    tl.store(p9 + tl.program_id(0), total)
    tl.store(p10 + tl.program_id(0), total)
    tl.store(p11 + tl.program_id(0), total)
    tl.store(p12 + tl.program_id(0), total)
    tl.store(p13 + tl.program_id(0), total)
    tl.store(p14 + tl.program_id(0), total)
    tl.store(p15 + tl.program_id(0), total)
    tl.store(p16 + tl.program_id(0), total)
    tl.store(p17 + tl.program_id(0), total)
    tl.store(p18 + tl.program_id(0), total)
    tl.store(p19 + tl.program_id(0), total)


@triton.jit(do_not_specialize=["m"], do_not_specialize_on_alignment=["y_ptr"])
def mixed(x_ptr, y_ptr, n, m, a, b, flag, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2.0):
    # Parameters whose kinds the dispatch's seeded differential varies call by call: pointers
    # of several dtypes (y's alignment not specialized), ints of every width class (m not
    # specialized), an int or a float, an optional scalar, a flag given as a bool or an int,
    # and a constexpr with a default.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32) * SCALE + a + m
    if b is not None:
        x += b
    if flag:
        x = -x
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def tuple_copy(ptrs, sizes, BLOCK: tl.constexpr):
    # Tuple parameters (Triton flattens them into the launch's arguments): a pointer pair with
    # a nested one, and scalars of which Triton may specialize some (an int equal to 1).
    x = ptrs[0]
    y = ptrs[1][0]
    z = ptrs[1][1]
    n = sizes[0]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask) * sizes[1] + sizes[2]
    tl.store(y + offs, v, mask=mask)
    tl.store(z + offs, v, mask=mask)


@triton.jit
def half_annotated(x_ptr, h: tl.float16, BLOCK: tl.constexpr):
    # An fp16 scalar through the JIT (a Python float is an fp32 unless annotated).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * h.to(tl.float32))
