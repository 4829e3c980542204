//! In-process code from the baseline compiler, in the pooled executable memory of
//! [`crate::backend::memory`]: every import resolved before the code is placed.

use std::sync::atomic::AtomicU64;

use cranelift_jit::JITMemoryProvider;

use super::compile::compile;
use crate::backend::generator::{BackendError, JitOutput, LoadedCode, function_index};
use crate::backend::memory::PooledMemory;
use crate::lir;

/// Executable memory of a baseline-compiled module.
struct BaselineCode {
    memory: PooledMemory,
}

impl LoadedCode for BaselineCode {}

impl Drop for BaselineCode {
    fn drop(&mut self) {
        // SAFETY: the owner of a `LoadedCode` drops it only when none of its code can run any
        // more (see `LoadedCode`).
        unsafe { self.memory.free_memory() };
    }
}

/// Baseline code in memory, and the pointer each switchable entry jumps through (in the order
/// of the entries; none unless asked for).
pub(crate) struct BaselineJit {
    /// The code and the addresses of the requested entries.
    pub out: JitOutput,
    /// Writing an address here sends the entry's callers to other code (a tier-up).
    pub switches: Vec<*const AtomicU64>,
    /// Address of each data object of the module, in module order.
    pub data: Vec<*const u8>,
}

/// Compiles `module` into executable memory, every import resolved up front through
/// `resolve`; returns the addresses of the functions named `entries`, which jump through a
/// switch when `switchable`.
pub(crate) fn jit(
    module: &lir::Module,
    entries: &[String],
    resolve: &dyn Fn(&str) -> Option<*const u8>,
    switchable: bool,
) -> Result<BaselineJit, BackendError> {
    let indices = entries
        .iter()
        .map(|e| function_index(module, e))
        .collect::<Result<Vec<_>, _>>()?;
    let switchable: Vec<lir::FuncId> = if switchable {
        indices.iter().map(|&i| lir::FuncId(i as u32)).collect()
    } else {
        Vec::new()
    };
    let mut imports = Vec::with_capacity(module.imports.len());
    let mut missing = Vec::new();
    for import in &module.imports {
        match resolve(&import.name) {
            Some(a) => imports.push(a as u64),
            None => missing.push(import.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(BackendError::UnresolvedSymbols(missing));
    }
    let image = compile(module, &imports, &switchable).map_err(BackendError::failed)?;
    let mut code = BaselineCode {
        memory: PooledMemory::default(),
    };
    let linked = image
        .link(module, &mut code.memory)
        .map_err(BackendError::failed)?;
    Ok(BaselineJit {
        out: JitOutput {
            entries: indices.iter().map(|&i| linked.functions[i]).collect(),
            code: Box::new(code),
        },
        switches: linked.switches,
        data: linked.data,
    })
}
