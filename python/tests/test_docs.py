"""The in-process blocks of the docs run: every ```python safecall``` block of docs/*.md and
the README runs as a script (in order, per document, in a directory holding a copy of
examples/) and checks itself with assert. (tests/docs.rs runs the plain ```python``` blocks,
which need no package.)"""

import os
import shutil
import subprocess
import sys

import pytest

from support import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def blocks(path):
    out, current, start = [], None, 0
    for i, line in enumerate(path.read_text().splitlines(), 1):
        fence = line.strip().startswith("```")
        if current is None and fence and line.strip()[3:].strip() == "python safecall":
            current, start = [], i
        elif current is not None and fence:
            out.append((start, "\n".join(current) + "\n"))
            current = None
        elif current is not None:
            current.append(line)
    return out


def _params():
    return [
        pytest.param(doc, id=str(doc.relative_to(ROOT))) for doc in DOCS if blocks(doc)
    ]


def test_some_doc_has_in_process_blocks():
    assert _params(), "no ```python safecall``` block in the docs"


def _missing_module(text):
    """The name of a module a block imports that this Python lacks (docs/triton.md's blocks
    need triton; under CI=true that is a failure, not a skip), or None."""
    import importlib.util

    for name in ("triton",):
        if f"import {name}" in text and importlib.util.find_spec(name) is None:
            return name
    return None


@pytest.mark.parametrize("doc", _params())
def test_doc_blocks_run(doc, tmp_path):
    missing = [m for m in (_missing_module(text) for _, text in blocks(doc)) if m]
    if missing and os.environ.get("CI") not in ("true", "1"):
        pytest.skip(f"{doc.name}: {missing[0]} is not installed")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for line, text in blocks(doc):
        script = tmp_path / f"block{line}.py"
        script.write_text(text)
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 0, f"{doc.name}:{line}:\n{result.stdout}{result.stderr}"


# ---- the builder reference of docs/python.md -------------------------------------------------


def _reference():
    """The "Builder reference" section of docs/python.md, split by its #### subsections."""
    text = (ROOT / "docs" / "python.md").read_text()
    start = text.index("### Builder reference")
    end = text.index("\n### ", start + 1)
    return text[start:end].split("\n#### ")


def _rows(section):
    """{first cell: whole row} of the section's tables of names ("| Name |" or "| Method |"
    headers; the first cells in backticks)."""
    import re

    rows, listing = {}, False
    for line in section.splitlines():
        if not line.startswith("|"):
            listing = False
        elif line.startswith(("| Name |", "| Method |")):
            listing = True
        elif listing:
            m = re.match(r"\| `([^`]+)` \|", line)
            if m:
                rows[m.group(1)] = line
    return rows


def test_the_builder_reference_names_exactly_the_public_names():
    import safecall

    names = set()
    for section in _reference():
        names.update(k for k in _rows(section) if not k.startswith("."))
    assert names == set(safecall.__all__), (
        f"missing: {sorted(set(safecall.__all__) - names)}; "
        f"not public: {sorted(names - set(safecall.__all__))}"
    )


def _parameters(fn):
    import inspect

    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self"
    ]


def test_the_builder_reference_documents_every_parameter():
    """Every parameter of every public function, constructor and method appears in its row."""
    import inspect

    import safecall

    sections = _reference()
    everything = {}
    for section in sections:
        everything.update(_rows(section))
    missing = []
    for name in safecall.__all__:
        obj = getattr(safecall, name)
        if inspect.isfunction(obj):
            row = everything[name]
            missing += [f"{name}({p})" for p in _parameters(obj) if p not in row]
    headings = {
        safecall.ModuleBuilder: "`ModuleBuilder`",
        safecall.FunctionBuilder: "`FunctionBuilder`",
        safecall.JitModule: "`JitModule`",
        safecall.Expr: "Expressions",
    }
    for cls, heading in headings.items():
        [section] = [s for s in sections if s.startswith(heading)]
        rows = _rows(section)
        for attr, member in vars(cls).items():
            if attr.startswith("_") or not callable(member) or isinstance(member, property):
                continue
            row = rows.get(f".{attr}")
            if row is None:
                missing.append(f"{cls.__name__}.{attr} (no row)")
                continue
            missing += [f"{cls.__name__}.{attr}({p})" for p in _parameters(member) if p not in row]
    assert not missing, f"docs/python.md's builder reference leaves out: {missing}"


# ---- safecall.testing ------------------------------------------------------------------------


def test_the_testing_table_names_exactly_the_public_names():
    import safecall.testing
    import safecall.testing.checks

    text = (ROOT / "docs" / "python.md").read_text()
    start = text.index("### Testing what you compile: `safecall.testing`")
    end = text.index("\n### ", start + 1)
    names = set(_rows(text[start:end]))
    public = set(safecall.testing.__all__) | {f"checks.{n}" for n in safecall.testing.checks.__all__}
    assert names == public, f"missing: {sorted(public - names)}; not public: {sorted(names - public)}"


@pytest.mark.parametrize("name", ["safecall.testing", "safecall.testing.checks"])
def test_the_testing_examples_run(name):
    """The examples of safecall.testing's docstrings, as doctests."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0, result
