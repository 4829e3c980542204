//! What a JIT compile is asked for: [`JitOptions`], the first tier and the tier-up.

use std::collections::HashMap;

use super::symbols::{SymbolAddress, SymbolBinding};
use crate::backend::Backend;
use crate::backend::cranelift::CraneliftOptions;
use crate::backend::llvm::LlvmOptions;

/// Options of [`compile`](super::compile).
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// Where TVM-FFI C API calls go.
    pub binding: SymbolBinding,
    /// Addresses of extern C functions (and direct safe-call symbols) by name.
    pub symbols: HashMap<String, SymbolAddress>,
    /// Also resolve names missing from `symbols` in the process (`dlsym`).
    pub process_symbols: bool,
    /// The code generator behind the first tier (Cranelift by default).
    pub backend: Backend,
    /// Which compiler produces the code: on x86-64 the baseline compiler by default, standing in
    /// for Cranelift (set [`FirstTier::Backend`] for Cranelift's code).
    pub first_tier: FirstTier,
    /// Whether baseline-compiled modules are compiled again by Cranelift (with
    /// [`JitOptions::cranelift`]): [`TierUp::Never`] by default (see docs/jit.md for the
    /// measurements behind it).
    pub tier_up: TierUp,
    /// Cranelift settings; [`CraneliftOptions::fast_compile`] by default (set
    /// `CraneliftOptions::default()` for the optimized code AOT objects get).
    pub cranelift: CraneliftOptions,
    /// LLVM settings (with the `llvm` feature).
    pub llvm: LlvmOptions,
    /// Threads that compile a module's functions with Cranelift: `0` (the default) uses
    /// [`std::thread::available_parallelism`] for modules large enough to gain from it
    /// ([`PARALLEL_MIN_INSTRUCTIONS`]), `1` compiles on the calling thread only.
    pub compile_threads: usize,
    /// Whether modules that launch kernels take the CUDA driver's and the HIP runtime's tables
    /// of entry points from helpers compiled once per process (the default), so that a runtime
    /// is found once per process and each module compiles a call instead of the search; or,
    /// with `false`, find the runtime with an init function of their own, as AOT objects and
    /// libraries do (each module then resolves the runtime on its first launch).
    pub share_gpu_runtimes: bool,
}

/// Lowered instructions a module needs before [`JitOptions::compile_threads`]` = 0` starts
/// threads for it. Starting and joining a thread took about 60 µs on the 2-core machine this
/// was measured on, where Cranelift compiles a typical launcher (about 380 lowered
/// instructions) in about half a millisecond.
pub const PARALLEL_MIN_INSTRUCTIONS: usize = 500;

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            binding: SymbolBinding::default(),
            symbols: HashMap::new(),
            process_symbols: true,
            backend: Backend::default(),
            first_tier: FirstTier::default(),
            tier_up: TierUp::default(),
            // The JIT is for callables microseconds after the IR is built: compile fast by
            // default (`CraneliftOptions::default()` gives AOT-quality code instead).
            cranelift: CraneliftOptions::fast_compile(),
            llvm: LlvmOptions::default(),
            compile_threads: 0,
            share_gpu_runtimes: true,
        }
    }
}

/// Which compiler produces a JIT module's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FirstTier {
    /// The single-pass baseline compiler (`src/backend/baseline`) when
    /// [`JitOptions::backend`](JitOptions::backend) is Cranelift (the default on
    /// x86-64): code in tens of microseconds, somewhat slower to run than Cranelift's. An
    /// explicit `Backend::Llvm` still compiles with LLVM, and hosts other than x86-64 use
    /// Cranelift.
    Baseline,
    /// The backend of [`JitOptions::backend`](JitOptions::backend), directly.
    Backend,
}

impl Default for FirstTier {
    fn default() -> Self {
        if cfg!(target_arch = "x86_64") {
            FirstTier::Baseline
        } else {
            FirstTier::Backend
        }
    }
}

/// When a module the baseline compiler compiled is compiled again, by Cranelift.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TierUp {
    /// Never (the default): the baseline code runs for the life of the module. Measured in
    /// docs/jit.md: a launcher's calls cost some 30 ns more than with Cranelift's code, so a
    /// recompile pays only after tens of thousands of calls, and then by little; host
    /// functions with loops gain more (see [`TierUp::Background`]).
    #[default]
    Never,
    /// At once, on a background thread: the module is compiled again with Cranelift
    /// ([`JitOptions::cranelift`]) and its host functions switch to that code when it is ready
    /// ([`JitModule::tiered_up`](super::JitModule::tiered_up)). Functions already handed out
    /// stay valid: their entry jumps through a pointer that the switch rewrites, which costs
    /// two instructions per call. A failed recompile leaves the baseline code in place.
    /// Tier-ups run one at a time, on one thread the process starts for them.
    Background,
    /// As [`TierUp::Background`], once [`JitCode::request_tier_up`](super::JitCode::request_tier_up)
    /// asks for it (say, when a host function has been called often enough to pay for the
    /// compile); never otherwise.
    OnRequest,
}

/// Whether `options` select the baseline compiler.
pub(super) fn uses_baseline(options: &JitOptions) -> bool {
    cfg!(target_arch = "x86_64")
        && options.first_tier == FirstTier::Baseline
        && options.backend == Backend::Cranelift
}
