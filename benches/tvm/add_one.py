"""TVM 0.27's host function for examples/ir/add_one.scir, the reference row of
benches/instruction_count.sh.

The same function as examples/ir/add_one.scir written in TVMScript: two float32 tensors of
one symbolic length ``n``, ``y[i] = x[i] + 1``. ``tvm.compile`` (MakePackedAPI, then LLVM)
generates ``__tvm_ffi_add_one`` with TVM's own argument checks; the library is written to the
path given as the first argument.

Needs ``apache-tvm`` (``pip install apache-tvm==0.27.0.post1``, about 100 MB, which brings
the tvm-ffi pin); benches/instruction_count.sh runs it with ``$TVM_PYTHON`` or
``.venv-tvm/bin/python``.
"""

import sys

import tvm
from tvm.script import tirx as T


@T.prim_func
def add_one(x: T.handle, y: T.handle):
    T.func_attr({"global_symbol": "add_one"})
    n = T.int64()
    xs = T.match_buffer(x, (n,), "float32")
    ys = T.match_buffer(y, (n,), "float32")
    for i in range(n):
        ys[i] = xs[i] + T.float32(1)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: add_one.py OUTPUT.so")
    library = tvm.compile(tvm.IRModule({"add_one": add_one}), target="llvm")
    library.export_library(sys.argv[1])


if __name__ == "__main__":
    main()
