"""Build a kernel launcher with safecall's Python builder, JIT it and call it: no C compiler,
no files; the launcher is a ``tvm_ffi.Function`` a millisecond after the IR is built.

The launcher checks three 2-D float32 tensors (``out`` compact, ``a`` and ``b`` with any
strides, so transposed and sliced views work), computes a grid and calls the kernel's launch
function. Here the "kernel" is a Python function behind a ctypes pointer that does the work
with numpy (a DSL would pass the address of its real launch function). Run it with a Python
that has the package and numpy (``pip install ./python numpy``, or ``cargo xtask python``)::

    python examples/python/jit_launcher.py

With PyTorch installed, the same launcher is also called with torch tensors.
"""

import ctypes

import numpy as np

import safecall as sc

# int scaled_add_launch(a, b, out, m, n, sa0, sa1, sb0, sb1, alpha, grid): out = alpha * a + b
LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    *[ctypes.c_void_p] * 3,
    *[ctypes.c_int64] * 6,
    ctypes.c_float,
    ctypes.c_int32,
)
launches = []


def view(address, m, n, s0, s1):
    """A numpy view of an m x n float32 matrix at `address` with strides in elements."""
    extent = (m - 1) * s0 + (n - 1) * s1 + 1
    flat = np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctypes.c_float)), (extent,))
    return np.lib.stride_tricks.as_strided(flat, (m, n), (s0 * 4, s1 * 4))


@LAUNCH
def scaled_add_launch(a, b, out, m, n, sa0, sa1, sb0, sb1, alpha, grid):
    launches.append((m, n, grid))
    view(out, m, n, n, 1)[:] = alpha * view(a, m, n, sa0, sa1) + view(b, m, n, sb0, sb1)
    return 0


def build_launcher():
    m = sc.ModuleBuilder("scaled_add")
    launch = m.extern_fn(
        "scaled_add_launch", [sc.ptr] * 3 + [sc.i64] * 6 + [sc.f32, sc.i32], sc.i32
    )
    f = m.function("scaled_add", doc="out = alpha * a + b over m x n float32 matrices.")
    a = f.tensor("a", ["m", "n"], "float32", device="cpu", strides=["sa0", "sa1"])
    b = f.tensor("b", ["m", "n"], "float32", device="cpu", strides=["sb0", "sb1"])
    out = f.tensor("out", ["m", "n"], "float32", device="cpu")
    alpha = f.param("alpha", sc.f32)
    f.divisible("n", 4)
    rows, cols = sc.var("m"), sc.var("n")
    f.assert_(rows * cols > 0, "ValueError", "scaled_add: empty input of shape (", rows, ", ", cols, ")")
    grid = f.let("grid", sc.cast(sc.i32, sc.ceil_div(rows * cols, 256)))
    strides = [sc.var(s) for s in ("sa0", "sa1", "sb0", "sb1")]
    rc = f.call(launch, a.data, b.data, out.data, rows, cols, *strides, alpha, grid, dest="rc")
    f.assert_(rc == sc.lit(0, sc.i32), "RuntimeError", "the kernel launch failed with ", rc)
    return m


def main():
    builder = build_launcher()
    print(builder.text())
    module = sc.jit(builder, symbols={"scaled_add_launch": scaled_add_launch})
    scaled_add = module["scaled_add"]
    print("signature:", module.signature("scaled_add"))

    a = np.arange(8, dtype="float32").reshape(2, 4)
    b = np.ones((2, 4), dtype="float32")
    out = np.empty((2, 4), dtype="float32")
    scaled_add(a, b, out, 2.0)
    print("out =", out.tolist())

    # Strided views are checked and accepted: their strides bind sa0, sa1 / sb0, sb1.
    big = np.arange(32, dtype="float32").reshape(4, 8)
    scaled_add(big[::2, ::2], big[1::2, 1::2], out, 1.0)
    print("strided: out =", out.tolist())
    print("launches:", launches)

    # Wrong calls raise precise Python exceptions before the kernel is launched.
    for what, args in [
        ("float64 b", (a, b.astype("float64"), out, 1.0)),
        ("n = 3", (a[:, :3], b[:, :3], out[:, :3].copy(), 1.0)),
        ("b of another shape", (a, np.ones((3, 4), dtype="float32"), out, 1.0)),
        ("out transposed", (a, b, np.empty((4, 2), dtype="float32").T, 1.0)),
    ]:
        try:
            scaled_add(*args)
        except (TypeError, ValueError) as e:
            print(f"{what}: {type(e).__name__}: {e}")
    print("launches after the rejected calls:", len(launches))

    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the PyTorch tensors")
        return
    ta = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    tout = torch.empty(2, 4)
    scaled_add(ta, torch.ones(2, 4), tout, 2.0)
    print("torch: out =", tout.tolist())


if __name__ == "__main__":
    main()
