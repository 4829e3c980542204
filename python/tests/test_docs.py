"""The in-process blocks of the docs run: every ```python safecall``` block of docs/*.md and
the README runs as a script (in order, per document, in a directory holding a copy of
examples/) and checks itself with assert. (tests/docs.rs runs the plain ```python``` blocks,
which need no package.)"""

import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

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


@pytest.mark.parametrize("doc", _params())
def test_doc_blocks_run(doc, tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for line, text in blocks(doc):
        script = tmp_path / f"block{line}.py"
        script.write_text(text)
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 0, f"{doc.name}:{line}:\n{result.stdout}{result.stderr}"
