//! In-process code through LLVM's ORC `LLJIT`: the object [`super::object`] emits is linked
//! into executable memory by JITLink, its imports bound to addresses the caller supplies.
//!
//! Each [`LlvmJitCode`] owns one `LLJIT` instance; dropping it frees all of its code and data.
//! The object was checked to reference nothing but the module's imports, and every import is
//! defined as an absolute symbol before linking, so the JIT never searches the process on its
//! own: symbol resolution is entirely the caller's (see [`crate::jit`]).

use std::ffi::{CStr, CString, c_char};

use inkwell::llvm_sys::core::LLVMCreateMemoryBufferWithMemoryRangeCopy;
use inkwell::llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use inkwell::llvm_sys::orc2::lljit::{
    LLVMOrcCreateLLJIT, LLVMOrcCreateLLJITBuilder, LLVMOrcDisposeLLJIT, LLVMOrcLLJITAddObjectFile,
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder, LLVMOrcLLJITGetMainJITDylib, LLVMOrcLLJITLookup,
    LLVMOrcLLJITMangleAndIntern, LLVMOrcLLJITRef,
};
use inkwell::llvm_sys::orc2::{
    LLVMJITEvaluatedSymbol, LLVMJITSymbolFlags, LLVMJITSymbolGenericFlags, LLVMOrcAbsoluteSymbols,
    LLVMOrcCSymbolMapPair, LLVMOrcDisposeMaterializationUnit, LLVMOrcJITDylibDefine,
    LLVMOrcJITTargetMachineBuilderDetectHost, LLVMOrcJITTargetMachineBuilderRef,
};

use super::error::LlvmError;
use super::settings::LlvmOptions;
use crate::backend::generator::{BackendError, JitOutput, JitRequest, LoadedCode, function_index};
use crate::lir;

/// Executable memory of one module compiled by LLVM; freed on drop.
pub(crate) struct LlvmJitCode {
    jit: LLVMOrcLLJITRef,
}

// SAFETY: an `LLJIT` may be used from any thread (ORC serializes its sessions internally);
// after construction this type only looks symbols up and, once, disposes of the instance.
unsafe impl Send for LlvmJitCode {}
// SAFETY: as above; lookups through `&self` are thread-safe in ORC.
unsafe impl Sync for LlvmJitCode {}

impl std::fmt::Debug for LlvmJitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlvmJitCode").finish_non_exhaustive()
    }
}

impl Drop for LlvmJitCode {
    fn drop(&mut self) {
        // SAFETY: `jit` is the live instance this value owns; nothing uses it afterwards. A
        // failure while tearing down leaves nothing to recover.
        let error = unsafe { LLVMOrcDisposeLLJIT(self.jit) };
        drop(take_error(error));
    }
}

/// The message of an `LLVMErrorRef` (consuming it), or `None` for success.
fn take_error(error: LLVMErrorRef) -> Option<String> {
    if error.is_null() {
        return None;
    }
    // SAFETY: a non-null error is consumed exactly once by `LLVMGetErrorMessage`, whose result
    // is a NUL-terminated string freed with `LLVMDisposeErrorMessage`.
    unsafe {
        let message = LLVMGetErrorMessage(error);
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(message);
        Some(text)
    }
}

fn check(error: LLVMErrorRef, what: &str) -> Result<(), LlvmError> {
    match take_error(error) {
        None => Ok(()),
        Some(message) => Err(LlvmError(format!("{what}: {message}"))),
    }
}

fn c_name(name: &str) -> Result<CString, LlvmError> {
    CString::new(name).map_err(|_| LlvmError(format!("symbol `{name}` contains a NUL byte")))
}

impl LoadedCode for LlvmJitCode {}

/// Compiles `module` into executable memory, every import resolved up front through
/// `request.lookup`, and looks up the requested entries.
pub(crate) fn compile_request(
    module: &lir::Module,
    options: &LlvmOptions,
    request: JitRequest<'_>,
) -> Result<JitOutput, BackendError> {
    if !request.data_at.is_empty() {
        // Only a tier-up (always Cranelift) reuses an earlier compile's data.
        return Err(BackendError::failed(
            "the LLVM JIT places its own data objects; it cannot use an earlier compile's",
        ));
    }
    let mut addresses = Vec::with_capacity(module.imports.len());
    let mut missing = Vec::new();
    for import in &module.imports {
        match (request.lookup)(&import.name) {
            Some(a) => addresses.push(a),
            None => missing.push(import.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(BackendError::UnresolvedSymbols(missing));
    }
    // Entries are found by symbol lookup, so they must be exported from the JIT's object even
    // where the module registers them as a system library instead.
    let mut module = module.clone();
    for e in request.entries {
        let i = function_index(&module, e)?;
        module.functions[i].linkage = lir::Linkage::Export;
    }
    let code = compile(&module, options, &addresses).map_err(BackendError::failed)?;
    let entries = request
        .entries
        .iter()
        .map(|e| code.lookup(e))
        .collect::<Result<_, _>>()
        .map_err(BackendError::failed)?;
    Ok(JitOutput {
        code: Box::new(code),
        entries,
    })
}

/// Compiles `module` and links it in memory, binding each import to the address `imports`
/// gives for it (one per import of the module, in order).
fn compile(
    module: &lir::Module,
    options: &LlvmOptions,
    imports: &[*const u8],
) -> Result<LlvmJitCode, LlvmError> {
    assert_eq!(
        imports.len(),
        module.imports.len(),
        "one address per import"
    );
    if let Some(target) = options.target.filter(|t| !t.is_host()) {
        return Err(LlvmError(format!(
            "the JIT generates code for the host only, not for {target}"
        )));
    }
    let object = super::codegen::object(module, options)?;
    let code = LlvmJitCode::new()?;
    code.define_absolute(
        &module
            .imports
            .iter()
            .map(|i| i.name.as_str())
            .zip(imports.iter().copied())
            .collect::<Vec<_>>(),
    )?;
    code.add_object(&object, &module.name)?;
    Ok(code)
}

impl LlvmJitCode {
    fn new() -> Result<Self, LlvmError> {
        let mut jtmb: LLVMOrcJITTargetMachineBuilderRef = std::ptr::null_mut();
        // SAFETY: out-parameter of the right type; on success we own the builder.
        let status = unsafe { LLVMOrcJITTargetMachineBuilderDetectHost(&mut jtmb) };
        check(status, "detecting the host for the JIT")?;
        let mut jit: LLVMOrcLLJITRef = std::ptr::null_mut();
        // SAFETY: the LLJIT builder takes ownership of `jtmb`, and `LLVMOrcCreateLLJIT` of the
        // builder, whatever the outcome; on success we own `jit`.
        let error = unsafe {
            let builder = LLVMOrcCreateLLJITBuilder();
            LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
            LLVMOrcCreateLLJIT(&mut jit, builder)
        };
        check(error, "creating the JIT")?;
        Ok(LlvmJitCode { jit })
    }

    /// Defines `symbols` as absolute addresses in the main JITDylib.
    fn define_absolute(&self, symbols: &[(&str, *const u8)]) -> Result<(), LlvmError> {
        if symbols.is_empty() {
            return Ok(());
        }
        let flags = LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
            | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8;
        let mut pairs = Vec::with_capacity(symbols.len());
        for &(name, address) in symbols {
            let name = c_name(name)?;
            pairs.push(LLVMOrcCSymbolMapPair {
                // SAFETY: `jit` is live; the returned entry is retained once, for the pair.
                Name: unsafe { LLVMOrcLLJITMangleAndIntern(self.jit, name.as_ptr()) },
                Sym: LLVMJITEvaluatedSymbol {
                    Address: address as u64,
                    Flags: LLVMJITSymbolFlags {
                        GenericFlags: flags,
                        TargetFlags: 0,
                    },
                },
            });
        }
        // SAFETY: the materialization unit takes over the names of `pairs` (not the array);
        // on success the JITDylib owns the unit, on failure we dispose of it.
        unsafe {
            let unit = LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len());
            let error = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(self.jit), unit);
            if !error.is_null() {
                LLVMOrcDisposeMaterializationUnit(unit);
            }
            check(error, "defining the imports")
        }
    }

    fn add_object(&self, object: &[u8], name: &str) -> Result<(), LlvmError> {
        let name = c_name(name)?;
        // SAFETY: LLVM copies `object` into a buffer whose ownership passes to the JIT.
        let error = unsafe {
            let buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                object.as_ptr().cast::<c_char>(),
                object.len(),
                name.as_ptr(),
            );
            LLVMOrcLLJITAddObjectFile(self.jit, LLVMOrcLLJITGetMainJITDylib(self.jit), buffer)
        };
        check(error, "adding the object to the JIT")
    }

    /// The address of the exported symbol `name` (linking the module on first use).
    fn lookup(&self, name: &str) -> Result<*const u8, LlvmError> {
        let c = c_name(name)?;
        let mut address = 0u64;
        // SAFETY: `jit` is live; `address` is a valid out-parameter; LLVM copies the name.
        let error = unsafe { LLVMOrcLLJITLookup(self.jit, &mut address, c.as_ptr()) };
        check(error, &format!("looking up `{name}`"))?;
        Ok(address as usize as *const u8)
    }
}
