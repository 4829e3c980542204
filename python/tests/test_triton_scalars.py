"""Scalar arguments against Triton 3.9's own CUDA launcher, on the driver double: seeded draws
of every scalar type (``triton_fakes.random_scalar``: each type's edges, beyond them within and
beyond 64 bits, NaN payloads, half-precision ties, bools and ints for floats) through the
installed driver's launchers, which must send Triton's bytes or raise Triton's error, and
through ``safecall.triton.function``, which is typed: it refuses what Triton refuses and
differs only as documented; and the ``fp16`` range's edge. The kernels, their compilation and
the double are ``test_triton_differential.py``'s."""

from __future__ import annotations

import contextlib
import re
import struct
from typing import Any

import pytest

from support import fake_cuda
import safecall.triton as sct
from support.triton_fakes import cuda_tensors, nearest_bf16_bits, random_scalar
from test_triton_differential import CASES, STREAM, _active, _safecall_driver, compiled, double_for_triton


@pytest.fixture(scope="module")
def fake():
    """The differential's double, set up as there."""
    yield from double_for_triton()


def _launch_or_error(call: Any, fake: Any) -> Any:
    """The launch records ``call()`` makes on the double, or the type of what it raised."""
    fake.safecall_fake_cuda_reset()
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the error's type is what is compared
        return type(e).__name__
    return fake_cuda.launches(fake)


def _launchers(fake: Any, monkeypatch: Any, name: str) -> tuple:
    """The case, its kernel compiled and loaded by Triton, safecall's driver and its handle for
    the kernel, and that driver's native and general launchers for it."""
    from safecall._triton_launcher import SafecallLauncher

    case = CASES[name]
    kernel = compiled(name)
    kernel._init_handles()
    ours_driver, function = _safecall_driver(fake, monkeypatch, kernel)
    with _active(monkeypatch, ours_driver):
        native = ours_driver.launcher_cls(kernel.src, kernel.metadata)
        general = SafecallLauncher(kernel.src, kernel.metadata)
    return case, kernel, ours_driver, function, native, general


def _same_as_tritons(fake: Any, monkeypatch: Any, launchers: tuple, grid: Any, args: tuple, context: Any) -> Any:
    """One launch through Triton's launcher and through both of safecall's (``_launchers``'s
    kernel, driver, handle, native and general launcher): asserts they agree, and returns
    Triton's outcome."""
    kernel, ours_driver, function, native, general = launchers
    fixed = (*grid, STREAM)
    theirs = _launch_or_error(
        lambda: kernel.run(*fixed, kernel.function, kernel.packed_metadata, None, None, None, *args), fake
    )
    for launcher in (native, general):
        with _active(monkeypatch, ours_driver):
            ours = _launch_or_error(lambda: launcher(*fixed, function, kernel.packed_metadata, None, None, None, *args), fake)
        assert ours == theirs, (launcher, context)
    return theirs


@pytest.mark.parametrize("name", ["scalar mix", "fp16 and bf16 scalars"])
def test_random_scalars_reach_the_kernel_as_tritons_launcher_passes_them(fake, monkeypatch, name):
    """300 draws of every scalar argument (see ``triton_fakes.random_scalar``), launched through Triton
    3.9's own launcher and through the installed driver's launchers, the native one and the
    general one (``SafecallLauncher``, which serves kernels with scratch memory): the same
    launch record (every argument's bytes), or the same exception type, each time."""
    import random

    rng = random.Random(300)
    case, kernel, ours_driver, function, native, general = _launchers(fake, monkeypatch, name)
    outcomes = set()
    for _ in range(300):
        args = tuple(
            a if ty.startswith("*") or ty == "constexpr" else random_scalar(rng, ty)
            for a, (_, ty) in zip(case.args, case.signature)
        )
        theirs = _same_as_tritons(fake, monkeypatch, (kernel, ours_driver, function, native, general), case.grid, args, args)
        outcomes.add(theirs if isinstance(theirs, str) else "launched")
    # Both ways out were taken: launches, and Triton's refusals (64-bit overflows).
    assert "launched" in outcomes and len(outcomes) > 1, outcomes


@pytest.mark.parametrize("name", ["scalar mix", "fp16 and bf16 scalars"])
def test_scalars_of_other_python_types_reach_the_kernel_as_tritons_launcher_passes_them(fake, monkeypatch, name):
    """300 launches, each with one scalar of another Python type than its parameter's
    (``triton_fakes.foreign_scalar``: objects with only ``__index__`` or ``__float__``, int and
    float subclasses, a float for an int, an int for a float, a str, ``None``) and the others
    valid, through Triton 3.9's own launcher and the installed driver's native and general
    launchers: the same launch record, or the same exception type, each time."""
    import random

    from support.triton_fakes import foreign_scalar, valid_scalar

    rng = random.Random(301)
    case, kernel, ours_driver, function, native, general = _launchers(fake, monkeypatch, name)
    scalars = [i for i, (_, ty) in enumerate(case.signature) if not ty.startswith("*") and ty != "constexpr"]
    outcomes = set()
    for _ in range(300):
        odd = rng.choice(scalars)
        args = tuple(
            a if ty.startswith("*") or ty == "constexpr" else (foreign_scalar(rng, ty) if i == odd else valid_scalar(rng, ty))
            for i, (a, (_, ty)) in enumerate(zip(case.args, case.signature))
        )
        theirs = _same_as_tritons(fake, monkeypatch, (kernel, ours_driver, function, native, general), case.grid, args,
                                  (case.signature[odd], args[odd]))
        outcomes.add(theirs if isinstance(theirs, str) else "launched")
    assert {"launched", "TypeError"} <= outcomes, outcomes


def _in_safecall_range(ty: str, value: Any) -> bool:
    """Whether ``safecall.triton.function`` takes ``value`` for a scalar of Triton type ``ty``:
    floats and bools always (an ``fp16`` beyond its range aside, which Triton refuses too);
    ints within the type's range (a ``u64`` up to 2^64 - 1, which tvm_ffi passes from 2^63 on
    as an ``ffi.BigInt``)."""
    if ty in ("fp16", "bf16", "fp32", "fp64", "i1"):
        return True
    bits = int(ty[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty[0] == "i" else (0, (1 << bits) - 1)
    return lo <= value <= hi


@pytest.mark.parametrize("name", ["scalar mix", "fp16 and bf16 scalars"])
def test_random_scalars_through_safecall_function_differ_from_tritons_launcher_only_as_documented(fake, name):
    """The same 300 draws through ``safecall.triton.function``, whose scalars are typed: what
    Triton's launcher refuses, it refuses too (an ``fp16`` that rounds to infinity among
    them); what it refuses and Triton launches has an int out of its type's range (Triton
    casts it as C does), and the error names such an argument (a ``u64`` of 2^63 or more, an
    ``ffi.BigInt`` to tvm_ffi, is taken);
    where both launch, every argument's bytes are Triton's but for the documented
    differences: a ``bf16`` is the nearest (Triton truncates the ``f32``), an ``fp16`` NaN
    keeps its sign and leading payload bits (Triton's packing sends the quiet NaN)."""
    import collections
    import random

    import tvm_ffi

    rng = random.Random(300)
    case = CASES[name]
    kernel = compiled(name)
    kernel._init_handles()
    launch = sct.function(kernel)
    signature = dict(case.signature)
    arg_types = [ty for _, ty in case.signature if ty != "constexpr"]
    outcomes: collections.Counter = collections.Counter()
    for _ in range(300):
        args = tuple(
            a if ty.startswith("*") or ty == "constexpr" else random_scalar(rng, ty)
            for a, (_, ty) in zip(case.args, case.signature)
        )
        theirs = _launch_or_error(
            lambda: kernel.run(*case.grid, STREAM, kernel.function, kernel.packed_metadata, None, None, None, *args), fake
        )
        fake.safecall_fake_cuda_reset()
        try:
            with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), STREAM):
                launch(case.grid, *cuda_tensors(signature, args))
            ours: Any = fake_cuda.launches(fake)
        except (TypeError, ValueError) as e:
            ours = e
        if isinstance(theirs, str):
            assert isinstance(ours, Exception), ("launched what Triton refuses", args, theirs)
            outcomes["both refused"] += 1
            continue
        if isinstance(ours, Exception):
            beyond = [arg for (arg, ty), v in zip(case.signature, args) if ty != "constexpr" and not ty.startswith("*")
                      and not _in_safecall_range(ty, v)]
            assert any(f"argument '{arg}'" in str(ours).splitlines()[0] for arg in beyond), (args, ours)
            outcomes["refused, out of range"] += 1
            continue
        [their], [our] = theirs, ours
        assert {k: v for k, v in our.items() if k != "args"} == {k: v for k, v in their.items() if k != "args"}
        assert len(our["args"]) == len(their["args"]) == len(arg_types) + 2, our["args"]
        assert our["args"][-2:] == their["args"][-2:]  # the scratch pointers
        values = [v for v, (_, ty) in zip(args, case.signature) if ty != "constexpr"]
        for ty, value, their_bytes, our_bytes in zip(arg_types, values, their["args"], our["args"]):
            bits = int.from_bytes(bytes.fromhex(our_bytes), "little")
            if ty == "bf16" and value == value:
                # The nearest bf16, whatever Triton's truncation sent.
                assert bits == nearest_bf16_bits(float(value)), (value, our_bytes, their_bytes)
                outcomes["bf16 rounded" if our_bytes != their_bytes else "bf16 the same"] += 1
            elif ty == "fp16" and value != value:
                # The NaN's sign and its 10 leading payload bits, the quiet bit set (the IR's
                # conversion), where Triton's sends the quiet NaN with the sign.
                f64 = struct.unpack("<Q", struct.pack("<d", value))[0]
                assert bits == (f64 >> 48 & 0x8000) | 0x7E00 | (f64 >> 42 & 0x3FF), (value, our_bytes)
                assert int.from_bytes(bytes.fromhex(their_bytes), "little") == (f64 >> 48 & 0x8000) | 0x7E00, their_bytes
                outcomes["fp16 NaN payload" if our_bytes != their_bytes else "fp16 NaN the same"] += 1
            else:
                assert our_bytes == their_bytes, (ty, value, our_bytes, their_bytes)
        outcomes["both launched"] += 1
    assert outcomes["both launched"] and outcomes["both refused"], outcomes
    assert name != "scalar mix" or outcomes["refused, out of range"], outcomes
    # Both documented differences were met (the half kernel's draws).
    assert name != "fp16 and bf16 scalars" or (outcomes["bf16 rounded"] and outcomes["fp16 NaN payload"]), outcomes


@pytest.mark.parametrize("value, sent", [
    (65519.99, "ff7b"), (-65519.99, "fffb"), (float("inf"), "007c"), (float("-inf"), "00fc"), (65504, "ff7b"),
    (float("nan"), "007e"), (-0.0, "0080"),
    (65520.0, "65520.0"), (-65520.0, "-65520.0"), (1e300, "1.0e+300"), (70000, "70000.0"),
])
def test_an_fp16_that_rounds_to_infinity_is_refused_as_triton_refuses_it(fake, value, sent):
    """``safecall.triton.function`` rounds an ``fp16`` scalar once, to nearest: up to 65519.99...
    it is the largest finite half, 65504; a finite value from 65520 on would be infinity, which
    Triton's launcher refuses (``OverflowError``) and safecall refuses with a ``ValueError``
    naming the argument; an infinity, a NaN and -0.0 are sent as they are. Each value is also
    launched through Triton's own launcher: it sends the same bytes, or refuses the same values."""
    import tvm_ffi

    case = CASES["fp16 and bf16 scalars"]
    kernel = compiled("fp16 and bf16 scalars")
    kernel._init_handles()
    triton_args = list(case.args)
    triton_args[3] = value
    theirs = _launch_or_error(
        lambda: kernel.run(*case.grid, STREAM, kernel.function, kernel.packed_metadata, None, None, None, *triton_args), fake
    )
    args = list(cuda_tensors(dict(case.signature), case.args))
    args[3] = value
    fake.safecall_fake_cuda_reset()
    refused = "." in sent  # `sent` is then the value as the message prints it
    with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda", 0), STREAM), contextlib.ExitStack() as stack:
        if refused:
            stack.enter_context(pytest.raises(ValueError, match="^" + re.escape(
                f"half_scale: argument 'h' (#4): {sent} is out of range for fp16: it rounds to infinity "
                "(the largest finite fp16 is 65504; Triton's launcher refuses it too)")))
        sct.function(kernel)(case.grid, *args)
    launches = fake_cuda.launches(fake)
    assert [r["args"][3] for r in launches] == ([] if refused else [sent])
    assert theirs == "OverflowError" if refused else [r["args"][3] for r in theirs] == [sent]
