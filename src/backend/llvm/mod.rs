//! The LLVM backend (cargo feature `llvm`): lowered modules to LLVM IR through inkwell, then
//! to relocatable objects (`object`) or to in-process code (`jit`).
//!
//! The translation is as mechanical as the Cranelift one ([`crate::backend::cranelift`]): one
//! LLVM function per lowered function, one LLVM block per reachable lowered block (cold ones
//! laid out last and reached through `!prof` branch weights of 1 : 2000), single-assignment
//! variables as SSA values, `mutable` variables as entry-block allocas that `mem2reg` promotes.
//! Cold functions (the error helpers) are `cold` and also `optnone`: they run only to raise an
//! error, and optimizing them would take most of the compile time at `-O2`. No ABI rule lives
//! here. Every function is `nounwind`, has an async unwind table and a
//! frame pointer, and carries `"no-builtins"` so that LLVM never introduces a call to a C
//! library function (`memset`, `memcpy`, ...): generated code references only the imports of
//! the lowered module, which `object` checks on every object it emits.
//!
//! `ir_text` prints the LLVM IR as built (before optimization), each part preceded by the
//! host-IR item it implements, taken from `!safecall.source` metadata that the translator
//! attaches to the first instruction of each item:
//!
//! ```text
//! define i32 @__tvm_ffi_add_one(ptr %v0, ptr %v1, i32 %v2, ptr %v3) #0 {
//! block0:
//!   ; check: add_one takes 2 argument(s)
//!   %v5.c = icmp ne i32 %v2, 2
//!   %v5 = zext i1 %v5.c to i8
//!   br i1 %v5.c, label %block1, label %block2, !prof !0
//! ...
//! ```
//!
//! Names follow the lowered form: `%vN` is variable `vN` (`%vN.K` the K-th read of a mutable
//! one, `%vN.addr` its stack home), `blockN` is block `N`.

#[cfg(feature = "llvm")]
mod annotate;
#[cfg(feature = "llvm")]
mod codegen;
#[cfg(feature = "llvm")]
mod jit;
#[cfg(feature = "llvm")]
mod translate;

#[cfg(feature = "llvm")]
impl crate::backend::generator::CodeGenerator for LlvmOptions {
    fn object(&self, module: &crate::lir::Module) -> Result<Vec<u8>, crate::Error> {
        codegen::object(module, self).map_err(crate::Error::backend)
    }

    fn backend_ir(&self, module: &crate::lir::Module) -> Result<String, crate::Error> {
        codegen::ir_text(module, self).map_err(crate::Error::backend)
    }

    fn asm(&self, module: &crate::lir::Module) -> Result<String, crate::Error> {
        codegen::asm_text(module, self).map_err(crate::Error::backend)
    }

    fn jit(
        &self,
        module: &crate::lir::Module,
        request: crate::backend::generator::JitRequest<'_>,
    ) -> Result<crate::backend::generator::JitOutput, crate::Error> {
        jit::compile_request(module, self, request)
    }
}

/// Whether this build of safecall has the LLVM backend (the cargo feature `llvm`).
pub const AVAILABLE: bool = cfg!(feature = "llvm");

/// The LLVM major version the backend is built against.
pub const LLVM_MAJOR: u32 = 19;

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
}

impl Default for LlvmOptions {
    fn default() -> Self {
        LlvmOptions {
            opt_level: 2,
            cpu: "native".to_owned(),
            features: String::new(),
            target: None,
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

backend_error!(
    /// A failure of the LLVM backend (an unknown CPU, an invalid option, a translation that LLVM's
    /// verifier rejects, a reference to a symbol the module does not import).
    LlvmError,
    "llvm"
);
