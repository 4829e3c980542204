"""safecall as Triton's NVIDIA (or AMD) driver: :func:`install` makes stock Triton code
(``kernel[grid](...)``, Helion, PyTorch Inductor's Triton kernels) launch through safecall's
generated host functions, with no C compiler on the machine.

Triton builds its own driver (``CudaDriver``, whose ``CudaUtils`` compiles ``driver.c`` with
``cc``) on the first access to ``triton.runtime.driver.active``. :func:`install` sets
safecall's instead through Triton's public ``triton.runtime.driver.set_active`` and also
registers it as the ``nvidia`` backend's driver class, so ``driver.default`` and
``reset_active()`` give it too. Installing after Triton's own driver was built is an error.
On AMD GPUs (``install(backend="hip")``, or chosen as Triton chooses) the driver is
:mod:`safecall._triton_hip`'s, registered for the ``amd`` backend.
"""

from __future__ import annotations

import ctypes
import os
import sys
import types
from typing import Any, Dict, Optional

from . import _native
from ._triton_abi import TritonVersionError
from ._triton_launcher import launcher, strict_launcher
from ._triton_utils import CudaUtils, _libcuda_path

#: The Triton releases whose driver interface the installed driver serves, each tested against
#: its own driver (3.6.0 and 3.9.0 in CI, 3.7.1 and 3.8.0 by `cargo xtask triton-versions`).
INSTALL_SUPPORTED = ("3.6", "3.7", "3.8", "3.9")
#: The releases whose AMD driver interface it serves (3.9's ``HIPDriver``, tested against it).
HIP_SUPPORTED = ("3.9",)
#: Triton's backend name for each of ours.
_TRITON_BACKENDS = {"cuda": "nvidia", "hip": "amd"}

#: The environment variable the ``.pth`` hook reads: ``1`` installs the driver at start-up.
ENV_VAR = "SAFECALL_TRITON_DRIVER"

#: Triton's C types of the scalar arguments (``ty_to_cpp``, the same for NVIDIA and AMD).
SCALAR_TYPES = {
    "i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u1": "uint8_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "fp16": "double", "bf16": "double", "fp32": "double", "f32": "double", "fp64": "double",
}
_TYPES = {**SCALAR_TYPES, "nvTmaDesc": "CUtensorMap"}

_UTILS: Optional[CudaUtils] = None


def _utils() -> CudaUtils:
    global _UTILS
    if _UTILS is None:
        _UTILS = CudaUtils()
    return _UTILS


class FirstUse:
    """One of a driver's device methods (``get_current_stream``, ...) until the first call of
    any: that call has the driver choose them all (``choose_device_methods``), then calls the
    chosen one. Triton builds its driver on first use, and takes torch's device, stream and
    capability where torch is imported by then; safecall's is built by ``install()``, often
    before torch is imported (at interpreter start with ``SAFECALL_TRITON_DRIVER=1``)."""

    def __init__(self, driver: Any, name: str) -> None:
        self.driver, self.name = driver, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if vars(self.driver).get(self.name) is self:
            self.driver.choose_device_methods()
        # The chosen method (also for a caller that kept this object).
        return getattr(self.driver, self.name)(*args, **kwargs)


class TorchDeviceMethods:
    """The driver methods Triton's NVIDIA and AMD drivers share, all through ``torch.cuda``
    (ROCm builds of torch name their devices ``cuda`` too): mixed into both of safecall's."""

    #: The methods ``choose_device_methods`` sets.
    DEVICE_METHODS: tuple = ()

    def defer_device_methods(self) -> None:
        """Each of ``DEVICE_METHODS`` a :class:`FirstUse`, or, with torch imported, torch's
        at once (as Triton's driver built now)."""
        if sys.modules.get("torch") is not None:
            self.choose_device_methods()
            return
        for name in self.DEVICE_METHODS:
            setattr(self, name, FirstUse(self, name))

    def choose_device_methods(self) -> None:
        """Sets those of ``DEVICE_METHODS`` not set since (by a caller's patch): torch's where
        it is imported (what ``GPUDriver.__init__`` sets), else the driver's own
        (``own_device_methods``)."""
        chosen = types.SimpleNamespace()
        if sys.modules.get("torch") is not None:
            from triton.backends.driver import GPUDriver

            GPUDriver.__init__(chosen)  # type: ignore[arg-type]
        else:
            self.own_device_methods(chosen)
        for name, method in vars(chosen).items():
            current = vars(self).get(name)
            if current is None or isinstance(current, FirstUse):
                setattr(self, name, method)

    def own_device_methods(self, into: Any) -> None:  # pragma: no cover (each driver has its own)
        """Sets the driver's own ``DEVICE_METHODS`` on ``into``."""
        raise NotImplementedError

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cuda", self.get_current_device())  # type: ignore[attr-defined]

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda

    def get_benchmarker(self) -> Any:
        from triton.testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()


def _driver_class() -> type:
    """``SafecallCudaDriver``, a subclass of Triton's ``GPUDriver`` (built on first use, as it
    needs triton)."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import GPUDriver

    class SafecallCudaDriver(TorchDeviceMethods, GPUDriver):
        """Triton's NVIDIA driver, served by safecall: ``utils`` on the CUDA driver API
        through ctypes, ``launcher_cls`` generating one host function per kernel. With torch
        imported by the first call of a device method, device, stream and capability come
        from torch (as Triton's); without, from the driver API (as Triton 3.8+)."""

        DEVICE_METHODS = ("get_device_capability", "get_current_stream", "get_current_device", "set_current_device")

        def __init__(self) -> None:
            self.utils = _utils()
            self.launcher_cls = launcher
            self.defer_device_methods()

        def own_device_methods(self, into: Any) -> None:
            into.get_device_capability = self.utils.get_device_capability
            path = _libcuda_path()
            # Native callables, which the dispatcher calls without Python.
            into.get_current_stream = _native.CudaDefaultStream(path)
            into.get_current_device = _native.CudaCurrentDevice(path)
            into.set_current_device = self.utils.set_current_device

        def get_current_target(self) -> Any:
            major, minor = self.get_device_capability(self.get_current_device())
            return GPUTarget("cuda", major * 10 + minor, 32)

        @staticmethod
        def is_active() -> bool:
            torch = sys.modules.get("torch")
            if torch is not None:
                return bool(torch.cuda.is_available() and torch.version.hip is None)
            try:
                _utils().lib  # noqa: B018  (loading the driver is the check)
            except RuntimeError:
                return False
            return True

        def map_python_to_cpp_type(self, ty: str) -> str:
            if ty.startswith("*"):
                return "CUdeviceptr"
            if ty.startswith("tensordesc"):
                return "CUtensorMap"
            return _TYPES[ty]

    return SafecallCudaDriver


_CLASSES: Dict[str, type] = {}


def driver_class(backend: str = "cuda") -> type:
    """The driver class for ``backend`` (``"cuda"`` or ``"hip"``; one per process)."""
    if backend not in _CLASSES:
        if backend == "hip":
            from ._triton_hip import driver_class as hip_driver_class

            _CLASSES[backend] = hip_driver_class()
        else:
            _CLASSES[backend] = _driver_class()
    return _CLASSES[backend]


def check_triton_version(version: str, backend: str = "cuda") -> None:
    """Refuses a Triton whose driver interface is not one :func:`install` serves."""
    supported = HIP_SUPPORTED if backend == "hip" else INSTALL_SUPPORTED
    if ".".join(version.split(".")[:2]) not in supported:
        releases = f"{', '.join(supported[:-1])} and {supported[-1]}" if len(supported) > 1 else supported[0]
        what = "AMD driver" if backend == "hip" else "driver"
        raise TritonVersionError(
            f"safecall.triton.install(): Triton {version} is installed; the safecall {what} serves "
            f"Triton {releases} (the launcher and utils interfaces it is tested against)"
        )


def _choose_backend() -> str:
    """The backend Triton would pick: ``TRITON_DEFAULT_BACKEND`` (``nvidia`` or ``amd``) when
    set; with torch imported, AMD when torch is a ROCm build; without, CUDA when its driver
    library loads, else AMD when the HIP runtime's does, else CUDA. Only ``dlopen``: nothing is
    initialised (``cuInit`` before a ``fork`` would break the child's CUDA), as installing at
    start-up must not."""
    selected = {name: ours for ours, name in _TRITON_BACKENDS.items()}.get(os.environ.get("TRITON_DEFAULT_BACKEND", ""))
    if selected is not None:
        return selected
    torch = sys.modules.get("torch")
    if torch is not None:
        return "hip" if getattr(torch.version, "hip", None) is not None else "cuda"
    from ._triton_hip import libhip_path

    for backend, path in (("cuda", _libcuda_path), ("hip", libhip_path)):
        try:
            ctypes.CDLL(path())
        except OSError:
            continue
        return backend
    return "cuda"


def install(*, strict: bool = False, dispatch: bool = False, backend: Optional[str] = None) -> Any:
    """Makes safecall Triton's NVIDIA (or AMD) driver for this process.

    Parameters
    ----------
    strict : bool, default False
        Launch through :func:`safecall.triton.function`'s host functions, with its checks
        (each pointer a CUDA tensor of the kernel's dtype on the launch device, aligned where
        Triton specialized it as divisible by 16, constexprs at their compiled values) and
        messages, instead of Triton's semantics (raw ints and ``data_ptr()`` objects
        accepted unchecked). Kernels compiled by Triton 3.9 only; no tuple arguments; the launch
        stream is tvm_ffi's environment stream (PyTorch's current stream) and scratch memory
        comes from the TVM-FFI environment allocator, as for ``safecall.triton.function``.
    dispatch : bool, default False
        Also route every ``JITFunction.run`` (``kernel[grid](...)``, the inner call of
        autotuned and heuristics-wrapped kernels) through a per-kernel table from the
        arguments' specialization key to the compiled kernel (:func:`safecall.triton.jit`),
        which skips Triton's JIT layer on the calls it can decide exactly as Triton would
        (CUDA and AMD kernels).
    backend : {"cuda", "hip"}, optional
        Which of Triton's drivers to replace: ``"cuda"`` (the ``nvidia`` backend) or ``"hip"``
        (``amd``, Triton 3.9). By default the one Triton would choose: with torch imported,
        ``hip`` for a ROCm build of torch; without, CUDA when its driver loads, else AMD when
        the HIP runtime does.

    Returns
    -------
    SafecallCudaDriver or SafecallHipDriver
        The driver now active (``triton.runtime.driver.active``).

    Raises
    ------
    TritonVersionError
        The installed Triton is not one the driver serves.
    RuntimeError
        Triton's own driver was already built in this process (something touched
        ``triton.runtime.driver.active`` first): kernels compiled since would keep its launcher.
        Or, with ``dispatch``, the ``run`` of ``JITFunction``, ``Autotuner`` or ``Heuristics``
        was replaced on the class (a tracer's wrapper) before the install.
    ValueError
        ``backend`` is neither ``"cuda"`` nor ``"hip"``.

    Examples
    --------
    >>> import safecall.triton
    >>> safecall.triton.install()   # doctest: +SKIP
    """
    import triton
    from triton.backends import backends
    from triton.runtime.driver import driver

    if backend is None:
        backend = _choose_backend()
    if backend not in _TRITON_BACKENDS:
        raise ValueError(f"safecall.triton.install(): backend {backend!r}; expected 'cuda' or 'hip'")
    check_triton_version(triton.__version__, backend)
    if dispatch:
        from ._triton_dispatch import check_runs_shipped

        check_runs_shipped()
    cls = driver_class(backend)
    current = driver._active or driver._default
    if current is not None and not isinstance(current, cls):
        raise RuntimeError(
            "safecall.triton.install(): Triton's own driver "
            f"({type(current).__name__}) was already built in this process; install safecall's "
            "before anything touches triton.runtime.driver.active (or set SAFECALL_TRITON_DRIVER=1)"
        )
    name = _TRITON_BACKENDS[backend]
    if name in backends:
        registered = backends[name]
        backends[name] = type(registered)(compiler=registered.compiler, driver=cls)
    if dispatch:
        from ._triton_dispatch import install_dispatch

        install_dispatch()
    if isinstance(current, cls):
        current.launcher_cls = strict_launcher if strict else launcher
        return current
    active = cls()
    if strict:
        active.launcher_cls = strict_launcher
    driver._default = active
    driver.set_active(active)
    return active


def installed() -> bool:
    """Whether safecall's driver is Triton's active driver."""
    if "triton" not in sys.modules or not _CLASSES:
        return False
    from triton.runtime.driver import driver

    return isinstance(driver._active, tuple(_CLASSES.values()))


def helion_launcher(
    triton_kernel: Any,
    grid: Any,
    *args: Any,
    num_warps: int,
    num_stages: int,
    ptx_options: Optional[str] = None,
    launch_cooperative_grid: bool = False,
    **kwargs: Any,
) -> Any:
    """A launcher with the signature of Helion's ``default_launcher``, for Helion's generated
    host code (``_launcher=safecall.triton.helion_launcher``): the kernel runs through
    Triton's JIT on safecall's driver, which it installs (with :func:`install`'s defaults)
    when no driver of safecall's is active and Triton's own was not built yet; an installed
    one is kept as it is (``strict``, ``dispatch``).

    Parameters
    ----------
    triton_kernel : JITFunction
        The ``@triton.jit`` kernel Helion generated.
    grid : tuple
        The grid.
    *args
        The kernel's arguments.
    num_warps, num_stages : int
        Launch options, as Helion passes them.
    ptx_options : str, optional
        Passed on to Triton's compile.
    launch_cooperative_grid : bool, default False
        A cooperative launch.
    **kwargs
        Other launch options (passed to ``triton_kernel.run``; ``warmup=`` among them replaces
        ``False``, as in Helion's launcher).

    Returns
    -------
    Any
        What ``triton_kernel.run`` returns (the compiled kernel).

    Raises
    ------
    RuntimeError
        Triton's own driver is active (see :func:`install`).

    Examples
    --------
    >>> import safecall.triton
    >>> # helion_kernel(x, y, _launcher=safecall.triton.helion_launcher)   # doctest: +SKIP
    """
    if not installed():
        install()
    if ptx_options is not None:
        kwargs["ptx_options"] = ptx_options
    # As Helion's own launcher builds them: a caller's keyword (`warmup=`) wins.
    options = {"grid": grid, "warmup": False, "num_warps": num_warps, "num_stages": num_stages,
               "launch_cooperative_grid": launch_cooperative_grid, **kwargs}
    return triton_kernel.run(*args, **options)
