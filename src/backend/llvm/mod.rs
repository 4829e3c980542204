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
mod error;
#[cfg(feature = "llvm")]
mod jit;
mod settings;
#[cfg(all(test, feature = "llvm"))]
mod tail_call_tests;
#[cfg(feature = "llvm")]
mod translate;

pub use error::LlvmError;
pub use settings::LlvmOptions;

#[cfg(feature = "llvm")]
use crate::backend::generator::{BackendError, CodeGenerator, JitOutput, JitRequest};
#[cfg(feature = "llvm")]
use crate::lir;

#[cfg(feature = "llvm")]
impl CodeGenerator for LlvmOptions {
    fn object(&self, module: &lir::Module) -> Result<Vec<u8>, BackendError> {
        codegen::object(module, self).map_err(BackendError::failed)
    }

    fn backend_ir(&self, module: &lir::Module) -> Result<String, BackendError> {
        codegen::ir_text(module, self).map_err(BackendError::failed)
    }

    fn asm(&self, module: &lir::Module) -> Result<String, BackendError> {
        codegen::asm_text(module, self).map_err(BackendError::failed)
    }

    fn jit(
        &self,
        module: &lir::Module,
        request: JitRequest<'_>,
    ) -> Result<JitOutput, BackendError> {
        jit::compile_request(module, self, request)
    }
}

/// Whether this build of safecall has the LLVM backend (the cargo feature `llvm`).
pub const AVAILABLE: bool = cfg!(feature = "llvm");

/// The LLVM major version the backend is built against.
pub const LLVM_MAJOR: u32 = 19;
