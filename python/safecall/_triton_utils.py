"""``driver.active.utils`` of the installed safecall Triton driver: what Triton 3.9's
``driver.c`` (``cuda_utils``) serves, on the CUDA driver API through ctypes, so that no C
compiler ever runs. Each function has the name, arguments, results and errors of its
``driver.c`` namesake (``RuntimeError("Triton Error [CUDA]: <cuGetErrorString>")`` for a
failed driver call).

``load_binary`` also remembers each function's cubin: the launcher
(:mod:`safecall._triton_launcher`) builds its host function from it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native
from ._native import CUDA
from ._triton_integers import c_type_name, parsed_handle, parsed_int, parsed_long

#: Attributes by short name (values from cudarc's ``driver::sys``, through ``_native.CUDA``).
_DEV = {k[len("DEVICE_ATTRIBUTE_") :]: v for k, v in CUDA.items() if k.startswith("DEVICE_ATTRIBUTE_")}
_FUNC = {k[len("FUNC_ATTRIBUTE_") :]: v for k, v in CUDA.items() if k.startswith("FUNC_ATTRIBUTE_")}
#: Newer than the CUDA 12.8 bindings: ``CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE`` and
#: ``CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY`` as Triton 3.9's driver.c defines them
#: (for sm_107's oversized shared memory), and the attribute 150 it reads there.
_FUNC["SHARED_MEMORY_MODE"] = 17
_SHARED_MEMORY_MODE_ALLOW_OVERSIZED = 3
_DEV["MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK"] = 150
_FUNC_CACHE_PREFER_SHARED = CUDA["FUNC_CACHE_PREFER_SHARED"]
_LIMIT_PRINTF_FIFO_SIZE = CUDA["LIMIT_PRINTF_FIFO_SIZE"]
_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = CUDA["LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"]
_TENSOR_MAP_L2_PROMOTION_L2_128B = CUDA["TENSOR_MAP_L2_PROMOTION_L2_128B"]
_OOB_FILL_NONE = CUDA["TENSOR_MAP_FLOAT_OOB_FILL_NONE"]
_OOB_FILL_NAN = CUDA["TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"]
#: Drivers up to this version get bit 21 of a small tensor's descriptor cleared (Triton does).
_BIT21_DRIVER = 13010


class _LaunchAttribute(ctypes.Structure):
    # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte value union.
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_int), ("value", ctypes.c_uint32 * 16)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared", ctypes.c_uint),
        ("stream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(_LaunchAttribute)),
        ("num_attrs", ctypes.c_uint),
    ]


def PyCUtensorMap() -> Any:  # noqa: N802  (Triton's name for the type)
    """A zeroed ``CUtensorMap`` object laid out as Triton's ``PyCUtensorMap`` (the map at
    offset 128 of the object, 128-byte aligned: what C code reading Triton's objects reads);
    ``tma_desc_cpu_ptr()`` is the map's address (``safecall._native.new_tensor_map``)."""
    return _native.new_tensor_map()


class RuntimeUtils:
    """What the NVIDIA and AMD ``utils`` share: the GPU runtime library, loaded once on first
    use by the subclass's ``_load`` (which also sets :attr:`path`), and the binaries
    ``load_binary`` loaded."""

    def __init__(self) -> None:
        self._lib: Optional[ctypes.CDLL] = None
        #: The runtime library's path, once loaded.
        self.path = ""
        self._lock = threading.Lock()
        #: Function handle -> (kernel name, binary bytes, device) from ``load_binary``.
        self.binaries: Dict[int, Tuple[str, bytes, int]] = {}

    @property
    def lib(self) -> ctypes.CDLL:
        """The runtime library, loaded on first use."""
        if self._lib is None:
            with self._lock:
                if self._lib is None:
                    self._lib = self._load()
        return self._lib

    def _load(self) -> ctypes.CDLL:
        raise NotImplementedError


class CudaUtils(RuntimeUtils):
    """The 14 public entry points of Triton's ``cuda_utils`` that code outside the launcher
    calls (``launch`` and ``build_signature_metadata`` belong to Triton's own launcher, which
    the safecall driver replaces). :attr:`lib` is libcuda, initialised (``cuInit(0)``)."""

    # ---- the driver ----------------------------------------------------------------------
    def _load(self) -> ctypes.CDLL:
        self.path = _libcuda_path()
        return _load_libcuda(self.path)

    def _check(self, code: int) -> None:
        if code != 0:
            raise RuntimeError("Triton Error [CUDA]: " + _error_text(self.lib, code))

    def _call(self, name: str, *args: Any) -> None:
        self._check(getattr(self.lib, name)(*args))

    def _device(self, ordinal: int) -> int:
        dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(dev), ordinal)
        return dev.value

    def ordinal(self, device: int) -> int:
        """The ordinal of a ``CUdevice`` (what Triton calls a device: ``get_current_device()``
        returns ``cuCtxGetDevice``'s value, which real drivers number as ordinals)."""
        count = ctypes.c_int()
        self._call("cuDeviceGetCount", ctypes.byref(count))
        for i in range(count.value):
            if self._device(i) == device:
                return i
        return device

    def _device_lenient(self, device: int) -> int:
        """``cuDeviceGet(device)``, else ``device`` itself: Triton's code passes the value of
        ``get_current_device()`` (a ``CUdevice``, which real drivers number as ordinals)."""
        dev = ctypes.c_int()
        if self.lib.cuDeviceGet(ctypes.byref(dev), device) == 0:
            return dev.value
        return device

    def _attribute(self, name: str, device: int) -> int:
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), _DEV[name], device)
        return value.value

    def _func_attribute(self, name: str, function: int) -> int:
        value = ctypes.c_int()
        self._call("cuFuncGetAttribute", ctypes.byref(value), _FUNC[name], ctypes.c_void_p(function))
        return value.value

    def _ensure_context(self, device: int = 0) -> None:
        """The current context, else the primary context of ``device`` made current."""
        ctx = ctypes.c_void_p()
        self._call("cuCtxGetCurrent", ctypes.byref(ctx))
        if not ctx.value:
            self._set_primary(self._device(device) if device == 0 else device)

    def _set_primary(self, device: int) -> None:
        ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), device)
        self._call("cuCtxSetCurrent", ctx)

    # ---- the entry points ----------------------------------------------------------------
    def load_binary(self, name: str, cubin: bytes, shared: int, device: int) -> Tuple[int, int, int, int, int]:
        """Loads ``cubin`` in the current context (else ``device``'s primary context) and
        returns ``(module, function, n_regs, n_spills, n_max_threads)``; opts the function in
        to ``shared`` bytes of shared memory above 48 KiB as Triton does."""
        # As `driver.c`'s `ss#ii`: the name, the image (a str or read-only bytes), then the ints.
        if not isinstance(name, str):
            raise TypeError(f"argument 1 must be str, not {c_type_name(name)}")
        if not isinstance(cubin, (str, bytes)):
            raise TypeError(f"argument 2 must be read-only bytes-like object, not {c_type_name(cubin)}")
        shared, device = parsed_int(shared), parsed_int(device)
        data = cubin.encode() if isinstance(cubin, str) else cubin
        ctx = ctypes.c_void_p()
        self._call("cuCtxGetCurrent", ctypes.byref(ctx))
        if not ctx.value:
            self._set_primary(device)
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), data)
        self._call("cuModuleGetFunction", ctypes.byref(function), module, name.encode())
        fn = function.value or 0
        n_regs = self._func_attribute("NUM_REGS", fn)
        n_spills = self._func_attribute("LOCAL_SIZE_BYTES", fn) // 4
        n_max_threads = self._func_attribute("MAX_THREADS_PER_BLOCK", fn)
        optin = self._attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", device)
        if shared > 49152 and optin > 49152:
            mode = self.lib.cuFuncSetAttribute(
                ctypes.c_void_p(fn), _FUNC["SHARED_MEMORY_MODE"], _SHARED_MEMORY_MODE_ALLOW_OVERSIZED
            )
            if mode != 0:
                self._call("cuFuncSetCacheConfig", ctypes.c_void_p(fn), _FUNC_CACHE_PREFER_SHARED)
                self._attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", device)
                static = self._func_attribute("SHARED_SIZE_BYTES", fn)
                self._call(
                    "cuFuncSetAttribute", ctypes.c_void_p(fn), _FUNC["MAX_DYNAMIC_SHARED_SIZE_BYTES"], optin - static
                )
        self.binaries[fn] = (name, data, self.ordinal(device))
        return (module.value or 0, fn, n_regs, n_spills, n_max_threads)

    def unload_module(self, module: int) -> None:
        """``cuModuleUnload``."""
        self._call("cuModuleUnload", ctypes.c_void_p(parsed_handle(module)))

    def get_device_properties(self, device: int) -> Dict[str, int]:
        """Triton's 7 keys: ``max_shared_mem`` (the opt-in per block), ``max_num_regs``,
        ``multiprocessor_count``, ``warpSize``, ``sm_clock_rate``, ``mem_clock_rate``,
        ``mem_bus_width``."""
        dev = self._device_lenient(parsed_int(device))
        major = self._attribute("COMPUTE_CAPABILITY_MAJOR", dev)
        minor = self._attribute("COMPUTE_CAPABILITY_MINOR", dev)
        shared = "MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK" if (major, minor) == (10, 7) else "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"
        return {
            "max_shared_mem": self._attribute(shared, dev),
            "max_num_regs": self._attribute("MAX_REGISTERS_PER_BLOCK", dev),
            "multiprocessor_count": self._attribute("MULTIPROCESSOR_COUNT", dev),
            "warpSize": self._attribute("WARP_SIZE", dev),
            "sm_clock_rate": self._attribute("CLOCK_RATE", dev),
            "mem_clock_rate": self._attribute("MEMORY_CLOCK_RATE", dev),
            "mem_bus_width": self._attribute("GLOBAL_MEMORY_BUS_WIDTH", dev),
        }

    def get_device_capability(self, device: int) -> Tuple[int, int]:
        """``(major, minor)``."""
        dev = self._device_lenient(parsed_int(device))
        return (self._attribute("COMPUTE_CAPABILITY_MAJOR", dev), self._attribute("COMPUTE_CAPABILITY_MINOR", dev))

    def get_current_device(self) -> int:
        """The current context's device (device 0's primary context made current if none);
        native (``_native.cuda_current_device``): the JIT asks on every launch without torch."""
        return _native.cuda_current_device(_libcuda_path())

    def set_current_device(self, device: int) -> None:
        """Makes ``device``'s primary context current."""
        self._set_primary(parsed_int(device))

    def get_default_stream(self, device: int) -> int:
        """Makes ``device``'s primary context current; returns 0 (the default stream); native,
        as :meth:`get_current_device`."""
        return _native.cuda_default_stream(_libcuda_path(), parsed_int(device))

    def is_stream_capturing(self, stream: int) -> bool:
        """Whether ``stream`` is capturing a CUDA graph."""
        status = ctypes.c_int()
        self._call("cuStreamIsCapturing", ctypes.c_void_p(parsed_handle(stream)), ctypes.byref(status))
        return status.value != 0

    def cuOccupancyMaxActiveClusters(self, function: int, shared: int, cluster_dim: int) -> int:  # noqa: N802
        """Clusters of ``cluster_dim`` blocks of 128 threads with ``shared`` bytes that can be
        active at once (sets the function's dynamic shared memory and non-portable opt-ins)."""
        fn = ctypes.c_void_p(parsed_handle(function))
        shared, cluster_dim = parsed_int(shared), parsed_int(cluster_dim)
        self._call("cuFuncSetAttribute", fn, _FUNC["MAX_DYNAMIC_SHARED_SIZE_BYTES"], shared)
        attr = _LaunchAttribute(id=_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        attr.value[0], attr.value[1], attr.value[2] = cluster_dim, 1, 1
        config = _LaunchConfig()
        config.grid[:] = [cluster_dim, 1, 1]
        config.block[:] = [128, 1, 1]
        config.shared = shared
        config.attrs = ctypes.pointer(attr)
        config.num_attrs = 1
        if not hasattr(self.lib, "cuOccupancyMaxActiveClusters"):
            raise RuntimeError("Failed to retrieve cuOccupancyMaxActiveClusters from libcuda.so.1")
        self._call("cuFuncSetAttribute", fn, _FUNC["NON_PORTABLE_CLUSTER_SIZE_ALLOWED"], 1)
        out = ctypes.c_int(-1)
        self._call("cuOccupancyMaxActiveClusters", ctypes.byref(out), fn, ctypes.byref(config))
        return out.value

    def set_printf_fifo_size(self, size: int) -> None:
        """``cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE)`` in the current context (device 0's
        primary context if none), skipped when unchanged."""
        size = parsed_long(size)
        if size < 0:
            raise ValueError("fifo size must be non-negative")
        self._ensure_context()
        old = ctypes.c_size_t()
        self._call("cuCtxGetLimit", ctypes.byref(old), _LIMIT_PRINTF_FIFO_SIZE)
        if old.value != size:
            self._call("cuCtxSetLimit", _LIMIT_PRINTF_FIFO_SIZE, ctypes.c_size_t(size))

    def fill_tma_descriptor_tiled(self, *args: Any) -> PyCUtensorMap:
        """A tiled ``CUtensorMap`` exactly as Triton 3.9's ``fillTMADescriptorTiled`` encodes it
        (dims and strides innermost first, strides in bytes, element strides 1, L2 promotion
        128B, NaN fill for ``padding == 1``, bit 21 cleared for small tensors on drivers up to
        13010). Arguments: ``(address, swizzle, elem_size, elem_type, block, shape, strides,
        padding)``."""
        return self._fill_tiled(*args, triton_36=False)

    def _fill_tiled(
        self,
        address: int,
        swizzle: int,
        elem_size: int,
        elem_type: int,
        block: Sequence[int],
        shape: Sequence[int],
        strides: Sequence[int],
        padding: int,
        triton_36: bool,
    ) -> PyCUtensorMap:
        rank = len(block)
        if len(shape) != rank or len(strides) != rank:
            raise RuntimeError("Rank mismatch")
        dims, byte_strides = _innermost_first(shape, strides, elem_size)
        boxes = [int(b) for b in reversed(list(block))]
        desc = PyCUtensorMap()
        c_dims = (ctypes.c_uint64 * 5)(*dims)
        c_strides = (ctypes.c_uint64 * 5)(*byte_strides)
        c_box = (ctypes.c_uint32 * 5)(*boxes)
        c_elem = (ctypes.c_uint32 * 5)(1, 1, 1, 1, 1)
        fill = _OOB_FILL_NAN if padding == 1 else _OOB_FILL_NONE
        code = self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(desc.tma_desc_cpu_ptr()), elem_type, rank, ctypes.c_void_p(address),
            c_dims, c_strides, c_box, c_elem, 0, swizzle, _TENSOR_MAP_L2_PROMOTION_L2_128B, fill,
        )
        if code != 0:
            # 3.7+ print the rank - 1 strides and the fill; 3.6 (no workaround) prints one more
            # stride, the outermost dim times the outermost stride (as its C code computes it,
            # in 64 bits), and no fill.
            printed, tail = byte_strides, f" fill={fill}"
            if triton_36:
                printed = byte_strides + [dims[rank - 1] * (byte_strides[rank - 2] if rank > 1 else elem_size) % (1 << 64)]
                tail = ""
            raise RuntimeError(
                "Triton Error [CUDA]: Failed to create tensor map descriptor: "
                f"{_error_text(self.lib, code, 'Unknown error')}\nelemType={elem_type} rank={rank} "
                f"global_address={address:#x} elemSize={elem_size} swizzle={swizzle} padding={padding}\n"
                f"shape={dims}\nstrides={printed}\nblockSize={boxes} elementStrides={[1] * rank}{tail}\n"
            )
        version = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(version))
        if not triton_36 and version.value <= _BIT21_DRIVER:
            steps = [elem_size] + byte_strides
            top = sum((dims[i] - 1) * steps[i] for i in range(rank))
            if top + 1 < 128 * 1024:
                word = ctypes.c_uint64.from_address(desc.tma_desc_cpu_ptr() + 8)
                word.value &= ~(1 << 21)
        return desc

    def fill_tma_descriptor(self, *args: Any) -> PyCUtensorMap:
        """Triton 3.6's tiled encoder: :meth:`fill_tma_descriptor_tiled`'s arguments and
        encoding, without its bit-21 workaround (which 3.7 added), with 3.6's error text."""
        return self._fill_tiled(*args, triton_36=True)

    def fill_tma_descriptor_im2col(self, *args: Any) -> PyCUtensorMap:
        """An im2col ``CUtensorMap`` as Triton's ``fillTMADescriptorIm2col`` encodes it. Triton
        3.8+ pass ``(address, swizzle, elem_size, elem_type, block, shape, strides, padding,
        lower, upper, element_strides)`` with ``block`` ``[pixels per column, channels per
        pixel]``; Triton 3.7 passes channels per pixel and pixels per column themselves, before
        ``element_strides`` (13 arguments). Dims, strides (bytes), the pixel box corners and the
        element strides innermost first; L2 promotion 128B; NaN fill for ``padding == 1``."""
        if len(args) == 13:
            *head, lower, upper, channels, pixels, element_strides = args
            return self._fill_im2col(*head, lower, upper, element_strides, channels=channels, pixels=pixels)
        if len(args) != 11:
            raise TypeError(f"function takes exactly 11 arguments ({len(args)} given)")
        return self._fill_im2col(*args)

    def _fill_im2col(
        self,
        address: int,
        swizzle: int,
        elem_size: int,
        elem_type: int,
        block: Sequence[int],
        shape: Sequence[int],
        strides: Sequence[int],
        padding: int,
        lower: Sequence[int],
        upper: Sequence[int],
        element_strides: Sequence[int],
        channels: Optional[int] = None,
        pixels: Optional[int] = None,
    ) -> PyCUtensorMap:
        rank = len(shape)
        if channels is None and len(block) != 2:
            raise RuntimeError("blockSize must have exactly 2 dimensions for im2col")
        if len(strides) != rank:
            raise RuntimeError(
                f"Rank mismatch for strides in fillTMADescriptorIm2col: shape has rank {rank} but strides has "
                f"{len(strides)} elements. Expected strides to have {rank} elements."
            )
        if len(lower) > 5:
            raise RuntimeError("Pixel box rank too large (max 5)")
        if len(upper) != len(lower):
            raise RuntimeError("Pixel box corner rank mismatch")
        if len(element_strides) != rank:
            raise RuntimeError("elementStrides length must match tensor rank")
        dims, byte_strides = _innermost_first(shape, strides, elem_size)
        if channels is None or pixels is None:
            channels, pixels = int(block[1]), int(block[0])
        desc = PyCUtensorMap()
        fill = _OOB_FILL_NAN if padding == 1 else _OOB_FILL_NONE
        code = self.lib.cuTensorMapEncodeIm2col(
            ctypes.c_void_p(desc.tma_desc_cpu_ptr()), elem_type, rank, ctypes.c_void_p(address),
            (ctypes.c_uint64 * 5)(*dims), (ctypes.c_uint64 * 5)(*byte_strides),
            (ctypes.c_int * 5)(*reversed([int(v) for v in lower])), (ctypes.c_int * 5)(*reversed([int(v) for v in upper])),
            channels, pixels, (ctypes.c_uint32 * 5)(*reversed([int(v) for v in element_strides])),
            0, swizzle, _TENSOR_MAP_L2_PROMOTION_L2_128B, fill,
        )
        if code != 0:
            raise RuntimeError(
                "Triton Error [CUDA]: Failed to create im2col tensor map descriptor: "
                f"{_error_text(self.lib, code, 'Unknown error')}\nelemType={elem_type} rank={rank} "
                f"global_address={address:#x} elemSize={elem_size} swizzle={swizzle} padding={padding} "
                f"channelsPerPixel={channels} pixelsPerColumn={pixels}\n"
                + _im2col_failure_values(dims, byte_strides, elem_size, block, lower, upper, element_strides)
            )
        return desc


def _im2col_failure_values(
    dims: Sequence[int], byte_strides: Sequence[int], elem_size: int, block: Sequence[int],
    lower: Sequence[int], upper: Sequence[int], element_strides: Sequence[int],
) -> str:
    """The lines after the first two of ``fillTMADescriptorIm2col``'s error (3.7+), with C's
    widths: dims and byte strides innermost first (one stride more, the outermost dim times the
    outermost stride, in 64 bits), the block reversed (``%u``), the corners reversed (``%d``),
    the element strides reversed (``%u``)."""
    rank = len(dims)
    strides = [*byte_strides, dims[rank - 1] * (byte_strides[rank - 2] if rank > 1 else elem_size) % (1 << 64)]
    u32 = [int(b) % (1 << 32) for b in reversed(list(block))]
    i32 = [[(int(v) + (1 << 31)) % (1 << 32) - (1 << 31) for v in reversed(list(c))] for c in (lower, upper)]
    steps = [int(e) % (1 << 32) for e in reversed(list(element_strides))]
    return (
        f"shape={list(dims)}\nstrides={strides}\nblockSize={u32}\n"
        f"pixelBoxLower={i32[0]} pixelBoxUpper={i32[1]}\nelementStrides={steps}\n"
    )


def _libcuda_path() -> str:
    """libcuda as safecall's generated code finds it: ``$SAFECALL_LIBCUDA_PATH``, else
    ``$TRITON_LIBCUDA_PATH/libcuda.so.1``, else ``libcuda.so.1``."""
    path = os.environ.get("SAFECALL_LIBCUDA_PATH")
    if not path and os.environ.get("TRITON_LIBCUDA_PATH"):
        path = os.path.join(os.environ["TRITON_LIBCUDA_PATH"], "libcuda.so.1")
    return path or "libcuda.so.1"


def _load_libcuda(path: str) -> ctypes.CDLL:
    """The driver at ``path``, ``cuInit(0)`` done."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise RuntimeError(f"safecall's Triton driver cannot load the CUDA driver `{path}`: {e}") from None
    lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuTensorMapEncodeTiled.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
        ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ]
    lib.cuTensorMapEncodeIm2col.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int), ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ]
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
    code = lib.cuInit(0)
    if code != 0:
        raise RuntimeError("Triton Error [CUDA]: " + _error_text(lib, code))
    return lib


def _error_text(lib: ctypes.CDLL, code: int, unknown: str = "") -> str:
    """``cuGetErrorString``'s text for ``code`` (``unknown`` when the driver has none)."""
    text = ctypes.c_char_p()
    lib.cuGetErrorString(code, ctypes.byref(text))
    return text.value.decode(errors="replace") if text.value else unknown


def _innermost_first(shape: Sequence[int], strides: Sequence[int], elem_size: int) -> Tuple[List[int], List[int]]:
    """A tensor map's dims and byte strides as the driver takes them: innermost first, the
    innermost stride (implied by the element size) left out."""
    dims = [int(d) for d in reversed(list(shape))]
    byte_strides = [elem_size * int(s) for s in reversed(list(strides)[: len(shape) - 1])]
    return dims, byte_strides


def flatten(values: Sequence[Any]) -> List[Any]:
    """Nested tuples flattened in order."""
    out: List[Any] = []
    for v in values:
        if isinstance(v, tuple):
            out.extend(flatten(v))
        else:
            out.append(v)
    return out
