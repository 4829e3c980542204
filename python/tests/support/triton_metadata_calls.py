"""Launcher calls passing packed metadata other than the kernel's, for the driver
differential (``triton_driver_run.py``): Triton's launchers launch with what they are given;
safecall's, whose host functions hold the kernel's values, refuse other values (the native
launcher serves ``copy``, the general one ``desc_copy``)."""

from __future__ import annotations

from support import fake_cuda


def packed_metadata_calls(fake, outcome, copy, desc_copy, X, Y, Tensor):
    """Each call's error and each launch's block and shared memory, by name."""

    def with_metadata(kernel, packed, *args):
        c = next(iter(kernel.device_caches[0][0].values()))
        fake.safecall_fake_cuda_reset()
        error = outcome(lambda: c.run(2, 1, 1, 0, c.function, packed(tuple(c.packed_metadata)), None, None, None, *args))
        return {"error": error, "launches": [[r["block"], r["shared_mem"]] for r in fake_cuda.launches(fake)]}

    f16 = (Tensor(0x7F00_0004_0000, "float16"), Tensor(0x7F00_0005_0000, "float16"), 256, 64, 64, 64)
    return {
        "the kernel's own": with_metadata(copy, lambda p: p, X, Y, 1000, 128),
        "an equal tuple": with_metadata(copy, lambda p: tuple(list(p)), X, Y, 1000, 128),
        "an equal list": with_metadata(copy, lambda p: list(p), X, Y, 1000, 128),
        "equal floats": with_metadata(copy, lambda p: tuple(float(v) for v in p), X, Y, 1000, 128),
        "8 warps": with_metadata(copy, lambda p: (8, *p[1:]), X, Y, 1000, 128),
        "None": with_metadata(copy, lambda p: None, X, Y, 1000, 128),
        "8 warps, general launcher": with_metadata(desc_copy, lambda p: (8, *p[1:]), *f16),
        "the kernel's own, general launcher": with_metadata(desc_copy, lambda p: p, *f16),
    }
