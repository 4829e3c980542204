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

sys.path.insert(0, str(HERE))
import sources  # noqa: E402
from sources import KERNELS  # noqa: E402


def compile_one(name: str):
    return sources.compile_one(name, TARGET)


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
