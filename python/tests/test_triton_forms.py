"""Host ``TensorDescriptor`` arguments in every form, against Triton 3.9's own CUDA launcher on
the driver double: a descriptor whose fields were changed after construction (which the class
allows) to values of other Python types or beyond TMA's and the launcher's ranges, launched
through Triton's launcher and through the installed driver's native and general launchers:
where Triton launches, the same launch and ``cuTensorMapEncodeTiled`` records but for
documented refusals; where it refuses, a refusal but for documented acceptances (the test's
docstring lists both). The kernels, their compilation and the double are
``test_triton_differential.py``'s."""

from __future__ import annotations

import collections
import copy
from typing import Any, Tuple

import pytest

from support import fake_cuda
from support.triton_fakes import IndexOnly, IntSubclass, PointerLike, cuda_tensors
from test_triton_differential import (
    CASES, STREAM, _active, _descriptor, _encodes, _safecall_driver, compiled, double_for_triton,
)


@pytest.fixture(scope="module")
def fake():
    """The differential's double, set up as there."""
    yield from double_for_triton()


def _outcome(call: Any, fake: Any) -> Any:
    fake.safecall_fake_cuda_reset()
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return f"{type(e).__name__}: {e}"
    return [fake_cuda.launches(fake), _encodes(fake)]


def _entry(rng: Any, value: int) -> Tuple[Any, str]:
    """``value`` in another form, or another value, and which: ``same`` (an int subclass),
    ``index`` (an ``__index__``-only object), ``type`` (a float, None or str) or ``value``
    (another int, a bool among them)."""
    pick = rng.randrange(9)
    if pick == 0:
        return IntSubclass(value), "same"
    if pick == 1:
        return IndexOnly(value), "index"
    if pick == 2:
        return float(value), "type"
    if pick == 3:
        other = rng.choice((True, False, None, "8"))
        return other, "value" if isinstance(other, bool) else "type"  # a bool is an int
    if pick == 4:
        return rng.choice((0, -1, -value, 1 << 31, 1 << 32, 1 << 63, 1 << 64)), "value"
    return value + rng.choice((1, 8, 16)), "value"


def _changed(rng: Any, desc: Any) -> Tuple[Any, str, str]:
    """A copy of ``desc`` with one field changed after construction (as the class allows), the
    field and the kind of change (``_entry``'s, ``base``'s result, or ``flag``)."""
    field = rng.choice(("shape", "strides", "block_shape", "base", "padding", "round_f32_to_tf32"))
    kind = "flag"
    if field in ("shape", "strides", "block_shape"):
        values = list(getattr(desc, field))
        i = rng.randrange(len(values))
        values[i], kind = _entry(rng, values[i])
        value: Any = rng.choice((values, tuple(values)))
    elif field == "base":
        address = desc.base.data_ptr()
        result, kind = rng.choice(((IntSubclass(address), "same"), (IndexOnly(address), "index"), (address + 8, "value"),
                                   (-16, "value"), (1 << 64, "value"), (0, "value"), (ValueError("gone"), "raises")))
        value = PointerLike(result)
        value.dtype, value.shape, value.stride = desc.base.dtype, desc.base.shape, desc.base.stride
    elif field == "padding":
        value = rng.choice(("nan", "zero", "NaN", None, 1))
    elif desc.base.dtype == "float32":
        value = rng.choice((True, False, 1, 0, "yes", None))
    else:
        # A true `round_f32_to_tf32` on another dtype (which the class refuses to construct)
        # is refused by safecall (a ValueError naming the argument) where Triton encodes a
        # tf32 map of the other dtype's data: a documented difference, not drawn.
        value = rng.choice((False, 0, None, ""))
    # Set on a copy, after construction (``dataclasses.replace`` would validate again).
    out = copy.copy(desc)
    setattr(out, field, value)
    return out, field, kind


def _small_descriptor(rng: Any, dtype: str, block: Any, **fields: Any) -> Any:
    """A valid ``TensorDescriptor`` spanning under 2 GiB (where Triton's 32-bit span
    computation and safecall's agree: ``test_triton_differential.py`` tests the others)."""
    elem = {"float16": 2, "float32": 4}[dtype]
    shape = [rng.randrange(1, 300) for _ in block]
    inner = -(-shape[1] * elem // 16) * 16 // elem + rng.choice((0, 0, 16 // elem, 64))
    address = rng.randrange(1 << 12, 1 << 47) & ~15
    return _descriptor(address, tuple(shape), dtype, block, [inner, 1], **fields)


@pytest.mark.parametrize("name,dtype,block", [
    ("host TensorDescriptor (TMA)", "float16", [64, 64]),
    ("host TensorDescriptor, padding='nan' and round_f32_to_tf32", "float32", [32, 32]),
])
def test_descriptors_in_every_form_launch_or_fail_as_with_tritons_launcher(fake, monkeypatch, name, dtype, block):
    """200 launches, each with one field of one of the two descriptors changed after
    construction (``shape``, ``strides`` or ``block_shape`` entries of other Python types or
    values, a ``base`` whose ``data_ptr()`` returns another form or value or raises,
    ``padding`` and ``round_f32_to_tf32`` of other values), through Triton's launcher and the
    installed driver's native and general launchers. Where Triton launches, both of safecall's
    launch the same bytes (and encode the same map), but for the documented refusals of what no
    tensor can be (docs/triton.md: a base address of 0 or outside 0 to 2^64 - 1; a dim or
    stride out of TMA's or the ``i32`` argument's range, which Triton wraps or passes on);
    where Triton refuses, safecall refuses, but for ``__index__``-only entries (NumPy's
    integers), which safecall reads and Triton's C code does not; the two launchers launch the
    same or raise errors of the same type. (Where both refuse, the types may differ from
    Triton's: an ``AssertionError`` of its Python code is safecall's ``ValueError``.)"""
    import random

    from safecall._triton_launcher import SafecallLauncher

    rng = random.Random(2026)
    kernel, signature = compiled(name), dict(CASES[name].signature)
    rest = CASES[name].args[2:]
    ours_driver, function = _safecall_driver(fake, monkeypatch, kernel)
    with _active(monkeypatch, ours_driver):
        native = ours_driver.launcher_cls(kernel.src, kernel.metadata)
        general = SafecallLauncher(kernel.src, kernel.metadata)
    fields = {"padding": "nan", "round_f32_to_tf32": True} if dtype == "float32" else {}
    seen: collections.Counter = collections.Counter()
    for _ in range(200):
        descs = [_small_descriptor(rng, dtype, block, **fields) for _ in range(2)]
        which = rng.randrange(2)
        descs[which], field, kind = _changed(rng, descs[which])
        args = cuda_tensors(signature, (*descs, *rest))
        grid = (rng.randrange(1, 9), 1, 1)
        theirs = _outcome(lambda: kernel.run(*grid, STREAM, kernel.function, kernel.packed_metadata, None, None, None, *args), fake)
        outcomes = []
        for launcher in (native, general):
            with _active(monkeypatch, ours_driver):
                outcomes.append(_outcome(
                    lambda: launcher(*grid, STREAM, function, kernel.packed_metadata, None, None, None, *args), fake))
        ours, by_general = outcomes
        context = (field, kind, descs[which], theirs if isinstance(theirs, str) else "launched", ours)
        # The two launchers: the same launch, or an error of the same type.
        assert isinstance(by_general, str) == isinstance(ours, str), context
        assert by_general == ours if not isinstance(ours, str) else by_general.split(":")[0] == ours.split(":")[0], (
            context, by_general)
        if not isinstance(theirs, str) and not isinstance(ours, str):
            assert ours == theirs, context
            seen["both launched"] += 1
        elif isinstance(theirs, str) and isinstance(ours, str):
            seen["both refused"] += 1
        elif isinstance(ours, str):
            # Launched by Triton only: a value no tensor has.
            assert kind == "value" and ours.split(":")[0] in ("ValueError", "OverflowError"), context
            seen["refused by safecall only"] += 1
        else:
            assert kind == "index" and field in ("shape", "strides", "block_shape"), context
            seen["launched by safecall only"] += 1
    assert seen["both launched"] > 50 and seen["both refused"] > 20, seen
