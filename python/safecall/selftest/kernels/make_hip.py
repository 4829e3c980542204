"""Writes ``add_one.hipfb`` beside this file: the AMD self-test kernel (``add_one_amdgpu.ll``,
hand-written LLVM IR) compiled for several AMD GPUs and bundled as clang does for HIP.

Each target is compiled with LLVM 19's ``llc`` (``-mtriple=amdgcn-amd-amdhsa -mcpu=TARGET``)
and linked into a code object with the ``lld`` Triton 3.9 bundles (``amd.link_hsaco``); no
ROCm install is needed. The bundle is clang's offload-bundle layout
(``src/gpu_binary/offload_bundle.rs`` says which): an empty host entry, then one
``hipv4-amdgcn-amd-amdhsa--TARGET`` entry per code object. Run from the repository root::

    .venv/bin/python python/safecall/selftest/kernels/make_hip.py
"""

from __future__ import annotations

import pathlib
import struct
import subprocess
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
#: CDNA2 (MI200), CDNA3 (MI300), RDNA3 (Radeon 7000), RDNA4 (Radeon 9000).
TARGETS = ("gfx90a", "gfx942", "gfx1100", "gfx1201")
MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def code_object(target: str, tmp: pathlib.Path) -> bytes:
    from triton._C.libtriton import amd

    obj, out = tmp / f"{target}.o", tmp / f"{target}.hsaco"
    subprocess.run(
        ["llc-19", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj", "-O2",
         str(HERE / "add_one_amdgpu.ll"), "-o", str(obj)],
        check=True,
    )
    amd.link_hsaco(str(obj), str(out))
    return out.read_bytes()


def bundle(entries: list[tuple[str, bytes]]) -> bytes:
    """Clang's layout: magic, entry count, then (offset, size, id length, id) per entry; each
    entry's bytes at a 4096-byte aligned offset."""
    head = MAGIC + struct.pack("<Q", len(entries))
    table = sum(24 + len(i) for i, _ in entries)
    offset = -(-(len(head) + table) // 4096) * 4096
    body = []
    for ident, data in entries:
        head += struct.pack("<QQQ", offset, len(data), len(ident)) + ident.encode()
        body.append((offset, data))
        offset = -(-(offset + len(data)) // 4096) * 4096
    out = bytearray(head)
    for at, data in body:
        out += bytes(at - len(out)) + data
    return bytes(out)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        entries = [("host-x86_64-unknown-linux-gnu-", b"")]
        entries += [(f"hipv4-amdgcn-amd-amdhsa--{t}", code_object(t, pathlib.Path(tmp))) for t in TARGETS]
    (HERE / "add_one.hipfb").write_bytes(bundle(entries))
    print(f"wrote {HERE / 'add_one.hipfb'}: {', '.join(TARGETS)}")


if __name__ == "__main__":
    main()
