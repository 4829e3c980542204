"""Helpers for testing safecall-built functions, as ``tvm_ffi.testing`` is for TVM-FFI's.

- :class:`RawTensor`: a DLPack producer of a tensor given field by field (any device, a
  ``byte_offset``, NULL or fake data, NULL strides), for argument checks numpy cannot reach.
- :class:`RecordingAllocator`: a TVM-FFI environment allocator that records what host
  functions allocate and checks that each tensor is freed exactly once.
- :mod:`safecall.testing.checks`: the runner of safecall's JSON check cases (needs numpy).

>>> import safecall.testing
>>> sorted(safecall.testing.__all__)
['RawTensor', 'RecordingAllocator']
"""

from __future__ import annotations

from .._dlpack import RawTensor
from ._allocator import RecordingAllocator

__all__ = ["RawTensor", "RecordingAllocator"]

# Their home is ``safecall.testing`` (as their docs and reprs say).
for _exported in (RawTensor, RecordingAllocator):
    _exported.__module__ = __name__
del _exported
