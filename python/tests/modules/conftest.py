"""pytest setup of python/tests/modules: the loaders of support/modules.py registered (by
importing it) before any library is loaded, and the library under test."""

import pytest
import tvm_ffi

from support.modules import lib_path


@pytest.fixture(scope="session")
def calls():
    """libcalls.so (tests/modules/calls.scir) loaded by the real runtime."""
    return tvm_ffi.load_module(lib_path("libcalls.so"))
