"""One TVM-FFI runtime in the process, packed calls into Python and back, exceptions from
callbacks, lifetime of JIT code, and calls from many threads, all through the real tvm_ffi."""

import ctypes
import gc
import os
import pathlib
import shutil
import subprocess
import threading

import numpy as np
import pytest
import tvm_ffi

import safecall
from support import ROOT, backends, stress

CALLBACKS = """
module callbacks;

fn apply(f: func, x: any) -> any {
    let r = call_packed f(x);
    return r;
}

fn twice_through(f: func, n: i64) -> i64 {
    let r = call_packed f(n);
    let v = cast<i64>(r);
    let s = call_packed f(v);
    return cast<i64>(s);
}

fn via_global(x: any) -> any {
    let r = call_packed global "safecall.pytest.echo"(x);
    return r;
}
"""


def native_library():
    return pathlib.Path(safecall._native.__file__)


def test_the_extension_exports_no_tvm_ffi_symbol():
    lib = ctypes.CDLL(str(native_library()))
    for name in ["TVMFFIFunctionGetGlobal", "TVMFFIErrorSetRaisedFromCStrParts", "TVMFFIObjectDecRef"]:
        with pytest.raises(AttributeError):
            getattr(lib, name)
    assert lib.PyInit__native  # the module's entry point is exported


def test_the_only_dynamic_symbol_of_the_extension_is_its_entry_point():
    nm = shutil.which("nm")
    if nm is None:
        assert os.environ.get("CI") not in ("true", "1"), "nm (binutils) is required under CI"
        pytest.skip("nm is not installed")
    out = subprocess.run(
        [nm, "-D", "--defined-only", str(native_library())],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    symbols = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert symbols == ["PyInit__native"]


def test_the_process_resolves_the_c_api_to_libtvm_ffi():
    # What the JIT binds to (dlsym in the global scope) is the library tvm_ffi loaded.
    process = ctypes.CDLL(None)
    libtvm_ffi = ctypes.CDLL(tvm_ffi.libinfo.find_libtvm_ffi())
    for name in ["TVMFFIFunctionGetGlobal", "TVMFFIErrorSetRaisedFromCStrParts"]:
        ours = ctypes.cast(getattr(process, name), ctypes.c_void_p).value
        theirs = ctypes.cast(getattr(libtvm_ffi, name), ctypes.c_void_p).value
        assert ours == theirs, name


@pytest.mark.parametrize("backend", backends())
def test_packed_calls_go_into_python_and_back(backend):
    m = safecall.jit(CALLBACKS, backend=backend)
    assert m.apply(lambda v: v * 2, 21) == 42
    assert m.apply(lambda v: v + "!", "hi") == "hi!"
    seen = []

    def record(n):
        seen.append(n)
        return n + 1

    assert m.twice_through(record, 5) == 7
    assert seen == [5, 6]
    # A JIT function is itself a tvm_ffi.Function: it can be the callback of another.
    inc = safecall.jit("module inc; fn inc(n: i64) -> i64 { return n + 1; }", backend=backend)
    assert m.twice_through(inc["inc"], 5) == 7


@pytest.mark.parametrize("backend", backends())
def test_globals_registered_in_tvm_ffi_are_visible_to_call_packed_global(backend):
    m = safecall.jit(CALLBACKS, backend=backend)
    tvm_ffi.register_global_func("safecall.pytest.echo", lambda v: ("echo", v), override=True)
    assert list(m.via_global(3)) == ["echo", 3]
    # And the other way round: a JIT function registered as a global is callable by name.
    tvm_ffi.register_global_func("safecall.pytest.apply", m.apply, override=True)
    assert tvm_ffi.get_global_func("safecall.pytest.apply")(lambda v: -v, 4) == -4


@tvm_ffi.register_error("safecall.pytest.CallbackError")
class CallbackError(Exception):
    pass


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    "exc",
    [ValueError("bad value"), KeyError("missing"), IndexError("out of range"), CallbackError("own kind")],
    ids=lambda e: type(e).__name__,
)
def test_an_exception_raised_in_a_callback_surfaces_with_its_type(backend, exc):
    m = safecall.jit(CALLBACKS, backend=backend)

    def fail(_):
        raise exc

    with pytest.raises(type(exc)) as info:
        m.apply(fail, 1)
    assert type(info.value) is type(exc)
    assert str(exc) in str(info.value)


def test_an_unregistered_exception_type_surfaces_as_runtime_error_with_its_message():
    class Unregistered(Exception):
        pass

    m = safecall.jit(CALLBACKS)

    def fail(_):
        raise Unregistered("not a registered kind")

    with pytest.raises(RuntimeError, match="not a registered kind"):
        m.apply(fail, 1)


ADD_ONE = (ROOT / "examples" / "ir" / "add_one.scir").read_text()


@pytest.mark.parametrize("backend", backends())
def test_a_function_outlives_its_module(backend):
    module = safecall.jit(ADD_ONE, backend=backend)
    f = module["add_one"]
    del module
    gc.collect()
    x = np.arange(4, dtype="float32")
    y = np.zeros(4, dtype="float32")
    for _ in range(3):
        f(x, y)
    assert y.tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match=r"^add_one: argument 'y' \(#1\)"):
        f(x, np.zeros(3, dtype="float32"))


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_compile_drop_cycles_give_the_memory_back():
    cycles = stress(10_000, 1_000)
    text = ADD_ONE
    x = np.arange(4, dtype="float32")
    y = np.zeros(4, dtype="float32")

    def cycle():
        f = safecall.jit(text)["add_one"]
        f(x, y)
        with pytest.raises(ValueError):  # compiles the lazy explanation too
            f(x, x[:3])
        del f

    for _ in range(200):  # warm up pools and caches
        cycle()
    gc.collect()
    before = _rss_bytes()
    for _ in range(cycles):
        cycle()
    gc.collect()
    grown = _rss_bytes() - before
    # Each cycle compiles two functions (~10 KiB of code and metadata): kept, 1k cycles would
    # hold > 10 MiB. Freed, the growth is allocator noise.
    assert grown < 4 * 1024 * 1024, f"RSS grew by {grown} bytes over {cycles} cycles"


def test_threads_calling_one_function_read_their_own_errors():
    calls = stress(100_000, 5_000)
    threads = 8
    f = safecall.jit(ADD_ONE)["add_one"]
    x = np.ones(4, dtype="float32")
    failures = []
    errors = [0] * threads
    context = "\n  when calling add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])"

    def work(t):
        try:
            # Each thread's bad argument has its own length: a message read on another thread
            # would name another length.
            bad = np.zeros(10 + t, dtype="float32")
            y = np.zeros(4, dtype="float32")
            expected = (
                f"add_one: argument 'y' (#1): shape[0] is {10 + t}, expected 4 (= n, bound by "
                f"x.shape[0])" + context
            )
            for i in range(calls):
                if i % 2 == 0:
                    f(x, y)
                else:
                    try:
                        f(x, bad)
                    except ValueError as e:
                        if str(e) != expected:
                            failures.append((t, str(e)))
                            return
                        errors[t] += 1
                    else:
                        failures.append((t, "no error raised"))
                        return
            if y.tolist() != [2.0] * 4:
                failures.append((t, f"y = {y.tolist()}"))
        except BaseException as e:  # noqa: BLE001  (reported below)
            failures.append((t, repr(e)))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []
    assert errors == [calls // 2] * threads
