"""The rules by which the installed driver's launchers read an integer argument of a kernel
(``safecall._triton_integers``), as each Triton release's launcher reads it: the values the
native launcher does not pass as they are, and the errors of CPython's integer readers that
Triton 3.7+'s ``driver.c`` calls."""

from __future__ import annotations

import pytest

from support.triton_fakes import IndexOnly


@pytest.mark.parametrize(
    "rule, value, expected",
    [
        (10, 2**40, 2**40),  # 3.7+ i32: any C long, truncated by the host function
        (10, 2**63, OverflowError("Python int too large to convert to C long")),
        (11, -(2**63), -(2**63)),
        (11, 2**63, OverflowError("int too big to convert")),
        (12, -1, OverflowError("can't convert negative value to unsigned int")),
        (12, 2**64, OverflowError("Python int too large to convert to C unsigned long")),
        (13, 2**64 - 1, -1),  # u64's 64 bits, passed as a signed int
        (13, 2**64, OverflowError("int too big to convert")),
        (14, 256, OverflowError("unsigned byte integer is greater than maximum")),
        (14, -1, OverflowError("unsigned byte integer is less than minimum")),
        (15, 2**15, OverflowError("signed short integer is greater than maximum")),
        (16, 2**31, OverflowError("signed integer is greater than maximum")),
        (16, -(2**31) - 1, OverflowError("signed integer is less than minimum")),
        (16, 2**70, OverflowError("Python int too large to convert to C long")),
        (17, -1, -1),  # 3.6's unchecked formats mask to 64 bits
        (17, 2**64 + 5, 5),
        (18, 2**64 + 5, 5),
        (18, -1, -1),
        (17, IndexOnly(300), 300),  # B H I take __index__
        (18, IndexOnly(300), TypeError("argument must be int, not IndexOnly")),  # K does not
        (12, IndexOnly(3), TypeError("an integer is required")),
        (13, IndexOnly(3), TypeError("an integer is required")),
        (10, IndexOnly(3), 3),
        (10, 1.5, TypeError("'float' object cannot be interpreted as an integer")),
    ],
)
def test_integers_outside_the_fast_range_follow_tritons_extractors(rule, value, expected):
    """`_integer_slow`: the rule of each Triton release's extractor, for the values the native
    launcher does not pass as they are."""
    from safecall._triton_integers import _integer_slow

    if isinstance(expected, Exception):
        with pytest.raises(type(expected)) as e:
            _integer_slow(rule, value)
        assert str(e.value) == str(expected)
    else:
        assert _integer_slow(rule, value) == expected


@pytest.mark.parametrize("rule, reader", [(10, "PyLong_AsLong"), (11, "PyLong_AsLongLong"),
                                          (12, "PyLong_AsUnsignedLong"), (13, "PyLong_AsUnsignedLongLong")])
def test_3_7_plus_integer_errors_are_the_cpython_readers_own(rule, reader):
    """3.7+'s extractors call CPython's integer readers; `_integer_slow` raises what the reader
    raises (type and message) for each value out of its range, as this interpreter's reader does."""
    import ctypes

    from safecall._triton_integers import _integer_slow

    function = getattr(ctypes.pythonapi, reader)
    function.argtypes = [ctypes.py_object]
    function.restype = ctypes.c_ulonglong
    for value in (-1, -(2**40), -(2**63) - 1, 2**63, 2**64, 2**70):
        try:
            function(value)
            expected = None
        except OverflowError as e:
            expected = str(e)
        if expected is None:
            continue
        with pytest.raises(OverflowError) as raised:
            _integer_slow(rule, value)
        assert str(raised.value) == expected, (rule, value)
