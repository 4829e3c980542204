"""Shared by the pytest files of python/tests/modules.

tests/modules_python.rs builds the libraries with safecall into a directory named by the
environment variable SAFECALL_MODULES_LIBDIR, then runs pytest on python/tests/modules. The
tests use only `tvm_ffi` (the real runtime): the libraries bind to its C API when they are
loaded.
"""

import os

import tvm_ffi

LIBDIR = os.environ.get("SAFECALL_MODULES_LIBDIR")


def lib_path(name: str) -> str:
    """The absolute path of a library the Rust test built."""
    assert LIBDIR, "SAFECALL_MODULES_LIBDIR is not set (run through tests/modules_python.rs)"
    path = os.path.join(LIBDIR, name)
    assert os.path.exists(path), path
    return path


# The loader of the kind `sc_test_helpers` (the imported module of calls.scir): its payload
# names the library it stands for. Registered once per process, before any library is loaded.
LOADED_PAYLOADS = []


@tvm_ffi.register_global_func("ffi.Module.load_from_bytes.sc_test_helpers")
def _load_helpers(payload: bytes):
    LOADED_PAYLOADS.append(bytes(payload))
    assert bytes(payload) == b"helpers v1"
    return tvm_ffi.load_module(lib_path("libsc_py_helpers.so"))


# The loader of the kind `sc_syslib_prefix` (the imported module of syslib.scir): its payload is
# the prefix of another system library, created beforehand. (The real runtime holds the lock of
# its system-library registry while it rebuilds a system library's imports, so a loader that
# calls tvm_ffi.system_lib itself deadlocks there; safecall-runtime allows it.)
SYSTEM_LIBS = {}


@tvm_ffi.register_global_func("ffi.Module.load_from_bytes.sc_syslib_prefix")
def _load_system_lib(payload: bytes):
    return SYSTEM_LIBS[bytes(payload)]
