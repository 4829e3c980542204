"""One process of ``benches/triton_launch_count.sh``: one of ``benches/triton_driver.py``'s
kernels launched N times, in steady state, as ``WHAT`` says (``run<k>``: ``CompiledKernel.run``
of the k-argument kernel, its pointers objects with a Python ``data_ptr()``; ``grid<k>``:
``kernel[grid](...)`` of it; k one of 2, 3, 8, 16; a final ``c``, as in ``run16c``: the pointers
are ``tvm_ffi.Tensor``s instead, whose ``data_ptr()`` is a C method, as torch's is; ``ffi``:
no Triton launch but a call through ``tvm_ffi`` of a safecall function doing nothing;
``first8`` and ``firsttma4``: the first launch of a new signature, N times, compile excluded:
a new launcher (``launcher_cls``) built for the compiled and loaded kernel and called once,
which builds its host function (the host functions built before forgotten: the kernel's form
is new); of the 8-argument kernel, or of a kernel with 4 host TMA descriptors, as
benches/triton_driver.py times them; ``spec8`` and ``spectma4``: the same, the host function
of the kernel's form kept (the first launch of a new specialization of a launched kernel, which
Triton compiled for other alignments of the same arguments); ``firstfn``: ``safecall.triton.function``
of the 4-descriptor kernel, built and not called), on
safecall's installed driver (``WHICH=safecall``, ``DISPATCH=1`` for ``install(dispatch=True)``)
or Triton's own (``WHICH=stock``). Before the N launches: 1,100 warm-up launches and the wait
for the launcher's tier-up (the optimizing recompile of its host function on a background
thread after 1,000 launches), so that that compile falls into every run alike (without the
wait it fell into some runs only: up to 7,000 instructions per call of noise)."""

import os
import tempfile
import time

from triton_driver import kernels, setup

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())
WHICH = os.environ.get("WHICH", "safecall")
fake, safecall_triton = setup(WHICH)
if WHICH == "safecall" and os.environ.get("DISPATCH"):
    safecall_triton.install(dispatch=True)
import triton  # noqa: E402

N = int(os.environ.get("N", "1000"))
WHAT = os.environ.get("WHAT", "run16")
if WHAT == "ffi":
    # Not a Triton launch: the floor of a TVM-FFI call from Python, a JIT-compiled safecall
    # function that checks two float32 vectors (`tvm_ffi.Tensor`s) and an int and does nothing.
    import numpy as np
    import tvm_ffi

    import safecall

    module = safecall.ModuleBuilder("noop")
    noop = module.function("noop", doc="Checks its arguments, does nothing.")
    noop.tensor("a", ["n"], "float32", device="cpu")
    noop.tensor("b", ["n"], "float32", device="cpu")
    noop.param("k", safecall.i64)
    function = safecall.jit(module)["noop"]
    vectors = [tvm_ffi.from_dlpack(np.zeros(256, np.float32)) for _ in range(2)]

    def launch():
        function(*vectors, 1000)
    for _ in range(1100 + N):  # compiled once, optimized (no tier-up to wait for)
        launch()
    raise SystemExit
if WHAT.startswith(("first", "spec")):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if WHAT in ("first8", "spec8"):
        kernel, args = kernels()[8]
        signature = {name: "*fp32" for name in "abcdef"}
        signature.update(n="i32", m="i64", BLOCK="constexpr")
        compiled = triton.compile(ASTSource(kernel, signature, constexprs={"BLOCK": 128}), target=GPUTarget("cuda", 90, 32))
        args = [*args, 128]
    else:
        from triton.tools.tensor_descriptor import TensorDescriptor
        from support.triton_fakes import DescriptorBase
        from triton_launch_count_kernels import four

        signature = {name: "tensordesc<fp16[64, 64]>" for name in "abcd"}
        signature.update(M="i32", BM="constexpr", BN="constexpr")
        compiled = triton.compile(ASTSource(four, signature, constexprs={"BM": 64, "BN": 64}),
                                  target=GPUTarget("cuda", 90, 32))
        args = [TensorDescriptor(DescriptorBase(0x100000 * (i + 1), "float16", [256, 64]), [256, 64], [64, 1], [64, 64])
                for i in range(4)] + [256, 64, 64]
    _, function, *_ = triton.runtime.driver.active.utils.load_binary(
        compiled.name, compiled.asm["cubin"], compiled.metadata.shared, 0)
    fake.safecall_fake_cuda_quiet(1)

    forget = lambda: None  # noqa: E731
    if WHAT.startswith("first") and WHICH == "safecall":
        from safecall._triton_host_function import _FORMS

        forget = _FORMS.clear

    def first():
        forget()
        launcher = triton.runtime.driver.active.launcher_cls(compiled.src, compiled.metadata)
        launcher(4, 1, 1, 0, function, compiled.packed_metadata, None, None, None, *args)
    if WHAT == "firstfn":
        # safecall.triton.function's build of the 4-descriptor kernel (benches/triton_driver.py's
        # "host function of a new kernel with 4 TMA descriptors"), not called.
        def first():
            safecall_triton.function(compiled)
    for _ in range(3 + N):
        first()
    raise SystemExit
kernel, args = kernels()[int(WHAT.removeprefix("run").removeprefix("grid").removesuffix("c"))]
kernel[(4,)](*args, BLOCK=128)
fake.safecall_fake_cuda_quiet(1)
compiled = next(iter(kernel.device_caches[0][0].values()))
if WHAT.endswith("c"):
    # `tvm_ffi.Tensor`s at the same addresses, whose `data_ptr()` is a C method, as torch's is.
    import tvm_ffi
    from safecall.testing import RawTensor

    args = [tvm_ffi.from_dlpack(RawTensor(a.address, (2, 0), (2, 32, 1), [256], None, 0))
            if hasattr(a, "address") else a for a in args]
if WHAT.startswith("run"):
    run_args = (4, 1, 1, 0, compiled.function, compiled.packed_metadata, None,
                triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook, *args, 128)

    def launch():
        compiled.run(*run_args)
else:
    def launch():
        kernel[(4,)](*args, BLOCK=128)
for _ in range(1100):
    launch()
# The launcher's own object (safecall's: the native launcher a builtin function is bound to).
native = getattr(compiled.run, "__self__", None)
deadline = time.monotonic() + 600
while native is not None and hasattr(native, "tiered_up") and not native.tiered_up and time.monotonic() < deadline:
    time.sleep(0.05)
if native is not None and hasattr(native, "tiered_up") and not native.tiered_up:
    # The recompile would fall into this run's count (under callgrind on a busy machine).
    raise SystemExit("the launcher's tier-up did not finish in 600 s: this count would include it")
for _ in range(N):
    launch()
