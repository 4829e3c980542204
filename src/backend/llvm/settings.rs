//! The LLVM backend's code generation settings.

/// Code generation settings of the LLVM backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlvmOptions {
    /// Optimization level 0..=3 (`default<ON>` pass pipeline and code generator level; level 0
    /// still promotes variables to registers with `mem2reg`). Default 2.
    pub opt_level: u8,
    /// Target CPU: `native` (the host CPU and all its features, as Cranelift uses), or an LLVM
    /// CPU name such as `generic`, `x86-64-v3`, `skylake` (for objects that must run on other
    /// machines). Default `native`. LLVM itself treats an unknown name as `generic` after a
    /// warning on stderr.
    pub cpu: String,
    /// Extra target features in LLVM syntax (`+avx2,-fma`), appended to the CPU's.
    pub features: String,
    /// The target: `None` (the default) is the host. For another [`Target`](crate::target::Target), `cpu: "native"`
    /// means LLVM's `generic` CPU of its architecture (AOT only: the JIT refuses a foreign
    /// target).
    pub target: Option<crate::target::Target>,
    /// Keep a frame pointer in every function (`true`, the default, like Cranelift's code:
    /// profilers and debuggers that walk frame pointers see every frame). `false` lets LLVM
    /// use the frame-pointer register as any other, as C compilers do at `-O2`: a function
    /// that needs no frame then sets up none (add_one's checks: 67 instructions per call
    /// instead of 72). Unwinders still have `.eh_frame` either way.
    pub frame_pointers: bool,
}

impl Default for LlvmOptions {
    fn default() -> Self {
        LlvmOptions {
            opt_level: 2,
            cpu: "native".to_owned(),
            features: String::new(),
            target: None,
            frame_pointers: true,
        }
    }
}

impl LlvmOptions {
    /// Options with this optimization level and the defaults otherwise.
    pub fn with_opt_level(opt_level: u8) -> Self {
        LlvmOptions {
            opt_level,
            ..LlvmOptions::default()
        }
    }
}
