//! Function objects and the global function registry.
//!
//! A C function (`TVMFFIFunctionCreate`) keeps its `self` handle, safe call and deleter after
//! the `TVMFFIFunctionCell`; the cell's `safe_call` is a trampoline that passes `self` on.
//! Without `self` and deleter, the cell holds the given safe call itself, which then receives
//! the function object as its handle (as in the C++ runtime). Rust closures get a trampoline
//! that turns errors and panics into raised errors.

use core::ffi::{c_int, c_void};
use core::ptr;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::abi::symbols::error_kind::RUNTIME_ERROR;
use crate::abi::{TVMFFIAny, TVMFFIFunctionCell, TVMFFIObject, TVMFFISafeCallType, type_index};
use crate::object::{self, ObjectLayout};
use crate::rust_api::{Any, AnyView, Error};

/// Payload of a function made from C callbacks.
#[repr(C)]
struct ExternCFunctionObj {
    header: TVMFFIObject,
    cell: TVMFFIFunctionCell,
    self_handle: *mut c_void,
    safe_call: Option<TVMFFISafeCallType>,
    deleter: Option<unsafe extern "C" fn(self_handle: *mut c_void)>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ExternCFunctionObj {}

impl Drop for ExternCFunctionObj {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter {
            // SAFETY: the creator handed us `self_handle` together with its deleter.
            unsafe { deleter(self.self_handle) };
        }
    }
}

/// Payload of a function made from C callbacks without a `self` handle or deleter.
#[repr(C)]
struct BareFunctionObj {
    header: TVMFFIObject,
    cell: TVMFFIFunctionCell,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for BareFunctionObj {}

/// The safe call of an [`ExternCFunctionObj`]: forwards to the user's with `self`.
///
/// # Safety
/// `func` must be an `ExternCFunctionObj`; the arguments follow the safe-call contract.
unsafe extern "C" fn extern_c_trampoline(
    func: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: `func` is an ExternCFunctionObj (this trampoline is only installed there).
    let obj = unsafe { &*func.cast::<ExternCFunctionObj>() };
    match obj.safe_call {
        // SAFETY: the user's safe call follows the same contract.
        Some(safe_call) => unsafe { safe_call(obj.self_handle, args, num_args, result) },
        None => {
            crate::error::set_raised_from_str(RUNTIME_ERROR, "function has no safe call");
            -1
        }
    }
}

/// `TVMFFIFunctionCreate`: a function object calling `safe_call` with `self_handle`.
pub fn new_extern_c(
    self_handle: *mut c_void,
    safe_call: Option<TVMFFISafeCallType>,
    deleter: Option<unsafe extern "C" fn(self_handle: *mut c_void)>,
) -> *mut TVMFFIObject {
    if self_handle.is_null() && deleter.is_none() {
        let payload = BareFunctionObj {
            header: object::blank_header(),
            cell: TVMFFIFunctionCell {
                safe_call,
                cpp_call: ptr::null_mut(),
            },
        };
        return object::alloc(type_index::FUNCTION, payload, 0).cast();
    }
    let payload = ExternCFunctionObj {
        header: object::blank_header(),
        cell: TVMFFIFunctionCell {
            safe_call: Some(extern_c_trampoline),
            cpp_call: ptr::null_mut(),
        },
        self_handle,
        safe_call,
        deleter,
    };
    object::alloc(type_index::FUNCTION, payload, 0).cast()
}

/// The callable of a Rust function object.
pub type RustCallable = dyn Fn(&[AnyView<'_>]) -> Result<Any, Error> + Send + Sync + 'static;

/// Payload of a function made from a Rust closure.
#[repr(C)]
struct RustFunctionObj {
    header: TVMFFIObject,
    cell: TVMFFIFunctionCell,
    callable: Box<RustCallable>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for RustFunctionObj {}

/// The safe call of a [`RustFunctionObj`].
///
/// # Safety
/// `func` must be a `RustFunctionObj`; the arguments follow the safe-call contract.
unsafe extern "C" fn rust_trampoline(
    func: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    let call = || {
        // SAFETY: `func` is a RustFunctionObj (this trampoline is only installed there).
        let obj = unsafe { &*func.cast::<RustFunctionObj>() };
        let args: &[AnyView<'_>] = if num_args <= 0 || args.is_null() {
            &[]
        } else {
            // SAFETY: the caller passes `num_args` valid values; AnyView is repr(transparent).
            unsafe { core::slice::from_raw_parts(args.cast(), num_args as usize) }
        };
        (obj.callable)(args)
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(Ok(value)) => {
            // SAFETY: the caller passes a writable result slot holding no object.
            unsafe { result.write(value.into_raw()) };
            0
        }
        Ok(Err(error)) => {
            error.set_raised();
            -1
        }
        Err(payload) => {
            crate::capi::raise_panic(RUNTIME_ERROR, "panic in a Rust function", payload.as_ref());
            -1
        }
    }
}

/// A function object calling a Rust closure.
pub fn new_rust(callable: Box<RustCallable>) -> *mut TVMFFIObject {
    let payload = RustFunctionObj {
        header: object::blank_header(),
        cell: TVMFFIFunctionCell {
            safe_call: Some(rust_trampoline),
            cpp_call: ptr::null_mut(),
        },
        callable,
    };
    object::alloc(type_index::FUNCTION, payload, 0).cast()
}

/// Calls a function object (of any runtime) through its cell's safe call.
///
/// # Safety
/// `func` must be a live Function object; `args` must hold `num_args` valid values and
/// `result` must be a writable slot holding no object.
pub unsafe fn call_raw(
    func: *mut TVMFFIObject,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the function cell follows the header.
    let cell = unsafe { &*func.add(1).cast::<TVMFFIFunctionCell>() };
    match cell.safe_call {
        // SAFETY: guaranteed by the caller.
        Some(safe_call) => unsafe { safe_call(func.cast(), args, num_args, result) },
        None => {
            crate::error::set_raised_from_str(RUNTIME_ERROR, "function has no safe call");
            -1
        }
    }
}

// ---------------------------------------------------------------------------
// The global registry
// ---------------------------------------------------------------------------

/// A registered global function with its reflection strings.
struct GlobalEntry {
    /// The function (an owned reference, NULL when NULL was registered).
    func: Any,
    #[allow(dead_code)] // kept for reflection, like the C++ runtime
    doc: Vec<u8>,
    #[allow(dead_code)]
    metadata: Vec<u8>,
    #[allow(dead_code)]
    flags: i64,
}

type GlobalTable = HashMap<Vec<u8>, GlobalEntry>;

fn globals() -> std::sync::MutexGuard<'static, GlobalTable> {
    static GLOBALS: OnceLock<Mutex<GlobalTable>> = OnceLock::new();
    GLOBALS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers `func` (an owned Any holding a Function, or None) under `name`.
pub fn set_global(name: &[u8], func: Any, allow_override: bool) -> Result<(), Error> {
    let mut table = globals();
    if table.contains_key(name) && !allow_override {
        return Err(Error::new(
            RUNTIME_ERROR,
            &format!(
                "Global Function `{}` is already registered",
                String::from_utf8_lossy(name)
            ),
        ));
    }
    let entry = GlobalEntry {
        func,
        doc: Vec::new(),
        metadata: Vec::new(),
        flags: crate::abi::field_flags::IS_STATIC_METHOD,
    };
    let previous = table.insert(name.to_vec(), entry);
    drop(table);
    drop(previous); // released outside the lock: its deleter may call back in
    Ok(())
}

/// `TVMFFIFunctionSetGlobalFromMethodInfo`.
pub fn set_global_from_method_info(
    name: &[u8],
    doc: &[u8],
    metadata: &[u8],
    flags: i64,
    method: AnyView<'_>,
    allow_override: bool,
) -> Result<(), Error> {
    let mut table = globals();
    if table.contains_key(name) && !allow_override {
        let message = format!(
            "Global Function `{}` is already registered, possible causes:\n\
             - Two GlobalDef().def registrations for the same function \n\
             Please remove the duplicate registration.",
            String::from_utf8_lossy(name)
        );
        eprintln!("RuntimeError: {message}");
        return Err(Error::new(RUNTIME_ERROR, &message));
    }
    let func = Any::from_view(method)?;
    if func.type_index() != type_index::FUNCTION && func.type_index() != type_index::NONE {
        return Err(crate::rust_api::any::conversion_error(
            func.type_index(),
            "ffi.Function",
        ));
    }
    let entry = GlobalEntry {
        func,
        doc: doc.to_vec(),
        metadata: metadata.to_vec(),
        flags,
    };
    let previous = table.insert(name.to_vec(), entry);
    drop(table);
    drop(previous);
    Ok(())
}

/// The function registered under `name`: a new strong reference, or NULL.
pub fn get_global(name: &[u8]) -> *mut TVMFFIObject {
    let table = globals();
    match table.get(name) {
        Some(entry) if entry.func.type_index() >= type_index::STATIC_OBJECT_BEGIN => {
            let obj = entry.func.object_ptr();
            // SAFETY: the registry holds a strong reference while we hold the lock.
            unsafe { object::inc_ref(obj) };
            obj
        }
        _ => ptr::null_mut(),
    }
}

/// Removes the function registered under `name`; returns whether there was one.
pub fn remove_global(name: &[u8]) -> bool {
    let removed = globals().remove(name);
    removed.is_some()
}

/// The names of every registered global function.
pub fn global_names() -> Vec<Vec<u8>> {
    globals().keys().cloned().collect()
}

/// The function `name` for `TVMFFIEnvModLookupFromImports` without a module: looked up in
/// the global registry once and kept alive for the rest of the process (so the returned
/// pointer is a borrowed reference that stays valid).
pub fn lookup_cached(name: &[u8]) -> Option<*mut TVMFFIObject> {
    static CACHE: OnceLock<Mutex<HashMap<Vec<u8>, usize>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(&func) = cache.get(name) {
        return Some(func as *mut TVMFFIObject);
    }
    let func = get_global(name);
    if func.is_null() {
        return None;
    }
    cache.insert(name.to_vec(), func as usize);
    Some(func)
}
