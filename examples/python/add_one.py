"""Load a library safecall generated and call it from Python, through the real ``tvm_ffi``.

Build the library with the safecall CLI, then run this script with a Python that has
``apache-tvm-ffi`` and ``numpy`` installed (``cargo xtask test`` makes one in ``.venv``)::

    cargo run -- build examples/ir/add_one.scir -o /tmp/add_one.so
    .venv/bin/python examples/python/add_one.py /tmp/add_one.so
"""

import sys

import numpy as np
import tvm_ffi
from tvm_ffi.core import TypeSchema


def main(path):
    # dlopen needs a path with a slash to load a file rather than search the library path.
    if "/" not in path:
        path = "./" + path
    module = tvm_ffi.load_module(path)
    add_one = module["add_one"]

    # numpy arrays (anything with __dlpack__) are passed as tensors, without copies.
    x = np.arange(5, dtype="float32")
    y = np.zeros_like(x)
    add_one(x, y)
    print("y =", y.tolist())

    # What the library says about the function: its type schema and argument names (from
    # __tvm_ffi__metadata_add_one) and its doc string (from __tvm_ffi__doc_add_one).
    metadata = module.get_function_metadata("add_one")
    print("signature:", TypeSchema.from_json_str(metadata["type_schema"]))
    print("arguments:", list(metadata["arg_names"]))
    print("doc:", module.get_function_doc("add_one"))

    # Wrong calls raise precise Python exceptions instead of reading memory they should not.
    for args in [
        (x, np.zeros(3, dtype="float32")),
        (x.astype("float64"), y),
        (x,),
    ]:
        try:
            add_one(*args)
        except (TypeError, ValueError) as e:
            print(f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} PATH/TO/add_one.so")
    main(sys.argv[1])
