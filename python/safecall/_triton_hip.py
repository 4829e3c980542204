"""safecall as Triton's AMD driver: ``driver.active.utils`` of Triton 3.9's ``HIPDriver``
(its ``driver.c``, ``hip_utils``) on the HIP runtime through ctypes, and the driver class,
so that stock Triton code on AMD GPUs runs with no C compiler.

Each entry point has the name, arguments, results and errors of its ``driver.c`` namesake
(``RuntimeError("Triton Error [HIP]:  Code: <n>, Messsage: <hipGetErrorString>")`` for a
failed runtime call). ``load_binary`` also remembers each function's code object: the launcher
(:mod:`safecall._triton_launcher`) builds its host function from it. The HIP facts (attribute
numbers, the ``hipDeviceProp_tR0600`` layout) come from ``_native.HIP``, the Rust side's one
place for them.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from typing import Any, Dict, Optional, Tuple

from . import _native
from ._native import HIP
from ._triton_abi import UnsupportedKernelError
from ._triton_integers import parsed_handle, parsed_int
from ._triton_utils import RuntimeUtils

#: ``hipDeviceProp_tR0600`` field -> (offset, C type), from ``_native.HIP``.
_PROP = {name: (offset, ctype) for name, offset, ctype in HIP["PROP_FIELDS"]}
#: Triton 3.9's ``get_device_properties`` keys, in its order, and the field each reads.
_PROPERTY_KEYS = (
    ("max_shared_mem", "sharedMemPerBlock"),
    ("max_num_regs", "regsPerBlock"),
    ("multiprocessor_count", "multiProcessorCount"),
    ("sm_clock_rate", "clockRate"),
    ("mem_clock_rate", "memoryClockRate"),
    ("mem_bus_width", "memoryBusWidth"),
    ("arch", "gcnArchName"),
    ("warpSize", "warpSize"),
    ("max_threads_per_sm", "maxThreadsPerMultiProcessor"),
    ("cooperativeLaunch", "cooperativeLaunch"),
)


_PATH: Optional[str] = None


def libhip_path() -> str:
    """The HIP runtime the driver and safecall's generated code use (found once per process):
    ``$SAFECALL_LIBAMDHIP64_PATH``; else the one Triton's AMD driver would use (its own finder:
    ``TRITON_LIBHIP_PATH``, a ROCm SDK package, a runtime the process already mapped, such as
    PyTorch's, torch's bundled one, the library paths), exported as
    ``$SAFECALL_LIBAMDHIP64_PATH`` so that generated code binds to the same runtime; else the
    first of ``libamdhip64.so`` and its ROCm 7 and 6 sonames that ``dlopen`` loads (the
    development name when none does: its error then says what is missing)."""
    global _PATH
    if _PATH is None:
        path = os.environ.get(HIP["PATH_ENV"]) or _tritons_choice()
        if path:
            os.environ[HIP["PATH_ENV"]] = path
        else:
            path = next((name for name in HIP["LIBRARIES"] if _loads(name)), HIP["LIBRARIES"][0])
        _PATH = path
    return _PATH


def _tritons_choice() -> Optional[str]:
    """The runtime Triton's AMD driver would load (``_get_path_to_hip_runtime_dylib``, pure
    Python), or None without triton or when it finds none."""
    try:
        from triton.backends.amd.driver import _get_path_to_hip_runtime_dylib
    except ImportError:
        return None
    try:
        return str(_get_path_to_hip_runtime_dylib())
    except (RuntimeError, OSError, subprocess.SubprocessError):
        return None


def _loads(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


#: The oldest HIP runtime major version Triton's AMD driver takes.
_REQUIRED_MAJOR = 6


def _check_version(lib: ctypes.CDLL) -> None:
    """Triton's check: a runtime older than HIP 6 is a ``RuntimeError`` with its message."""
    version = ctypes.c_int()
    lib.hipDriverGetVersion(ctypes.byref(version))
    major, minor, patch = version.value // 10000000, version.value % 10000000 // 100000, version.value % 100000
    if major < _REQUIRED_MAJOR:
        raise RuntimeError(
            f"libamdhip64 version {major}.{minor}.{patch} is not supported! Required major version is >={_REQUIRED_MAJOR}."
        )


class HipUtils(RuntimeUtils):
    """The entry points of Triton 3.9's ``hip_utils`` that code outside the launcher calls
    (``launch`` and ``build_signature_metadata`` belong to Triton's ``HIPLauncher``, which the
    safecall driver replaces; ``create_tdm_descriptor`` too, refused: it makes the descriptor
    object Triton's ``HIPLauncher`` passes, where safecall's launcher builds TDM descriptors in
    the generated host function)."""

    def _load(self) -> ctypes.CDLL:
        """The HIP runtime (:func:`libhip_path`), checked to be HIP 6 or later."""
        path = libhip_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise RuntimeError(f"safecall's Triton driver cannot load the HIP runtime `{path}`: {e}") from None
        _check_version(lib)
        lib.hipGetErrorString.restype = ctypes.c_char_p
        lib.hipModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        lib.hipModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        self.path = path
        return lib

    def _check(self, code: int) -> None:
        if code != 0:
            text = self.lib.hipGetErrorString(code)
            message = text.decode(errors="replace") if text else ""
            raise RuntimeError(f"Triton Error [HIP]:  Code: {code}, Messsage: {message}")

    def load_binary(self, name: str, hsaco: bytes, shared: int, device: int) -> Tuple[int, int, int, int, int]:
        """Loads the code object on the current device: ``(module, function, n_regs,
        n_spills, n_max_threads)``, as Triton's (spills are the scratch bytes / 4)."""
        parsed_int(shared)
        device = parsed_int(device)
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.hipModuleLoadData(ctypes.byref(module), bytes(hsaco)))
        self._check(self.lib.hipModuleGetFunction(ctypes.byref(function), module, name.encode()))
        values = []
        for attr in ("NUM_REGS", "LOCAL_SIZE_BYTES", "MAX_THREADS_PER_BLOCK"):
            value = ctypes.c_int()
            # Triton ignores these calls' status.
            self.lib.hipFuncGetAttribute(ctypes.byref(value), HIP[f"FUNC_ATTRIBUTE_{attr}"], function)
            values.append(value.value)
        n_regs, n_spills, n_max_threads = values
        self.binaries[function.value or 0] = (name, bytes(hsaco), int(device))
        return module.value or 0, function.value or 0, n_regs, n_spills // 4, n_max_threads

    def unload_module(self, module: int) -> None:
        """``hipModuleUnload``."""
        self._check(self.lib.hipModuleUnload(ctypes.c_void_p(parsed_handle(module))))

    def get_device_properties(self, device: int) -> Dict[str, Any]:
        """Triton's 10 keys, from ``hipGetDeviceProperties``."""
        raw = ctypes.create_string_buffer(HIP["DEVICE_PROP_SIZE"])
        self._check(self.lib.hipGetDevicePropertiesR0600(raw, ctypes.c_int(parsed_int(device))))
        out: Dict[str, Any] = {}
        for key, field in _PROPERTY_KEYS:
            offset, ctype = _PROP[field]
            if ctype == "char[256]":
                out[key] = raw.raw[offset : offset + 256].split(b"\0", 1)[0].decode()
            else:
                # Triton builds each number as a C int (`Py_BuildValue("i")`).
                out[key] = ctypes.c_int.from_buffer(raw, offset).value
        return out

    def create_tdm_descriptor(self, *args: Any) -> Any:
        """Refused: the object it makes is for Triton's own ``HIPLauncher``; safecall's
        launcher builds TDM descriptors in its host function (``launcher_cls`` serves
        ``TensorDescriptor`` arguments as they are)."""
        raise UnsupportedKernelError(
            "safecall's Triton driver builds TDM descriptors in its launcher (launcher_cls); "
            "create_tdm_descriptor, which makes them for Triton's own HIPLauncher, is not provided"
        )

    def get_current_device(self) -> int:
        """``hipGetDevice``."""
        self.lib  # noqa: B018  (loads the runtime: its path is then known)
        return _native.HipCurrentDevice(self.path)()

    def set_current_device(self, device: int) -> None:
        """``hipSetDevice``."""
        self._check(self.lib.hipSetDevice(ctypes.c_int(parsed_int(device))))


_UTILS: Optional[HipUtils] = None


def utils() -> HipUtils:
    """The process's :class:`HipUtils`."""
    global _UTILS
    if _UTILS is None:
        _UTILS = HipUtils()
    return _UTILS


def driver_class() -> type:
    """``SafecallHipDriver``, a subclass of Triton's ``GPUDriver`` (built on first use, as it
    needs triton)."""
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import GPUDriver

    from ._triton_driver import SCALAR_TYPES, TorchDeviceMethods
    from ._triton_launcher import launcher

    class SafecallHipDriver(TorchDeviceMethods, GPUDriver):
        """Triton's AMD driver, served by safecall: ``utils`` on the HIP runtime through
        ctypes, ``launcher_cls`` generating one host function per kernel. With torch imported
        by the first call of a device method, device and stream come from torch (as
        Triton's); without, the current device from ``hipGetDevice`` and the null stream."""

        DEVICE_METHODS = ("get_current_device", "get_current_stream", "set_current_device")

        def __init__(self) -> None:
            self.utils = utils()
            self.launcher_cls = launcher
            self.defer_device_methods()

        def own_device_methods(self, into: Any) -> None:
            into.get_current_device = _native.HipCurrentDevice(libhip_path())
            into.get_current_stream = lambda device=None: 0
            into.set_current_device = self.utils.set_current_device

        def get_current_target(self) -> Any:
            props = self.utils.get_device_properties(self.get_current_device())
            arch = knobs.runtime.override_arch or props["arch"]
            return GPUTarget("hip", arch.split(":")[0], props["warpSize"])

        @staticmethod
        def is_active() -> bool:
            torch = sys.modules.get("torch")
            if torch is not None:
                return bool(torch.cuda.is_available() and torch.version.hip is not None)
            try:
                utils().lib  # noqa: B018  (loading the runtime is the check)
            except RuntimeError:
                return False
            return True

        def map_python_to_cpp_type(self, ty: str) -> str:
            if ty.startswith("*"):
                return "hipDeviceptr_t"
            return SCALAR_TYPES[ty]

    return SafecallHipDriver
