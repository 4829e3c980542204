"""``safecall._triton_grid.trace_grid``: which grid functions are traced, and that a traced one
computes what the grid computes, for generated integer inputs (the dispatch calls the traced
function only for exact ``int`` inputs; ``test_triton_dispatch.py`` checks the launches)."""

from __future__ import annotations

import random

import pytest

from support.triton_fakes import skip_unless_triton

skip_unless_triton()

import triton  # noqa: E402

from safecall._triton_grid import trace_grid  # noqa: E402

NAMES = ["x_ptr", "n", "BLOCK", "BM", "BN"]
n_global = 1000
not_an_int = 2.5


def with_cell(m):
    return lambda META: (triton.cdiv(m, META["BLOCK"]),)


def with_cells(m, k):
    return lambda META: (triton.cdiv(m, META["BM"]), triton.cdiv(k, META["BN"]), m % META["BN"] - k * 2)


def local_import(m):
    import triton as t

    return lambda META: (t.cdiv(m, META["BLOCK"]),)


def cell_holding(value):
    return lambda META: (value + META["BLOCK"],)


calls = []

TRACED = {
    "META only": lambda META: (triton.cdiv(META["n"], META["BLOCK"]),),
    "a closure cell": with_cell(77),
    "two cells, three dims": with_cells(300, 40),
    "a module-level int": lambda META: (triton.cdiv(n_global, META["BLOCK"]), 1, 1),
    "constants only": lambda META: (4, 2),
    "negation and floor division": lambda META: (-(-META["n"] // META["BLOCK"]),),
    "triton imported in the enclosing function": local_import(500),
}

NOT_TRACED = {
    "max()": lambda META: (max(1, META["n"] // META["BLOCK"]),),
    "a comparison": lambda META: (META["n"] // META["BLOCK"] if META["BLOCK"] > 1 else 1,),
    "a list": lambda META: [triton.cdiv(META["n"], META["BLOCK"])],
    "a key that is no parameter": lambda META: (META["num_warps"],),
    "true division": lambda META: (META["n"] / META["BLOCK"],),
    "a side effect": lambda META: (calls.append(1) or 1,),
    "a module-level float": lambda META: (triton.cdiv(not_an_int, META["BLOCK"]),),
    "an attribute of META": lambda META: (META.get("n"),),
    "four dimensions": lambda META: (1, 1, 1, 1),
    "a default argument": lambda META, d=2: (d,),
    "not a function": triton.cdiv,
    "a cell holding a float": cell_holding(2.0),
    "a cell holding a list": cell_holding([1]),
}


@pytest.mark.parametrize("name", list(TRACED))
def test_a_traced_grid_computes_what_the_grid_computes(name):
    grid = TRACED[name]
    plan = trace_grid(grid, NAMES)
    assert plan is not None, name
    rng = random.Random(name)
    cells = [c.cell_contents for c, fixed in zip(grid.__closure__ or (), plan.cells) if fixed is None]
    for _ in range(200):
        meta = {k: rng.choice([1, 2, 16, 127, 128, 1024, rng.randrange(1, 10**6), -rng.randrange(1, 10**6)]) for k in NAMES}
        values = [meta[k] for k in plan.keys] + cells + [grid.__globals__[g] for g in plan.inputs]
        assert plan.fn(*values) == grid(meta), (name, meta)


@pytest.mark.parametrize("name", list(NOT_TRACED))
def test_what_is_not_integer_arithmetic_is_not_traced(name):
    before = len(calls)
    assert trace_grid(NOT_TRACED[name], NAMES) is None
    assert len(calls) == before  # tracing never ran the side effect's call


def test_the_plan_names_what_each_call_must_check():
    plan = trace_grid(TRACED["a module-level int"], NAMES)
    assert plan.keys == ("BLOCK",) and plan.cells == () and plan.inputs == ("n_global",)
    assert plan.globals == (("triton", triton),)
    assert plan.attributes == ((triton, "cdiv", triton.cdiv),)
    plan = trace_grid(with_cells(3, 4), NAMES)
    assert plan.keys == ("BM", "BN") and plan.cells == (None, None) and plan.inputs == ()
    plan = trace_grid(local_import(9), NAMES)
    assert plan.cells == (None, triton) and plan.attributes == ((triton, "cdiv", triton.cdiv),)
