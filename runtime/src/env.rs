//! The environment: per-thread streams and tensor allocators, the host environment's C API
//! (signal checks), module symbols registered for later loading, and init-once handles.

use core::cell::RefCell;
use core::ffi::{c_int, c_void};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};
use crate::abi::{DLPackManagedTensorAllocator, TVMFFIStreamHandle};
use crate::rust_api::Error;

/// Per-thread environment state.
#[derive(Default)]
struct ThreadEnv {
    streams: HashMap<(i32, i32), usize>,
    allocator: DLPackManagedTensorAllocator,
}

thread_local! {
    static THREAD_ENV: RefCell<ThreadEnv> = RefCell::default();
}

/// Sets this thread's stream for `(device_type, device_id)`; returns the previous one.
pub fn set_stream(
    device_type: i32,
    device_id: i32,
    stream: TVMFFIStreamHandle,
) -> TVMFFIStreamHandle {
    THREAD_ENV.with_borrow_mut(|env| {
        env.streams
            .insert((device_type, device_id), stream as usize)
            .unwrap_or(0) as TVMFFIStreamHandle
    })
}

/// This thread's stream for `(device_type, device_id)`, NULL when none was set.
pub fn get_stream(device_type: i32, device_id: i32) -> TVMFFIStreamHandle {
    THREAD_ENV
        .try_with(|env| {
            env.borrow()
                .streams
                .get(&(device_type, device_id))
                .copied()
                .unwrap_or(0)
        })
        .unwrap_or(0) as TVMFFIStreamHandle
}

/// The process-wide allocator (a `DLPackManagedTensorAllocator` stored as a pointer).
static GLOBAL_ALLOCATOR: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

fn allocator_to_ptr(allocator: DLPackManagedTensorAllocator) -> *mut c_void {
    allocator.map_or(ptr::null_mut(), |f| f as *mut c_void)
}

fn allocator_from_ptr(p: *mut c_void) -> DLPackManagedTensorAllocator {
    if p.is_null() {
        None
    } else {
        // SAFETY: only `allocator_to_ptr` stores into the slot, from a function of this type.
        Some(unsafe {
            core::mem::transmute::<*mut c_void, unsafe extern "C" fn(_, _, _, _) -> c_int>(p)
        })
    }
}

/// Sets this thread's allocator (and the process-wide one when `global`); returns the
/// thread's previous allocator (not the process's: libtvm_ffi 0.1.15.post2 reports NULL on a
/// thread that set none, even with a process-wide one installed).
pub fn set_allocator(
    allocator: DLPackManagedTensorAllocator,
    global: bool,
) -> DLPackManagedTensorAllocator {
    if global {
        GLOBAL_ALLOCATOR.store(allocator_to_ptr(allocator), Ordering::Release);
    }
    THREAD_ENV.with_borrow_mut(|env| core::mem::replace(&mut env.allocator, allocator))
}

/// This thread's allocator, else the process-wide one, else None.
pub fn get_allocator() -> DLPackManagedTensorAllocator {
    let local = THREAD_ENV
        .try_with(|env| env.borrow().allocator)
        .unwrap_or(None);
    local.or_else(|| allocator_from_ptr(GLOBAL_ALLOCATOR.load(Ordering::Acquire)))
}

// ---------------------------------------------------------------------------
// The host environment's C API
// ---------------------------------------------------------------------------

/// Functions of the host environment (Python) registered with `TVMFFIEnvRegisterCAPI`.
struct EnvCApi {
    check_signals: AtomicPtr<c_void>,
    gil_ensure: AtomicPtr<c_void>,
    gil_release: AtomicPtr<c_void>,
}

static ENV_CAPI: EnvCApi = EnvCApi {
    check_signals: AtomicPtr::new(ptr::null_mut()),
    gil_ensure: AtomicPtr::new(ptr::null_mut()),
    gil_release: AtomicPtr::new(ptr::null_mut()),
};

/// Registers `PyErr_CheckSignals`, `PyGILState_Ensure` or `PyGILState_Release`.
pub fn register_capi(name: &[u8], symbol: *mut c_void) -> Result<(), Error> {
    let slot = match name {
        b"PyErr_CheckSignals" => &ENV_CAPI.check_signals,
        b"PyGILState_Ensure" => &ENV_CAPI.gil_ensure,
        b"PyGILState_Release" => &ENV_CAPI.gil_release,
        _ => {
            return Err(Error::new(
                VALUE_ERROR,
                &format!("Unknown env API {}", String::from_utf8_lossy(name)),
            ));
        }
    };
    slot.store(symbol, Ordering::Release);
    Ok(())
}

/// Runs the host's signal check (under its GIL) if one is registered: 0, or -1 when the
/// host has raised an error.
pub fn check_signals() -> c_int {
    let check = ENV_CAPI.check_signals.load(Ordering::Acquire);
    if check.is_null() {
        return 0;
    }
    let ensure = ENV_CAPI.gil_ensure.load(Ordering::Acquire);
    let release = ENV_CAPI.gil_release.load(Ordering::Acquire);
    // SAFETY: the host registered these under their documented signatures.
    unsafe {
        let state = if ensure.is_null() {
            ptr::null_mut()
        } else {
            core::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *mut c_void>(ensure)()
        };
        let failed =
            core::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(check)() != 0;
        if !release.is_null() && !state.is_null() {
            core::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(release)(state);
        }
        if failed { -1 } else { 0 }
    }
}

// ---------------------------------------------------------------------------
// Module symbols (stored now; the module loader uses them)
// ---------------------------------------------------------------------------

/// Context symbols in registration order (addresses as integers so the table is `Send`).
type ContextSymbols = Mutex<Vec<(Vec<u8>, usize)>>;
/// System-library symbols by name (addresses as integers so the table is `Send`).
type SystemLibSymbols = Mutex<HashMap<Vec<u8>, usize>>;

fn context_symbols() -> &'static ContextSymbols {
    static TABLE: OnceLock<ContextSymbols> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

fn system_lib_symbols() -> &'static SystemLibSymbols {
    static TABLE: OnceLock<SystemLibSymbols> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// Records a context symbol: a loader writes `symbol` into the library's variable `name`.
pub fn register_context_symbol(name: &[u8], symbol: *mut c_void) {
    context_symbols()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((name.to_vec(), symbol as usize));
}

/// The registered context symbols, in registration order.
pub fn context_symbol_list() -> Vec<(Vec<u8>, *mut c_void)> {
    context_symbols()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(name, addr)| (name.clone(), *addr as *mut c_void))
        .collect()
}

/// Records a system-library symbol (warning on stderr when it changes address).
pub fn register_system_lib_symbol(name: &[u8], symbol: *mut c_void) {
    let mut table = system_lib_symbols()
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(&old) = table.get(name)
        && old != symbol as usize
    {
        {
            eprintln!(
                "Warning:SystemLib symbol {} get overriden to a different address {:p}->{:#x}",
                String::from_utf8_lossy(name),
                symbol,
                old
            );
        }
    }
    table.insert(name.to_vec(), symbol as usize);
}

/// A registered system-library symbol.
pub fn system_lib_symbol(name: &[u8]) -> Option<*mut c_void> {
    system_lib_symbols()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(name)
        .map(|&addr| addr as *mut c_void)
}

// ---------------------------------------------------------------------------
// Init-once handles
// ---------------------------------------------------------------------------

/// Views a handle slot as an atomic pointer.
///
/// # Safety
/// `slot` must be a valid, pointer-aligned handle slot only accessed atomically meanwhile.
unsafe fn atomic_slot<'a>(slot: *mut *mut c_void) -> &'a AtomicPtr<c_void> {
    // SAFETY: guaranteed by the caller.
    unsafe { AtomicPtr::from_ptr(slot) }
}

/// `TVMFFIHandleInitOnce`: runs `init` once (under a lock) unless the slot is already set.
///
/// # Safety
/// `slot` must be a valid handle slot; `init` follows the header's contract.
pub unsafe fn init_once(
    slot: *mut *mut c_void,
    init: unsafe extern "C" fn(result: *mut *mut c_void) -> c_int,
) -> c_int {
    // SAFETY: guaranteed by the caller.
    let handle = unsafe { atomic_slot(slot) };
    if !handle.load(Ordering::Acquire).is_null() {
        return 0;
    }
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !handle.load(Ordering::Acquire).is_null() {
        return 0;
    }
    let mut result: *mut c_void = ptr::null_mut();
    // SAFETY: the caller's init function writes its result.
    let ret = unsafe { init(&mut result) };
    if ret != 0 {
        return ret;
    }
    if result.is_null() {
        crate::error::set_raised_from_str(RUNTIME_ERROR, "init_func must return a non-NULL handle");
        return -1;
    }
    handle.store(result, Ordering::Release);
    0
}

/// `TVMFFIHandleDeinitOnce`: clears the slot and runs `deinit` on what it held.
///
/// # Safety
/// `slot` must be a valid handle slot; `deinit` follows the header's contract.
pub unsafe fn deinit_once(
    slot: *mut *mut c_void,
    deinit: unsafe extern "C" fn(handle: *mut c_void) -> c_int,
) -> c_int {
    // SAFETY: guaranteed by the caller.
    let old = unsafe { atomic_slot(slot) }.swap(ptr::null_mut(), Ordering::AcqRel);
    if old.is_null() {
        0
    } else {
        // SAFETY: the caller's deinit function takes the handle.
        unsafe { deinit(old) }
    }
}
