"""The README's Python section, as a newcomer runs it: its commands in order, the wheel
installed with pip into a fresh venv (no Rust toolchain, no compiler needed there) and the
example run with that venv's Python. ``cargo xtask wheel`` itself is the README's first
command; the test takes the wheel it leaves in ``target/wheel/`` (in CI, the one the suite
runs against), and skips outside CI when there is none."""

import glob
import os
import subprocess
import venv

import pytest

from support import ROOT

SECTION = "## From Python, in process"


def _commands():
    """The indented command lines of the README's Python section's first code block."""
    text = (ROOT / "README.md").read_text()
    body = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    lines, block = [], False
    for line in body.splitlines():
        if line.startswith("    ") and line.strip():
            lines.append(line.strip())
            block = True
        elif block:
            break
    return lines


def test_the_section_builds_then_installs_then_runs():
    assert _commands() == [
        "cargo xtask wheel",
        "pip install target/wheel/safecall-*.whl numpy",
        "python examples/python/jit_launcher.py",
    ]


def test_the_sections_commands_work_in_a_fresh_venv(tmp_path):
    wheels = glob.glob(str(ROOT / "target" / "wheel" / "safecall-*.whl"))
    if len(wheels) != 1:
        reason = f"target/wheel/ holds {len(wheels)} safecall wheels, expected the one `cargo xtask wheel` leaves"
        if os.environ.get("CI") in ("true", "1"):
            pytest.fail(reason)
        pytest.skip(reason)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _, pip_line, run_line = _commands()
    # The README's `pip install ...` with the venv's pip (the shell would expand the glob).
    pip = pip_line.split()[2:]
    pip = [wheels[0] if "*" in arg else arg for arg in pip]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip], check=True)
    script = run_line.split()[1]
    out = subprocess.run([str(python), str(ROOT / script)], check=True, capture_output=True, text=True, cwd=ROOT)
    assert "out = [[1.0, 3.0, 5.0, 7.0], [9.0, 11.0, 13.0, 15.0]]" in out.stdout.splitlines()
