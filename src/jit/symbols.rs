//! Where JIT-compiled code finds the symbols it calls: the TVM-FFI C API of a
//! [binding](SymbolBinding), the caller's table, the libc functions GPU launches use, and the
//! process.

use std::collections::HashMap;
use std::sync::Arc;

use safecall_runtime::c_api_symbol;

use crate::backend::SymbolLookup;
use crate::lower;

/// Which runtime the TVM-FFI C API calls of JIT-compiled code go to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SymbolBinding {
    /// The bundled safecall-runtime (linked into this program).
    #[default]
    SafecallRuntime,
    /// Whatever the process has loaded globally (e.g. libtvm_ffi loaded by Python with
    /// `RTLD_GLOBAL`), looked up with `dlsym`, so errors land in that runtime's slot.
    Process,
}

/// An address callable from JIT-compiled code: a function (or data) that lives as long as the
/// process, or at least as long as the code that calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolAddress(*const u8);

impl SymbolAddress {
    /// Wraps `address` for [`JitOptions::symbols`](super::JitOptions::symbols).
    ///
    /// # Safety
    /// `address` must be the address of a function with the C signature the IR declares for
    /// the name it is registered under (or of data of the declared layout), and stay valid for
    /// as long as any code compiled with it may run. Generated code calls it without any
    /// further check.
    pub const unsafe fn new(address: *const u8) -> Self {
        SymbolAddress(address)
    }

    /// The address.
    pub fn get(self) -> *const u8 {
        self.0
    }
}

// SAFETY: an address of code or data that lives as long as the code calling it (the creator
// promised this in `SymbolAddress::new`); sharing the number between threads is harmless.
unsafe impl Send for SymbolAddress {}
// SAFETY: as above.
unsafe impl Sync for SymbolAddress {}

/// Resolves a TVM-FFI C API name for a binding.
pub(super) fn capi_address(binding: SymbolBinding, name: &str) -> Option<*const u8> {
    match binding {
        SymbolBinding::SafecallRuntime => c_api_symbol(name),
        SymbolBinding::Process => process_symbol(name),
    }
}

fn process_symbol(name: &str) -> Option<*const u8> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbol is only used as an address; its type is fixed by the caller's
    // declaration.
    let sym = unsafe { this.get::<*const u8>(name.as_bytes()) }.ok()?;
    let address: *const u8 = *sym;
    (!address.is_null()).then_some(address)
}

/// The resolution chain of one compile.
#[derive(Clone)]
pub(super) struct Resolver {
    /// Where C API names go.
    pub binding: SymbolBinding,
    /// The caller's table (and the JIT's own helpers).
    pub table: HashMap<String, SymbolAddress>,
    /// Whether names found nowhere else are looked up in the process.
    pub process_symbols: bool,
}

impl Resolver {
    /// The address of `name`: the C API of the binding, then the table, then the libc
    /// functions GPU launches use, then (with `process_symbols`) the process.
    pub fn resolve(&self, name: &str) -> Option<*const u8> {
        capi_address(self.binding, name)
            .or_else(|| self.table.get(name).map(|a| a.0))
            .or_else(|| lower::libc_symbol(name))
            .or_else(|| {
                if self.process_symbols {
                    process_symbol(name)
                } else {
                    None
                }
            })
    }

    /// [`Resolver::resolve`] as a shareable function for a backend.
    pub fn lookup(&self) -> SymbolLookup {
        let resolver = self.clone();
        Arc::new(move |name| resolver.resolve(name))
    }
}
