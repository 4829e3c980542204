//! Shared by the `llvm_*` tests: which backends to run, example modules, and comparisons.
#![allow(dead_code)]

use safecall::Backend;

use crate::common::skip;
use safecall::backend::llvm::LlvmOptions;
use safecall::jit::{JitModule, JitOptions};

/// The backends these tests run on: Cranelift always, LLVM when this build has it. Without the
/// `llvm` feature the LLVM half is skipped with a printed reason, except in CI (`CI=true`),
/// where the feature must be on.
pub fn backends() -> Vec<Backend> {
    let all = crate::common::delivery::backends();
    if all.contains(&Backend::Llvm) {
        return all;
    }
    skip::skip(
        "the LLVM half: safecall was built without the `llvm` feature (`cargo xtask test` \
         enables it when llvm-config-19 is installed; or `cargo test --features llvm`)",
    );
    all
}

/// Whether the LLVM backend can run; prints why not (and fails in CI) otherwise.
pub fn llvm_available() -> bool {
    backends().contains(&Backend::Llvm)
}

/// Parses `examples/ir/<name>.scir`.
pub fn example(name: &str) -> safecall::ir::Module {
    let path = format!("{}/examples/ir/{name}.scir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    safecall::ir::parse::parse(&text).unwrap_or_else(|e| panic!("{}", e.render(&path, &text)))
}

/// Parses IR text, panicking with the rendered diagnostics.
pub fn parse(text: &str) -> safecall::ir::Module {
    safecall::ir::parse::parse(text).unwrap_or_else(|e| panic!("{}", e.render("input", text)))
}

/// JIT options for `backend` (LLVM at `opt_level`), compiling with it directly (not with the
/// baseline tier).
pub fn jit_options(backend: Backend, opt_level: u8) -> JitOptions {
    JitOptions {
        backend,
        first_tier: safecall::jit::FirstTier::Backend,
        llvm: LlvmOptions::with_opt_level(opt_level),
        ..JitOptions::default()
    }
}

/// JIT-compiles `module` with `backend`.
pub fn jit(module: &safecall::ir::Module, backend: Backend) -> JitModule {
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    unsafe { safecall::jit::compile(module, &jit_options(backend, 2)) }
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"))
}

/// Compile options for `backend`.
pub fn options(backend: Backend) -> safecall::Options {
    safecall::Options {
        backend,
        ..safecall::Options::default()
    }
}
