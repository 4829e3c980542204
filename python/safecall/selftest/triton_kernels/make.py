"""Compiles the Triton kernels the GPU self-test ships (``sm90/``), with Triton 3.9.0.

Run from the repository root, in the environment that has ``triton==3.9.0`` (no GPU needed:
Triton's bundled ptxas writes the sm_90a cubins)::

    .venv/bin/python python/safecall/selftest/triton_kernels/make.py

It writes, into ``sm90/`` beside this file, per kernel ``NAME.cubin`` and ``NAME.json`` (the
two files Triton's cache holds for a compiled kernel, byte for byte as Triton wrote them: what
``safecall.triton.load`` reads) and one ``manifest.json`` with what ``load`` needs besides
(the signature, the constexprs, the parameters compiled as divisible by 16) and how each kernel
was made. The kernels are compiled as Triton's JIT compiles them for the arguments the
self-test passes (16-byte aligned tensors; integers equal to 1 specialized as constexprs).

Options: ``--out DIR`` writes elsewhere; ``--check`` compiles into a temporary directory and
fails if a cubin differs from the shipped one (the files are deterministic for one Triton
version).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TRITON_VERSION = "3.9.0"
TARGET = ("cuda", 90, 32)
COMMAND = "python python/safecall/selftest/triton_kernels/make.py"

# A fresh cache, so the files copied below are the ones this run wrote. Fused multiply-adds as
# Triton 3.9 does by default (set explicitly: 3.9 warns when it is unset).
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="safecall-selftest-triton-")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


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


def compile_one(name: str):
    fn, signature, constexprs, divisible, options, _ = KERNELS[name]
    params = list(signature)
    attrs = {(params.index(p),): [["tt.divisibility", 16]] for p in divisible}
    src = ASTSource(fn, signature=dict(signature), constexprs=dict(constexprs), attrs=attrs)
    return triton.compile(src, target=GPUTarget(*TARGET), options=dict(options))


def make(out: pathlib.Path) -> dict:
    if triton.__version__ != TRITON_VERSION:
        sys.exit(f"make.py: triton {triton.__version__} is installed; the shipped kernels are Triton {TRITON_VERSION}'s")
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "made_by": f"Triton {triton.__version__}, target cuda sm_90 (GPUTarget{TARGET}, sm_90a cubins by Triton's "
        f"bundled ptxas), TRITON_DEFAULT_FP_FUSION={os.environ['TRITON_DEFAULT_FP_FUSION']}: {COMMAND}",
        "kernels": {},
    }
    for name, (_, signature, constexprs, divisible, options, launch) in KERNELS.items():
        compiled = compile_one(name)
        md = compiled.metadata
        assert md.name == name, (md.name, name)
        files = compiled.metadata_group
        for ext in ("cubin", "json"):
            shutil.copyfile(files[f"{name}.{ext}"], out / f"{name}.{ext}")
        cubin = (out / f"{name}.cubin").read_bytes()
        assert cubin == compiled.asm["cubin"]
        manifest["kernels"][name] = {
            "function": name,
            "cubin": f"{name}.cubin",
            "json": f"{name}.json",
            "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
            "signature": signature,
            "constants": constexprs,
            "divisible": divisible,
            "num_warps": md.num_warps,
            "num_stages": md.num_stages,
            "shared": md.shared,
            "global_scratch_size": md.global_scratch_size,
            "tensordesc_meta": md.tensordesc_meta,
            "launch": launch,
            "made_by": f"Triton {triton.__version__}, target cuda:{TARGET[1]} warp {TARGET[2]}, "
            f"num_warps={options['num_warps']} num_stages={options['num_stages']}: {COMMAND}",
        }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "sm90")
    parser.add_argument("--check", action="store_true", help="compile into a temporary directory and compare cubins")
    args = parser.parse_args()
    out = pathlib.Path(tempfile.mkdtemp()) if args.check else args.out
    manifest = make(out)
    matmul_shared = manifest["kernels"]["matmul_kernel"]["shared"]
    assert matmul_shared > 49152, f"matmul_kernel: shared {matmul_shared} bytes, expected more than 48 KiB"
    total = 0
    for path in sorted(out.iterdir()):
        total += path.stat().st_size
        print(f"{path.stat().st_size:8d}  {path}")
    print(f"{total:8d}  total")
    for name, k in manifest["kernels"].items():
        print(f"{name}: shared {k['shared']} bytes, num_warps {k['num_warps']}, num_stages {k['num_stages']}")
    if args.check:
        stale = [
            n for n, k in manifest["kernels"].items()
            if not (args.out / k["cubin"]).exists() or (args.out / k["cubin"]).read_bytes() != (out / k["cubin"]).read_bytes()
        ]  # fmt: skip
        shutil.rmtree(out)
        if stale:
            sys.exit(f"make.py --check: {', '.join(stale)} differ from {args.out}: rerun make.py")
        print(f"make.py --check: the cubins in {args.out} are up to date")
    shutil.rmtree(os.environ["TRITON_CACHE_DIR"], ignore_errors=True)


if __name__ == "__main__":
    main()
