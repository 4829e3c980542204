"""Triton 3.9's own AMD launcher records, on the HIP runtime double, exactly the launch its
arguments ask for.

Kernels compiled for gfx942 on this machine (``triton_hip.py``: no GPU, no ROCm, no torch) are
loaded through Triton's ``load_binary`` and launched through Triton's ``HIPLauncher``, whose
``driver.c`` binds to the double (tests/fake_hip) through ``TRITON_LIBHIP_PATH``. Each launch
record must show the grid, a block of ``warp_size * num_warps`` threads, the kernel's shared
memory, the stream, and every explicit kernel argument's bytes (cut by the sizes in the code
object's metadata), Triton's two scratch pointers last.

Outside CI the module skips with its reason when triton 3.9.0, a C compiler or the double is
missing; with ``CI=true`` each of these is a failure.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Tuple

import pytest
from support import fake_hip, triton_hip
from support.triton_fakes import packed
from support.triton_hip import CASES, Launch

from safecall.triton import TRITON_ABI

triton_hip.skip_unless_available()

#: Triton's AMD launcher packs scalars as its CUDA one does (``driver.c``'s extractors; ``i1``
#: is written as an ``int32``, of which the runtime copies the 1 byte the kernel's metadata
#: gives): ``triton_fakes.packed`` says how.


@pytest.fixture(scope="module")
def report() -> Dict[str, Any]:
    return triton_hip.launch_records()


def expected_args(case: triton_hip.Case, launch: Launch) -> List[Any]:
    """Each explicit argument's bytes as hex: the non-constexpr arguments, then Triton's global
    and profile scratch pointers (null: these kernels need no scratch memory). A TDM
    descriptor is its :class:`triton_hip.Desc` (its bytes are Triton's encoder's, compared
    with safecall's by the differential below), then its shape (``i32``) and strides
    (``i64``)."""
    out: List[Any] = []
    for (_, ty), arg in zip(case.signature, launch.args):
        if ty == "constexpr":
            continue
        if isinstance(arg, triton_hip.Desc):
            out.append(arg)
            out += [struct.pack("<i", d).hex() for d in arg.shape]
            out += [struct.pack("<q", d).hex() for d in arg.strides]
        elif ty.startswith("*"):
            address = 0 if arg is None else arg if isinstance(arg, int) else arg.data_ptr()
            out.append(struct.pack("<Q", address).hex())
        else:
            out.append(packed(ty, arg).hex())
    return out + ["00" * 8, "00" * 8]


def launch_records(report: Dict[str, Any], case_name: str) -> List[Dict[str, Any]]:
    return [r for r in report["cases"][case_name]["records"] if r["call"] in fake_hip.LAUNCH_CALLS]


@pytest.mark.parametrize("case_name", list(CASES))
def test_tritons_launcher_records_the_launch_its_arguments_ask_for(report, case_name):
    """Per launch, the grid (x times ``num_ctas``), a block of ``warp_size * num_warps``, the
    shared memory, stream and arguments; ``num_ctas`` above 1 through ``hipDrvLaunchKernelEx``
    with the cluster and cooperative attributes (ids 4 and 2), in that order."""
    case, facts = CASES[case_name], report["cases"][case_name]
    md = facts["metadata"]
    assert (md["warp_size"], md["num_ctas"]) == (case.target[2], case.num_ctas)
    assert (md["global_scratch_size"], md["profile_scratch_size"]) == (0, 0)
    records = launch_records(report, case_name)
    assert len(records) == len(case.launches)
    for launch, record in zip(case.launches, records):
        cooperative = md["launch_cooperative_grid"]
        gx, gy, gz = launch.grid
        expected = {
            "call": "hipModuleLaunchCooperativeKernel" if cooperative else "hipModuleLaunchKernel",
            "kernel": md["name"],
            "device": 0,
            "grid": [gx * case.num_ctas, gy, gz],
            "block": [md["warp_size"] * md["num_warps"], 1, 1],
            "shared_mem": md["shared"],
            "stream": launch.stream,
            "args": _tdm_checked(expected_args(case, launch), record["args"]),
            "extra": False,
        }
        if case.num_ctas > 1:
            expected.update(
                call="hipDrvLaunchKernelEx", attrs=[4, 2], cluster=[case.num_ctas, 1, 1], cooperative=int(cooperative)
            )
        assert record == expected


def _tdm_checked(expected: List[Any], recorded: List[str]) -> List[Any]:
    """``expected`` with each TDM descriptor replaced by the recorded bytes once their size
    (48 bytes up to rank 2, else 80) and the fields that say which tensor it is (predicate 1,
    the address in words 2 and 3 with the type bit, the element size) are what the descriptor
    asks for."""
    out = []
    for want, got in zip(expected, recorded):
        if isinstance(want, triton_hip.Desc):
            words = struct.unpack(f"<{len(got) // 8}I", bytes.fromhex(got))
            assert len(words) == (12 if len(want.shape) <= 2 else 20)
            assert words[0] == 1
            assert words[2] | (words[3] & 0x7FFF_FFFF) << 32 == want.address
            assert words[3] >> 31 == 1
            bytes_per_element = {"float16": 2, "float32": 4}[want.dtype]
            assert (words[4] >> 16) & 3 == bytes_per_element.bit_length() - 1
            want = got
        out.append(want)
    return out


def test_tritons_launcher_checks_each_tensor_with_the_runtime(report):
    """``data_ptr()`` objects are checked with ``hipPointerGetAttribute`` (device pointer),
    plain integers and None are passed as they are."""
    case = CASES["vector add"]
    checked = [r["ptr"] for r in report["cases"]["vector add"]["records"] if r["call"] == "hipPointerGetAttribute"]
    tensors = [a.data_ptr() for launch in case.launches for a in launch.args if isinstance(a, triton_hip.Tensor)]
    assert checked == tensors


def test_tritons_launcher_loads_and_queries_as_the_double_expects(report):
    records = report["cases"]["vector add"]["records"]
    load, get, *attrs = records[:5]
    assert load["call"] == "hipModuleLoadDataEx" and load["options"] == 5
    assert (load["device"], load["image"]) == (0, "code object")
    assert get == {"call": "hipModuleGetFunction", "device": 0, "module": get["module"], "name": "add"}
    # NUM_REGS, LOCAL_SIZE_BYTES, MAX_THREADS_PER_BLOCK (driver_types.h's values).
    assert [a["attr"] for a in attrs] == [4, 3, 0]


def test_tritons_launcher_resolves_its_entries_through_get_proc_address(report):
    """Triton asks ``hipDriverGetVersion`` (through ``dlsym``), then ``hipGetProcAddress`` for
    each entry with that version as ``hipVersion``; ``hipDrvLaunchKernelEx`` (multi-CTA
    launches only) is optional there."""
    version, *lookups = report["setup"]
    assert version == {"call": "hipDriverGetVersion"}
    assert {r["version"] for r in lookups} == {60_443_482}
    assert [r["symbol"] for r in lookups] == [
        "hipGetLastError",
        "hipGetErrorString",
        "hipGetDeviceProperties",
        "hipModuleLoadDataEx",
        "hipModuleUnload",
        "hipModuleGetFunction",
        "hipFuncGetAttribute",
        "hipDrvLaunchKernelEx",
        "hipModuleLaunchKernel",
        "hipModuleLaunchCooperativeKernel",
        "hipPointerGetAttribute",
    ]


def test_a_function_launched_on_another_device_is_an_error(report):
    """The function was loaded on device 0; with device 1 current, the launch fails as in HIP
    (``hipErrorInvalidDevice``), and Triton raises its error."""
    wrong = report["wrong_device"]
    assert wrong["error"] == "Triton Error [HIP]:  Code: 101, Messsage: invalid device ordinal"
    (launch,) = [r for r in wrong["records"] if r["call"] == "hipModuleLaunchKernel"]
    assert launch["device"] == 1


# ---- the differential: safecall.triton's launch of the same code object -------------------


def _compiled(case: triton_hip.Case) -> Any:
    """The case's kernel compiled for gfx942 in this process (the same bytes Triton's own
    launcher loaded in the runner's: compilation is deterministic)."""
    import os

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    return case.compile(triton_hip._kernels())


def _safecall_args(case: triton_hip.Case, launch: Launch) -> List[Any]:
    """The launch's arguments as safecall takes them: each pointer a ROCm tensor (DLPack
    ``kDLROCM``) at the address Triton was given (``None``: an empty tensor at address 0, since
    safecall refuses a NULL tensor with elements), constexprs as given."""
    from support.triton_fakes import CudaTensor

    out: List[Any] = []
    for (_, ty), arg in zip(case.signature, launch.args):
        if isinstance(arg, triton_hip.Desc):
            out.append(arg.base())
        elif ty.startswith("*"):
            dtype = TRITON_ABI.pointee_dtypes[ty[1:]]
            if arg is None:
                out.append(CudaTensor(0, dtype, shape=(0,), device_type=10))
                continue
            address = arg if isinstance(arg, int) else arg.data_ptr()
            out.append(CudaTensor(address, dtype, device_type=10))
        else:
            out.append(arg)
    return out


@pytest.mark.parametrize("case_name", list(CASES))
def test_safecall_launches_like_tritons_amd_launcher(report, case_name):
    """Per launch, safecall's record (device, kernel, grid, block, shared memory, stream, every
    argument's bytes) equals the one Triton's own AMD launcher made on the same code object."""
    import safecall.triton as sct
    import tvm_ffi

    case = CASES[case_name]
    theirs = launch_records(report, case_name)
    kernel = _compiled(case)
    assert kernel.metadata.name == report["cases"][case_name]["metadata"]["name"]
    launch_fn = sct.function(kernel)
    fake = fake_hip.fresh()
    for launch, their in zip(case.launches, theirs):
        fake.safecall_fake_hip_reset()
        case.use_target(fake)
        with tvm_ffi.use_raw_stream(tvm_ffi.device("rocm", 0), launch.stream):
            launch_fn(launch.grid, *_safecall_args(case, launch))
        ours = fake_hip.launches(fake)
        assert ours == [their], f"{case_name} {launch}: safecall {ours} / triton {their}"


def _installed(case: triton_hip.Case, monkeypatch: Any) -> Tuple[Any, Any, Any, int]:
    """The case's kernel compiled here, the double (its devices the case's processor), and
    safecall's AMD driver made active for the test, with the handle its ``load_binary``
    loaded the kernel as: ``(kernel, fake, driver, function)``."""
    import triton

    from safecall._triton_driver import driver_class

    kernel = _compiled(case)
    md = kernel.metadata
    fake = fake_hip.fresh()
    case.use_target(fake)
    driver = driver_class("hip")()
    monkeypatch.setattr(triton.runtime.driver, "_active", driver)
    _, function, *_ = driver.utils.load_binary(md.name, kernel.asm["hsaco"], md.shared, 0)
    return kernel, fake, driver, function


@pytest.mark.parametrize("case_name", list(CASES))
def test_the_installed_drivers_launcher_launches_like_tritons_amd_launcher(report, case_name, monkeypatch):
    """safecall's AMD driver's ``launcher_cls``, called as Triton's ``CompiledKernel.run`` calls
    ``HIPLauncher`` (the same arguments, on a code object its own ``load_binary`` loaded, the
    driver active for the test only), sends the double the records Triton's own launcher
    sent."""
    case = CASES[case_name]
    theirs = launch_records(report, case_name)
    kernel, fake, driver, function = _installed(case, monkeypatch)
    launcher = driver.launcher_cls(case.source(triton_hip._kernels()), kernel.metadata)
    for launch, their in zip(case.launches, theirs):
        fake.safecall_fake_hip_reset()
        case.use_target(fake)
        launcher(*launch.grid, launch.stream, function, kernel.packed_metadata, None, None, None, *triton_hip.triton_args(launch.args))
        ours = fake_hip.launches(fake)
        assert ours == [their], f"{case_name} {launch}: safecall {ours} / triton {their}"


@pytest.mark.parametrize("case_name", list(triton_hip.RANDOM_SCALAR_CASES))
def test_random_scalars_reach_the_kernel_as_tritons_amd_launcher_passes_them(report, case_name, monkeypatch):
    """Seeded draws of every scalar argument (``triton_hip.random_scalar_draws``: the type's
    edges, beyond them within and beyond 64 bits, NaN payloads, half-precision ties, bools and
    ints for floats; then one scalar of another Python type per launch, such as an object with
    only ``__index__``), launched through Triton's own ``HIPLauncher`` in the runner and here
    through the installed driver's launchers, the native one and the general one
    (``SafecallLauncher``): the same launch record (every argument's bytes), or the same
    exception type, each time."""
    from safecall._triton_launcher import SafecallLauncher

    case = CASES[case_name]
    theirs = report["random scalars"][case_name]
    kernel, fake, driver, function = _installed(case, monkeypatch)
    src = case.source(triton_hip._kernels())
    launchers = (driver.launcher_cls(src, kernel.metadata), SafecallLauncher(src, kernel.metadata))
    draws = triton_hip.random_scalar_draws(case_name)
    assert len(theirs) == len(draws)
    for args, their in zip(draws, theirs):
        for launcher in launchers:
            ours = triton_hip.launch_outcome(
                fake,
                lambda: launcher(1, 1, 1, triton_hip.STREAM, function, kernel.packed_metadata, None, None, None, *args),
            )
            assert ours == their, (type(launcher).__name__, args)
    # Both ways out were taken: launches, and Triton's refusals (beyond 64 bits).
    assert any(isinstance(t, list) for t in theirs) and any(isinstance(t, str) for t in theirs)


def test_a_tdm_descriptor_needs_only_what_tritons_amd_launcher_reads(report, monkeypatch):
    """Triton's AMD ``make_tensordesc_arg`` reads a descriptor's ``base.data_ptr()``, ``shape``
    and ``strides`` only (a TDM descriptor has no padding or tf32 field): an object with just
    those launches as the ``TensorDescriptor`` does, through the native launcher and through
    the general one (a scratch-free kernel takes the native one; the general one is asked
    directly)."""
    import array
    import types

    from safecall._triton_launcher import SafecallLauncher

    name = "TDM descriptors, rank 2 (gfx1250)"
    case, (their, _) = CASES[name], launch_records(report, name)
    kernel, fake, driver, function = _installed(case, monkeypatch)
    md = kernel.metadata
    launch = case.launches[0]

    class Size(tuple):
        """A tuple subclass, as ``torch.Size`` is (read item by item, as a tuple)."""

    class Iterated(tuple):
        """A tuple subclass whose ``__iter__`` yields other values than its items: Triton
        reads a shape by iterating it, and so must safecall."""

        def __new__(cls, values):
            seq = super().__new__(cls, [7] * len(values))
            seq.values = list(values)
            return seq

        def __iter__(self):
            return iter(self.values)

    src = case.source(triton_hip._kernels())
    # Shapes and strides as lists, as tuples, as tuple subclasses and an array (an iterable
    # the native launcher reads through the iterator protocol).
    for seq, other in (
        (list, list), (tuple, tuple), (Size, lambda v: array.array("q", v)), (Iterated, Iterated),
    ):
        bare = [
            types.SimpleNamespace(base=a.base(), shape=seq(a.shape), strides=other(a.strides))
            if isinstance(a, triton_hip.Desc)
            else a
            for a in launch.args
        ]
        for launcher in (driver.launcher_cls(src, md), SafecallLauncher(src, md)):
            fake.safecall_fake_hip_reset()
            case.use_target(fake)
            launcher(*launch.grid, launch.stream, function, kernel.packed_metadata, None, None, None, *bare)
            assert fake_hip.launches(fake) == [their], (seq, launcher)

    # Shapes and strides that do not fit, or are not integers, are errors from both launchers
    # before anything launches (never wrapped into 64 bits or truncated).
    desc = next(a for a in launch.args if isinstance(a, triton_hip.Desc))
    shape, strides = list(desc.shape), list(desc.strides)
    for error, bad_shape, bad_strides in (
        (OverflowError, [(1 << 64) + shape[0]] + shape[1:], strides),
        (OverflowError, shape, [-(1 << 63) - 1] + strides[1:]),
        (TypeError, [float(shape[0])] + shape[1:], strides),
        (ValueError, shape, strides[:-1]),
        (ValueError, shape + [1] * 4, strides + [1] * 4),
    ):
        bare = [
            types.SimpleNamespace(base=a.base(), shape=bad_shape, strides=bad_strides)
            if isinstance(a, triton_hip.Desc)
            else a
            for a in launch.args
        ]
        for launcher in (driver.launcher_cls(src, md), SafecallLauncher(src, md)):
            fake.safecall_fake_hip_reset()
            with pytest.raises(error):
                launcher(*launch.grid, launch.stream, function, kernel.packed_metadata, None, None, None, *bare)
            assert fake_hip.launches(fake) == [], (error, bad_shape, bad_strides, launcher)


def test_safecall_checks_a_tdm_descriptors_tensor_as_tritons_tensor_descriptor_does():
    """``safecall.triton.function`` takes a tensor where Triton takes a ``TensorDescriptor``,
    whose constructor asserts a 16-byte aligned base, outer strides of multiples of 16 bytes
    and positive dims: each is a ``ValueError`` here, before anything is launched."""
    import safecall.triton as sct
    from support.triton_fakes import CudaTensor

    case = CASES["TDM descriptors, rank 2 (gfx1250)"]
    launch_fn = sct.function(_compiled(case))
    fake = fake_hip.fresh()
    case.use_target(fake)
    good = CudaTensor(0x7F00_0000_1000, "float16", shape=(256, 64), strides=(64, 1), device_type=10)
    for bad, message in (
        (CudaTensor(0x7F00_0000_1008, "float16", shape=(256, 64), strides=(64, 1), device_type=10),
         r"argument 'x_desc': the base address 139637976731656 is not aligned to 16 bytes"),
        (CudaTensor(0x7F00_0000_1000, "float16", shape=(256, 60), strides=(60, 1), device_type=10),
         r"argument 'x_desc': strides\[0\] is 60 elements of 2 bytes, not a multiple of 16 bytes"),
        (CudaTensor(0x7F00_0000_1000, "float16", shape=(0, 64), strides=(64, 1), device_type=10),
         r"argument 'x_desc': shape\[0\] is 0; Triton's TensorDescriptor requires every dim to be positive"),
    ):
        with pytest.raises(ValueError, match=message):
            launch_fn((1, 1, 1), bad, good, 256, 64, 64)
    assert fake_hip.launches(fake) == []
    launch_fn((1, 1, 1), good, good, 256, 64, 64)
    assert len(fake_hip.launches(fake)) == 1


def test_an_rdna_kernel_launches_blocks_of_32_wide_wavefronts():
    """On RDNA (gfx1100, 32-wide wavefronts) the block is 32 * num_warps threads, as Triton's
    AMD launcher computes it from ``metadata.warp_size``; the module embeds the HSACO."""
    import safecall.triton as sct
    import triton
    from triton.backends.compiler import GPUTarget

    case = CASES["vector add"]
    kernel = triton.compile(
        case.source(triton_hip._kernels()), target=GPUTarget("hip", "gfx1100", 32), options={"num_warps": 2}
    )
    assert (kernel.metadata.warp_size, kernel.metadata.num_warps) == (32, 2)
    text = sct.module({"add": kernel}).text()
    assert "format hsaco;" in text and "device=rocm" in text
    assert "block=(64)]" in text, text


def test_a_runtime_without_hip_drv_launch_kernel_ex_refuses_cluster_launches_only(tmp_path):
    """``hipDrvLaunchKernelEx`` is optional where the runtime is found (older runtimes lack
    it): on a runtime without it, a ``num_ctas=2`` kernel's launch is a ``RuntimeError`` naming
    the entry, raised before the module is loaded or the device switched, and other kernels
    launch. The
    runtime is a copy of the double with the name changed to one of the same length and ELF
    GNU hash (``Ex`` -> ``FW``: ``h * 33 + c`` is unchanged when one character grows by 1 and
    the next shrinks by 33), so that the library's own references to the entry still resolve
    and ``dlsym`` of the real name finds nothing."""
    import os
    import subprocess
    import sys

    from support import TESTS

    fake_hip.skip_unless_available()
    image = fake_hip.PATH.read_bytes()
    assert image.count(b"hipDrvLaunchKernelEx") >= 1
    older = tmp_path / "libamdhip64.so"
    older.write_bytes(image.replace(b"hipDrvLaunchKernelEx", b"hipDrvLaunchKernelFW"))
    code = f"""
import os, sys
sys.path.insert(0, {str(TESTS)!r})
os.environ["SAFECALL_LIBAMDHIP64_PATH"] = {str(older)!r}
import safecall.triton as sct
import tvm_ffi
from support import triton_hip
from support.triton_fakes import CudaTensor
tensors = [tvm_ffi.from_dlpack(CudaTensor(a, "float32", shape=(1000,), device_type=10))
           for a in (triton_hip.X, triton_hip.Y, triton_hip.OUT)]
clustered = sct.function(triton_hip.CASES["num_ctas=2 (gfx1250 clusters)"].compile(triton_hip._kernels()))
try:
    clustered((4, 1, 1), *tensors, 1000, 256)
    print("launched")
except RuntimeError as e:
    print(e)
plain = sct.function(triton_hip.CASES["vector add"].compile(triton_hip._kernels()))
plain((4, 1, 1), *tensors, 1000, 256)
print("vector add launched")
"""
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    message, launched = run.stdout.split("\n", 1)[0], run.stdout.splitlines()[-1]
    assert message == (
        "add: launch of add_hsaco.add: the HIP runtime has no `hipDrvLaunchKernelEx`, which a launch "
        "with a cluster needs (a newer ROCm has it)"
    )
    assert launched == "vector add launched"
