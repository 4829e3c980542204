"""The builder's literal typing: a Python number meeting a typed operand takes that operand's
type when it fits, an error naming the value when it does not; two typed operands never convert
silently; the hints are Python (``sc.cast(...)``), not IR syntax."""

import numpy as np
import pytest
import tvm_ffi

import safecall as sc


def _function(ret=sc.bool_):
    m = sc.ModuleBuilder("lits")
    f = m.function("f")
    x = f.param("x", sc.tensor(["n"], "float32"))
    f.returns(ret)
    return m, f, x


def test_an_int_meeting_an_i32_field_is_an_i32_and_the_function_runs():
    m, f, x = _function()
    f.return_(x.device_type == 1)  # kDLCPU, an i32 field
    assert "(x.device_type == 1i32)" in m.text()
    fn = sc.jit(m)["f"]
    assert fn(tvm_ffi.from_dlpack(np.zeros(3, np.float32))) is True


def test_a_number_takes_the_type_of_either_operand_and_results_keep_it():
    m, f, x = _function(sc.i64)
    n = f.param("k", sc.u8)
    s = f.param("s", sc.f32)
    assert (n + 1).text == "(k + 1u8)" and (n + 1).ty == "u8"
    assert (1 + n).text == "(1u8 + k)"
    assert (s * 2).text == "(s * 2.0f32)" and (s * 0.5).ty == "f32"
    assert (x.shape[0] < 4).ty == "bool"
    assert sc.select(n > 3, 1, n).text == "select((k > 3u8), 1u8, k)"
    assert sc.min_(x.ndim, 2).text == "min(x.ndim, 2i32)"
    # with nothing typed to meet, the IR's defaults (i64, f64)
    assert sc.lit(5).text == "5" and sc.var("q").__add__(1).text == "(q + 1)"


def test_statements_give_numbers_the_type_they_expect():
    m = sc.ModuleBuilder("stmts")
    k = m.extern_fn("k", [sc.ptr, sc.i32], sc.i32)
    f = m.function("f")
    x = f.param("x", sc.tensor(["n"], "float32"))
    f.returns(sc.u16)
    f.get_stream("st", 2, 0)
    rc = f.call(k, x.data, 7, dest="rc")
    f.assert_(rc == 0, "RuntimeError", "k failed: ", rc)
    with f.for_range("i", 0, x.ndim) as i:
        f.store(sc.i32, x.data, i)
    puts = m.extern_fn("puts", [sc.ptr], sc.i32)
    f.call(puts, sc.string("hi"))  # a string literal passes as a ptr
    f.return_(3)
    text = m.text()
    assert "let st = get_stream(2i32, 0i32);" in text
    assert "let rc = call k(x.data, 7i32);" in text
    assert "assert (rc == 0i32) else" in text
    assert "for i in 0i32..x.ndim {" in text
    assert "return 3u16;" in text
    assert 'call puts("hi");' in text
    m.build()  # the IR verifier agrees with every type


def test_a_number_that_does_not_fit_is_an_error_naming_it():
    _, f, x = _function()
    k = f.param("k", sc.u8)
    with pytest.raises(ValueError, match=r"^300 does not fit u8 \(0 to 255\), the type of k "):
        k == 300  # noqa: B015  (the operator raises)
    with pytest.raises(ValueError, match=r"^-1 does not fit u8"):
        k + -1  # noqa: B015  (the operator raises)
    with pytest.raises(TypeError, match=r"^1\.5 \(a Python float\) cannot be i32, the type of "
                       r"x\.device_type"):
        x.device_type * 1.5  # noqa: B015  (the operator raises)
    with pytest.raises(ValueError, match=r"does not fit f32"):
        f.param("s", sc.f32) < 1e300  # noqa: B015  (the operator raises)
    with pytest.raises(TypeError, match=r"^True cannot be u8"):
        k == True  # noqa: E712, B015  (the operator raises)
    with pytest.raises(ValueError, match=r"^lit\(128, i8\): 128 does not fit i8"):
        sc.lit(128, sc.i8)


def test_two_typed_operands_never_convert_and_the_hint_is_python():
    _, f, x = _function()
    with pytest.raises(TypeError) as info:
        x.device_type == x.shape[0]  # noqa: B015  (the operator raises)
    assert str(info.value) == (
        "operands of == have different types: x.device_type is i32, x.shape[0] is i64; "
        "convert one explicitly, e.g. sc.cast(sc.i32, x.shape[0])"
    )
    assert "cast<" not in str(info.value)
    # the explicit conversion is accepted
    assert (x.device_type == sc.cast(sc.i32, x.shape[0])).ty == "bool"
    with pytest.raises(TypeError, match=r"sc\.cast\(sc\.ptr, "):
        sc.offset(x.shape[0], 8)


def test_tensor_fields_are_indexed_not_called():
    _, f, x = _function()
    with pytest.raises(TypeError, match=r"x\.shape is indexed, not called: write x\.shape\[i\]"):
        x.shape(0)
