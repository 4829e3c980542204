"""The TVM-FFI environment allocator from Python: tensors that host functions allocate
(``empty`` in the IR) come from the allocator installed with
``TVMFFIEnvSetDLPackManagedTensorAllocator``. Under Python, ``tvm_ffi`` installs PyTorch's
allocator only for a call with a torch tensor among its arguments; a numpy-only program
installs safecall's CPU allocator with :func:`use_cpu_allocator`.
"""

from __future__ import annotations

import ctypes

import tvm_ffi  # noqa: F401  (loads libtvm_ffi with RTLD_GLOBAL first)

from . import _native

__all__ = ["use_cpu_allocator"]


def _set_allocator() -> "ctypes._CFuncPtr":
    # libtvm_ffi is loaded with RTLD_GLOBAL by tvm_ffi, so the process resolves its C API.
    fn = ctypes.CDLL(None).TVMFFIEnvSetDLPackManagedTensorAllocator
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def use_cpu_allocator(enable: bool = True, *, all_threads: bool = True) -> None:
    """Installs safecall's CPU allocator as the TVM-FFI environment allocator, so that host
    functions that allocate (``empty(..., device(1i32, 0i32))``) return CPU tensors without
    PyTorch; convert them with ``numpy.from_dlpack``.

    Parameters
    ----------
    enable : bool, default True
        True installs the allocator; False removes the installed one (none is installed
        afterwards, and allocating raises a RuntimeError again).
    all_threads : bool, default True
        Also install it process-wide (every thread without an allocator of its own uses it);
        False installs it for the calling thread only.

    Returns
    -------
    None

    Raises
    ------
    RuntimeError
        When libtvm_ffi refuses the allocator.

    Examples
    --------
    >>> import safecall
    >>> safecall.use_cpu_allocator()
    >>> safecall.use_cpu_allocator(False)

    The allocator makes zero-filled, 64-byte aligned, compact tensors on ``cpu:0``-style
    devices and refuses other device types with a RuntimeError naming the device type. A call
    with a torch tensor among its arguments still allocates with PyTorch (tvm_ffi installs its
    allocator for that call only).
    """
    address = _native.CPU_ALLOCATOR if enable else None
    rc = _set_allocator()(address, 1 if all_threads else 0, None)
    if rc != 0:
        raise RuntimeError(f"TVMFFIEnvSetDLPackManagedTensorAllocator returned {rc}")
