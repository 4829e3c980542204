"""Building IR from Python (parse, the builder), invalid IR (IRError), introspection (emit,
signatures, metadata) and AOT (build) with the CLI's options."""

import ctypes
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import pytest
import tvm_ffi

import safecall
import safecall as sc
from support import ROOT, backends

EXAMPLES = ROOT / "examples" / "ir"


def example(name):
    path = EXAMPLES / f"{name}.scir"
    return safecall.parse(path.read_text(), str(path))


def canonical(module):
    return safecall.emit(module, "ir")


# ---- parse and IRError ----------------------------------------------------------------------


def test_parse_returns_a_verified_module_with_its_functions():
    m = example("call_global")
    assert isinstance(m, safecall.Module)
    assert m.name == "call_global"
    assert m.functions == ["echo_positive", "apply"]
    assert m.signature("apply") == "apply(f: Function, t: Tensor[(n,), float32], scale: f64)"


def test_a_syntax_error_raises_irerror_with_the_rendered_diagnostic():
    text = "module m;\nfn f(x: i33) {\n}\n"
    with pytest.raises(safecall.IRError) as info:
        safecall.parse(text, "bad.scir")
    assert str(info.value) == (
        "error: unknown parameter type `i33`\n"
        " --> bad.scir:2:9\n"
        "  |\n"
        "2 | fn f(x: i33) {\n"
        "  |         ^^^\n"
        "  = note: expected one of `bool`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, "
        "`f16`, `bf16`, `f32`, `f64`, `ptr`, `str`, `bytes`, `device`, `dtype`, `shape`, `func`, `any`, "
        "`data_ptr`, `stream`, `optional[...]`, `const(...)`, `tuple(...)`, or `tensor[...]`\n"
    )
    [d] = info.value.errors
    assert isinstance(d, safecall.Diagnostic)
    assert (d.file, d.line, d.column) == ("bad.scir", 2, 9)
    assert d.message == "unknown parameter type `i33`"
    assert d.rendered == str(info.value)
    assert isinstance(info.value, ValueError)


def test_verifier_errors_are_all_reported_each_with_its_place():
    text = (
        "module m;\n"
        "fn f(x: i64) -> i64 {\n"
        "    let a = x + 1i32;\n"
        "    return y;\n"
        "}\n"
    )
    with pytest.raises(safecall.IRError) as info:
        safecall.parse(text, "two.scir")
    errors = info.value.errors
    assert [(e.line, e.function) for e in errors] == [(3, "f"), (4, "f")]
    assert errors[0].message.startswith("operands of `+` have different types: i64 and i32")
    assert errors[0].subject == "statement body[0] `let a = x + 1i32;`"
    assert "`y` is not" in errors[1].message
    assert str(info.value) == "\n".join(e.rendered for e in errors)
    assert " --> two.scir:3:13\n" in str(info.value)
    assert "3 |     let a = x + 1i32;\n" in str(info.value)


# ---- the builder ----------------------------------------------------------------------------


def build_all_params():
    m = sc.ModuleBuilder("all_params")
    m.extern_fn("consume", [sc.i8, sc.i16, sc.i32, sc.i64, sc.u8, sc.u16, sc.u32, sc.u64, sc.bool_, sc.f32, sc.f64, sc.ptr], sc.i32)
    f = m.function("everything", doc="One parameter of each kind; returns the element count of `t`.")
    a, b, c, d = (f.param(n, t) for n, t in zip("abcd", [sc.i8, sc.i16, sc.i32, sc.i64]))
    e, f_, g, h = (f.param(n, t) for n, t in zip("efgh", [sc.u8, sc.u16, sc.u32, sc.u64]))
    flag = f.param("flag", sc.bool_)
    x32, x64, p = f.param("x32", sc.f32), f.param("x64", sc.f64), f.param("p", sc.ptr)
    s, raw = f.param("s", sc.str_), f.param("raw", sc.bytes_)
    dev, dt, sh = f.param("dev", sc.device), f.param("dt", sc.dtype), f.param("sh", sc.shape)
    cb, anything = f.param("cb", sc.func), f.param("anything", sc.any_)
    maybe_n = f.param("maybe_n", sc.optional(sc.i64))
    f.param("maybe_t", sc.optional(sc.tensor(["n"], "float32")))
    block = f.param("block", sc.const(128))
    fast = f.param("fast", sc.const(True))
    eps = f.param("eps", sc.const(1e-5))
    f.param("nothing", sc.const(None))
    pair = f.param("pair", sc.tuple_(("lo", sc.i64), ("hi", sc.tensor(["k"], "int8x4", device="cpu"))))
    data, st = f.param("data", sc.data_ptr), f.param("st", sc.stream)
    t = f.tensor("t", ["n", "m"], strides="any", byte_offset="any")
    f.tensor("u", ["rows", "cols"], "bfloat16", device="cuda", strides=["row_stride", 1], device_id="dev_id", align=16, index=sc.i32)
    f.tensor("v", [4, "cols"], "float8_e4m3fn", device="cuda", device_id="free")
    f.tensor("w", [], "bool")
    f.returns(sc.i64)
    f.divisible("d", 4).divisible("cols", 16).divisible("row_stride", 8)
    rc = f.call("consume", a, b, c, d, e, f_, g, h, flag, x32, x64, p, dest="rc")
    f.assert_(rc == sc.lit(0, sc.i32), "RuntimeError", "consume failed with ", rc)
    with f.if_(sc.is_none(maybe_n)):
        f.return_(t.shape[0] * t.shape[1])
    tiles = f.let("tiles", sc.ceil_div(d, block))
    scale = f.let("scale", sc.select(fast, eps, 2.0 * eps))
    f.assert_(sc.and_(tiles > 0, scale > 0.0), "ValueError", "no tiles for d = ", d, " and scale ", scale)
    bound = f.let("bound", maybe_n)
    f.assert_(sc.cast(sc.u64, bound) < h, "IndexError", "bound ", bound, " exceeds ", h, " on ", dev, " for ", dt)
    f.call_packed(cb, s, raw, sh, anything, pair, data, st, sc.var("dev_id"), sc.var("row_stride"), dest="r")
    f.return_(sc.min_(t.shape[0] * t.shape[1], bound))
    return m


def test_the_builder_makes_the_same_module_as_the_text_every_parameter_kind():
    built = build_all_params().build()
    assert canonical(built) == canonical(example("all_params"))


def test_the_builder_makes_the_launcher():
    m = sc.ModuleBuilder("matmul_launcher")
    launch = m.extern_fn("matmul_kernel_launch", [sc.ptr] * 4 + [sc.i64] * 3 + [sc.i32, sc.i32, sc.ptr], sc.i32, nonzero_is_raised=True)
    f = m.function("matmul", doc="c = a @ b + bias on a CUDA device; 128x128 tiles.")
    a = f.tensor("a", ["m", "k"], "float16", device="cuda", align=16)
    b = f.tensor("b", ["k", "n"], "float16", device="cuda", align=16)
    bias = f.tensor("bias", ["n"], "float32", device="cuda")
    c = f.tensor("c", ["m", "n"], "float32", device="cuda", align=16, index=sc.i32)
    f.divisible("k", 8)
    mm, n, k = sc.var("m"), sc.var("n"), sc.var("k")
    f.assert_(sc.and_(mm > 0, n > 0), "ValueError", "matmul: empty output of shape (", mm, ", ", n, ")")
    gx = f.let("grid_x", sc.cast(sc.i32, sc.ceil_div(n, 128)))
    gy = f.let("grid_y", sc.cast(sc.i32, mm.ceil_div(128)))
    s = f.get_stream("stream", a.device_type, a.device_id)
    f.call(launch, a.data, b.data, bias.data, c.data, mm, n, k, gx, gy, s)
    assert canonical(m.build()) == canonical(example("launcher"))


def test_the_builder_makes_imported_modules_and_imports():
    m = sc.ModuleBuilder("with_imports")
    m.imported_module("helpers", "test_helpers", b"helpers v1\x00")
    m.imported_module("kernels", "cuda", b"\x7fELF\x02\x01\x01\x00fatbin", imports=["helpers"])
    m.import_("kernels")
    f = m.function("forward", doc="Forwards `x` to the function `add_bias` of the imported modules and returns the result.")
    x = f.tensor("x", ["n"], "float32", device="cuda")
    bias = f.param("bias", sc.f32)
    f.returns(sc.any_)
    r = f.call_packed(sc.import_("add_bias"), x, bias, dest="r")
    f.return_(r)
    assert canonical(m.build()) == canonical(example("imports"))


def test_builder_statements_run():
    m = sc.ModuleBuilder("stmts")
    f = m.function("collatz_steps")
    n = f.param("n", sc.i64)
    f.returns(sc.i64)
    f.assert_(n > 0, "ValueError", "n must be positive, got ", n)
    v = f.let("v", n, mut=True)
    steps = f.let("steps", 0, mut=True)
    with f.for_range("i", 0, 1000):
        with f.if_(v == 1):
            f.return_(steps)
        with f.else_():
            with f.if_(v % 2 == 0):
                f.assign(v, v / 2)
            with f.else_():
                f.assign(v, 3 * v + 1)
        f.assign(steps, steps + 1)
    f.return_(-1)
    g = m.function("sum_squares")
    t = g.tensor("t", ["len"], "int64", device="cpu")
    g.returns(sc.i64)
    acc = g.let("acc", 0, mut=True)
    with g.for_range("j", sc.var("len") - 1, -1, step=-1) as j:
        x = g.let("x", sc.load(sc.i64, sc.offset(t.data, j * 8)))
        g.store(sc.i64, sc.offset(t.data, j * 8), x * x)
        g.assign(acc, acc + x * x)
    g.return_(acc)
    jm = safecall.jit(m)
    assert jm.collatz_steps(27) == 111
    with pytest.raises(ValueError, match="^n must be positive, got -3$"):
        jm.collatz_steps(-3)
    arr = np.arange(5, dtype="int64")
    assert jm.sum_squares(arr) == 30
    assert arr.tolist() == [0, 1, 4, 9, 16]


def test_builder_names_that_are_reserved_words_are_quoted():
    m = sc.ModuleBuilder("names")
    f = m.function("in")  # a reserved word, still an identifier
    x = f.param("step", sc.i64)
    f.returns(sc.i64)
    f.return_(x + sc.lit(1))
    jm = safecall.jit(m)
    assert jm["in"](41) == 42
    assert jm.signature("in") == "in(step: i64)"
    bad = sc.ModuleBuilder("names")
    bad.function("g").param("my x", sc.i64)
    with pytest.raises(safecall.IRError, match="parameter name `my x` is not an identifier"):
        bad.build()
    # Spellings are remembered (a launcher spells each name several times): the same each time,
    # a str subclass spelled as its text, and a name that is no str still refused.
    from safecall._text import _name

    class Name(str):
        pass

    for _ in range(2):
        assert [_name(n) for n in ("n0", "in", "my x", "a`b", Name("fn"))] == ["n0", "`in`", "`my x`", "`a\\`b`", "`fn`"]
    with pytest.raises(TypeError, match="a name must be a str, got int"):
        _name(3)


def test_invalid_built_ir_points_into_the_builders_text():
    m = sc.ModuleBuilder("bad")
    f = m.function("f")
    f.param("x", sc.i64)
    f.returns(sc.i64)
    f.let("one", sc.lit(1, sc.i32))
    # by name, so the builder does not know the types and leaves the mismatch to the verifier
    f.return_(sc.var("x") + sc.var("one"))
    with pytest.raises(safecall.IRError) as info:
        m.build()
    [d] = info.value.errors
    assert d.file == "<builder bad>"
    assert d.line == 5
    assert "operands of `+` have different types: i64 and i32" in str(info.value)


def test_expressions_refuse_python_truth_and_bare_strings():
    x = sc.var("x")
    with pytest.raises(TypeError, match="no truth value"):
        bool(x > 1)
    with pytest.raises(TypeError, match="ambiguous"):
        x + "y"


# ---- introspection --------------------------------------------------------------------------


@pytest.mark.parametrize("backend", backends())
def test_emit_every_form(backend):
    m = example("add_one")
    assert safecall.emit(m, "ir").startswith("module add_one;")
    assert "function export __tvm_ffi_add_one" in safecall.emit(m, "lowered", backend=backend)
    backend_ir = safecall.emit(m, "backend", backend=backend)
    assert ("define" in backend_ir) if backend == "llvm" else ("function" in backend_ir)
    assert "__tvm_ffi_add_one" in safecall.emit(m, "asm", backend=backend)
    with pytest.raises(ValueError, match='emit "c": expected'):
        safecall.emit(m, "c")


def test_signature_metadata_and_doc():
    m = example("add_one")
    jm = safecall.jit(m)
    sig = "add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])"
    assert jm.signature("add_one") == sig
    meta = jm.metadata("add_one")
    assert meta["arg_names"] == ["x", "y"]
    assert meta["signature"] == sig
    assert json.loads(meta["type_schema"])["named_args"]["params"] == [{"type": "ffi.Tensor"}] * 2
    assert jm.get_function_metadata("add_one") == meta  # tvm_ffi.Module's name
    assert jm.doc("add_one") == "y = x + 1, elementwise, over float32 tensors on the CPU."
    with pytest.raises(KeyError, match="no function `nope`"):
        m.signature("nope")


def test_help_on_a_jit_function_shows_its_signature_and_doc():
    import inspect
    import pydoc

    fn = safecall.jit(example("add_one"))["add_one"]
    assert type(fn) is tvm_ffi.Function  # still the real thing, not a wrapper
    sig = "add_one(x: Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])"
    doc = "y = x + 1, elementwise, over float32 tensors on the CPU."
    assert fn.__doc__ == f"{sig}\n\n{doc}"
    assert fn.__name__ == "add_one"
    assert str(inspect.signature(fn)) == "(x, y, /)"
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert sig in text and doc in text
    # a function without a doc comment shows its signature
    bare = safecall.jit("module m; fn f(n: i64) -> i64 { return n; }")["f"]
    assert bare.__doc__ == "f(n: i64)"
    assert bare(3) == 3
    # The names come from the module (`Module.arg_names`, the metadata's `arg_names`); two
    # functions with the same names share one (immutable) `inspect.Signature`.
    module = safecall.parse("module m; fn f(a: i64, b: f64) -> i64 { return a; } fn g(a: i64, b: f64) -> i64 { return a; }")
    assert module.arg_names("g") == ["a", "b"] == json.loads(module.metadata_json("g"))["arg_names"]
    with pytest.raises(KeyError, match="nope"):
        module.arg_names("nope")
    jm = safecall.jit(module)
    assert str(inspect.signature(jm["f"])) == "(a, b, /)"
    assert inspect.signature(jm["f"]) is inspect.signature(jm["g"])


def test_a_jit_modules_functions_are_made_once_and_named():
    jm = safecall.jit("module m; fn f(n: i64) -> i64 { return n; } fn g(n: i64) -> i64 { return n + 1; }")
    # Each `tvm_ffi.Function` is one object, however it is reached, and keeps the code alive.
    assert jm["g"] is jm.g and jm["f"] is jm["f"]
    assert list(jm) == ["f", "g"] and len(jm) == 2 and set(jm.addresses) == {"f", "g"}
    f = jm["f"]
    del jm
    assert f(41) == 41
    with pytest.raises(KeyError, match=r"module `m` has no function `h` \(it has: f, g\)"):
        safecall.jit("module m; fn f(n: i64) -> i64 { return n; } fn g(n: i64) -> i64 { return n; }")["h"]
    with pytest.raises(AttributeError):
        _ = safecall.jit("module m; fn f(n: i64) -> i64 { return n; }").h


def test_bad_options_are_clear_errors():
    m = example("add_one")
    with pytest.raises(ValueError, match='backend="gcc": expected "cranelift" or "llvm"'):
        safecall.jit(m, backend="gcc")
    with pytest.raises(ValueError, match="Cranelift's levels"):
        safecall.jit(m, opt="3")
    with pytest.raises(ValueError, match="apply to the LLVM backend"):
        safecall.jit(m, cpu="skylake")
    with pytest.raises(TypeError, match="expected an address"):
        safecall.jit(m, symbols={"f": "not an address"})


    with pytest.raises(ValueError, match='tier_up=\'sometimes\': False, True, "background" or "on_request"'):
        safecall.jit(m, tier_up="sometimes")
    if safecall.HAS_LLVM:
        with pytest.raises(ValueError, match="tier_up applies to the Cranelift backend"):
            safecall.jit(m, backend="llvm", tier_up=True)


TIERED = "module m;\nfn f(n: i64) -> i64 { assert n >= 0 else ValueError(\"n = \", n, \" < 0\"); return n * 3; }\n"


def _wait_tiered_up(code) -> None:
    deadline = time.monotonic() + 120
    while not code.tiered_up:
        assert time.monotonic() < deadline, "the tier-up never finished"
        time.sleep(0.005)


def test_a_tier_up_switches_the_functions_to_cranelift_code_with_the_same_results():
    x86 = platform.machine() in ("x86_64", "AMD64")
    # At once, in the background.
    at_once = safecall.jit(TIERED, tier_up=True)
    f = at_once.f
    assert f(4) == 12
    if x86:
        _wait_tiered_up(at_once.code)
    assert f(5) == 15
    with pytest.raises(ValueError, match="n = -1 < 0"):
        f(-1)
    assert not at_once.code.tier_up(), "started already"
    # On request: nothing happens until asked.
    on_request = safecall.jit(TIERED, tier_up="on_request")
    g = on_request.f
    assert g(2) == 6
    time.sleep(0.2)
    assert not on_request.code.tiered_up
    assert on_request.code.tier_up() is x86, "the request starts it (only the baseline tier has one)"
    assert not on_request.code.tier_up(), "a second request has nothing to start"
    if x86:
        _wait_tiered_up(on_request.code)
    assert g(7) == 21
    with pytest.raises(ValueError, match="n = -2 < 0"):
        g(-2)
    # Without a tier-up, and with an explicit `opt` (Cranelift compiles the code at once at
    # that level): nothing to request, the same results.
    for options in ({}, {"opt": "speed"}, {"opt": "none"}):
        plain = safecall.jit(TIERED, **options)
        assert plain.f(3) == 9, options
        assert not plain.code.tier_up() and not plain.code.tiered_up, options


@pytest.mark.skipif(not hasattr(os, "fork") or platform.machine() not in ("x86_64", "AMD64"),
                    reason="fork, and a baseline tier to tier up from (x86-64)")
def test_a_forked_process_tiers_up_too():
    # The tier-up thread is not copied by fork: the child's first tier-up starts its own.
    child = f"""
import os, time
import safecall

def tiered(text):
    m = safecall.jit(text, tier_up=True)
    deadline = time.monotonic() + 60
    while not m.code.tiered_up and time.monotonic() < deadline:
        time.sleep(0.005)
    return m.code.tiered_up and m.f(2) == 6

assert tiered({TIERED!r}), "the parent's tier-up"
pid = os.fork()
if pid == 0:
    os._exit(0 if tiered({TIERED!r}) else 3)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
"""
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "child exit 0", (out.stdout, out.stderr)


def test_unresolved_externs_are_a_compile_error_naming_them():
    with pytest.raises(safecall.CompileError, match="safecall_pytest_nowhere"):
        safecall.jit(
            "module m; extern fn safecall_pytest_nowhere(i64) -> i64; "
            "fn f(x: i64) -> i64 { let r = call safecall_pytest_nowhere(x); return r; }"
        )


@pytest.mark.parametrize("backend", backends())
def test_symbols_take_ctypes_function_pointers(backend):
    prototype = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
    square = prototype(lambda v: v * v)
    jm = safecall.jit(
        "module m; extern fn square(i64) -> i64; "
        "fn f(x: i64) -> i64 { let r = call square(x); return r + 1; }",
        symbols={"square": square},
        backend=backend,
    )
    assert jm.f(7) == 50
    libc = ctypes.CDLL(None)
    jm = safecall.jit(
        "module m; extern fn labs(i64) -> i64; fn f(x: i64) -> i64 { let r = call labs(x); return r; }",
        symbols={"labs": ctypes.cast(libc.labs, ctypes.c_void_p).value},
        process_symbols=False,
    )
    assert jm.f(-5) == 5


# ---- AOT --------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", backends())
def test_build_a_library_tvm_ffi_loads(tmp_path, backend):
    lib = tmp_path / "add_one.so"
    safecall.build(example("add_one"), lib, backend=backend, opt="speed" if backend == "cranelift" else 2)
    f = tvm_ffi.load_module(str(lib))["add_one"]
    x = np.arange(3, dtype="float32")
    y = np.zeros(3, dtype="float32")
    f(x, y)
    assert y.tolist() == [1, 2, 3]


@pytest.mark.parametrize("linker", ["in-process", "cc"])
def test_both_linkers_build_a_library_tvm_ffi_loads(tmp_path, linker):
    lib = tmp_path / f"{linker}.so"
    safecall.build(example("add_one"), lib, linker=linker)
    module = tvm_ffi.load_module(str(lib))
    x = np.arange(3, dtype="float32")
    y = np.zeros(3, dtype="float32")
    module["add_one"](x, y)
    assert y.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="shape"):
        module["add_one"](x, np.zeros(2, dtype="float32"))
    assert module.get_function_metadata("add_one")["arg_names"] == ["x", "y"]


def test_a_library_builds_without_a_c_compiler_on_path(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    lib = tmp_path / "add_one.so"
    safecall.build(example("add_one"), lib)
    x = np.arange(2, dtype="float32")
    y = np.zeros(2, dtype="float32")
    tvm_ffi.load_module(str(lib))["add_one"](x, y)
    assert y.tolist() == [1, 2]
    with pytest.raises(safecall.CompileError, match="cannot run `cc`"):
        safecall.build(example("add_one"), tmp_path / "cc.so", linker="cc")


def test_linker_options_that_contradict_are_value_errors(tmp_path):
    lib = tmp_path / "x.so"
    with pytest.raises(ValueError, match="expected one of in-process, cc"):
        safecall.build(example("add_one"), lib, linker="gold")
    with pytest.raises(ValueError, match="need linker='cc'"):
        safecall.build(example("add_one"), lib, linker="in-process", link_args=["-lm"])


def test_build_an_object_file(tmp_path):
    obj = tmp_path / "add_one.o"
    safecall.build(example("add_one"), obj)
    assert obj.read_bytes()[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="an `.o` path is not linked"):
        safecall.build(example("add_one"), obj, link_args=["-lm"])


def test_build_with_main_system_lib_and_link_args(tmp_path):
    lib = tmp_path / "main.so"
    safecall.build(example("add_one"), lib, main="add_one", link_args=["-lm"])
    module = tvm_ffi.load_module(str(lib))
    x = np.arange(2, dtype="float32")
    y = np.zeros(2, dtype="float32")
    module["main"](x, y)
    assert y.tolist() == [1, 2]
    syslib = tmp_path / "syslib.so"
    safecall.build(example("add_one"), syslib, system_lib_prefix="pytest_")
    ctypes.CDLL(str(syslib), ctypes.RTLD_GLOBAL)
    f = tvm_ffi.system_lib("pytest_")["add_one"]
    f(x, y)
    assert y.tolist() == [1, 2]
    with pytest.raises(ValueError, match='main="nope"'):
        safecall.build(example("add_one"), lib, main="nope")
    with pytest.raises(safecall.CompileError, match="link"):
        safecall.build(example("add_one"), lib, link_args=["-lsafecall_pytest_no_such_library"])


def test_the_builder_makes_tensors_of_any_rank():
    """``tensor("any", ...)``: any rank and strides; ``x.ndim`` is read at call time and a
    zero extent anywhere exempts the data pointer."""
    import numpy as np

    m = sc.ModuleBuilder("ranks")
    f = m.function("rank")
    x = f.param("x", sc.tensor("any", "float32", align=16))
    f.returns(sc.i32)
    f.return_(x.ndim)
    assert "fn rank(x: tensor[any, float32, strides=any, align=16]) -> i32 {" in m.text()
    rank = sc.jit(m)["rank"]
    assert [rank(np.zeros(s, dtype="float32")) for s in [(), (3,), (2, 3, 4), (1, 1, 1, 1, 2)]] == [0, 1, 3, 5]
    assert rank(np.zeros((4, 6), dtype="float32").T) == 2
    with pytest.raises(TypeError, match=r"rank: argument 'x' \(#0\): dtype is float64, expected float32"):
        rank(np.zeros(3))
    with pytest.raises(ValueError, match="a sequence of dims or 'any'"):
        sc.tensor("n", "float32")


def test_the_public_names_are_listed_once_and_the_package_is_typed():
    import collections
    import pathlib

    import safecall

    assert [name for name, n in collections.Counter(safecall.__all__).items() if n > 1] == []
    assert (pathlib.Path(safecall.__file__).parent / "py.typed").exists()


def test_the_python_vocabulary_is_the_rust_sides():
    """The words the package uses come from `_native` (src/ir/syntax.rs and the model's types):
    every scalar type has its builder type, and the builder refuses policies and formats with
    Rust's list."""
    from safecall import _native, _text

    assert _text._RESERVED == frozenset(_native.RESERVED)
    assert {"let", "fn", "none", "nan_bf16"} <= _text._RESERVED
    for word in _native.SCALAR_TYPES:
        assert str(getattr(sc, word + "_" if word == "bool" else word)) == word
    assert "f16" in _native.SCALAR_TYPES and "bf16" in _native.SCALAR_TYPES
    m = sc.ModuleBuilder("m")
    with pytest.raises(ValueError) as e:
        m.device_binary("k", "sass", b"x", ["g"])
    assert str(e.value) == "device binary format must be 'cubin', 'fatbin', 'ptx', 'hsaco' or 'hipfb', not 'sass'"
    assert _native.BINARY_FORMATS == ("cubin", "fatbin", "ptx", "hsaco", "hipfb")
    with pytest.raises(ValueError) as e:
        m.function("f").launch("k", "g", grid=1, block=1, cluster=[2], cluster_policy="nope", device=0)
    assert str(e.value) == "cluster_policy must be 'default', 'spread' or 'load_balancing', not 'nope'"
    assert _native.CLUSTER_POLICIES == ("default", "spread", "load_balancing")


def test_launch_settings_come_from_the_rust_side():
    """``FunctionBuilder.launch`` takes exactly the settings of ``_native.LAUNCH_SETTINGS``
    (Rust's ``LaunchSettingKind::ALL``), writes each in its shape and order, and the parser
    reads back every one of them."""
    from safecall import _native

    words = [s[0] for s in _native.LAUNCH_SETTINGS]
    assert words[:2] == ["grid", "block"] and "priority" in words and "cluster_policy" in words
    assert [s[0] for s in _native.LAUNCH_SETTINGS if s[2]] == ["grid", "block"]
    values = {"dims": [2, 1, 1], "expr": None, "keyword": None}
    m = sc.ModuleBuilder("m")
    m.device_binary("k", "ptx", b".visible .entry e() { ret; }", ["e"])
    f = m.function("f")
    dev = f.param("d", sc.i32)
    on = f.param("on", sc.bool_)
    s = f.param("s", sc.ptr)
    given = {}
    for keyword, shape, _, choices in _native.LAUNCH_SETTINGS:
        if shape == "dims":
            given[keyword] = values["dims"]
        elif shape == "keyword":
            given[keyword] = choices[-1]
        else:
            given[keyword] = {"stream": s, "device": dev, "pdl": on, "cooperative": on, "function": s}.get(keyword, 0)
    f.launch("k", "e", **given)
    text = m.text()
    line = [l for l in text.splitlines() if "launch k.e[" in l][0]
    positions = [line.index(f"{w}=") for w in words]
    assert positions == sorted(positions), line
    sc.parse(text)
    with pytest.raises(TypeError) as e:
        f.launch("k", "e", grid=1, block=1, clusters=2)
    assert str(e.value).startswith("launch() got an unexpected setting 'clusters'; the settings are grid, block")
    with pytest.raises(TypeError) as e:
        f.launch("k", "e", grid=1)
    assert str(e.value) == "launch() missing the required setting 'block'"
    with pytest.raises(ValueError) as e:
        f.launch("k", "e", grid=1, block=1, cluster=1, cluster_policy="fast")
    assert str(e.value) == "cluster_policy must be 'default', 'spread' or 'load_balancing', not 'fast'"


def test_the_backends_come_from_the_rust_side():
    from safecall import _native

    assert _native.BACKENDS == (("cranelift", "llvm") if sc.HAS_LLVM else ("cranelift",))
    module = sc.parse("module m;\nfn one() -> i64 { return 1; }\n")
    for backend in _native.BACKENDS:
        assert sc.jit(module, backend=backend).one() == 1
    with pytest.raises(ValueError, match=r'^backend="gcc": expected "cranelift" or "llvm"$'):
        sc.jit(module, backend="gcc")
