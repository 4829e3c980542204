//! The Cranelift backend: lowered modules to machine code through any `cranelift_module::Module`
//! (`ObjectModule` for objects in `object.rs`, `JITModule` for in-process code in `jit.rs`).
//! One job per file: the settings, the ISA, the error, declaring and defining a module's
//! symbols (`define`), the translation to CLIF, and the three outputs (object, JIT, text).

mod annotate;
mod cold;
mod conditions;
mod define;
mod error;
mod isa;
mod jit;
pub(crate) mod object;
mod settings;
mod text;
pub(crate) mod translate;
mod unwind;

use crate::backend::generator::{BackendError, CodeGenerator, JitOutput, JitRequest};
use crate::lir;
pub use error::CraneliftError;
pub use settings::{ColdFunctions, CraneliftOptions, OptLevel, Regalloc, UnknownSetting};
use text::{clif_text_for, disasm_text};

impl CodeGenerator for CraneliftOptions {
    fn object(&self, module: &lir::Module) -> Result<Vec<u8>, BackendError> {
        object::object(module, self).map_err(BackendError::failed)
    }

    fn backend_ir(&self, module: &lir::Module) -> Result<String, BackendError> {
        clif_text_for(module, self).map_err(BackendError::failed)
    }

    fn asm(&self, module: &lir::Module) -> Result<String, BackendError> {
        disasm_text(module, self).map_err(BackendError::failed)
    }

    fn jit(
        &self,
        module: &lir::Module,
        request: JitRequest<'_>,
    ) -> Result<JitOutput, BackendError> {
        jit::compile(module, self, request)
    }
}

#[cfg(test)]
mod tests {
    use cranelift_codegen::settings;

    use super::isa::{IsaPurpose, host_isa};
    use super::*;
    use std::sync::Arc;

    #[test]
    fn settings_parse_from_and_print_to_their_cranelift_names() {
        for &name in OptLevel::NAMES {
            assert_eq!(name.parse::<OptLevel>().unwrap().name(), name);
        }
        for &name in Regalloc::NAMES {
            assert_eq!(name.parse::<Regalloc>().unwrap().name(), name);
        }
        assert_eq!(
            "fast".parse::<OptLevel>().unwrap_err().to_string(),
            "`fast` is not a Cranelift optimization level: use `none`, `speed`, `speed_and_size`"
        );
        // Every name is one Cranelift accepts.
        for o in OptLevel::NAMES {
            for r in Regalloc::NAMES {
                let options = CraneliftOptions {
                    opt_level: o.parse().unwrap(),
                    regalloc: r.parse().unwrap(),
                    ..CraneliftOptions::default()
                };
                host_isa(IsaPurpose::Jit, &options).expect("Cranelift accepts the setting");
            }
        }
    }

    #[test]
    fn host_isas_are_built_once_per_purpose_and_settings() {
        let fast = CraneliftOptions::fast_compile();
        let a = host_isa(IsaPurpose::Jit, &fast).unwrap();
        let b = host_isa(IsaPurpose::Jit, &fast).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same settings share one ISA");
        let aot = host_isa(IsaPurpose::Aot, &fast).unwrap();
        assert!(!Arc::ptr_eq(&a, &aot));
        assert!(aot.flags().is_pic() && !a.flags().is_pic());
        let speed = CraneliftOptions {
            opt_level: OptLevel::Speed,
            ..CraneliftOptions::default()
        };
        let optimized = host_isa(IsaPurpose::Jit, &speed).unwrap();
        assert_eq!(optimized.flags().opt_level(), settings::OptLevel::Speed);
        assert_eq!(a.flags().opt_level(), settings::OptLevel::None);
    }
}
