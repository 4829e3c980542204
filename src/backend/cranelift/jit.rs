//! In-process code from Cranelift (`cranelift-jit`), in the JIT's pooled executable memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cranelift_jit::{JITBuilder, JITModule};

use super::define::{declare, define_data, define_functions, define_functions_parallel};
use super::isa::{IsaPurpose, host_isa};
use super::settings::CraneliftOptions;
use crate::backend::generator::{BackendError, JitOutput, JitRequest, LoadedCode, function_index};
use crate::lir;

/// A finalized `JITModule`; dropping it frees its memory.
struct CraneliftCode(Option<JITModule>);

impl LoadedCode for CraneliftCode {}

impl Drop for CraneliftCode {
    fn drop(&mut self) {
        if let Some(module) = self.0.take() {
            // SAFETY: the owner of a `LoadedCode` drops it only when none of its code can run
            // any more (see `LoadedCode`).
            unsafe { module.free_memory() };
        }
    }
}

/// Compiles `module` into executable memory, every import resolved through `request.lookup`.
pub(crate) fn compile(
    module: &lir::Module,
    options: &CraneliftOptions,
    request: JitRequest<'_>,
) -> Result<JitOutput, BackendError> {
    let isa = host_isa(IsaPurpose::Jit, options).map_err(BackendError::failed)?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    builder.memory_provider(Box::new(crate::backend::memory::PooledMemory::default()));
    if !request.data_at.is_empty() && request.data_at.len() != module.data.len() {
        return Err(BackendError::failed(format!(
            "{} data addresses given for the {} data objects of module `{}`",
            request.data_at.len(),
            module.data.len(),
            module.name
        )));
    }
    // The data objects an earlier compile placed, found by name as imports.
    let placed: HashMap<String, usize> = module
        .data
        .iter()
        .zip(request.data_at)
        .map(|(d, &at)| (d.name.clone(), at as usize))
        .collect();
    let missing = Arc::new(Mutex::new(Vec::<String>::new()));
    let missing_in_lookup = missing.clone();
    let lookup = request.lookup.clone();
    builder.symbol_lookup_fn(Box::new(move |name| {
        let found = match placed.get(name) {
            Some(&at) => Some(at as *const u8),
            None => lookup(name),
        };
        if found.is_none() {
            missing_in_lookup
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(name.to_owned());
        }
        // cranelift-jit panics on an unresolved name; a null address is checked below instead.
        Some(found.unwrap_or(std::ptr::null()))
    }));
    let mut jit = JITModule::new(builder);
    let data_imported = !request.data_at.is_empty();
    let declared = declare(&mut jit, module, data_imported).map_err(BackendError::failed)?;
    if !data_imported {
        define_data(&mut jit, module, &declared).map_err(BackendError::failed)?;
    }
    if request.threads > 1 && module.functions.len() > 1 {
        define_functions_parallel(&mut jit, module, &declared, request.threads)
    } else {
        define_functions(&mut jit, module, &declared, None, |_| Ok(()))
    }
    .map_err(BackendError::failed)?;
    jit.finalize_definitions().map_err(BackendError::failed)?;
    let entries = request
        .entries
        .iter()
        .map(|e| {
            function_index(module, e).map(|i| jit.get_finalized_function(declared.functions[i]))
        })
        .collect::<Result<Vec<_>, _>>();
    // From here on the memory is freed when `code` is dropped, on every return but the last.
    let code = CraneliftCode(Some(jit));
    let missing = std::mem::take(&mut *missing.lock().unwrap_or_else(|p| p.into_inner()));
    if !missing.is_empty() {
        return Err(BackendError::UnresolvedSymbols(missing));
    }
    Ok(JitOutput {
        code: Box::new(code),
        entries: entries?,
    })
}
