"""The Triton kernels of the self-test, with what they are compiled for: imported by
``make.py`` (which ships their sm_90 cubins) and by the self-test, which compiles them with the
machine's own Triton 3.9 for a device that is not sm_90. Importing it needs triton."""

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


# ---- the kernels ----------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr = 1024):
    """out[i] = x[i] + y[i] for i < n_elements (fp32), BLOCK_SIZE elements per program."""
    start = tl.program_id(axis=0) * BLOCK_SIZE
    idx = start + tl.arange(0, BLOCK_SIZE)
    inside = idx < n_elements
    lhs = tl.load(x_ptr + idx, mask=inside)
    rhs = tl.load(y_ptr + idx, mask=inside)
    tl.store(out_ptr + idx, lhs + rhs, mask=inside)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    """out[r, :n_cols] = softmax(in[r, :n_cols]) (fp32), one program per row r < n_rows;
    n_cols <= BLOCK_SIZE. Rows are in_row_stride (out_row_stride) elements apart."""
    row = tl.program_id(0)
    if row < n_rows:
        cols = tl.arange(0, BLOCK_SIZE)
        valid = cols < n_cols
        src = in_ptr + row.to(tl.int64) * in_row_stride
        vals = tl.load(src + cols, mask=valid, other=-float("inf"))
        shifted = vals - tl.max(vals, axis=0)
        num = tl.exp(shifted)
        den = tl.sum(num, axis=0)
        dst = out_ptr + row.to(tl.int64) * out_row_stride
        tl.store(dst + cols, num / den, mask=valid)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """C (M x N, fp16) = A (M x K, fp16) @ B (K x N, fp16), accumulated in fp32. A 1-D grid
    of cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs, each a BLOCK_M x BLOCK_N tile of C, taken
    in groups of GROUP_M tile rows (for L2 reuse); edges masked."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_first_m = (pid // per_group) * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    tile_m = group_first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c_tile = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_tile, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def desc_copy_kernel(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out = 2 * in (fp32, 2-D) through two host TensorDescriptors (TMA), one BLOCK_M x BLOCK_N
    tile per program on a 2-D grid; TMA clips the edge tiles (loads zero-filled, stores cut)."""
    row = tl.program_id(0) * BLOCK_M
    col = tl.program_id(1) * BLOCK_N
    tile = in_desc.load([row, col])
    out_desc.store([row, col], tile * 2.0)


# ---- what is compiled -----------------------------------------------------------------------

MATMUL_PARAMS = [
    "a_ptr", "b_ptr", "c_ptr", "M", "N", "K",
    "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn",
]  # fmt: skip

#: name -> (kernel, signature, constexprs, divisible, options, launch notes).
KERNELS = {
    "add_kernel": (
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"},
        {"BLOCK_SIZE": 1024},
        ["x_ptr", "y_ptr", "out_ptr", "n_elements"],
        {"num_warps": 4, "num_stages": 3},
        {
            "grid": "(cdiv(n_elements, 1024),)",
            "tensors": "x_ptr, y_ptr, out_ptr: float32 CUDA tensors of >= n_elements elements, 16-byte aligned",
            "scalars": "n_elements: a multiple of 16",
        },
    ),
    "softmax_kernel": (
        softmax_kernel,
        {
            "out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32", "out_row_stride": "i32",
            "n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr",
        },  # fmt: skip
        {"BLOCK_SIZE": 1024},
        ["out_ptr", "in_ptr", "in_row_stride", "out_row_stride"],
        {"num_warps": 4, "num_stages": 3},
        {
            "grid": "(n_rows,)",
            "tensors": "in_ptr, out_ptr: float32 CUDA tensors (n_rows rows, row stride in elements), 16-byte aligned",
            "scalars": "in_row_stride, out_row_stride: multiples of 16; 1 <= n_cols <= 1024",
        },
    ),
    "matmul_kernel": (
        matmul_kernel,
        {
            **{p: ("*fp16" if p.endswith("_ptr") else "i32") for p in MATMUL_PARAMS},
            # Unit strides: Triton's JIT specializes an integer argument equal to 1 as a
            # constexpr, which makes the k (n) axis contiguous: 16-byte cp.async loads, the
            # software pipeline and its num_stages shared-memory buffers.
            "stride_ak": "constexpr", "stride_bn": "constexpr", "stride_cn": "constexpr",
            "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr",
        },  # fmt: skip
        {
            "stride_ak": 1, "stride_bn": 1, "stride_cn": 1,
            "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
        },  # fmt: skip
        ["a_ptr", "b_ptr", "c_ptr", "N", "K", "stride_am", "stride_bk", "stride_cm"],
        {"num_warps": 8, "num_stages": 3},
        {
            "grid": "(cdiv(M, 128) * cdiv(N, 128),)",
            "tensors": "a (M, K), b (K, N), c (M, N): row-major float16 CUDA tensors, 16-byte aligned",
            "scalars": "N, K, stride_am (= K), stride_bk (= N), stride_cm (= N): multiples of 16; "
            "stride_ak = stride_bn = stride_cn = 1 (constexprs); M any",
        },
    ),
    "desc_copy_kernel": (
        desc_copy_kernel,
        {
            "in_desc": "tensordesc<fp32[32, 64]>",
            "out_desc": "tensordesc<fp32[32, 64]>",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
        },
        {"BLOCK_M": 32, "BLOCK_N": 64},
        [],
        {"num_warps": 4, "num_stages": 3},
        {
            "grid": "(cdiv(M, 32), cdiv(N, 64)) for in/out of shape (M, N)",
            "tensors": "in_desc, out_desc: 2-D float32 CUDA tensors of one shape (M, N) (the tensors "
            "TensorDescriptor.from_tensor(x, [32, 64]) describes): data 16-byte aligned, inner stride 1, "
            "row stride a multiple of 4 elements (16 bytes)",
            "scalars": "none",
        },
    ),
}


def compile_one(name: str, target: "tuple[str, int, int]" = ("cuda", 90, 32)):
    """Compiles kernel ``name`` of :data:`KERNELS` for ``target`` (``GPUTarget``'s fields)."""
    fn, signature, constexprs, divisible, options, _ = KERNELS[name]
    params = list(signature)
    attrs = {(params.index(p),): [["tt.divisibility", 16]] for p in divisible}
    src = ASTSource(fn, signature=dict(signature), constexprs=dict(constexprs), attrs=attrs)
    return triton.compile(src, target=GPUTarget(*target), options=dict(options))
