"""Checks that each kernel in ``sm90/`` loads with ``safecall.triton`` and becomes a checked
function; prints each function's signature and, with ``--ir``, the generated IR text.

Needs safecall only (no triton, no GPU: nothing is launched)::

    python python/safecall/selftest/triton_kernels/verify.py [--ir]
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any, Callable, Dict

import safecall.triton as sct
from safecall import builder as ir

SM90 = pathlib.Path(__file__).resolve().parent / "sm90"


def _cdiv64(a: Any, b: int) -> Any:
    """ceil(a / b) as an ``i64`` expression (a an IR integer expression)."""
    return ir.ceil_div(ir.cast(ir.i64, a), ir.lit(b, ir.i64))


#: Each kernel's grid, computed from its arguments (Triton's META dict: argument name -> the
#: IR expression, constexpr name -> its value), so the functions take no grid parameter.
GRIDS: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "add_kernel": lambda META: (_cdiv64(META["n_elements"], META["BLOCK_SIZE"]),),
    "softmax_kernel": lambda META: (META["n_rows"],),
    "matmul_kernel": lambda META: (
        _cdiv64(META["M"], META["BLOCK_M"]) * _cdiv64(META["N"], META["BLOCK_N"]),
    ),
    "desc_copy_kernel": lambda META: (
        _cdiv64(META["in_desc"].shape[0], META["BLOCK_M"]),
        _cdiv64(META["in_desc"].shape[1], META["BLOCK_N"]),
    ),
}


def kernels() -> Dict[str, sct.Kernel]:
    manifest = json.loads((SM90 / "manifest.json").read_text())
    out = {}
    for name, k in manifest["kernels"].items():
        out[name] = sct.load(
            SM90 / k["json"], signature=k["signature"], constants=k["constants"], divisible=k["divisible"]
        )
        assert out[name].metadata["shared"] == k["shared"]
    return out


def main() -> None:
    show_ir = "--ir" in sys.argv[1:]
    for name, kernel in kernels().items():
        fn = sct.function(kernel, grid=GRIDS[name])
        print(f"{name}: shared {kernel.metadata['shared']} bytes, num_warps {kernel.metadata['num_warps']}")
        print("  " + fn.__doc__.splitlines()[0])
        if show_ir:
            text = sct.module({name: kernel}, grid=GRIDS[name]).text()
            # The cubin is spelled inline as bytes: leave it out.
            print("\n".join(
                line if not line.lstrip().startswith('data b"') else line[: line.index('b"') + 20] + '..."'
                for line in text.splitlines()
            ))
            print()


if __name__ == "__main__":
    main()
