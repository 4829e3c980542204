"""``safecall.triton``: what it checks (each rejected call and its message, naming the Triton
argument), its options, the grid forms, kernels read from Triton's cache files, host tensor
descriptors, scratch memory from the environment allocator, the kernels it refuses, and a
``.so`` of several kernels that loads with only ``tvm_ffi``.

Kernels are compiled for sm_90 on this machine (no GPU, no torch); launches go to the CUDA
driver double (tests/fake_cuda). Triton's own launcher is not needed here (no C compiler):
test_triton_differential.py compares the two launchers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from support import ROOT, fake_cuda

os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / "target" / "triton-cache"))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from support.triton_fakes import skip_unless_triton  # noqa: E402

skip_unless_triton()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import tvm_ffi  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import safecall.triton as sct  # noqa: E402
from support.triton_fakes import CudaTensor, FakeAddressAllocator  # noqa: E402

X, Y = 0x7F00_0000_1000, 0x7F00_0000_2000


@triton.jit
def scale(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def fill(y_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, value, mask=offs < n)


@triton.jit
def desc_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd.store([tl.program_id(0) * BM, 0], xd.load([tl.program_id(0) * BM, 0]))


@triton.jit
def host_desc_copy(x_desc, y_desc, BM: tl.constexpr):
    y_desc.store([tl.program_id(0) * BM, 0], x_desc.load([tl.program_id(0) * BM, 0]))


@triton.jit
def typed_fill(y_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], DTYPE), mask=offs < n)


SCALE_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"}
DIVISIBLE = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]}


def _compile(fn, signature, constexprs, attrs=None):
    src = ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs or {})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


@functools.lru_cache(maxsize=None)
def scale_kernel():
    """``scale`` with x_ptr, y_ptr aligned and n divisible by 16, as Triton's JIT specializes
    them for 16-aligned tensors and a multiple of 16."""
    return _compile(scale, SCALE_SIG, {"BLOCK": 256}, DIVISIBLE)


@functools.lru_cache(maxsize=None)
def fill_kernel():
    return _compile(fill, {"y_ptr": "*fp32", "n": "i64", "value": "fp32", "BLOCK": "constexpr"}, {"BLOCK": 128})


@pytest.fixture(scope="module")
def fake():
    return fake_cuda.load()


@pytest.fixture(scope="module")
def launch():
    return sct.function(scale_kernel(), grid=1)


def fp16(address=X, **kw):
    return CudaTensor(address, "float16", **kw)


def good_args():
    return [(4,), fp16(X, shape=(32, 32)), fp16(Y, shape=(1024,)), 1024, 0.5, 256]


def test_a_checked_call_launches(fake, launch):
    fake.safecall_fake_cuda_reset()
    launch(*good_args())
    [record] = fake_cuda.launches(fake)
    assert (record["kernel"], record["grid"], record["block"]) == ("scale", [4, 1, 1], [128, 1, 1])
    assert record["args"][0] == (X).to_bytes(8, "little").hex()
    assert record["args"][2] == (1024).to_bytes(4, "little").hex()


def test_pointers_pass_the_first_element_like_data_ptr(fake, launch):
    """Triton passes ``tensor.data_ptr()``: a DLPack tensor with a byte offset passes
    ``data + byte_offset``, strided and 0-d tensors are fine."""
    fake.safecall_fake_cuda_reset()
    x = fp16(X, shape=(4, 8), strides=(1, 4), byte_offset=64)
    launch((1,), x, fp16(Y, shape=()), 16, 1.0, 256)
    [record] = fake_cuda.launches(fake)
    assert record["args"][0] == (X + 64).to_bytes(8, "little").hex()
    assert record["args"][0] == x.data_ptr().to_bytes(8, "little").hex()


#: Each rejected call: (what is wrong, arguments, exception, message's first line).
REJECTED = [
    ("dtype", lambda a: a.__setitem__(1, CudaTensor(X, "float32")), TypeError,
     "scale: argument 'x_ptr' (#1): dtype is float32, expected float16"),
    ("CPU tensor", lambda a: a.__setitem__(2, CudaTensor(Y, "float16", device_type=1)), ValueError,
     "scale: argument 'y_ptr' (#2): device is cpu:0, expected a cuda tensor"),
    ("other device", lambda a: a.__setitem__(2, fp16(Y, device_id=1)), ValueError,
     "scale: argument 'y_ptr' (#2): device id is 1, expected 0 (the device id of x_ptr)"),
    ("misaligned pointer", lambda a: a.__setitem__(1, fp16(X + 2)), ValueError,
     f"scale: argument 'x_ptr' (#1): data pointer + byte_offset {hex(X + 2)} is not aligned to 16 bytes"),
    ("misaligned by byte_offset", lambda a: a.__setitem__(1, fp16(X, byte_offset=8)), ValueError,
     f"scale: argument 'x_ptr' (#1): data pointer + byte_offset {hex(X + 8)} is not aligned to 16 bytes"),
    ("NULL data with elements", lambda a: a.__setitem__(1, CudaTensor(None, "float16")), ValueError,
     "scale: argument 'x_ptr' (#1): data pointer is NULL but the tensor has elements"),
    ("a raw address", lambda a: a.__setitem__(1, X), TypeError,
     "scale: argument 'x_ptr' (#1): expected Tensor, got int"),
    ("None pointer", lambda a: a.__setitem__(1, None), TypeError,
     "scale: argument 'x_ptr' (#1): expected Tensor, got None"),
    ("not divisible", lambda a: a.__setitem__(3, 1000), ValueError,
     "scale: argument 'n' (#3): 1000 is not a multiple of 16"),
    ("i32 out of range", lambda a: a.__setitem__(3, 2**31), ValueError,
     "scale: argument 'n' (#3): 2147483648 is out of range for i32 [-2147483648, 2147483647]"),
    ("float for an int", lambda a: a.__setitem__(3, 16.0), TypeError,
     "scale: argument 'n' (#3): expected int, got float"),
    ("constexpr", lambda a: a.__setitem__(5, 128), ValueError,
     "scale: argument 'BLOCK' (#5): expected the constant 256, got 128"),
    ("grid length", lambda a: a.__setitem__(0, (4, 1)), ValueError,
     "scale: argument 'grid' (#0): expected 1 element, got 2"),
    ("negative grid", lambda a: a.__setitem__(0, (-1,)), ValueError,
     "scale: argument 'grid' (#0): x is -1, expected 0 to 2147483647"),
    ("grid above a C int", lambda a: a.__setitem__(0, (2**31,)), ValueError,
     "scale: argument 'grid' (#0): x is 2147483648, expected 0 to 2147483647"),
]


@pytest.mark.parametrize("change, kind, message", [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED])
def test_rejected_calls_name_the_triton_argument(fake, launch, change, kind, message):
    args = good_args()
    change(args)
    fake.safecall_fake_cuda_reset()
    with pytest.raises(kind) as info:
        launch(*args)
    assert str(info.value).splitlines()[0].startswith(message), str(info.value)
    assert fake_cuda.launches(fake) == [], "a rejected call launched"


def test_argument_count_message(launch):
    with pytest.raises(TypeError, match=r"expects 6 arguments, but 5 were given|6 arguments"):
        launch(*good_args()[:-1])


def test_options_relax_the_checks(fake):
    relaxed = sct.function(scale_kernel(), grid=1, check_dtypes=False, check_divisibility=False, constexpr_params=False)
    assert "BLOCK" not in relaxed.__doc__.splitlines()[0]
    fake.safecall_fake_cuda_reset()
    relaxed((1,), CudaTensor(X + 2, "float32"), fp16(Y), 1000, 2.0)
    [record] = fake_cuda.launches(fake)
    assert record["args"][0] == (X + 2).to_bytes(8, "little").hex()
    assert record["args"][2] == (1000).to_bytes(4, "little").hex()


def _load_with_the_driver(fake, kernel) -> int:
    """``kernel``'s ``CUfunction``, loaded as Triton's ``load_binary`` loads it (device 0's
    primary context made current, ``cuModuleLoadData``, ``cuModuleGetFunction``)."""
    import ctypes

    ctx, module, function = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    device = ctypes.c_int()
    assert fake.cuInit(0) == 0
    assert fake.cuDeviceGet(ctypes.byref(device), 0) == 0
    assert fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device) == 0
    assert fake.cuCtxSetCurrent(ctx) == 0
    assert fake.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(kernel.asm["cubin"])) == 0
    name = kernel.metadata.name.encode()
    assert fake.cuModuleGetFunction(ctypes.byref(function), module, ctypes.c_char_p(name)) == 0
    return function.value


def test_a_callers_handle_is_launched_as_it_is_on_its_device_only(fake):
    """``handle=(function, device)``: the launch uses the caller's loaded kernel (nothing
    loaded), with the same launch record as the function that loads its own cubin; a launch
    device other than the handle's is a ValueError naming the first tensor."""
    handle = _load_with_the_driver(fake, scale_kernel())
    loaded = sct.function(scale_kernel(), grid=1, handle=(handle, 0))
    fake.safecall_fake_cuda_reset()
    loaded(*good_args())
    calls = [r["call"] for r in fake_cuda.records(fake)]
    assert not [c for c in calls if "Load" in c or "GetFunction" in c or "GetKernel" in c], calls
    [ours] = fake_cuda.launches(fake)
    fake.safecall_fake_cuda_reset()
    sct.function(scale_kernel(), grid=1)(*good_args())
    [own] = fake_cuda.launches(fake)
    assert ours == own
    elsewhere = good_args()
    elsewhere[1] = fp16(X, shape=(32, 32), device_id=1)
    elsewhere[2] = fp16(Y, shape=(1024,), device_id=1)
    with pytest.raises(ValueError) as e:
        loaded(*elsewhere)
    assert str(e.value).splitlines()[0] == (
        "scale: argument 'x_ptr' (#1): device is cuda:1, expected cuda:0 (the device the kernel's handle was loaded on)"
    )


@pytest.mark.parametrize(
    "handle, error",
    [((0, 0), ValueError), ((1, -1), ValueError), ((2**64, 0), ValueError), ((1, 2**31), ValueError),
     ((1,), TypeError), ((1, True), TypeError), ([1, 0], TypeError), ((1, 0.0), TypeError)],
)
def test_bad_handles_are_refused(handle, error):
    with pytest.raises(error, match=r"handle is \(a nonzero kernel handle, a device ordinal\), two ints"):
        sct.function(scale_kernel(), grid=1, handle=handle)


def test_a_handle_stays_in_its_process(tmp_path):
    """A handle is an address of the process that loaded the kernel: a module (which may be
    built into a library) or a library refuses it."""
    with pytest.raises(TypeError, match="module\\(\\) takes no handle: a kernel handle belongs to the process"):
        sct.module({"a": scale_kernel()}, handle=(1, 0))
    with pytest.raises(TypeError, match="build\\(\\) takes no handle"):
        sct.build({"a": scale_kernel()}, tmp_path / "k.so", grid=1, handle=(1, 0))
    assert not (tmp_path / "k.so").exists()
    # Options passed to everything alike: no handle is no handle.
    sct.module({"a": scale_kernel()}, grid=1, handle=None)


def test_a_handle_the_driver_does_not_know_is_its_error(fake):
    """The launch uses the handle given: one the driver never returned is its error."""
    unknown = sct.function(scale_kernel(), grid=1, handle=(0x7FFF_0000_0000, 0))
    with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_HANDLE"):
        unknown(*good_args())


def test_an_empty_grid_launches_nothing_whatever_the_device(fake):
    """As without a handle (and as Triton's launcher): an empty grid returns before the device
    check."""
    handle = _load_with_the_driver(fake, scale_kernel())
    loaded = sct.function(scale_kernel(), grid=1, handle=(handle, 0))
    fake.safecall_fake_cuda_reset()
    loaded((0,), fp16(X, shape=(32, 32), device_id=1), fp16(Y, shape=(1024,), device_id=1), 1024, 0.5, 256)
    assert fake_cuda.launches(fake) == []


def test_a_computed_grid_is_not_passed(fake):
    by_meta = sct.function(scale_kernel(), grid=lambda META: (triton.cdiv(META["n"], META["BLOCK"]),))
    by_text = sct.function(scale_kernel(), grid=["ceil_div(cast<i64>(n), 256)", 2])
    fake.safecall_fake_cuda_reset()
    by_meta(fp16(), fp16(Y), 1040, 0.5, 256)
    by_text(fp16(), fp16(Y), 1040, 0.5, 256)
    by_meta(fp16(), fp16(Y), 0, 0.5, 256)  # an empty grid launches nothing, as in Triton
    assert [r["grid"] for r in fake_cuda.launches(fake)] == [[5, 1, 1], [5, 2, 1]]


def test_a_computed_grid_is_checked(fake):
    wide = sct.function(scale_kernel(), grid=lambda META: (META["n"] * 64,))
    with pytest.raises(ValueError, match=r"scale: the grid's x is -1024, expected 0 to 2147483647"):
        wide(fp16(), fp16(Y), -16, 1.0, 256)


def test_kernels_from_tritons_cache_files(fake, launch):
    """The cubin and ``.json`` metadata Triton writes (the ``.ttir`` beside them gives the
    divisibility) make the same function as the compiled kernel."""
    files = scale_kernel().metadata_group
    json_path = next(p for name, p in files.items() if name.endswith(".json") and not name.startswith("__grp__"))
    k = sct.load(json_path, signature=SCALE_SIG, constants={"BLOCK": 256})
    compiled = sct.from_compiled(scale_kernel())
    fields = lambda k: (k.name, k.cubin, k.signature, k.constants, k.divisible)  # noqa: E731
    assert fields(k) == fields(compiled)
    assert k.divisible == {"x_ptr", "y_ptr", "n"}
    from_disk = sct.function(k, grid=1)
    fake.safecall_fake_cuda_reset()
    from_disk(*good_args())
    launch(*good_args())
    ours, reference = fake_cuda.launches(fake)
    assert ours == reference
    with pytest.raises(ValueError, match="not a multiple of 16"):
        from_disk((4,), fp16(), fp16(Y), 1000, 0.5, 256)


def test_other_triton_versions_are_refused(tmp_path):
    files = scale_kernel().metadata_group
    json_path = next(p for name, p in files.items() if name.endswith(".json") and not name.startswith("__grp__"))
    md = json.loads(open(json_path).read())
    md["triton_version"] = "3.8.0"
    (tmp_path / "scale.json").write_text(json.dumps(md))
    with pytest.raises(sct.TritonVersionError, match=r"kernel compiled by Triton 3\.8\.0: safecall\.triton supports Triton 3\.9\.x only"):
        sct.load(tmp_path / "scale.json", signature=SCALE_SIG)
    del md["triton_version"]
    (tmp_path / "scale.json").write_text(json.dumps(md))
    with pytest.raises(sct.TritonVersionError, match=r"the kernel's metadata names no `triton_version`"):
        sct.load(tmp_path / "scale.json", signature=SCALE_SIG)


@functools.lru_cache(maxsize=None)
def scratch_kernel():
    """A kernel with device-side TMA descriptors, which live in its global scratch memory."""
    return _compile(desc_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                    {"BM": 64, "BN": 64})


SCRATCH = 0x7F00_5C00_0000


def scratch_call(launch, grid):
    launch(grid, CudaTensor(X, "float32"), CudaTensor(Y, "float32"), 256, 64, 64, 64)


def test_global_scratch_comes_from_the_environment_allocator(fake):
    """Per launch, ``grid_x * grid_y * grid_z * num_ctas * global_scratch_size`` bytes on the
    launch device, passed as the first trailing pointer and released after the launch; an
    empty grid allocates nothing (and launches nothing)."""
    md = scratch_kernel().metadata
    assert md.global_scratch_size > 0 and md.profile_scratch_size == 0
    launch = sct.function(scratch_kernel())
    fake.safecall_fake_cuda_reset()
    with FakeAddressAllocator(SCRATCH) as env:
        scratch_call(launch, (4, 2, 3))
        scratch_call(launch, (4, 0, 1))
    [record] = fake_cuda.launches(fake)
    assert record["args"][-2:] == [SCRATCH.to_bytes(8, "little").hex(), "00" * 8]
    assert env.requests == [([4 * 2 * 3 * md.num_ctas * md.global_scratch_size], (1, 8, 1), (2, 0))]
    assert env.frees == 1


def test_kernels_needing_zeroed_profile_scratch_are_refused():
    k = sct.from_compiled(scale_kernel())
    profiled = dataclasses.replace(k, metadata=dict(k.metadata, profile_scratch_size=64, profile_scratch_align=8))
    with pytest.raises(sct.UnsupportedKernelError, match=r"^kernel `scale` needs 64 bytes of profile_scratch per program, which Triton zeroes"):
        sct.function(profiled)


def test_scratch_without_an_allocator_is_a_runtime_error(fake):
    launch = sct.function(scratch_kernel(), grid=1)
    fake.safecall_fake_cuda_reset()
    with pytest.raises(RuntimeError) as e:
        scratch_call(launch, (4,))
    assert str(e.value).startswith(
        "desc_copy: cannot allocate `global_scratch` with shape (1024,), uint8 on cuda:0: no tensor allocator is "
        "installed (TVMFFIEnvGetDLPackManagedTensorAllocator() is NULL)."
    )
    assert fake_cuda.launches(fake) == []


def test_misaligned_scratch_and_a_grid_beyond_int64_are_refused(fake):
    md = scratch_kernel().metadata
    launch = sct.function(scratch_kernel())
    fake.safecall_fake_cuda_reset()
    with FakeAddressAllocator(SCRATCH + 64) as env, pytest.raises(RuntimeError) as e:
        scratch_call(launch, (1, 1, 1))
    assert str(e.value).splitlines()[0] == (
        f"desc_copy: the environment allocator returned global_scratch at {SCRATCH + 64}, not aligned to "
        f"{md.global_scratch_align} bytes as the kernel requires"
    )
    assert env.frees == 1
    big = 2**31 - 1
    with FakeAddressAllocator(SCRATCH) as env, pytest.raises(ValueError) as e:
        scratch_call(launch, (big, big, big))
    assert str(e.value).splitlines()[0] == (
        f"desc_copy: the grid's global_scratch (grid_x * grid_y * grid_z * num_ctas * {md.global_scratch_size} "
        "bytes) does not fit in int64"
    )
    assert env.requests == [] and fake_cuda.launches(fake) == []


@functools.lru_cache(maxsize=None)
def host_desc_kernel():
    return _compile(host_desc_copy, {"x_desc": "tensordesc<fp32[64, 32]>", "y_desc": "tensordesc<fp32[64, 32]>", "BM": "constexpr"},
                    {"BM": 64})


D_X, D_Y = 0x7F00_0010_0000, 0x7F00_0020_0000


def fp32_2d(address, shape=(256, 32), **kw):
    return CudaTensor(address, "float32", shape, **kw)


def test_host_tensor_descriptors_take_tensors(fake):
    """A ``tensordesc<fp32[64, 32]>`` parameter takes the CUDA tensor Triton's
    ``TensorDescriptor.from_tensor`` would wrap; the kernel gets the encoded map, the shape
    (i32s) and the strides (i64s)."""
    launch = sct.function(host_desc_kernel(), grid=1)
    assert launch.__doc__.startswith(
        "host_desc_copy(grid: Tuple[grid_x: i64], "
        "x_desc: Tensor[(x_desc_dim0, x_desc_dim1), float32, cuda, strided, byte_offset=any], "
        "y_desc: Tensor[(y_desc_dim0, y_desc_dim1), float32, cuda, strided, byte_offset=any], BM: Literal[64])"
    )
    fake.safecall_fake_cuda_reset()
    launch((4,), fp32_2d(D_X, strides=(64, 1)), fp32_2d(D_Y), 64)
    [record] = fake_cuda.launches(fake)
    assert len(record["args"]) == 2 * (1 + 2 + 2) + 2
    assert record["args"][1:5] == ["00010000", "20000000", (64).to_bytes(8, "little").hex(), (1).to_bytes(8, "little").hex()]
    assert record["args"][6:10] == ["00010000", "20000000", (32).to_bytes(8, "little").hex(), (1).to_bytes(8, "little").hex()]
    encodes = [r for r in fake_cuda.records(fake) if r["call"] == "cuTensorMapEncodeTiled"]
    assert len(encodes) == 2


#: Each rejected descriptor call: (what is wrong, x_desc's tensor, exception, message's end).
REJECTED_DESCRIPTORS = [
    ("misaligned", fp32_2d(D_X, byte_offset=8), ValueError,
     "kernel argument 0 (tensormap of 'x_desc'): the global address 0x7f0000100008 (data + byte_offset) is not aligned to 16 bytes, as TMA requires"),
    ("innermost stride", fp32_2d(D_X, strides=(64, 2)), ValueError,
     "kernel argument 0 (tensormap of 'x_desc'): x_desc.strides[1] is 2; TMA needs the innermost dimension contiguous (stride 1)"),
    ("stride bytes", fp32_2d(D_X, strides=(33, 1)), ValueError,
     "kernel argument 0 (tensormap of 'x_desc'): x_desc.strides[0] is 33 elements = 132 bytes; a TMA stride must be a multiple of 16 bytes and below 2^40"),
    ("empty", fp32_2d(D_X, shape=(0, 32)), ValueError,
     "kernel argument 0 (tensormap of 'x_desc'): x_desc.shape[0] is 0; a TMA dimension must be 1 to 4294967296"),
    ("dtype", CudaTensor(D_X, "float16", (256, 32)), TypeError,
     "host_desc_copy: argument 'x_desc' (#1): dtype is float16, expected float32"),
    ("rank", fp32_2d(D_X, shape=(256,)), ValueError, "host_desc_copy: argument 'x_desc' (#1): ndim is 1, expected 2"),
    ("CPU tensor", fp32_2d(D_X, device_type=1), ValueError,
     "host_desc_copy: argument 'x_desc' (#1): device is cpu:0, expected a cuda tensor"),
    ("shape beyond i32", fp32_2d(D_X, shape=(2**31, 32)), ValueError,
     "host_desc_copy: argument 'x_desc': shape[0] is 2147483648; Triton passes a descriptor's shape as i32 (at most 2147483647)"),
]


@pytest.mark.parametrize("what,x,exc,message", REJECTED_DESCRIPTORS, ids=[r[0] for r in REJECTED_DESCRIPTORS])
def test_rejected_descriptor_calls(fake, what, x, exc, message):
    launch = sct.function(host_desc_kernel(), grid=1)
    fake.safecall_fake_cuda_reset()
    with pytest.raises(exc) as e:
        launch((4,), x, fp32_2d(D_Y), 64)
    assert str(e.value).splitlines()[0].endswith(message)
    assert fake_cuda.launches(fake) == []


def test_descriptor_fields_the_tensor_cannot_say(fake):
    """``descriptors=`` gives a descriptor Triton's ``padding="nan"`` (NaN fill) and
    ``round_f32_to_tf32`` (element type tf32)."""
    launch = sct.function(host_desc_kernel(), grid=1, descriptors={"x_desc": {"padding": "nan", "round_f32_to_tf32": True}})
    fake.safecall_fake_cuda_reset()
    launch((4,), fp32_2d(D_X), fp32_2d(D_Y), 64)
    x, y = [r for r in fake_cuda.records(fake) if r["call"] == "cuTensorMapEncodeTiled"]
    assert (x["dtype"], x["oob_fill"]) == (11, 1)  # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, NAN_REQUEST_ZERO_FMA
    assert (y["dtype"], y["oob_fill"]) == (7, 0)  # FLOAT32, no fill


@pytest.mark.parametrize(
    "descriptors,message",
    [
        ({"M": {}}, "descriptors={'M': ...}: kernel `host_desc_copy` has no tensor descriptor argument 'M'"),
        ({"x_desc": {"pad": "nan"}}, "descriptors['x_desc']: unknown field 'pad'; supported: padding, round_f32_to_tf32"),
        ({"x_desc": {"padding": "inf"}}, "descriptors['x_desc']: padding='inf', expected 'zero' or 'nan'"),
    ],
    ids=["not a descriptor", "unknown field", "padding"],
)
def test_descriptor_fields_are_checked(descriptors, message):
    with pytest.raises(ValueError) as e:
        sct.function(host_desc_kernel(), descriptors=descriptors)
    assert str(e.value) == message


def test_descriptor_fields_need_their_dtypes():
    k = _compile(host_desc_copy, {"x_desc": "tensordesc<i8[64, 32]>", "y_desc": "tensordesc<i8[64, 32]>", "BM": "constexpr"},
                 {"BM": 64})
    with pytest.raises(ValueError, match=r"^descriptors\['x_desc'\]: round_f32_to_tf32 needs a float32 descriptor, not tensordesc<i8\[64, 32\]>$"):
        sct.function(k, descriptors={"x_desc": {"round_f32_to_tf32": True}})
    with pytest.raises(ValueError, match=r"^descriptors\['y_desc'\]: padding='nan' needs a floating-point descriptor, not tensordesc<i8\[64, 32\]>$"):
        sct.function(k, descriptors={"y_desc": {"padding": "nan"}})


@functools.lru_cache(maxsize=None)
def im2col_kernel():
    """Gluon's im2col TMA load compiled for sm_90 (``support/triton_gluon_kernels.py``)."""
    from support import triton_gluon_kernels as gluon_kernels
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    layout = gl.NVMMASharedLayout.get_default_for([64, 32], gl.float16)
    signature = {"in_desc": f"tensordesc_im2col<fp16[64, 32],input_rank=4,{layout!r}>", "out_ptr": "*fp16",
                 "BLOCK_P": "constexpr", "BLOCK_C": "constexpr"}
    src = GluonASTSource(gluon_kernels.im2col_copy, signature=signature, constexprs={"BLOCK_P": 64, "BLOCK_C": 32})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


def test_im2col_descriptors_take_tensors_and_their_corners(fake):
    """A ``tensordesc_im2col<fp16[64, 32],input_rank=4,...>`` parameter takes the NHWC tensor;
    its corners and element strides come from ``descriptors=`` (Gluon's
    ``TensorDescriptorIm2Col`` fields); the map is encoded with ``cuTensorMapEncodeIm2col`` as
    Triton's ``fillTMADescriptorIm2col`` does (block ``[pixels, channels]``, everything
    innermost first), then the shape (i32s) and strides (i64s) follow it."""
    fields = {"pixel_box_lower_corner": [-1, -2], "pixel_box_upper_corner": [1, 0], "element_strides": [1, 2, 1, 1]}
    launch = sct.function(im2col_kernel(), grid=1, descriptors={"in_desc": dict(fields, padding="nan")})
    assert "in_desc: Tensor[(in_desc_dim0, in_desc_dim1, in_desc_dim2, in_desc_dim3), float16, cuda" in launch.__doc__
    fake.safecall_fake_cuda_reset()
    launch((1,), CudaTensor(D_X, "float16", (2, 8, 8, 32)), CudaTensor(D_Y, "float16", (64 * 32,)), 64, 32)
    [encode] = [r for r in fake_cuda.records(fake) if r["call"] == "cuTensorMapEncodeIm2col"]
    assert {k: encode[k] for k in ("dtype", "rank", "address", "dims", "strides", "lower", "upper", "channels", "pixels",
                                   "element_strides", "interleave", "swizzle", "l2_promotion", "oob_fill")} == {
        "dtype": 6, "rank": 4, "address": D_X, "dims": [32, 8, 8, 2], "strides": [64, 512, 4096],
        "lower": [-2, -1], "upper": [0, 1], "channels": 32, "pixels": 64, "element_strides": [1, 1, 2, 1],
        "interleave": 0, "swizzle": 2, "l2_promotion": 2, "oob_fill": 1,
    }
    [record] = fake_cuda.launches(fake)
    shape = [v.to_bytes(4, "little").hex() for v in (2, 8, 8, 32)]
    strides = [v.to_bytes(8, "little").hex() for v in (2048, 256, 32, 1)]
    assert record["args"][1:9] == shape + strides


@pytest.mark.parametrize(
    "descriptors,message",
    [
        ({}, "kernel `im2col_copy`: im2col descriptor argument 'in_desc' needs descriptors={'in_desc': "
             "{'pixel_box_lower_corner': [...], 'pixel_box_upper_corner': [...]}}"),
        ({"in_desc": {"pixel_box_lower_corner": [0, 0]}}, "descriptors['in_desc']: an im2col descriptor needs 'pixel_box_upper_corner'"),
        ({"in_desc": {"pixel_box_lower_corner": [0], "pixel_box_upper_corner": [0, 0]}},
         "descriptors['in_desc']: pixel_box_lower_corner has 1 entries, expected 2 (rank 4)"),
        ({"in_desc": {"pixel_box_lower_corner": [0, 0], "pixel_box_upper_corner": [0, 0], "box": [1]}},
         "descriptors['in_desc']: unknown field 'box'; supported: padding, round_f32_to_tf32, pixel_box_lower_corner, "
         "pixel_box_upper_corner, element_strides"),
    ],
    ids=["no corners", "one corner", "corner rank", "unknown field"],
)
def test_im2col_descriptor_fields_are_checked(descriptors, message):
    with pytest.raises(ValueError) as e:
        sct.function(im2col_kernel(), grid=1, descriptors=descriptors)
    assert str(e.value) == message


@pytest.mark.parametrize(
    "change,message",
    [
        ({"is_im2col": True}, r"argument 'x_desc' \(tensordesc<fp32\[64, 32\]>\): not an im2col descriptor"),
        ({"fp4_padded": True}, r"argument 'x_desc' \(tensordesc<fp32\[64, 32\]>\): padded fp4 descriptors are not supported"),
        (None, r"2 tensor descriptor arguments but 0 `tensordesc_meta` entries"),
    ],
    ids=["im2col", "fp4 padded", "no tensordesc_meta"],
)
def test_descriptor_kinds_the_adapter_does_not_build_are_refused(change, message):
    k = sct.from_compiled(host_desc_kernel())
    entries = [dict(e, **change) for e in k.metadata["tensordesc_meta"]] if change else []
    changed = dataclasses.replace(k, metadata=dict(k.metadata, tensordesc_meta=entries))
    with pytest.raises(sct.UnsupportedKernelError, match=message):
        sct.function(changed)


def test_constexprs_const_cannot_check_are_refused():
    k = _compile(typed_fill, {"y_ptr": "*fp16", "n": "i32", "DTYPE": "constexpr", "BLOCK": "constexpr"},
                 {"DTYPE": tl.float16, "BLOCK": 64})
    with pytest.raises(sct.UnsupportedKernelError, match=r"constexpr 'DTYPE' = .* cannot be checked at call time"):
        sct.function(k)
    assert sct.function(k, grid=1, constexpr_params=False) is not None


#: A process with no triton and no safecall: loads the library with tvm_ffi alone, launches
#: both kernels on the double and prints the launch records.
AOT_SCRIPT = textwrap.dedent(
    """
    import ctypes, importlib.abc, json, sys

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("triton", "safecall"):
                raise ImportError(f"{name} is blocked in this process")
            return None

    sys.meta_path.insert(0, Blocker())
    import tvm_ffi
    from dlpack import RawTensor  # safecall/_dlpack.py as a file: safecall.testing.RawTensor

    fake = ctypes.CDLL(sys.argv[2])
    fake.safecall_fake_cuda_log.restype = ctypes.c_size_t
    fake.safecall_fake_cuda_log.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib = tvm_ffi.load_module(sys.argv[1])
    x = RawTensor(0x7F0000001000, (2, 0), (2, 16, 1), [1024], None, 0)
    y = RawTensor(0x7F0000002000, (2, 0), (2, 16, 1), [1024], None, 0)
    z = RawTensor(0x7F0000003000, (2, 0), (2, 32, 1), [1024], None, 0)
    lib["scale"]((4,), x, y, 1024, 0.5, 256)
    lib["fill"]((8,), z, 1000, 3.0, 128)
    a = RawTensor(0x7F0000100000, (2, 0), (2, 32, 1), [256, 32], None, 0)
    b = RawTensor(0x7F0000200000, (2, 0), (2, 32, 1), [256, 32], None, 0)
    lib["tile"]((4,), a, b, 64)
    try:
        lib["scale"]((4,), x, y, 1000, 0.5, 256)
    except ValueError as e:
        print("error:", str(e).splitlines()[0])
    n = fake.safecall_fake_cuda_log(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fake.safecall_fake_cuda_log(buf, n + 1)
    records = [json.loads(l) for l in buf.value.decode().splitlines()]
    print(json.dumps([r for r in records if r["call"] == "cuLaunchKernelEx"]))
    print("triton" in sys.modules, "safecall" in sys.modules)
    """
)


def test_an_aot_library_of_several_kernels_loads_without_triton(tmp_path, fake):
    """Three kernels (one with host tensor descriptors) in a ``.so`` that a process without
    triton or safecall loads and launches, each launch as the JIT-compiled function's."""
    lib = tmp_path / "triton_kernels.so"
    sct.build({"scale": scale_kernel(), "fill": fill_kernel(), "tile": host_desc_kernel()}, lib, grid=1)
    script = tmp_path / "run.py"
    script.write_text(AOT_SCRIPT)
    # The DLPack producer without the package: its module imports nothing of safecall.
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "dlpack.py").symlink_to(pathlib.Path(sct.__file__).with_name("_dlpack.py"))
    env = dict(os.environ, SAFECALL_LIBCUDA_PATH=str(fake_cuda.PATH), PYTHONPATH=str(tmp_path / "path"))
    out = subprocess.run(
        [sys.executable, str(script), str(lib), str(fake_cuda.PATH)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    error, records, modules = out.stdout.strip().splitlines()
    assert error == "error: scale: argument 'n' (#3): 1000 is not a multiple of 16"
    assert modules == "False False"
    scale_rec, fill_rec, tile_rec = json.loads(records)
    assert (scale_rec["kernel"], scale_rec["grid"]) == ("scale", [4, 1, 1])
    assert (fill_rec["kernel"], fill_rec["grid"], fill_rec["args"][1]) == ("fill", [8, 1, 1], (1000).to_bytes(8, "little").hex())
    # The same launch as the JIT-compiled function's.
    fake.safecall_fake_cuda_reset()
    with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), 0):
        sct.function(scale_kernel(), grid=1)((4,), fp16(shape=(1024,)), fp16(Y, shape=(1024,)), 1024, 0.5, 256)
    assert fake_cuda.launches(fake) == [scale_rec]
    # A kernel with host tensor descriptors: the same descriptors' bytes too.
    fake.safecall_fake_cuda_reset()
    with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), 0):
        sct.function(host_desc_kernel(), grid=1)((4,), fp32_2d(D_X), fp32_2d(D_Y), 64)
    assert fake_cuda.launches(fake) == [tile_rec]
