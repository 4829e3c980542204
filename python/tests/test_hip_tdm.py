"""``sc.tdm(...)``: AMD TDM descriptor arguments from the builder, launched on the HIP runtime
double (the fixture code object's ``tdm2`` kernel takes a 48-byte descriptor and an ``i32``),
with the builder's, the verifier's and the call-time errors."""

from __future__ import annotations

import struct

import pytest
import tvm_ffi
from support import ROOT, fake_hip
from support.triton_fakes import CudaTensor

import safecall
import safecall as sc

HSACO = (ROOT / "tests" / "kernel_params" / "kernels_gfx942.hsaco").read_bytes()


def _module(desc) -> sc.ModuleBuilder:
    m = sc.ModuleBuilder("tdm")
    m.device_binary("kernels", "hsaco", HSACO, ["tdm2"])
    f = m.function("load")
    x = f.param("x", sc.tensor(["m", "n"], "float16", device="rocm", strides="any"))
    f.launch("kernels", "tdm2", desc(x), sc.cast(sc.i32, x.shape[0]), grid=[1], block=[128])
    return m


def test_a_descriptor_from_the_builder_reaches_the_kernel_by_value():
    fake = fake_hip.fresh()
    m = _module(lambda x: sc.tdm(x, block=(64, 64), warps=4, pad=(64, 8)))
    assert "tdm(x, block=(64, 64), warps=4, pad=(64, 8))" in m.text()
    jit = safecall.jit(m.build())
    address = 0x7F00_0000_1000
    jit.load(tvm_ffi.from_dlpack(CudaTensor(address, "float16", shape=(70000, 8), strides=(8, 1), device_type=10)))
    (launch,) = fake_hip.launches(fake)
    desc, m_arg = launch["args"]
    words = struct.unpack("<12I", bytes.fromhex(desc))
    assert words[:4] == (1, 0, address & 0xFFFF_FFFF, address >> 32 | 1 << 31)
    # 2-byte elements, padding of 8 halves (4 words) every 64 (32 words).
    assert words[4] == 1 << 16 | 1 << 20 | 4 << 22 | 3 << 25
    # Dims 8 (inner) and 70000 from bits 48 and 80; the inner block 64, the outer 64 / 4 warps.
    assert words[5:9] == (8 << 16, (70000 << 16) & 0xFFFF_FFFF, 70000 >> 16 | 64 << 16, 16)
    assert words[9:] == (8, 0, 0)
    assert m_arg == struct.pack("<i", 70000).hex()


def test_what_a_descriptor_cannot_hold_is_an_error():
    fake_hip.fresh()
    with pytest.raises(TypeError, match="tdm takes a tensor parameter"):
        sc.tdm(sc.var("n"), block=(8,), warps=1)
    with pytest.raises(TypeError, match="tdm warps takes non-negative ints"):
        _module(lambda x: sc.tdm(x, block=(64, 64), warps=sc.var("w")))
    with pytest.raises(safecall.IRError, match=r"kernel argument 0 \(tdm of `x`\): warps is 0; it must be 1 to 32"):
        _module(lambda x: sc.tdm(x, block=(64, 64), warps=0)).build()
    jit = safecall.jit(_module(lambda x: sc.tdm(x, block=(64, 64), warps=4)).build())
    wide = CudaTensor(0x7F00_0000_1000, "float16", shape=(4, 8), strides=(1 << 48, 1), device_type=10)
    with pytest.raises(ValueError, match=r"load: launch of kernels.tdm2: kernel argument 0 \(tdm of 'x'\): x.strides\[0\] is 281474976710656 elements; a TDM stride must be 0 to 2\^48 - 1 elements"):
        jit.load(tvm_ffi.from_dlpack(wide))


def test_a_descriptor_type_with_a_shared_layout_is_read_as_the_plain_one():
    """Gluon's AMD descriptors add their shared-memory layout to the signature type; what is
    passed is decided by the ``tensordesc_meta`` entry alone, so the layout changes nothing."""
    from safecall._triton_abi import Kernel, UnsupportedKernelError
    from safecall._triton_args import tdm_descriptor_type

    k = Kernel(name="k", cubin=b"", metadata={}, signature={}, constants={}, divisible=frozenset(), backend="hip")
    entry = {"block_size": [64, 64], "elem_bits": 16, "interval_padding_pairs": [[64, 8]]}
    plain = tdm_descriptor_type(k, "d", "tensordesc<fp16[64, 64]>", entry)
    assert plain == ("float16", 2, (64, 8))
    layout = "tensordesc<fp16[64, 64],#ttg.padded_shared<[64:+8] {order = [1, 0], shape = [64, 64]}>>"
    assert tdm_descriptor_type(k, "d", layout, entry) == plain
    with pytest.raises(UnsupportedKernelError, match="elem_bits 32 is not the size of float16"):
        tdm_descriptor_type(k, "d", "tensordesc<fp16[64, 64]>", {**entry, "elem_bits": 32})
    with pytest.raises(UnsupportedKernelError, match="takes at most one pair"):
        tdm_descriptor_type(k, "d", "tensordesc<fp16[64, 64]>", {**entry, "interval_padding_pairs": [[64, 8], [128, 8]]})
