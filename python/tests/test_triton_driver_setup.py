"""The installed driver in the orders programs set it up in: installed before torch is imported
(at interpreter start by ``SAFECALL_TRITON_DRIVER``) takes torch's stream and device as
Triton's driver, built on first use, does; ``TRITON_LIBCUDA_PATH`` set after the install is
followed; the start-up hook's values; ``helion_launcher`` keeps an installed driver's mode and
takes Helion's ``warmup=``; the ``utils`` entry points read their integer arguments as
Triton's ``driver.c`` does (``PyArg_ParseTuple``), compared with Triton 3.9's own."""

from __future__ import annotations

import json

import pytest

from support import fake_cuda
from test_triton_driver import _python, triton_unavailable

#: A torch stand-in whose current stream is 0xABC0 (Triton's driver takes it from torch).
TORCH = (
    "import sys, types\n"
    "torch = types.ModuleType('torch')\n"
    "torch.version, torch.Tensor = types.SimpleNamespace(hip=None), type('Tensor', (), {})\n"
    "torch.cuda = types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,\n"
    "    set_device=lambda d: None, get_device_capability=lambda d=0: (9, 0),\n"
    "    current_stream=lambda d=0: types.SimpleNamespace(cuda_stream=0xABC0))\n"
    "torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0xABC0)\n"
    "sys.modules['torch'], sys.modules['torch._C'] = torch, torch._C\n"
)
SETUP = "from support import fake_cuda\nfake = fake_cuda.load()\nfake.safecall_fake_cuda_ordinal_handles(1)\n"
LAUNCH = (
    "import triton\n"
    "from support.triton_fakes import DescriptorBase as T\n"
    "from support.triton_kernels import copy\n"
    "x, y = T(0x7F0000001000, 'float32', [1024]), T(0x7F0000002000, 'float32', [1024])\n"
    "copy[(8,)](x, y, 1000, BLOCK=128)\n"
    "print(hex([r for r in fake_cuda.records(fake) if r['call'] == 'cuLaunchKernelEx'][-1]['stream']))\n"
)


def _lines(code, env_changes, tmp_path):
    """The output lines of ``code`` in a process of its own, which must succeed."""
    proc = _python(code, env_changes, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.fixture(autouse=True)
def _triton():
    reason = triton_unavailable()
    if reason is not None:
        if fake_cuda.in_ci():
            pytest.fail(reason)
        pytest.skip(reason)


def test_torch_imported_after_the_install_gives_the_stream(tmp_path):
    code = SETUP + "import safecall.triton\nsafecall.triton.install()\n" + TORCH + LAUNCH + (
        "print(hex(triton.runtime.driver.active.get_current_stream(0)))\n")
    assert _lines(code, {}, tmp_path) == ["0xabc0", "0xabc0"]


def test_without_torch_the_device_methods_are_the_native_ones_after_first_use(tmp_path):
    code = SETUP + "import safecall.triton\nsafecall.triton.install()\n" + (
        "active = __import__('triton').runtime.driver.active\n"
        "print(type(active.get_current_stream).__name__)\n") + LAUNCH + (
        "print(type(active.get_current_stream).__name__, type(active.get_current_device).__name__)\n")
    assert _lines(code, {}, tmp_path) == ["FirstUse", "0x0", "CudaDefaultStream CudaCurrentDevice"]


def test_a_libcuda_path_set_after_the_install_is_followed(tmp_path):
    # Installed with no driver library to be found, as at interpreter start; the program then
    # says where it is, as Triton's own users do, before touching the driver.
    code = (
        "import os\nimport safecall.triton\nsafecall.triton.install(backend='cuda')\n"
        f"os.environ['SAFECALL_LIBCUDA_PATH'] = {str(fake_cuda.PATH)!r}\n"
        + SETUP +
        "import triton\n"
        "active = triton.runtime.driver.active\n"
        "print(active.get_current_device(), active.get_current_stream(0))\n"
    )
    missing = {"SAFECALL_LIBCUDA_PATH": str(tmp_path / "none" / "libcuda.so.1")}
    assert _lines(code, missing, tmp_path) == ["0 0"]


@pytest.mark.parametrize("value, expected", [
    (" TRUE ", "SafecallCudaDriver launcher function"),
    ("strict", "SafecallCudaDriver strict_launcher function"),
    ("dispatch", "SafecallCudaDriver launcher DispatchedRun"),
    ("sometimes", "CudaDriver CudaLauncher function"),
])
def test_the_start_up_hooks_values(tmp_path, value, expected):
    code = (
        "import inspect\n"
        "import safecall._triton_hook\n"
        "import triton\n"
        "from triton.runtime.jit import JITFunction\n"
        "active = triton.runtime.driver.active\n"
        "print(type(active).__name__, getattr(active.launcher_cls, '__name__', ''),\n"
        "      type(inspect.getattr_static(JITFunction, 'run')).__name__)\n"
    )
    proc = _python(code, {"SAFECALL_TRITON_DRIVER": value}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [expected]
    if value == "sometimes":
        assert "SAFECALL_TRITON_DRIVER='sometimes' is none of 1, true, yes, on, dispatch, strict" in proc.stderr
    else:
        assert "safecall:" not in proc.stderr


def test_the_helion_launcher_keeps_the_installed_mode_and_takes_warmup(tmp_path):
    code = SETUP + "import safecall.triton\nsafecall.triton.install(strict=True)\n" + (
        "import triton\n"
        "from support.triton_fakes import DescriptorBase as T\n"
        "from support.triton_kernels import copy\n"
        "x, y = T(0x7F0000001000, 'float32', [1024]), T(0x7F0000002000, 'float32', [1024])\n"
        "safecall.triton.helion_launcher(copy, (8,), x, y, 1000, 128, num_warps=4, num_stages=3)\n"
        "print(triton.runtime.driver.active.launcher_cls.__name__)\n"
        "fake.safecall_fake_cuda_reset()\n"
        "safecall.triton.helion_launcher(copy, (8,), x, y, 1000, 128, num_warps=4, num_stages=3, warmup=True)\n"
        "print(sum(r['call'] == 'cuLaunchKernelEx' for r in fake_cuda.records(fake)))\n"
    )
    # Strict still; a warm-up launches nothing.
    assert _lines(code, {}, tmp_path) == ["strict_launcher", "0"]


#: ``utils`` calls whose integer arguments are out of a C type's range or not integers.
UTILS_CALLS = [
    ("set_current_device", [2**32 + 1]), ("set_current_device", [None]), ("set_current_device", ["1"]),
    ("set_current_device", [1.0]), ("set_current_device", [-(2**31) - 1]),
    ("get_device_capability", [None]), ("get_device_capability", [2**40]),
    ("get_device_properties", [2**31]),
    ("is_stream_capturing", [None]), ("is_stream_capturing", [1.5]),
    ("unload_module", ["m"]),
    ("set_printf_fifo_size", [2**64]), ("set_printf_fifo_size", [None]),
    ("cuOccupancyMaxActiveClusters", [None, 0, 1]), ("cuOccupancyMaxActiveClusters", [0, 2**31, 1]),
]


def _utils_outcomes(tmp_path, install):
    code = SETUP + ("import safecall.triton\nsafecall.triton.install()\n" if install else "") + (
        "import json, triton\n"
        "utils = triton.runtime.driver.active.utils\n"
        f"calls = {UTILS_CALLS!r}\n"
        "out = []\n"
        "for name, args in calls:\n"
        "    try:\n"
        "        getattr(utils, name)(*args)\n"
        "        out.append('ok')\n"
        "    except Exception as e:\n"
        "        out.append(type(e).__name__)\n"
        "print(json.dumps(out))\n"
    )
    proc = _python(code, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_utils_read_integers_as_tritons_driver_c(tmp_path):
    ours, theirs = _utils_outcomes(tmp_path / "ours", True), _utils_outcomes(tmp_path / "theirs", False)
    assert ours == theirs, list(zip(UTILS_CALLS, ours, theirs))
    # Not silently taken: each of these is refused.
    assert ours[0] == "OverflowError" and ours[1] == "TypeError" and ours[2] == "TypeError"


def test_a_launch_releases_the_interpreter_lock(tmp_path):
    # The double's launch sleeps 300 ms: a thread counting meanwhile advances as far as it does
    # alone in 150 ms or more only if the launcher released the lock, as Triton's launchers do
    # (with the lock held, it could only run in the launch path's few switch intervals).
    code = SETUP + "import safecall.triton\nsafecall.triton.install()\n" + (
        "import threading, time\n"
        "from support.triton_fakes import DescriptorBase as T\n"
        "from support.triton_kernels import copy\n"
        "x, y = T(0x7F0000001000, 'float32', [1024]), T(0x7F0000002000, 'float32', [1024])\n"
        "copy[(8,)](x, y, 1000, BLOCK=128)\n"
        "count, stop = [0], []\n"
        "def spin():\n"
        "    while not stop:\n"
        "        count[0] += 1\n"
        "thread = threading.Thread(target=spin)\n"
        "thread.start()\n"
        "start = count[0]\n"
        "time.sleep(0.15)\n"
        "alone = count[0] - start\n"
        "fake.safecall_fake_cuda_launch_delay(300000)\n"
        "before = count[0]\n"
        "copy[(8,)](x, y, 1000, BLOCK=128)\n"
        "during = count[0] - before\n"
        "fake.safecall_fake_cuda_launch_delay(0)\n"
        "stop.append(True)\n"
        "thread.join()\n"
        "print(during >= alone, alone > 0)\n"
    )
    assert _lines(code, {}, tmp_path) == ["True True"]


def test_a_kept_first_use_method_and_a_callers_patch_are_honoured(tmp_path):
    code = SETUP + "import safecall.triton\nsafecall.triton.install()\n" + (
        "import triton\n"
        "active = triton.runtime.driver.active\n"
        "kept = active.get_current_stream\n"
        "active.get_current_device = lambda: 0\n"
        "print(kept(0), type(active.get_current_stream).__name__)\n"
        "print(active.get_current_device.__name__)\n"
        "active.get_current_stream = lambda device: 0x1234\n"
        "print(hex(kept(0)))\n"
    )
    # The first call chose the methods (the caller's get_current_device kept); later calls of
    # the kept object call whatever the driver has then.
    assert _lines(code, {}, tmp_path) == ["0 CudaDefaultStream", "<lambda>", "0x1234"]
