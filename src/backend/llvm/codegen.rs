//! Target machines, the optimization pipeline, object emission and IR dumps.

use std::sync::OnceLock;

use cranelift_object::object::{self, Object, ObjectSymbol};
use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};

use super::error::LlvmError;
use super::settings::LlvmOptions;
use super::{annotate, translate};
use crate::lir;

/// Registers the native target with LLVM, and the other supported ones (once per process).
fn initialize() -> Result<(), LlvmError> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| {
        let config = InitializationConfig::default();
        Target::initialize_native(&config)?;
        Target::initialize_x86(&config);
        Target::initialize_aarch64(&config);
        Ok(())
    })
    .clone()
    .map_err(|e| LlvmError(format!("cannot initialize the native target: {e}")))
}

/// The host CPU's LLVM name and features (what `cpu: "native"` compiles for).
fn host_cpu() -> (String, String) {
    (
        TargetMachine::get_host_cpu_name().to_string(),
        TargetMachine::get_host_cpu_features().to_string(),
    )
}

fn codegen_level(opt_level: u8) -> OptimizationLevel {
    match opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    }
}

/// A target machine for `options.target` (the host triple by default): position-independent
/// code (which serves objects and the JIT alike), the default (small) code model.
pub(crate) fn target_machine(options: &LlvmOptions) -> Result<TargetMachine, LlvmError> {
    if options.opt_level > 3 {
        return Err(LlvmError(format!(
            "optimization level {} is not one of 0, 1, 2, 3",
            options.opt_level
        )));
    }
    initialize()?;
    let foreign = options.target.filter(|t| !t.is_host());
    let triple = match foreign {
        Some(t) => TargetTriple::create(t.triple()),
        None => TargetMachine::get_default_triple(),
    };
    let target = Target::from_triple(&triple).map_err(|e| LlvmError(e.to_string()))?;
    let (cpu, mut features) = if options.cpu == "native" && foreign.is_some() {
        ("generic".to_owned(), String::new())
    } else if options.cpu == "native" {
        host_cpu()
    } else {
        (options.cpu.clone(), String::new())
    };
    if !options.features.is_empty() {
        if !features.is_empty() {
            features.push(',');
        }
        features.push_str(&options.features);
    }
    target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            codegen_level(options.opt_level),
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            LlvmError(format!(
                "cannot create a target machine for {} (cpu `{cpu}`)",
                triple.as_str().to_string_lossy()
            ))
        })
}

/// Runs the optimization pipeline of `opt_level` (`mem2reg` alone at level 0).
pub(crate) fn optimize(
    module: &Module<'_>,
    machine: &TargetMachine,
    opt_level: u8,
) -> Result<(), LlvmError> {
    let pipeline = match opt_level {
        0 => "function(mem2reg)".to_owned(),
        n => format!("default<O{n}>"),
    };
    module
        .run_passes(&pipeline, machine, PassBuilderOptions::create())
        .map_err(|e| LlvmError(format!("pass pipeline `{pipeline}`: {e}")))
}

/// Compiles a lowered module to the bytes of a relocatable, position-independent object file.
///
/// The object is checked to reference no symbol besides the module's imports (LLVM is kept
/// from introducing C library calls; a reference it introduced anyway is an error here).
pub(crate) fn object(module: &lir::Module, options: &LlvmOptions) -> Result<Vec<u8>, LlvmError> {
    let machine = target_machine(options)?;
    let ctx = Context::create();
    let m = translate::translate_module(&ctx, module, &machine, false, options.frame_pointers)?;
    optimize(&m, &machine, options.opt_level)?;
    let buffer = machine
        .write_to_memory_buffer(&m, FileType::Object)
        .map_err(|e| LlvmError(format!("emitting the object: {e}")))?;
    let bytes = buffer.as_slice().to_vec();
    check_undefined_symbols(&bytes, module)?;
    Ok(bytes)
}

/// Fails unless every undefined symbol of `object_bytes` is an import of `module`.
fn check_undefined_symbols(object_bytes: &[u8], module: &lir::Module) -> Result<(), LlvmError> {
    let file = object::File::parse(object_bytes)
        .map_err(|e| LlvmError(format!("reading back the emitted object: {e}")))?;
    let mut foreign = Vec::new();
    for sym in file.symbols() {
        if !sym.is_undefined() {
            continue;
        }
        let name = sym.name().unwrap_or_default();
        if name.is_empty() || module.imports.iter().any(|i| i.name == name) {
            continue;
        }
        foreign.push(name.to_owned());
    }
    if foreign.is_empty() {
        Ok(())
    } else {
        Err(LlvmError(format!(
            "module `{}`: the generated code references symbols that are not imports of the \
             module: {}",
            module.name,
            foreign.join(", ")
        )))
    }
}

/// The LLVM IR of a lowered module as built (before optimization), annotated with the
/// host-IR item each part implements (see the [module docs](super)).
pub(crate) fn ir_text(module: &lir::Module, options: &LlvmOptions) -> Result<String, LlvmError> {
    let machine = target_machine(options)?;
    let ctx = Context::create();
    let m = translate::translate_module(&ctx, module, &machine, true, options.frame_pointers)?;
    Ok(annotate::render(&m.print_to_string().to_string()))
}

/// The assembly of a lowered module after the optimization pipeline of `options.opt_level`, as
/// LLVM's code generator writes it for the object file (AT&T syntax on x86-64).
pub(crate) fn asm_text(module: &lir::Module, options: &LlvmOptions) -> Result<String, LlvmError> {
    let machine = target_machine(options)?;
    let ctx = Context::create();
    let m = translate::translate_module(&ctx, module, &machine, false, options.frame_pointers)?;
    optimize(&m, &machine, options.opt_level)?;
    let buffer = machine
        .write_to_memory_buffer(&m, FileType::Assembly)
        .map_err(|e| LlvmError(format!("emitting assembly: {e}")))?;
    Ok(String::from_utf8_lossy(buffer.as_slice()).into_owned())
}
