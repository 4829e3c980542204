"""examples/python/jit_launcher.py runs and prints what it should."""

import subprocess
import sys

from support import ROOT

SIGNATURE = (
    "scaled_add(a: Tensor[(m, n), float32, cpu, strides=(sa0, sa1)], b: Tensor[(m, n), float32, "
    "cpu, strides=(sb0, sb1)], out: Tensor[(m, n), float32, cpu], alpha: f32)"
)


def test_jit_launcher_example():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "jit_launcher.py")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    lines = out.splitlines()
    start = lines.index(f"signature: {SIGNATURE}")
    context = f"  when calling {SIGNATURE}"
    assert lines[start + 1 : start + 13] == [
        "out = [[1.0, 3.0, 5.0, 7.0], [9.0, 11.0, 13.0, 15.0]]",
        "strided: out = [[9.0, 13.0, 17.0, 21.0], [41.0, 45.0, 49.0, 53.0]]",
        "launches: [(2, 4, 1), (2, 4, 1)]",
        "float64 b: TypeError: scaled_add: argument 'b' (#1): dtype is float64, expected float32",
        context,
        "n = 3: ValueError: scaled_add: n = 3 (bound by a.shape[1]) is not a multiple of 4",
        context,
        "b of another shape: ValueError: scaled_add: argument 'b' (#1): shape[0] is 3, expected 2 "
        "(= m, bound by a.shape[0])",
        context,
        "out transposed: ValueError: scaled_add: argument 'out' (#2): strides[1] is 2, expected 1 "
        "(the tensor must be compact: row-major and contiguous)",
        context,
        "launches after the rejected calls: 2",
    ]
    try:
        import torch  # noqa: F401
    except ImportError:
        assert lines[-1] == "torch is not installed: skipping the PyTorch tensors"
    else:
        assert lines[-1] == "torch: out = [[1.0, 3.0, 5.0, 7.0], [9.0, 11.0, 13.0, 15.0]]"


# What a distribution installs, by the import name it provides.
_IMPORT_NAMES = {"apache-tvm-ffi": "tvm_ffi", "numpy": "numpy", "./python": "safecall"}


def _import_name(requirement):
    """The module a ``pip install`` argument provides (the package's wheel is a path)."""
    if requirement.endswith(".whl") and "/safecall-" in requirement:
        return "safecall"
    return _IMPORT_NAMES[requirement]


def _readme_installs():
    """Import names the README's ``pip install`` lines provide, with the package's own
    dependencies (python/pyproject.toml)."""
    import re

    names = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.strip().startswith("pip install "):
            names.update(_import_name(w) for w in line.split()[2:])
    deps = re.search(r"^dependencies = \[(.*)\]", (ROOT / "python" / "pyproject.toml").read_text(), re.M)
    for dep in re.findall(r'"([A-Za-z0-9_.-]+)', deps.group(1)):
        names.add(_IMPORT_NAMES[dep])
    return names


def _required_imports(path):
    """The top-level modules a script imports unconditionally (not inside ``try``)."""
    import ast

    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_readme_install_line_covers_the_readme_example():
    """The README's Python example runs right after the README's install command: every module
    it imports unconditionally is the standard library's or installed by that command."""
    readme = (ROOT / "README.md").read_text()
    scripts = [
        line.split()[1]
        for line in readme.splitlines()
        if line.strip().startswith("python examples/python/")
    ]
    assert scripts, "the README runs no Python example"
    installed = _readme_installs()
    for script in scripts:
        missing = {
            m
            for m in _required_imports(ROOT / script)
            if m not in sys.stdlib_module_names and m not in installed
        }
        assert not missing, f"{script} imports {sorted(missing)}, which the README does not install"
