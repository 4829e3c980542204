"""Makes the binary fixtures of tests/kernel_params (see README.md there).

Run with Triton 3.9.0 installed (no GPU needed):
    python3 -m venv .venv-triton && .venv-triton/bin/pip install triton==3.9.0
    .venv-triton/bin/python tests/kernel_params/make_fixtures.py
"""

import pathlib
import struct
import subprocess
import tempfile

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = pathlib.Path(__file__).parent


@triton.jit
def scale(x_ptr, y_ptr, n, a, b, flag, h, big):
    i = tl.program_id(0) * 128 + tl.arange(0, 128)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    y = x * a + b.to(tl.float32) + flag.to(tl.float32) + h.to(tl.float32) + big.to(tl.float32)
    tl.store(y_ptr + i, y, mask=m)


@triton.jit
def empty(n):
    pass


def compile_kernel(fn, signature, target=None):
    target = target or GPUTarget("cuda", 90, 32)
    src = ASTSource(fn, signature=signature, constexprs={})
    return triton.compile(src, target=target)


#: The signature of `scale` in every fixture.
SCALE = {
    "x_ptr": "*fp32",
    "y_ptr": "*fp32",
    "n": "i32",
    "a": "fp32",
    "b": "fp64",
    "flag": "i8",
    "h": "i16",
    "big": "i64",
}


def hsaco():
    """`scale` as an AMDGPU code object for gfx942 (Triton links it in-process: no ROCm)."""
    k = compile_kernel(scale, SCALE, GPUTarget("hip", "gfx942", 64))
    (HERE / "scale_gfx942.hsaco").write_bytes(k.asm["hsaco"])


#: Five hand-written AMDGPU kernels for `kernels_gfx942.hsaco`: their explicit parameters are
#: the point (types Triton does not emit, no parameters, static LDS); the bodies are trivial.
KERNELS_LL = """\
target triple = "amdgcn-amd-amdhsa"

@lds = internal addrspace(3) global [256 x i32] poison, align 4

define amdgpu_kernel void @add_one(ptr addrspace(1) %x, ptr addrspace(1) %y, i32 %n) {
  %v = load i32, ptr addrspace(1) %x
  %w = add i32 %v, %n
  store i32 %w, ptr addrspace(1) %y
  ret void
}

define amdgpu_kernel void @scale(ptr addrspace(1) %p, float %a, i8 %flag, double %b, i16 %h) {
  store float %a, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @empty() {
  ret void
}

; 256 x i32 of LDS: 1024 bytes of static group segment.
define amdgpu_kernel void @staticky(ptr addrspace(1) %p) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %s = getelementptr [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %t
  store i32 %t, ptr addrspace(3) %s
  %v = load i32, ptr addrspace(3) @lds
  store i32 %v, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @halves(half %h, bfloat %g, i8 %flag, half %k) {
  ret void
}

; TDM descriptors passed by value as Triton passes them: groups 0-1 (48 bytes) for rank 2,
; all four groups (80 bytes) for rank 3, each followed by one more argument.
define amdgpu_kernel void @tdm2([12 x i32] %desc, i32 %n) {
  ret void
}

define amdgpu_kernel void @tdm3([20 x i32] %desc, ptr addrspace(1) %p) {
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""


def kernels_hsaco(llc="llc-19"):
    """The seven kernels of `KERNELS_LL` as one linked gfx942 code object (v5).

    LLVM 19's `llc` writes a relocatable object; Triton's bundled lld (`amd.link_hsaco`, the
    step Triton's own `make_hsaco` ends with) links it into the shared object that
    `hipModuleLoadData` takes.
    """
    from triton._C.libtriton import amd

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "kernels.ll").write_text(KERNELS_LL)
        target = ["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj"]
        ll, obj = str(tmp / "kernels.ll"), str(tmp / "kernels.o")
        subprocess.run([llc, *target, ll, "-o", obj], check=True)
        amd.link_hsaco(str(tmp / "kernels.o"), str(tmp / "kernels.hsaco"))
        (HERE / "kernels_gfx942.hsaco").write_bytes((tmp / "kernels.hsaco").read_bytes())


# The fatbin layout (the same facts as src/gpu_binary/fatbin.rs reads).
FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_ELF = 2
FLAG_64BIT = 0x1
FLAG_LINUX = 0x10
FLAG_COMPRESSED = 0x2000
ENTRY_HEADER = 64


def member(kind, payload, arch, flags=FLAG_64BIT | FLAG_LINUX):
    padded = payload + b"\0" * (-len(payload) % 8)
    header = struct.pack(
        "<HHIIIIIHHIIIQQQ",
        kind,  # PTX or ELF
        0x0101,  # version
        ENTRY_HEADER,  # header size
        len(padded),  # padded payload size
        0,
        len(payload),  # payload size
        0,
        0,  # minor
        8 if kind == KIND_PTX else 0,  # major (PTX ISA version 8.x)
        arch,  # sm_XX
        0,  # name offset
        0,  # name length
        flags,
        0,
        0,  # uncompressed size (0: not compressed)
    )
    assert len(header) == ENTRY_HEADER
    return header + padded


def fatbin(*members):
    body = b"".join(members)
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def main():
    k = compile_kernel(scale, SCALE)
    e = compile_kernel(empty, {"n": "i32"})
    (HERE / "scale_sm90.cubin").write_bytes(k.asm["cubin"])
    (HERE / "scale_sm90.ptx").write_text(k.asm["ptx"])
    (HERE / "empty_sm90.cubin").write_bytes(e.asm["cubin"])
    ptx = k.asm["ptx"].encode()
    cubin = k.asm["cubin"]
    (HERE / "scale.fatbin").write_bytes(fatbin(member(KIND_ELF, cubin, 90), member(KIND_PTX, ptx, 90)))
    (HERE / "compressed.fatbin").write_bytes(
        fatbin(member(KIND_ELF, cubin[:64], 90, FLAG_64BIT | FLAG_LINUX | FLAG_COMPRESSED))
    )
    # Members that disagree: the cubin of `scale` beside a PTX whose `scale` takes one
    # parameter fewer.
    short = k.asm["ptx"].replace(",\n\t.param .u64 .ptr .global .align 1 scale_param_9", "")
    assert short != k.asm["ptx"]
    (HERE / "disagree.fatbin").write_bytes(
        fatbin(member(KIND_ELF, cubin, 90), member(KIND_PTX, short.encode(), 90))
    )
    hsaco()
    kernels_hsaco()
    print(k.metadata.name, e.metadata.name)


if __name__ == "__main__":
    import sys

    # `make_fixtures.py hsaco` writes only Triton's AMDGPU code object, `make_fixtures.py
    # kernels_hsaco` only the hand-written one (it needs LLVM 19's `llc-19` on PATH).
    only = {"hsaco": hsaco, "kernels_hsaco": kernels_hsaco}
    only[sys.argv[1]]() if sys.argv[1:2] else main()
