"""GPU launches from the Python package: the builder's device binaries and launch statements,
and JIT-compiled launches run against the CUDA driver test double (tests/fake_cuda, found
next to the Rust build outputs), whose records this file reads with ctypes."""

import ctypes
import json
import os

import pytest

import safecall
import safecall as sc
from support import ROOT

PTX = (ROOT / "examples" / "ir" / "cuda_add_one.ptx").read_bytes()
FAKE_PATH = ROOT / "target" / "debug" / "deps" / "libsafecall_fake_cuda.so"


def build_cuda_add_one():
    m = sc.ModuleBuilder("cuda_add_one")
    m.device_binary("kernels", "ptx", PTX, ["add_one", "empty"])
    f = m.function("add_one", doc="y = x + 1 on a CUDA device (float32), 256 threads per block.")
    x = f.tensor("x", ["n"], "float32", device="cuda", index=sc.i32)
    y = f.tensor("y", ["n"], "float32", device="cuda")
    n = sc.var("n")
    with f.if_(n > 0):
        f.launch("kernels", "add_one", x.data, y.data, sc.cast(sc.u32, n), grid=[sc.ceil_div(n, 256)], block=[256])
    g = m.function("empty", doc="Launches a kernel that does nothing, on one thread of the device of `x`.")
    g.tensor("x", ["n"], "float32", device="cuda")
    g.launch("kernels", "empty", grid=1, block=1)
    return m


def test_the_builder_makes_the_cuda_example():
    path = ROOT / "examples" / "ir" / "cuda_add_one.scir"
    text = safecall.emit(safecall.parse(path.read_text(), str(path)), "ir")
    assert safecall.emit(build_cuda_add_one().build(), "ir") == text


def test_build_hands_device_binaries_over_as_bytes():
    """`ModuleBuilder.build` gives the parser the binary's bytes beside the text (parse's
    `files`); the module equals the one parsed from `text()`, where they are an escaped `b"..."`."""
    every_byte = bytes(range(256)) + b'"\\"' + PTX
    m = sc.ModuleBuilder("m")
    m.device_binary("k", "cubin", every_byte, ["add_one"])
    assert 'data b"' in m.text()
    built = m.build()
    assert "file " in built.source and 'data b"' not in built.source
    assert safecall.emit(built, "ir") == safecall.emit(safecall.parse(m.text()), "ir")
    text = 'module m;\n\ndevice_binary k {\n    format ptx;\n    file "in memory.ptx";\n    kernels [add_one];\n}\n'
    given = safecall.parse(text, files={"in memory.ptx": PTX})
    assert safecall.emit(given, "ir") == safecall.emit(build_cuda_add_one_binary_only(), "ir")
    # A path `files` does not hold is read from the disk, as without it.
    with pytest.raises(safecall.IRError, match="cannot read device binary file `in memory.ptx`"):
        safecall.parse(text, files={"other.ptx": PTX})


def build_cuda_add_one_binary_only():
    m = sc.ModuleBuilder("m")
    m.device_binary("k", "ptx", PTX, ["add_one"])
    return safecall.parse(m.text())


def test_launch_settings_and_errors():
    m = sc.ModuleBuilder("m")
    m.device_binary("k", "cubin", b"\x7fELF", ["g"])
    f = m.function("f")
    p = f.param("p", sc.ptr)
    f.launch("k", "g", p, 1.5, grid=(2, 3), block=[128, 2], cluster=[2, 1, 1], shared_mem=65536, stream=p, device=0)
    assert "launch k.g[grid=(2, 3), block=(128, 2), cluster=(2, 1, 1), shared_mem=65536, stream=p, device=0](p, 1.5);" in m.text()
    # The image is no cubin: the module is valid, but its launches are not checked against the
    # kernel's parameters, and the module says so.
    [warning] = m.build().warnings
    assert warning.message.startswith(
        "the kernel parameters of device binary `k` (cubin) cannot be read: not a little-endian ELF64 file"
    ), warning.message
    assert warning.subject == "device_binary `k`"
    assert warning.rendered.startswith("warning: ")
    assert build_cuda_add_one().build().warnings == []
    with pytest.raises(ValueError, match="format must be"):
        m.device_binary("bad", "sass", b"x", ["g"])
    bad = sc.ModuleBuilder("bad")
    bad.device_binary("k", "ptx", b".entry g()", ["g"])
    bad.function("f").launch("k", "nope", grid=1, block=1, device=0)
    with pytest.raises(safecall.IRError, match="unknown kernel `nope`: device binary `k` lists g"):
        bad.build()


def test_jit_launches_through_the_driver_named_by_the_environment():
    fake = _fake_driver()
    m = sc.ModuleBuilder("launch_jit")
    m.device_binary("kernels", "ptx", PTX, ["add_one", "empty"])
    f = m.function("go")
    d = f.param("d", sc.i32)
    f.launch("kernels", "empty", grid=[4, 2], block=[32], device=d)
    jit = safecall.jit(m.build())
    jit.go(1)
    launches = _launches(fake)
    assert [(l["kernel"], l["grid"], l["block"], l["ctx"]) for l in launches] == [("empty", [4, 2, 1], [32, 1, 1], "primary:1")]
    with pytest.raises(ValueError, match=r"go: launch of kernels.empty: device is -1"):
        jit.go(-1)


_SHARED_DRIVER_RUN = r"""
import ctypes, json, os, sys
import safecall, safecall as sc
fake = ctypes.CDLL(os.environ["SAFECALL_LIBCUDA_PATH"])
fake.safecall_fake_cuda_log.restype = ctypes.c_size_t
fake.safecall_fake_cuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
def calls():
    n = fake.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(buf, n + 1)
    return [json.loads(l)["call"] for l in buf.value.decode().splitlines()]
def module(name):
    m = sc.ModuleBuilder(name)
    m.device_binary("kernels", "ptx", open(sys.argv[1], "rb").read(), ["add_one", "empty"])
    f = m.function("go")
    f.launch("kernels", "empty", grid=[1], block=[32], device=f.param("d", sc.i32))
    return safecall.jit(m.build())
out = {}
first = module("first")
fake.safecall_fake_cuda_fail(b"cuInit", 100)
try:
    first.go(0)
except RuntimeError as e:
    out["failed start"] = str(e).split("\n")[0]
fake.safecall_fake_cuda_reset()
first.go(0)
out["retry"] = calls()
second = module("second")
fake.safecall_fake_cuda_reset()
second.go(0)
out["second module"] = calls()
print(json.dumps(out))
"""


def test_jit_modules_find_the_driver_once_per_process_and_retry_a_failed_start():
    """In a fresh process (the driver table JIT modules share is process-wide): the first
    module's failed start is its error and is retried on its next call; a second module finds
    the driver with no call at all."""
    import subprocess
    import sys

    _fake_driver()
    env = dict(os.environ, SAFECALL_LIBCUDA_PATH=str(FAKE_PATH))
    proc = subprocess.run([sys.executable, "-c", _SHARED_DRIVER_RUN, str(ROOT / "examples" / "ir" / "cuda_add_one.ptx")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["failed start"] == (
        "cannot launch CUDA kernels: cuInit failed: CUDA_ERROR_NO_DEVICE (error 100: no CUDA-capable device is detected)"
    )
    assert out["retry"].count("cuInit") == 1 and out["retry"].count("cuGetProcAddress_v2") > 10, out["retry"]
    assert "cuLaunchKernelEx" in out["retry"]
    assert "cuInit" not in out["second module"] and "cuGetProcAddress_v2" not in out["second module"], out["second module"]
    assert out["second module"].count("cuLibraryLoadData") == 1 and "cuLaunchKernelEx" in out["second module"]


def _fake_driver():
    if not FAKE_PATH.exists():
        reason = f"{FAKE_PATH} is missing (cargo test builds it)"
        if os.environ.get("CI") in ("true", "1"):
            pytest.fail(reason)
        pytest.skip(reason)
    os.environ["SAFECALL_LIBCUDA_PATH"] = str(FAKE_PATH)
    fake = ctypes.CDLL(str(FAKE_PATH))
    fake.safecall_fake_cuda_log.restype = ctypes.c_size_t
    fake.safecall_fake_cuda_reset()
    return fake


def _launches(fake):
    n = fake.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(buf, n + 1)
    return [r for r in map(json.loads, buf.value.decode().splitlines()) if r["call"] == "cuLaunchKernelEx"]


def test_production_launch_settings_from_the_builder():
    m = sc.ModuleBuilder("settings")
    m.device_binary("kernels", "ptx", PTX, ["add_one", "empty"])
    f = m.function("go")
    coop = f.param("coop", sc.bool_)
    f.launch(
        "kernels",
        "empty",
        grid=[8],
        block=[128],
        device=0,
        cluster=[2],
        cluster_policy="spread",
        preferred_cluster=[4],
        pdl=True,
        cooperative=coop,
        priority=-2,
    )
    assert (
        "launch kernels.empty[grid=(8), block=(128), cluster=(2), device=0, pdl=true, cooperative=coop, "
        "cluster_policy=spread, preferred_cluster=(4), priority=-2]();" in m.text()
    )
    with pytest.raises(ValueError, match="cluster_policy must be 'default', 'spread' or 'load_balancing', not 'round'"):
        f.launch("kernels", "empty", grid=1, block=1, device=0, cluster_policy="round")
    fake = _fake_driver()
    jit = safecall.jit(m.build())
    jit.go(True)
    jit.go(False)
    records = [
        (l["attrs"], l["pdl"], l["cooperative"], l["cluster"], l["cluster_policy"], l["preferred_cluster"], l["priority"])
        for l in _launches(fake)
    ]
    # Attribute ids (CUlaunchAttributeID): PDL 6, cooperative 2, cluster 4, policy 5,
    # preferred cluster 11, priority 8; SPREAD is 1.
    assert records == [
        ([6, 2, 4, 5, 11, 8], 1, 1, [2, 1, 1], 1, [4, 1, 1], -2),
        ([6, 2, 4, 5, 11, 8], 1, 0, [2, 1, 1], 1, [4, 1, 1], -2),
    ]
    bad = sc.ModuleBuilder("bad")
    bad.device_binary("kernels", "ptx", PTX, ["empty"])
    bad.function("f").launch("kernels", "empty", grid=1, block=1, device=0, pdl=1)
    with pytest.raises(safecall.IRError, match="pdl must be bool, found i64"):
        bad.build()


TMA_PTX = (
    b".visible .entry copy(.param .align 64 .b8 src[128], .param .align 64 .b8 dst[128], .param .u32 m) { ret; }\n"
)


def _aligned_halves(shape, offset_bytes=0):
    """A float16 array of `shape` whose data is 16-byte aligned plus `offset_bytes`."""
    import numpy as np

    count = int(np.prod(shape))
    buf = np.zeros(count + 64, dtype=np.float16)
    start = (-buf.ctypes.data % 16 + offset_bytes) // 2
    return buf[start : start + count].reshape(shape)


def test_tensormap_from_the_builder_encodes_once_and_passes_the_descriptor():
    m = sc.ModuleBuilder("tma")
    m.device_binary("kernels", "ptx", TMA_PTX, ["copy"])
    f = m.function("copy")
    src = f.tensor("src", ["m", "n"], "float16", strides="any")
    dst = f.tensor("dst", ["m", "n"], "float16")
    assert sc.tensormap(src, box=(64, 64), swizzle=128, l2_promotion=128).text == (
        "tensormap(src, box=(64, 64), swizzle=b128, l2_promotion=b128)"
    )
    f.launch(
        "kernels",
        "copy",
        sc.tensormap(src, box=(64, 64), swizzle=128, l2_promotion=128),
        sc.tensormap(dst, box=[32, sc.lit(64, sc.i32)], element_strides=(1, 2), oob_fill="nan"),
        sc.cast(sc.u32, sc.var("m")),
        grid=[1],
        block=[128],
        device=0,
    )
    assert "tensormap(dst, box=(32, 64i32), element_strides=(1, 2), oob_fill=nan)" in m.text()
    fake = _fake_driver()
    jit = safecall.jit(m.build())
    a, b = _aligned_halves((128, 64)), _aligned_halves((128, 64))
    jit.copy(a, b)
    jit.copy(a, b)
    n = fake.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(buf, n + 1)
    records = [json.loads(line) for line in buf.value.decode().splitlines()]
    encodes = [r for r in records if r["call"] == "cuTensorMapEncodeTiled"]
    # Two descriptors encoded on the first call; the second call hits the cache.
    assert [(e["address"], e["dims"], e["strides"], e["box"], e["element_strides"]) for e in encodes] == [
        (a.ctypes.data, [64, 128], [128], [64, 64], [1, 1]),
        (b.ctypes.data, [64, 128], [128], [64, 32], [2, 1]),
    ]
    assert [(e["swizzle"], e["l2_promotion"], e["oob_fill"], e["dtype"]) for e in encodes] == [(3, 2, 0, 6), (0, 0, 1, 6)]
    launches = _launches(fake)
    assert len(launches) == 2 and launches[0]["args"] == launches[1]["args"]
    words = [int.from_bytes(bytes.fromhex(launches[0]["args"][0])[8 * i : 8 * i + 8], "little") for i in range(16)]
    assert words[0] == a.ctypes.data and words[2:4] == [64, 128]
    assert [e["map_align"] for e in encodes] == [0, 0], "128-byte aligned storage"
    with pytest.raises(ValueError, match=r"copy: launch of kernels.copy: kernel argument 0 \(tensormap of 'src'\): the global address 0x[0-9a-f]+ \(data \+ byte_offset\) is not aligned to 16 bytes"):
        jit.copy(_aligned_halves((128, 64), 2), b)
    with pytest.raises(safecall.IRError, match="unknown swizzle `b100`"):
        g = sc.ModuleBuilder("bad")
        g.device_binary("kernels", "ptx", TMA_PTX, ["copy"])
        h = g.function("copy")
        x = h.tensor("x", ["m", "n"], "float16")
        h.launch("kernels", "copy", sc.tensormap(x, box=(8, 8), swizzle=100), sc.tensormap(x, box=(8, 8)), 1, grid=1, block=1, device=0)
        g.build()
    with pytest.raises(TypeError, match="tensormap takes a tensor parameter"):
        sc.tensormap(sc.var("n"), box=(8,))


def test_tensormap_im2col_from_the_builder():
    m = sc.ModuleBuilder("conv")
    m.device_binary("kernels", "ptx", b".visible .entry conv(.param .align 64 .b8 x[128], .param .u32 n) { ret; }\n", ["conv"])
    f = m.function("conv")
    x = f.tensor("x", ["n", "h", "w", "c"], "float16")
    p = f.param("p", sc.i32)
    f.launch(
        "kernels",
        "conv",
        sc.tensormap_im2col(x, lower=(-1, -1), upper=(1, 1), channels=64, pixels=p, swizzle=128),
        sc.cast(sc.u32, sc.var("n")),
        grid=1,
        block=128,
        device=0,
    )
    assert "tensormap_im2col(x, lower=(-1, -1), upper=(1, 1), channels=64, pixels=p, swizzle=b128)" in m.text()
    fake = _fake_driver()
    jit = safecall.jit(m.build())
    import numpy as np

    buf = np.zeros(2 * 8 * 8 * 64 + 64, dtype=np.float16)
    start = (-buf.ctypes.data % 16) // 2
    a = buf[start : start + 2 * 8 * 8 * 64].reshape(2, 8, 8, 64)
    jit.conv(a, 32)
    n = fake.safecall_fake_cuda_log(None, 0)
    text = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(text, n + 1)
    [e] = [r for r in map(json.loads, text.value.decode().splitlines()) if r["call"] == "cuTensorMapEncodeIm2col"]
    assert (e["dims"], e["lower"], e["upper"], e["channels"], e["pixels"]) == ([64, 8, 8, 2], [-1, -1], [1, 1], 64, 32)
    with pytest.raises(ValueError, match=r"pixels is 0; it must be 1 to 1024"):
        jit.conv(a, 0)


def test_tensormap_packed_dtypes_from_the_builder_count_values():
    import numpy as np

    m = sc.ModuleBuilder("fp4")
    m.device_binary("kernels", "ptx", TMA_PTX, ["copy"])
    f = m.function("copy")
    src = f.tensor("src", ["m", "k"], "uint8")
    dst = f.tensor("dst", ["p", "q"], "uint8")
    f.launch(
        "kernels",
        "copy",
        sc.tensormap(src, box=(8, 128), swizzle=128, dtype="u4x16_align16"),
        sc.tensormap(dst, box=(8, 64), dtype="u4x16_align8"),
        sc.cast(sc.u32, sc.var("m")),
        grid=1,
        block=32,
        device=0,
    )
    assert "tensormap(src, box=(8, 128), swizzle=b128, dtype=u4x16_align16)" in m.text()
    fake = _fake_driver()
    jit = safecall.jit(m.build())
    buf = np.zeros(16 * 64 + 64, dtype=np.uint8)
    start = -buf.ctypes.data % 32
    a = buf[start : start + 16 * 64].reshape(16, 64)
    jit.copy(a, a)
    n = fake.safecall_fake_cuda_log(None, 0)
    text = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(text, n + 1)
    records = [json.loads(line) for line in text.value.decode().splitlines()]
    encodes = [r for r in records if r["call"] == "cuTensorMapEncodeTiled"]
    # 64 bytes a row are 128 4-bit values; strides stay in bytes.
    assert [(e["dtype"], e["dims"], e["strides"], e["box"]) for e in encodes] == [
        (14, [128, 16], [64], [128, 8]),
        (13, [128, 16], [64], [64, 8]),
    ]
    b = buf[start + 16 : start + 16 + 15 * 64].reshape(15, 64)
    with pytest.raises(ValueError, match=r"the global address 0x[0-9a-f]+ \(data \+ byte_offset\) is not aligned to 32 bytes, as TMA requires for dtype=u4x16_align16"):
        jit.copy(b, a)


def test_kernel_params_reads_what_the_verifier_checks_launches_against():
    """``_native.kernel_params``: one kernel's parameter table as the verifier reads it, a
    hashable object equal for the same kernel in the same binary, unequal for another kernel's
    or another format's declaration; None where the table is unknown (a kernel the binary does
    not have, an empty or unreadable image, a fat binary whose members disagree); an unknown
    format is a ``ValueError``."""
    from safecall._native import kernel_params

    fixtures = ROOT / "tests" / "kernel_params"
    scale = (fixtures / "scale_sm90.cubin").read_bytes()
    table = kernel_params("cubin", scale, "scale")
    assert len(table) == 10 and repr(table).startswith("KernelParams(8-byte, 8-byte, 4-byte")
    again = kernel_params("cubin", bytes(scale), "scale")
    assert again == table and hash(again) == hash(table) and {table: 1}[again] == 1
    empty = kernel_params("cubin", (fixtures / "empty_sm90.cubin").read_bytes(), "empty")
    assert len(empty) == 3 and empty != table
    # The PTX of the same kernel declares types, where the cubin gives offsets only.
    ptx = kernel_params("ptx", (fixtures / "scale_sm90.ptx").read_bytes(), "scale")
    assert len(ptx) == 10 and ptx != table and "u64" in repr(ptx)
    assert len(kernel_params("fatbin", (fixtures / "scale.fatbin").read_bytes(), "scale")) == 10
    assert kernel_params("fatbin", (fixtures / "disagree.fatbin").read_bytes(), "scale") is None
    assert len(kernel_params("hsaco", (fixtures / "scale_gfx942.hsaco").read_bytes(), "scale")) == 10
    assert kernel_params("cubin", scale, "empty") is None
    assert kernel_params("cubin", b"", "scale") is None
    assert kernel_params("cubin", b"\x7fELF not really", "scale") is None
    with pytest.raises(ValueError, match="unknown device binary format 'elf' \\(expected one of cubin, fatbin, ptx, hsaco, hipfb\\)"):
        kernel_params("elf", scale, "scale")
