"""The installed driver's launch module built with the Python builder (``safecall.builder``)
from the same decisions as ``_triton_host_function.launch_module``, which builds it natively
(``safecall._native.triton_launch_module``): the oracle its tests compare the native module's
printed IR with: the grid, the scalars' conversions, the settings and the launch as the
Python builder writes them. The descriptors go through ``_triton_args.descriptor_argument``
(as ``safecall.triton.function``'s do), which splices the IR the native code prints for them
(``safecall._native.triton_descriptor_ir``): their text is pinned by the tests' own checks."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import safecall
from safecall import builder as ir
from safecall._triton_abi import TRITON_ABI, Kernel
from safecall._triton_args import descriptor_argument, launch_settings
from safecall._triton_host_function import _SCALARS


def python_launch_module(
    name: str, cubin: bytes, md: Dict[str, Any], leaves: Sequence[Any], key: Sequence[Any], ordinal: int,
    backend: str = "cuda",
) -> Any:
    """The module ``launch_module`` builds, built with the Python builder and parsed."""
    hip = backend == "hip"
    m = ir.ModuleBuilder(f"triton_launch_{name}")
    m.device_binary("kernel", TRITON_ABI.backends[backend].format, cubin, [name])
    f = m.function("launch", doc=f"Launches Triton kernel `{name}` as Triton 3.9's launcher does.")
    grid = [f.param(f"grid_{a}", ir.i32) for a in "xyz"]
    stream = f.param("stream", ir.stream)
    kernel = Kernel(name=name, cubin=cubin, metadata=md, signature={}, constants={}, divisible=frozenset(), backend=backend)
    args: List[Any] = []
    for i, leaf in enumerate(leaves):
        pname = f"arg{i}"
        if isinstance(leaf, tuple):
            ty, k = leaf
            padding, tf32, *im2col = key[k]
            fields = {"padding": padding, "round_f32_to_tf32": tf32}
            fields.update(zip(TRITON_ABI.tensor_descriptor.im2col_fields, im2col))
            _, passed = descriptor_argument(f, kernel, pname, ty, md["tensordesc_meta"][k], fields)
            args += passed
        elif leaf.startswith(TRITON_ABI.pointer_prefix):
            args.append(f.param(pname, ir.data_ptr))
        else:
            outer, inner, _ = _SCALARS[leaf]
            p = f.param(pname, outer)
            args.append(p if inner is None else ir.cast(inner, p))
    scratch = [f.param(s, ir.data_ptr) for s in TRITON_ABI.trailing_pointers]
    num_ctas, block, settings = launch_settings(md, hip)
    settings.update(device=ordinal, stream=stream, function=f.param("function", ir.data_ptr))
    x = ir.cast(ir.i64, grid[0]) * ir.lit(num_ctas, ir.i64) if num_ctas > 1 else grid[0]
    wide = [ir.cast(ir.i64, g) for g in grid]
    launch_grid = [x, grid[1], grid[2]]
    if hip:
        zero = ir.lit(0, ir.i64)
        nonempty = ir.and_(ir.and_(wide[0] != zero, wide[1] != zero), wide[2] != zero)
        launch_grid = [ir.cast(ir.u32, g) for g in (x, grid[1], grid[2])]
    else:
        nonempty = wide[0] * wide[1] * wide[2] > ir.lit(0, ir.i64)
    with f.if_(nonempty):
        f.launch("kernel", name, *args, *scratch, grid=launch_grid, block=[block], **settings)
    return m.build()


def printed(module: Any) -> str:
    """A module's printed IR (``safecall.emit(module, "ir")``)."""
    return safecall.emit(module, "ir")
