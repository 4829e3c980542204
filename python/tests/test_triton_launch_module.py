"""The installed driver's launch module, built natively (``safecall._native.triton_launch_module``
through ``_triton_host_function.launch_module``), equals what the Python builder builds from the
same decisions (``support.triton_launch_oracle``): every argument kind, host descriptor (tiled,
im2col, TF32 and NaN-filled, AMD TDM), launch setting and backend, compared as printed IR. The
launches themselves are compared with Triton's own launcher's in test_triton_driver.py and
test_triton_differential.py; this pins the module's text where those see only launch records.
No GPU and no Triton needed: the binaries are not readable cubins, so the launches are not
checked against a parameter table (a warning, as for any unreadable binary)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

import safecall
from safecall._native import IRError
from safecall._triton_abi import UnsupportedKernelError
from safecall._triton_host_function import launch_module
from support.triton_launch_oracle import printed, python_launch_module

_TILED = {"swizzle": 3, "elem_type": 6, "block_size": [64, 32], "fp4_padded": False}
_FLOAT = {"swizzle": 2, "elem_type": 7, "block_size": [16, 8, 4], "fp4_padded": False}
_IM2COL = {"swizzle": 3, "elem_type": 6, "block_size": [128, 64], "fp4_padded": False, "is_im2col": True}
_TDM = {"block_size": [64, 64], "elem_bits": 16, "interval_padding_pairs": [[64, 8]]}
_TDM3 = {"block_size": [2, 16, 32], "elem_bits": 32, "interval_padding_pairs": []}
_RANK5 = {"swizzle": 0, "elem_type": 1, "block_size": [1, 2, 4, 8, 16], "fp4_padded": False}


def _md(**extra: Any) -> Dict[str, Any]:
    md: Dict[str, Any] = {"num_warps": 4, "num_ctas": 1, "shared": 0}
    md.update(extra)
    return md


#: name -> (metadata, leaves, key, backend): the kernels compared.
CASES = {
    "pointers and every scalar kind": (
        _md(),
        ["*fp32", "*i8", "i1", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32",
         "f32", "fp64"],
        (),
        "cuda",
    ),
    "no arguments, shared memory, pdl": (_md(shared=8200, launch_pdl=True), [], (), "cuda"),
    "a cluster of 4 CTAs, cooperative": (_md(num_ctas=4, num_warps=8, launch_cooperative_grid=True), ["*fp16"], (), "cuda"),
    "tiled descriptors, zero and nan fill, tf32": (
        _md(tensordesc_meta=[_TILED, _FLOAT, _FLOAT], shared=65536),
        [("tensordesc<fp16[64, 32]>", 0), "i32", ("tensordesc<fp32[16, 8, 4]>", 1), ("tensordesc<fp32[16, 8, 4]>", 2)],
        (("zero", False), ("nan", False), ("zero", True)),
        "cuda",
    ),
    "im2col descriptors, with and without element strides": (
        _md(tensordesc_meta=[_IM2COL, _IM2COL]),
        [("tensordesc_im2col<fp16[128, 64],input_rank=4>", 0), ("tensordesc_im2col<fp16[128, 64],input_rank=4>", 1)],
        (("zero", False, [-1, -1], [1, 1]), ("nan", False, [0, -2], [2, 0], [1, 2, 2, 1])),
        "cuda",
    ),
    "AMD: TDM descriptor, grid as u32, cooperative": (
        _md(tensordesc_meta=[_TDM], warp_size=64, launch_cooperative_grid=True),
        [("tensordesc<fp16[64, 64]>", 0), "*fp32", "i64"],
        (("zero", False),),
        "hip",
    ),
    "AMD: a cluster of 2 CTAs": (_md(num_ctas=2, warp_size=32), ["*fp32", "fp32"], (), "hip"),
    "AMD: a 3-D TDM descriptor without padding, shared memory, pdl (which AMD ignores)": (
        _md(tensordesc_meta=[_TDM3], warp_size=64, shared=4096, launch_pdl=True),
        [("tensordesc<fp32[2, 16, 32]>", 0)],
        (("zero", False),),
        "hip",
    ),
    "a rank-5 descriptor and Gluon's layout after the block": (
        _md(tensordesc_meta=[_RANK5, _TILED], num_ctas=16),
        [("tensordesc<u8[1, 2, 4, 8, 16]>", 0), ("tensordesc<fp16[64, 32],NVMMASharedLayout(swizzle=128)>", 1)],
        (("zero", False), ("zero", False)),
        "cuda",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_native_launch_module_prints_as_the_python_builders(case):
    """The natively built module's printed IR equals the Python builder's, parsed, for the
    same kernel, metadata and descriptor fields (and both verify)."""
    md, leaves, key, backend = CASES[case]
    native = launch_module("k", b"\x01not a binary", md, leaves, key, 3, backend)
    oracle = python_launch_module("k", b"\x01not a binary", md, leaves, key, 3, backend)
    assert isinstance(native, safecall.Module)
    assert printed(native) == printed(oracle)
    # The built module's source is its printed form, made when asked for; it parses back
    # to the same module.
    assert printed(safecall.parse(native.source, files={})) == printed(native)


def test_the_text_shows_each_decision():
    """Spot checks of the printed module: the descriptor's shape check and what it passes,
    the cluster's grid, the settings, the function handle."""
    md, leaves, key, backend = CASES["a cluster of 4 CTAs, cooperative"]
    text = printed(launch_module("k", b"\x01", md, leaves, key, 0, backend))
    assert "grid=(cast<i64>(grid_x) * 4, grid_y, grid_z)" in text, text
    assert "block=(256)" in text and "cluster=(4, 1, 1)" in text and "cluster_policy=spread" in text, text
    assert "cooperative=true" in text and "function=function" in text, text
    md, leaves, key, backend = CASES["tiled descriptors, zero and nan fill, tf32"]
    text = printed(launch_module("k", b"\x01", md, leaves, key, 0, backend))
    assert "Triton passes a descriptor's shape as i32 (at most 2147483647)" in text, text
    assert "oob_fill=nan" in text and "dtype=tf32" in text and "cast<i32>(arg0.shape[1]), arg0.strides[0]" in text, text
    md, leaves, key, backend = CASES["im2col descriptors, with and without element strides"]
    text = printed(launch_module("k", b"\x01", md, leaves, key, 0, backend))
    assert "arg0: tensor[(arg0_dim0, arg0_dim1, arg0_dim2, arg0_dim3), float16, device=cuda" in text, text
    assert "tensormap_im2col(arg0, lower=(-1, -1), upper=(1, 1), channels=64, pixels=128, swizzle=b128" in text, text
    assert "tensormap_im2col(arg1, lower=(0, -2), upper=(2, 0), channels=64, pixels=128, element_strides=(1, 2, 2, 1)" in text, text
    md, leaves, key, backend = CASES["AMD: TDM descriptor, grid as u32, cooperative"]
    text = printed(launch_module("k", b"\x01", md, leaves, key, 0, backend))
    assert "tdm(arg0, block=(64, 64), warps=4, pad=(64, 8))" in text and "device=rocm" in text, text
    assert "grid=(cast<u32>(grid_x), cast<u32>(grid_y), cast<u32>(grid_z))" in text, text


def test_bad_descriptors_are_refused_before_anything_is_built():
    """What ``descriptor_spec`` refuses (here: TF32 rounding of a half descriptor, a type that
    is no descriptor type, an im2col descriptor without its corners) is refused as before,
    with its message."""
    md = _md(tensordesc_meta=[_TILED])
    with pytest.raises(ValueError, match="round_f32_to_tf32 needs a float32 descriptor"):
        launch_module("k", b"\x01", md, [("tensordesc<fp16[64, 32]>", 0)], (("zero", True),), 0)
    with pytest.raises(UnsupportedKernelError, match="not a tiled descriptor type"):
        launch_module("k", b"\x01", md, [("tensordesc<fp16>", 0)], (("zero", False),), 0)
    md = _md(tensordesc_meta=[_IM2COL])
    with pytest.raises(ValueError, match="pixel_box_lower_corner=None, expected 2 ints"):
        launch_module("k", b"\x01", md, [("tensordesc_im2col<fp16[128, 64],input_rank=4>", 0)], (("zero", False),), 0)


def test_the_native_builder_names_what_it_cannot_read():
    """``triton_launch_module`` given a spec it cannot read: a ``ValueError`` naming it (an
    unknown scalar type, swizzle, setting, binary format, argument kind), never a crash; a
    module that does not verify is an ``IRError``."""
    from safecall._native import triton_launch_module as build

    def call(leaves=(), settings=None, fmt="cubin", trailing=("global_scratch", "profile_scratch")):
        return build("k", fmt, b"\x01", list(leaves), list(trailing), 1, 128, settings or {}, 0, False)

    def tmap(rank=2, box=(64, 64), swizzle="b128", shape="i32", im2col=None):
        return ("tensormap", "float16", rank, "cuda", list(box), swizzle, "b128", "none", "f16", im2col, shape)

    with pytest.raises(ValueError, match="argument 0: unknown scalar type `i128`"):
        call([("i128", None)])
    with pytest.raises(ValueError, match="argument 0: unknown swizzle `b256`"):
        call([tmap(swizzle="b256")])
    # Ranks the IR cannot encode are refused before anything is allocated for them.
    with pytest.raises(ValueError, match="argument 1: a tensormap of rank 1000000000000"):
        call([None, tmap(rank=10**12)])
    with pytest.raises(ValueError, match="a tensormap of rank 3 .* do not have its rank"):
        call([tmap(rank=3)])
    with pytest.raises(ValueError, match="a tensormap of rank 4 .* do not have its rank"):
        call([tmap(rank=4, box=(), im2col=([0], [0], 8, 8, None))])
    with pytest.raises(ValueError, match="a TDM descriptor of rank 0"):
        call([("tdm", "float16", 0, "rocm", [], 4, None, "i32")])
    with pytest.raises(ValueError, match="shape passed as `i64`"):
        call([tmap(shape="i64")])
    with pytest.raises(ValueError, match="argument 0: .*"):
        call([("tdm", "float16", 2, "rocm", [64, 64], -4, None, "i32")])  # negative warps
    with pytest.raises(ValueError, match="argument 0: an empty tuple"):
        call([()])
    with pytest.raises(ValueError, match="argument 0: not None or a tuple"):
        call([["i32", None]])
    with pytest.raises(ValueError, match="unknown launch setting `warp_speed`"):
        call(settings={"warp_speed": 9})
    # What the module sets itself is not taken from the settings (one way in).
    for own in ("grid", "block", "stream", "device", "function"):
        with pytest.raises(ValueError, match=f"unknown launch setting `{own}`"):
            call(settings={own: [1]})
    with pytest.raises(ValueError, match="setting `shared_mem`: 1.5 is not a keyword, bool, int or list of ints"):
        call(settings={"shared_mem": 1.5})
    with pytest.raises(ValueError, match="setting `cluster_policy`"):
        call(settings={"cluster_policy": "sideways"})
    with pytest.raises(ValueError, match="binary: unknown device binary format 'elf'"):
        call(fmt="elf")
    with pytest.raises(ValueError, match="unknown argument kind `texture`"):
        call([("texture", 1, 2)])
    with pytest.raises(IRError):
        call(trailing=("grid_x",))  # a parameter named twice
    assert isinstance(call(), safecall.Module)
