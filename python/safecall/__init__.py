"""safecall in process: build host-function IR from Python, JIT it into ``tvm_ffi.Function``s
(no C compiler), or build TVM-FFI objects and libraries (a ``.so`` is linked by the system
``cc``).

>>> import safecall
>>> m = safecall.parse('module demo; fn twice(n: i64) -> i64 { return n * 2; }')
>>> twice = safecall.jit(m)["twice"]
>>> twice(21)
42

The generated code binds to the C API of the ``libtvm_ffi`` that ``tvm_ffi`` loaded: its errors
land in that runtime's thread-local slot, ``call_packed global`` sees functions registered with
``tvm_ffi.register_global_func``, and the extension itself exports no TVM-FFI symbols, so
there is exactly one TVM-FFI runtime in the process.
"""

from __future__ import annotations

# tvm_ffi first: it loads libtvm_ffi with RTLD_GLOBAL, where the JIT looks the C API up.
import tvm_ffi  # noqa: F401

from . import _native
from ._native import CompileError, Diagnostic, IRError, Module
from ._parse import parse
from .builder import *  # noqa: F401,F403  (the IR builder)
from .builder import __all__ as _builder_all
from . import builder as ir  # noqa: F401  (safecall.ir.ModuleBuilder, ...)
from ._compile import JitModule, ModuleLike, build, emit, jit, metadata  # noqa: F401  (ModuleLike: the type)
from .allocator import use_cpu_allocator

__all__ = [
    "parse",
    "jit",
    "build",
    "emit",
    "Module",
    "JitModule",
    "IRError",
    "CompileError",
    "Diagnostic",
    "HAS_LLVM",
    "metadata",
    "use_cpu_allocator",
] + list(_builder_all)

#: Whether this build of the package has the LLVM backend.
HAS_LLVM: bool = _native.HAS_LLVM

# The entry points' home is ``safecall`` (as their docs and reprs say).
for _exported in (JitModule, build, emit, jit, metadata, parse):
    _exported.__module__ = __name__
del _exported
