//! The delivery paths under test, listed once for every Rust test (the check suite, the GPU
//! launches, the hostile calls, aarch64, the LLVM tests): the backends this build has, and
//! each way a compiled module reaches its caller. A new backend or path is one more row here;
//! each suite runs the rows of the kinds it can deliver.

use safecall::Backend;
use safecall::aot::Linker;

/// How a module reaches the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// JIT-compiled by the baseline tier (x86-64 only, where it is the JIT's default).
    JitBaseline,
    /// JIT-compiled by the backend itself.
    Jit(Backend),
    /// A shared library built by safecall, linked in-process (the default) or by the C
    /// compiler.
    Shared(Backend, Linker),
    /// An object file built by safecall, linked by hand with `cc -shared`.
    Object(Backend),
}

/// The backends this build of safecall has (LLVM with the `llvm` feature).
pub fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::Cranelift];
    if safecall::backend::llvm::AVAILABLE {
        all.push(Backend::Llvm);
    }
    all
}

/// Every delivery path on every backend this build has.
pub fn deliveries() -> Vec<Delivery> {
    let mut all = Vec::new();
    if cfg!(target_arch = "x86_64") {
        all.push(Delivery::JitBaseline);
    }
    for backend in backends() {
        all.extend([
            Delivery::Jit(backend),
            Delivery::Shared(backend, Linker::InProcess),
            Delivery::Shared(backend, Linker::Cc),
            Delivery::Object(backend),
        ]);
    }
    all
}

/// The shared-library rows of [`deliveries`]: each backend's libraries linked in-process and
/// by the C compiler.
pub fn shared_libraries() -> Vec<(Backend, Linker)> {
    deliveries()
        .into_iter()
        .filter_map(|d| match d {
            Delivery::Shared(backend, linker) => Some((backend, linker)),
            _ => None,
        })
        .collect()
}

/// The JIT rows of [`deliveries`]: the baseline tier, then each backend compiling directly.
pub fn jit_tiers() -> Vec<(safecall::jit::FirstTier, Backend)> {
    use safecall::jit::FirstTier;
    deliveries()
        .into_iter()
        .filter_map(|d| match d {
            Delivery::JitBaseline => Some((FirstTier::Baseline, Backend::Cranelift)),
            Delivery::Jit(backend) => Some((FirstTier::Backend, backend)),
            _ => None,
        })
        .collect()
}

/// A backend's name in messages and directories: `cranelift`, `llvm`.
pub fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Cranelift => "cranelift",
        Backend::Llvm => "llvm",
    }
}

/// A shared-library row's name in messages and directories: `cranelift`, `cranelift+cc`, ...
pub fn row_name(backend: Backend, linker: Linker) -> String {
    let name = backend_name(backend);
    match linker {
        Linker::InProcess => name.to_owned(),
        Linker::Cc => format!("{name}+cc"),
    }
}
