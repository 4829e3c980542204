//! The AOT driver: verify, lower, generate code, and deliver an object file or a shared
//! library. The JIT driver ([`crate::jit`]) stands beside it over the same stages.

use std::path::Path;

use crate::aot::LinkOptions;
use crate::backend::cranelift::{CraneliftOptions, OptLevel};
use crate::backend::llvm::LlvmOptions;
use crate::backend::{Backend, CodeGenerator, code_generator};
use crate::error::Error;
use crate::input::ModuleInput;
use crate::lower::{self, LowerOptions};
use crate::target::Target;
use crate::{ir, lir};

/// Options of AOT compilation.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The code generator.
    pub backend: Backend,
    /// Lowering options (system-library prefix, `__tvm_ffi_main` alias).
    pub lower: LowerOptions,
    /// Cranelift settings.
    pub cranelift: CraneliftOptions,
    /// LLVM settings (optimization level, target CPU).
    pub llvm: LlvmOptions,
}

impl Options {
    /// Options with `target` set for both backends (see [`Options::set_target`]).
    pub fn for_target(target: Target) -> Options {
        let mut options = Options::default();
        options.set_target(target);
        options
    }

    /// Generates code for `target` with either backend: its instruction set, PIC relocations,
    /// `.eh_frame` registers and data layout; [`build_shared_library`] links with its
    /// [cross compiler](Target::default_cross_cc) unless the link options name one.
    pub fn set_target(&mut self, target: Target) {
        self.cranelift.target = Some(target);
        self.llvm.target = Some(target);
    }

    /// The target of the chosen backend (`None`: the host).
    pub fn target(&self) -> Option<Target> {
        match self.backend {
            Backend::Cranelift => self.cranelift.target,
            Backend::Llvm => self.llvm.target,
        }
    }
}

/// Intermediate forms [`emit`] can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The host IR, printed.
    Ir,
    /// The lowered form, annotated with the IR it came from.
    Lowered,
    /// The backend's IR (CLIF for Cranelift, LLVM IR for LLVM) as built, before optimization,
    /// annotated with the host-IR item each part came from.
    BackendIr,
    /// The machine code as assembly text: Cranelift's disassembly of its final VCode, or the
    /// assembly LLVM's code generator writes (after optimization).
    Asm,
}

/// Verifies and lowers `module`; `annotate` keeps the source descriptions that the dumps
/// (`emit`) show, which an object file does not carry (the code is the same either way).
fn lower_verified(
    module: &(impl ModuleInput + ?Sized),
    options: &Options,
    annotate: bool,
) -> Result<lir::Module, Error> {
    // Optimized code branches once per argument check, each comparison its own branch
    // (Cranelift splits combined conditions: `backend::cranelift::conditions`), and keeps
    // the explain call's arguments in a stack slot: fewer registers held through the checks,
    // and less work for Cranelift's register allocator than the folded conditions.
    // Cranelift's `--opt none` keeps the folded form, the fastest to compile.
    let optimized_cranelift =
        options.backend == Backend::Cranelift && options.cranelift.opt_level != OptLevel::None;
    let settings = lower::LowerSettings {
        branch_per_check: options.backend == Backend::Llvm || optimized_cranelift,
        explain_args_on_stack: optimized_cranelift,
        optimizing_backend: options.backend == Backend::Llvm || optimized_cranelift,
        llvm_check_forms: options.backend == Backend::Llvm,
        skip_annotations: !annotate,
        ..lower::LowerSettings::from(&options.lower)
    };
    Ok(lower::lower_with(&*module.verified()?, &settings)?)
}

impl Options {
    /// The chosen backend's code generator with its settings.
    fn code_generator(&self) -> Result<&dyn CodeGenerator, Error> {
        Ok(code_generator(self.backend, &self.cranelift, &self.llvm)?)
    }
}

/// Compiles a module to the bytes of a relocatable object file.
pub fn compile_object(
    module: &(impl ModuleInput + ?Sized),
    options: &Options,
) -> Result<Vec<u8>, Error> {
    let generator = options.code_generator()?;
    Ok(generator.object(&lower_verified(module, options, false)?)?)
}

/// Compiles a module and links it into the shared library `output`, in this process unless
/// `link` chooses the C compiler (which links an object file written next to the output as
/// `<output>.o`, removed afterwards).
pub fn build_shared_library(
    module: &(impl ModuleInput + ?Sized),
    output: &Path,
    options: &Options,
    link: &LinkOptions,
) -> Result<(), Error> {
    let object = compile_object(module, options)?;
    let mut link = link.clone();
    link.target = link.target.or(options.target());
    Ok(crate::aot::link_object_bytes(&object, output, &link)?)
}

/// An intermediate form of a module, as text.
pub fn emit(
    module: &(impl ModuleInput + ?Sized),
    what: Emit,
    options: &Options,
) -> Result<String, Error> {
    match what {
        Emit::Ir => Ok(ir::print::print(module.module())),
        Emit::Lowered => Ok(lower_verified(module, options, true)?.to_string()),
        Emit::BackendIr => {
            let generator = options.code_generator()?;
            Ok(generator.backend_ir(&lower_verified(module, options, true)?)?)
        }
        Emit::Asm => {
            let generator = options.code_generator()?;
            Ok(generator.asm(&lower_verified(module, options, true)?)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Object files are built from an unannotated lowering: the annotations the dumps show
    /// must not change a byte of the code, on any backend.
    #[test]
    fn annotations_do_not_change_the_object_code() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir");
        let mut configurations = vec![
            (Backend::Cranelift, OptLevel::None),
            (Backend::Cranelift, OptLevel::Speed),
        ];
        if cfg!(feature = "llvm") {
            configurations.push((Backend::Llvm, OptLevel::Speed));
        }
        let mut compared = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "scir") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let module = ir::parse::parse_in_dir(&text, Some(Path::new(dir)))
                .unwrap()
                .0;
            for &(backend, opt_level) in &configurations {
                let mut options = Options {
                    backend,
                    ..Options::default()
                };
                options.cranelift.opt_level = opt_level;
                let generator = options.code_generator().unwrap();
                let plain = generator
                    .object(&lower_verified(&module, &options, false).unwrap())
                    .unwrap();
                let annotated = generator
                    .object(&lower_verified(&module, &options, true).unwrap())
                    .unwrap();
                assert!(plain == annotated, "{}: {backend:?}", path.display());
                compared += 1;
            }
        }
        assert!(compared >= 26, "{compared} builds compared");
    }
}
