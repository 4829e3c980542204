"""Host functions that allocate (``empty``), from Python with numpy only: no allocator means a
RuntimeError that says what to do; ``safecall.use_cpu_allocator()`` gives CPU outputs that
numpy reads; tuple returns come back as a ``tvm_ffi.Array``."""

import numpy as np
import pytest
import tvm_ffi

import safecall as sc


def _module():
    m = sc.ModuleBuilder("alloc")
    f = m.function("add_one", doc="y = x + 1 in a new tensor, and n.")
    x = f.param("x", sc.tensor(["n"], "float32", device="cpu"))
    f.returns(("tensor", sc.i64))
    y = f.empty("y", [x.shape[0]], "float32", x.device)
    scratch = f.empty("scratch", [2, x.shape[0]], "float32", (1, 0))
    with f.for_range("i", 0, x.shape[0]) as i:
        v = sc.load(sc.f32, sc.offset(x.data, i * 4))
        f.store(sc.f32, sc.offset(scratch.data, i * 4), v + 1.0)
        f.store(sc.f32, sc.offset(y.data, i * 4), sc.load(sc.f32, sc.offset(scratch.data, i * 4)))
    f.return_((y, x.shape[0]))
    g = m.function("negative")
    g.returns("tensor")
    z = g.empty("z", [-3], "int8", (1, 0))
    g.return_(z)
    return m


@pytest.fixture
def no_allocator():
    sc.use_cpu_allocator(False)
    yield
    sc.use_cpu_allocator(False)


def test_the_builder_writes_empty_and_tuple_returns():
    text = _module().text()
    assert "fn add_one(x: tensor[(n,), float32, device=cpu]) -> (tensor, i64) {" in text
    assert "let y = empty((x.shape[0],), float32, x.device);" in text
    assert "let scratch = empty((2, x.shape[0]), float32, device(1i32, 0i32));" in text
    assert "return (y, x.shape[0]);" in text
    with pytest.raises(ValueError, match="concrete dtype"):
        sc.ModuleBuilder("m").function("f").empty("t", [1], "any", (1, 0))


def test_without_an_allocator_the_call_says_what_to_do(no_allocator):
    fns = sc.jit(_module())
    with pytest.raises(RuntimeError) as info:
        fns["add_one"](np.zeros(3, dtype="float32"))
    assert str(info.value).startswith(
        "add_one: cannot allocate `y` with shape (3,), float32 on cpu:0: no tensor allocator is "
        "installed (TVMFFIEnvGetDLPackManagedTensorAllocator() is NULL). From Python, pass a "
        "PyTorch tensor among the arguments"
    )
    assert "safecall.use_cpu_allocator()" in str(info.value)


def test_numpy_users_get_cpu_outputs_with_the_cpu_allocator(no_allocator):
    sc.use_cpu_allocator()
    fns = sc.jit(_module())
    x = np.arange(5, dtype="float32")
    out = fns["add_one"](x)
    assert isinstance(out, tvm_ffi.Array)
    y, n = out[0], out[1]
    assert n == 5
    assert isinstance(y, tvm_ffi.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(y), x + 1)
    with pytest.raises(ValueError, match=r"cannot allocate `z` with shape \(-3,\), int8: dimension 0 is negative"):
        fns["negative"]()


def test_a_shared_library_allocates_through_libtvm_ffi(no_allocator, tmp_path):
    path = tmp_path / "alloc.so"
    sc.build(_module(), path)
    lib = tvm_ffi.load_module(str(path))
    sc.use_cpu_allocator(all_threads=False)
    out = lib["add_one"](np.ones(2, dtype="float32"))
    np.testing.assert_array_equal(np.from_dlpack(out[0]), np.full(2, 2, dtype="float32"))
