"""``safecall.triton`` imports without triton: the package does not depend on it."""

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["triton"] = None  # any `import triton` now raises ImportError
import safecall.triton as sct
assert sct.SUPPORTED_TRITON == "3.9" and "fp32" in sct.TRITON_ABI.scalars
try:
    sct.check_version("3.10.0")
except sct.TritonVersionError as e:
    print(e)
"""


def test_safecall_triton_imports_without_triton():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "kernel compiled by Triton 3.10.0: safecall.triton supports Triton 3.9.x only (its launch "
        "ABI is the one tested)"
    )
