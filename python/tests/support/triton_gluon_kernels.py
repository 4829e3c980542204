"""Gluon kernels for the installed driver's differential (``triton_driver_run.py``) and the
dispatch's (``triton_dispatch_run.py``): an im2col TMA load (Gluon's
``TensorDescriptorIm2Col``, Triton 3.8 and later) and a tiled one (Gluon's
``TensorDescriptor``). Importing it needs a Triton whose Gluon has im2col descriptors:
:data:`AVAILABLE` says whether this one does."""

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptorIm2Col

    AVAILABLE = hasattr(tma, "async_load_im2col")
except ImportError:
    AVAILABLE = False

if AVAILABLE:

    @gluon.jit
    def _store_loaded(smem, bar, out_ptr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
        """Waits for the TMA load into ``smem`` that ``bar`` tracks, then stores the
        ``BLOCK_M`` x ``BLOCK_N`` block to ``out_ptr`` (row-major)."""
        mbarrier.wait(bar, 0)
        mbarrier.invalidate(bar)
        layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
        vals = smem.load(layout)
        offs_m = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
        offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
        gl.store(out_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], vals)

    @gluon.jit
    def im2col_copy(in_desc, out_ptr, BLOCK_P: gl.constexpr, BLOCK_C: gl.constexpr):
        """One im2col column block of ``in_desc`` (NHWC) loaded by TMA, stored to ``out_ptr``."""
        smem = gl.allocate_shared_memory(in_desc.dtype, in_desc.block_shape, in_desc.layout)
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, in_desc.block_type.nbytes)
        zero = gl.to_tensor(0).to(gl.int16)
        tma.async_load_im2col(in_desc, [0, 0, 0, 0], [zero, zero], bar, smem)
        _store_loaded(smem, bar, out_ptr, BLOCK_P, BLOCK_C)

    def im2col_descriptor(base, **fields):
        """An im2col descriptor of ``base`` (an NHWC float16 tensor) with a 64-pixel,
        32-channel block and the NVMMA shared layout Triton chooses for it."""
        layout = gl.NVMMASharedLayout.get_default_for([64, 32], gl.float16)
        return TensorDescriptorIm2Col(base, list(base.shape), list(base.stride()), [64, 32], layout, **fields)

    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor

    @gluon.jit
    def tiled_copy(in_desc, out_ptr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
        """One block of ``in_desc`` (a tiled descriptor) loaded by TMA, stored to ``out_ptr``."""
        smem = gl.allocate_shared_memory(in_desc.dtype, in_desc.block_shape, in_desc.layout)
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, in_desc.block_type.nbytes)
        tma.async_load(in_desc, [0, 0], bar, smem)
        _store_loaded(smem, bar, out_ptr, BLOCK_M, BLOCK_N)

    def tiled_descriptor(base, block=(64, 32), **fields):
        """A tiled descriptor of ``base`` (a 2-D float16 tensor) with the NVMMA shared layout
        Triton chooses for ``block``."""
        layout = gl.NVMMASharedLayout.get_default_for(list(block), gl.float16)
        return GluonDescriptor(base, list(base.shape), list(base.stride()), list(block), layout, **fields)
