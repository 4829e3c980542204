"""GPU launches from Python's real tvm_ffi, through the CUDA driver test double.

`SAFECALL_GPU_LIBDIR` holds `launch_<backend>.so` (tests/gpu/launch.scir built by each
backend in tests/gpu/python.rs); `SAFECALL_LIBCUDA_PATH` names the double, which this file also loads with ctypes to
read its records (the same instance the generated code calls).
"""

import ctypes
import json
import os
import pathlib

import pytest
import tvm_ffi

LIBDIR = pathlib.Path(os.environ["SAFECALL_GPU_LIBDIR"])
FAKE = ctypes.CDLL(os.environ["SAFECALL_LIBCUDA_PATH"])
FAKE.safecall_fake_cuda_log.restype = ctypes.c_size_t
FAKE.safecall_fake_cuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]


def log():
    n = FAKE.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    FAKE.safecall_fake_cuda_log(buf, n + 1)
    return [json.loads(line) for line in buf.value.decode().splitlines()]


def launches():
    return [r for r in log() if r["call"] == "cuLaunchKernelEx"]


@pytest.fixture(params=sorted(p.name for p in LIBDIR.glob("launch_*.so")))
def mod(request):
    FAKE.safecall_fake_cuda_reset()
    return tvm_ffi.load_module(str(LIBDIR / request.param))


def configured(mod, grid=(2, 1), block=(64, 1, 1), smem=0, dev=1, stream=None):
    return mod.configured(None, *grid, *block, smem, dev, stream, 1.5, True, -2.25, 7)


def test_launches_reach_the_driver(mod):
    assert mod.twice(1) == 7
    grids = [l["grid"] for l in launches()]
    assert grids == [[1, 1, 1], [2, 1, 1]]
    assert all(l["ctx"] == "primary:1" for l in launches())
    FAKE.safecall_fake_cuda_reset()
    configured(mod, grid=(3, 2), block=(32, 4, 2), smem=100_000)
    (l,) = launches()
    assert (l["kernel"], l["grid"], l["block"], l["shared_mem"]) == ("scale", [3, 2, 1], [32, 4, 2], 100_000)
    assert l["args"][1:] == ["0000c03f", "01", "00000000000002c0", "0700"]
    assert [r["value"] for r in log() if r["call"] == "cuKernelSetAttribute"] == [100_000]


def test_bad_settings_are_value_errors(mod):
    with pytest.raises(ValueError) as e:
        configured(mod, block=(64, 32, 1))
    assert str(e.value).split("\n")[0] == (
        "configured: launch of kernels.scale: block is (64, 32, 1), which is 2048 threads; "
        "a block has at most 1024"
    )
    assert str(e.value).split("\n")[1].startswith("  when calling configured(p: ptr, gx: i64,")
    with pytest.raises(ValueError, match=r"grid is \(0, 1, 1\), but grid\[0\] must be 1 to 2147483647"):
        configured(mod, grid=(0, 1))
    assert launches() == []


def test_driver_errors_are_runtime_errors(mod):
    configured(mod)
    FAKE.safecall_fake_cuda_fail(b"cuLaunchKernelEx", 719)
    with pytest.raises(RuntimeError) as e:
        configured(mod)
    assert str(e.value).split("\n")[0] == (
        "configured: launch of kernels.scale failed on CUDA device 1 with grid (2, 1, 1), block (64, 1, 1), "
        "shared_mem 0: cuLaunchKernelEx returned CUDA_ERROR_LAUNCH_FAILED (error 719: unspecified launch failure)"
    )
    with pytest.raises(RuntimeError, match=r"cannot load device binary 'broken' \(cubin, 18 bytes\)"):
        mod.bad_image()
    with pytest.raises(RuntimeError, match="cannot get kernel 'absent'"):
        mod.bad_kernel()
    configured(mod)


def test_the_environment_stream_is_used():
    """The stream tvm_ffi's environment holds for the device reaches the launch."""
    FAKE.safecall_fake_cuda_reset()
    for name in sorted(p.name for p in LIBDIR.glob("launch_*.so")):
        m = tvm_ffi.load_module(str(LIBDIR / name))
        with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 1), 0x1234):
            assert m.twice(1) == 7
    assert {l["stream"] for l in launches()} == {0x1234}
