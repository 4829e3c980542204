"""Seeded draws of ``kernel[grid](...)`` calls of ``triton_kernels.mixed``, a kernel of many
parameter kinds, for the differentials of the dispatch (``triton_dispatch_run.py``) and of the
installed driver (``triton_driver_run.py``): each draw picks a class per argument (a pointer's
dtype and alignment, an int's width class and whether it is 1 or divisible by 16, a float, a
bool, None), which arguments go by keyword and in what order, the launch options, a constexpr
given or left to its default, and the grid's form (:func:`mixed_classes`); then values in
those classes (:func:`mixed_call`), so that a second draw in the same classes has the same
specialization key. Importing it needs triton only."""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import triton

#: The int classes: Triton's width (i32, i64, u64) and whether the int is 1 or divisible by 16.
INT_CLASSES = ("one", "i32 divisible", "i32", "i64 divisible", "i64", "u64 divisible", "u64")


def int_in(rng: Any, cls: str) -> int:
    """An int of class ``cls`` (one of :data:`INT_CLASSES`): the width Triton gives it and
    whether it is 1 or divisible by 16 are the class's."""
    sign = rng.choice([1, -1])
    value = {
        "one": lambda: 1,
        "i32 divisible": lambda: 16 * rng.randrange(-(2**27), 2**27),
        "i32": lambda: 16 * rng.randrange(-(2**27), 2**27 - 1) + rng.randrange(1, 16),
        "i64 divisible": lambda: sign * 16 * rng.randrange(2**27, 2**59),
        "i64": lambda: sign * (16 * rng.randrange(2**27, 2**59 - 1) + rng.randrange(1, 16)),
        "u64 divisible": lambda: 16 * rng.randrange(2**59, 2**60),
        "u64": lambda: 16 * rng.randrange(2**59, 2**60 - 1) + rng.randrange(1, 16),
    }[cls]()
    return 17 if value == 1 and cls != "one" else value


def value_in(rng: Any, cls: str, tensor: Callable[[int, str], Any]) -> Any:
    """A value of class ``cls`` (see :func:`mixed_classes`); a pointer's is ``tensor(address,
    dtype name)``."""
    kind, _, detail = cls.partition(":")
    if kind == "int":
        return int_in(rng, detail)
    if kind == "float":
        return rng.choice([0.5, -0.0, 1.0, 3e38, -2.5e-300, float("inf"), float("nan"), rng.uniform(-1e6, 1e6)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "pointer":
        dtype, aligned = detail.split("/")
        name, itemsize = {"fp32": ("float32", 4), "fp16": ("float16", 2), "bf16": ("bfloat16", 2)}[dtype]
        offset = 16 * rng.randrange(0, 2**20)
        if aligned == "misaligned":
            offset += itemsize * rng.randrange(1, 16 // itemsize)
        return tensor(0x7F00_0100_0000 + offset, name)
    assert kind == "None", cls
    return None


#: Grid tuples of 1 to 3 dimensions, drawn per call.
MIXED_GRIDS = {
    "1 dim": lambda rng: (rng.randrange(1, 2**16),),
    "2 dims": lambda rng: (rng.randrange(1, 2**10), rng.randrange(1, 2**10)),
    "3 dims": lambda rng: (rng.randrange(1, 64), rng.randrange(1, 64), rng.randrange(1, 64)),
}
#: Grid functions of ``META`` (one the dispatcher traces, one over an expression it may not).
MIXED_GRID_FUNCTIONS = {
    "lambda over n": lambda META: (triton.cdiv(abs(META["n"]) % 100_000 + 1, META["BLOCK"]),),
    "lambda over BLOCK": lambda META: (META["BLOCK"] // 32, 3),
}


def mixed_classes(rng: Any) -> Dict[str, Any]:
    """One draw's classes: what the values, keywords, options and grid are drawn in."""
    pointer = lambda dtypes: "pointer:" + rng.choice(dtypes) + "/" + rng.choice(["aligned", "misaligned"])  # noqa: E731
    integer = lambda classes=INT_CLASSES: "int:" + rng.choice(classes)  # noqa: E731
    classes = {
        "x_ptr": pointer(["fp32", "fp16", "bf16"]),
        "y_ptr": pointer(["fp32", "fp16"]),
        "n": integer(),
        "m": integer(),
        "a": rng.choice([integer(), "float", "bool"]),
        "b": rng.choice(["None", integer(), "float"]),
        "flag": rng.choice(["bool", integer(("one", "i32 divisible", "i32"))]),
    }
    options = {"BLOCK": rng.choice([64, 128])}
    scale = rng.choice([None, 2.0, 3, -1.5])
    if scale is not None:
        options["SCALE"] = scale
    for name, values in (("num_warps", [2, 4, 8]), ("num_stages", [2, 3])):
        if rng.random() < 0.3:
            options[name] = rng.choice(values)
    grid = rng.choice(list(MIXED_GRIDS) + list(MIXED_GRID_FUNCTIONS))
    return {"classes": classes, "options": options, "positional": rng.randrange(2, 8),
            "block positional": rng.random() < 0.3, "grid": grid}


def mixed_call(rng: Any, draw: Dict[str, Any], tensor: Callable[[int, str], Any]) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any]]:
    """Values in a draw's classes, as (grid, args, kwargs): the first ``positional`` runtime
    arguments by position, the others by keyword in a shuffled order."""
    names = list(draw["classes"])
    values = {name: value_in(rng, cls, tensor) for name, cls in draw["classes"].items()}
    positional = draw["positional"]
    args = [values[name] for name in names[:positional]]
    kwargs = dict(draw["options"])
    if positional == len(names) and draw["block positional"]:
        args.append(kwargs.pop("BLOCK"))
    keywords = names[positional:]
    rng.shuffle(keywords)
    kwargs.update((name, values[name]) for name in keywords)
    grid = draw["grid"]
    grid = MIXED_GRID_FUNCTIONS[grid] if grid in MIXED_GRID_FUNCTIONS else MIXED_GRIDS[grid](rng)
    return grid, tuple(args), kwargs
