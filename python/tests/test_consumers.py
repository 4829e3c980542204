"""Every TVM-FFI consumer of safecall's outputs, beyond ``tvm_ffi.load_module``: TVM's runtime
(``tvm.runtime.load_module``), TVM's RPC (a library uploaded to a ``tvm.rpc`` server on
loopback, called on remote tensors) and apache-tvm-ffi-orcjit (``.o`` files loaded by LLVM's
ORC JIT). Versions: apache-tvm 0.27.0, apache-tvm-ffi-orcjit 0.1.3 (``cargo xtask venv``
installs them under ``CI=true``). Each consumer runs in a Python of its own, so that TVM's
runtime never shares the pytest process. Without the package the test skips with the reason
(a failure under CI)."""

import importlib.util
import os
import subprocess
import sys

import pytest

import safecall
from support import ROOT

CONTEXT = "  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])"
MISMATCH = "add_one: argument 'y' (#1): shape[0] is 4, expected 3 (= n, bound by x.shape[0])"


def _require(module, package):
    if importlib.util.find_spec(module) is None:
        reason = f"{package} is not installed (CI installs it: cargo xtask venv under CI=true)"
        if os.environ.get("CI") in ("true", "1"):
            pytest.fail(f"CI=true, so this cannot be skipped: {reason}")
        pytest.skip(reason)


def _run(script, cwd):
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.splitlines()


def _add_one(path):
    module = safecall.parse((ROOT / "examples" / "ir" / "add_one.scir").read_text())
    safecall.build(module, path)
    return path


def test_orcjit_loads_an_object_file_and_calls_it(tmp_path):
    _require("tvm_ffi_orcjit", "apache-tvm-ffi-orcjit")
    _add_one(tmp_path / "add_one.o")
    lines = _run(
        """
import numpy as np
import tvm_ffi_orcjit

mod = tvm_ffi_orcjit.default_session().load_module("add_one.o")
x, y = np.arange(3, dtype="float32"), np.zeros(3, dtype="float32")
mod.add_one(x, y)
print(y.tolist())
try:
    mod.add_one(x, np.zeros(4, dtype="float32"))
except ValueError as e:
    print(e)
""",
        tmp_path,
    )
    assert lines == ["[1.0, 2.0, 3.0]", MISMATCH, CONTEXT]


def test_tvm_runtime_loads_a_library(tmp_path):
    _require("tvm", "apache-tvm")
    _add_one(tmp_path / "add_one.so")
    lines = _run(
        """
import os

import numpy as np
import tvm

lib = tvm.runtime.load_module(os.path.abspath("add_one.so"))
x, y = np.arange(3, dtype="float32"), np.zeros(3, dtype="float32")
lib["add_one"](x, y)
print(y.tolist())
try:
    lib["add_one"](x, np.zeros(4, dtype="float32"))
except ValueError as e:
    print(e)
""",
        tmp_path,
    )
    assert lines == ["[1.0, 2.0, 3.0]", MISMATCH, CONTEXT]


def test_tvm_rpc_runs_an_uploaded_library_on_remote_tensors(tmp_path):
    _require("tvm", "apache-tvm")
    _require("cloudpickle", "cloudpickle (TVM's RPC server needs it)")
    _require("psutil", "psutil (TVM's RPC server needs it)")
    _add_one(tmp_path / "add_one.so")
    lines = _run(
        """
import numpy as np
import tvm
from tvm import rpc

server = rpc.Server(host="127.0.0.1", port=9391, port_end=9499)
try:
    remote = rpc.connect("127.0.0.1", server.port)
    remote.upload("add_one.so")
    f = remote.load_module("add_one.so")["add_one"]
    dev = remote.cpu()
    x = tvm.runtime.tensor(np.arange(3, dtype="float32"), dev)
    y = tvm.runtime.tensor(np.zeros(3, dtype="float32"), dev)
    f(x, y)
    print(y.numpy().tolist())
    try:
        f(x, tvm.runtime.tensor(np.zeros(4, dtype="float32"), dev))
    except Exception as e:  # TVM's RPC drops the kind: an RPCError with the message
        print(type(e).__name__)
        print(str(e))
finally:
    server.terminate()
""",
        tmp_path,
    )
    assert lines[0] == "[1.0, 2.0, 3.0]"
    assert lines[1] == "RPCError"
    assert lines[2:] == ["RPCError: Error caught from RPC call:", MISMATCH, CONTEXT]
