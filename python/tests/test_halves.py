"""f16 and bf16 from the Python builder: the types, literals and parameters rounded to the
nearest value (ties to even, bf16 not truncated as Triton does), exact widening, comparisons."""

import struct

import numpy as np
import pytest

import safecall
import safecall as sc
from support import backends


def _f16_bits(x: float) -> int:
    """The bits of the f16 nearest to ``x`` (CPython's binary16 packing rounds to even, and
    refuses the values that round to infinity)."""
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0xFC00 if x < 0 else 0x7C00


def _module() -> sc.ModuleBuilder:
    m = sc.ModuleBuilder("halves")
    f = m.function("f16_bits", doc="Stores the bits of an f16 parameter in out[0].")
    x = f.param("x", sc.f16)
    out = f.tensor("out", [1], "uint16", device="cpu")
    f.store(sc.f16, out.data, x)
    g = m.function("bf16_bits", doc="Stores the bits of cast<bf16>(y) in out[0].")
    y = g.param("y", sc.f64)
    out = g.tensor("out", [1], "uint16", device="cpu")
    g.store(sc.bf16, out.data, sc.cast(sc.bf16, y))
    h = m.function("literals")
    h.returns(sc.f64)
    h.return_(sc.cast(sc.f64, sc.lit(0.1, sc.bf16)))
    k = m.function("less")
    a, b = k.param("a", sc.f16), k.param("b", sc.f16)
    k.returns(sc.bool_)
    k.return_(sc.and_(a < b, a != sc.lit(float("nan"), sc.f16)))
    e = m.function("echo")
    z = e.param("z", sc.bf16)
    e.returns(sc.bf16)
    e.return_(z)
    return m


def test_the_half_types_and_literals_print_as_the_ir_spells_them():
    assert str(sc.f16) == "f16" and str(sc.bf16) == "bf16"
    assert "f16" in sc.__all__ and "bf16" in sc.__all__
    assert sc.lit(1.5, sc.f16).text == "1.5f16"
    assert sc.lit(2, "bf16").text == "2.0bf16"
    assert sc.lit(float("-inf"), sc.bf16).text == "-inf_bf16"
    assert sc.lit(float("nan"), sc.f16).text == "nan_f16"
    text = _module().text()
    assert "fn f16_bits(x: f16, out: tensor[(1,), uint16, device=cpu])" in text
    assert "return cast<f64>(0.1bf16);" in text


@pytest.mark.parametrize("backend", backends())
def test_halves_round_to_nearest_even_at_call_time(backend):
    jm = safecall.jit(_module(), backend=backend)
    out = np.zeros(1, dtype="uint16")
    for x in [0.1, 1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65520.0, 2**-24, 2**-25, -0.0, 3, True]:
        jm.f16_bits(x, out)
        assert int(out[0]) == _f16_bits(float(x)), x
    jm.f16_bits(float("nan"), out)
    assert int(out[0]) == 0x7E00
    # bf16: to nearest even; Triton truncates the f32 bits (0x3dcc for 0.1, 0x3f80 below).
    for y, bits in [(0.1, 0x3DCD), (1 + 2**-8 + 2**-20, 0x3F81), (1 + 2**-8, 0x3F80), (3.4028234663852886e38, 0x7F80)]:
        jm.bf16_bits(y, out)
        assert int(out[0]) == bits, y
    with pytest.raises(TypeError, match="argument .x. \\(#0\\): expected float, got ffi.String"):
        jm.f16_bits("1.0", out)


@pytest.mark.parametrize("backend", backends())
def test_halves_widen_exactly_and_compare(backend):
    jm = safecall.jit(_module(), backend=backend)
    assert jm.literals() == 0.10009765625
    assert jm.echo(0.1) == 0.10009765625
    assert jm.less(1.0, 1.0009765625) is True
    assert jm.less(1.0009765625, 1.0) is False
    # 1 + 2^-12 rounds to 1.0 in f16: equal after rounding, so not less.
    assert jm.less(1.0, 1 + 2**-12) is False
    assert jm.signature("echo") == "echo(z: bf16)"
