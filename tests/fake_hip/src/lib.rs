//! A test double of the HIP runtime (`libamdhip64.so`) for machines without an AMD GPU.
//!
//! Generated launch code loads it through `SAFECALL_LIBAMDHIP64_PATH` exactly as it would load
//! `libamdhip64.so`: it resolves the entry points with `dlsym` and calls them. Triton 3.9's own
//! AMD launcher (`triton/backends/amd/driver.c`) loads it through `TRITON_LIBHIP_PATH` and
//! resolves them through `hipGetProcAddress`. The double behaves like a runtime with two gfx942
//! devices (ordinals 0 and 1, an MI300X's attributes: `runtime.rs`; a thread may make them
//! gfx1250 with `safecall_fake_hip_set_arch`) and a current device per thread (0 until
//! `hipSetDevice`), and:
//! - **records** every call on the calling thread (`safecall_fake_hip_log` returns the records
//!   as JSON lines: `call`, the entry's name, and its arguments; launches with the kernel, the
//!   current device, grid, block, dynamic shared memory, stream and each explicit kernel
//!   argument's bytes: `launch.rs`);
//! - **fails** any call on request (`safecall_fake_hip_fail(name, code)`: the next call of
//!   `name` on this thread returns `code`), or hides an entry point from `hipGetProcAddress`
//!   (`safecall_fake_hip_hide`);
//! - **checks** what the runtime checks before a launch (`launch.rs`), and that a function is
//!   launched on the device its module was loaded on: modules are per device, as in HIP.
//!
//! Device images are AMDGPU code objects (ELF) and clang offload bundles of them (`image.rs`):
//! the double reads each kernel's explicit arguments and static LDS from the code object's
//! metadata note. An image containing `FAKE_INVALID_IMAGE` fails to load.
//!
//! Every entry point reports a failure as HIP does: it returns the code and keeps it as the
//! thread's last error (`hipGetLastError` returns it and clears it). No entry point unwinds into
//! its caller: a panic inside one becomes `hipErrorUnknown`.
//!
//! Records and failures are per thread, so tests running in parallel do not see each other.
//! `safecall_fake_hip_quiet(1)` turns recording, failures and the launch checks off, for
//! benchmarks of the host-side launch path.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int};
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

pub mod abi;
mod image;
mod launch;
mod memory;
mod module;
mod runtime;

pub use launch::{hipDrvLaunchKernelEx, hipModuleLaunchCooperativeKernel, hipModuleLaunchKernel};
pub use module::{
    hipFuncGetAttribute, hipModuleGetFunction, hipModuleLoadData, hipModuleLoadDataEx,
    hipModuleUnload, hipPointerGetAttribute,
};
pub use runtime::*;

use abi::{HipError, hipErrorUnknown, hipSuccess};

/// Devices the double has.
pub const DEVICES: c_int = 2;

#[derive(Default)]
struct Thread {
    log: Vec<Value>,
    failures: HashMap<String, HipError>,
    hidden: Vec<String>,
    /// The current device (`hipSetDevice`).
    device: c_int,
    /// What `hipGetLastError` returns next.
    last_error: HipError,
    /// What `hipDriverGetVersion` reports (0: the default).
    driver_version: c_int,
    /// The devices' processor, an index of `runtime::ARCHS` (0: gfx942).
    arch: usize,
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

/// A kernel of a loaded module.
pub(crate) struct Kernel {
    pub name: String,
    /// Explicit argument sizes in bytes, in argument order.
    pub params: Vec<usize>,
    pub info: image::KernelInfo,
    /// The index of its module.
    pub module: usize,
}

/// A module: the device it was loaded on and its kernels' ids.
pub(crate) struct Module {
    pub device: c_int,
    pub kernels: Vec<usize>,
    pub loaded: bool,
}

/// Loaded modules and their kernels; handles are [`MODULE_BASE`] or [`FUNCTION_BASE`] plus the
/// index, so that a module passed for a function (or the reverse) is an invalid handle.
#[derive(Default)]
pub(crate) struct Registry {
    pub modules: Vec<Module>,
    pub kernels: Vec<Kernel>,
}

/// The first `hipModule_t`.
pub(crate) const MODULE_BASE: usize = 0x4d00_0000;
/// The first `hipFunction_t`.
pub(crate) const FUNCTION_BASE: usize = 0x4600_0000;

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Benchmark mode: no records, no failures, launches accepted without checks.
pub(crate) static QUIET: AtomicBool = AtomicBool::new(false);

pub(crate) fn registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut guard = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Registry::default))
}

/// This thread's current device.
pub(crate) fn current_device() -> c_int {
    THREAD.with(|t| t.borrow().device)
}

/// Records a call (its fields are only built when recording) and returns the injected failure
/// for it, if any.
fn record(name: &str, fields: impl FnOnce() -> Value) -> Option<HipError> {
    if QUIET.load(Ordering::Relaxed) {
        return None;
    }
    let fields = fields();
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        let mut entry = json!({ "call": name });
        if let (Value::Object(e), Value::Object(f)) = (&mut entry, fields) {
            e.extend(f);
        }
        t.log.push(entry);
        t.failures.remove(name)
    })
}

/// One entry point: records the call, then runs `body` unless a failure was injected; keeps a
/// failure as the thread's last error; a panic becomes `hipErrorUnknown`.
pub(crate) fn call(
    name: &str,
    fields: impl FnOnce() -> Value,
    body: impl FnOnce() -> HipError,
) -> HipError {
    let run = AssertUnwindSafe(|| record(name, fields).unwrap_or_else(body));
    let code = std::panic::catch_unwind(run).unwrap_or(hipErrorUnknown);
    if code != hipSuccess {
        THREAD.with(|t| t.borrow_mut().last_error = code);
    }
    code
}

/// Writes `value` to the caller's `out` (`hipErrorInvalidValue` when it is null).
pub(crate) unsafe fn write<T>(out: *mut T, value: T) -> HipError {
    if out.is_null() {
        return abi::hipErrorInvalidValue;
    }
    // SAFETY: the caller passes a pointer to writable storage for a T.
    unsafe { out.write(value) };
    hipSuccess
}

/// A C string argument as text (`None` for a null pointer).
pub(crate) unsafe fn text(s: *const c_char) -> Option<String> {
    // SAFETY: a non-null argument is a NUL-terminated string.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

// ---- control ------------------------------------------------------------------------------

/// Clears this thread's records, failures, hidden entry points and last error, and makes
/// device 0 current again.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_hip_reset() {
    THREAD.with(|t| *t.borrow_mut() = Thread::default());
}

/// Turns benchmark mode on (non-zero) or off: no records, no failures, unchecked launches.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_hip_quiet(on: c_int) {
    QUIET.store(on != 0, Ordering::Relaxed);
}

/// The next call of `name` on this thread returns `code`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_hip_fail(name: *const c_char, code: c_int) {
    // SAFETY: a NUL-terminated string from the test.
    if let Some(name) = unsafe { text(name) } {
        THREAD.with(|t| t.borrow_mut().failures.insert(name, code));
    }
}

/// `hipGetProcAddress` does not find `name` (on this thread). `dlsym` still does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_hip_hide(name: *const c_char) {
    // SAFETY: a NUL-terminated string from the test.
    if let Some(name) = unsafe { text(name) } {
        THREAD.with(|t| t.borrow_mut().hidden.push(name));
    }
}

/// Sets what `hipDriverGetVersion` reports on this thread (0: the default,
/// [`runtime::DEFAULT_DRIVER_VERSION`]).
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_hip_set_driver_version(version: c_int) {
    THREAD.with(|t| t.borrow_mut().driver_version = version);
}

/// Makes this thread's devices processor `name` (`gfx942`, the default, or `gfx1250`: see
/// `runtime::ARCHS`): the code objects they load, their `gcnArchName` and warp size. Returns 0,
/// or -1 (and changes nothing) for another name. Modules loaded before keep their kernels.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_hip_set_arch(name: *const c_char) -> c_int {
    // SAFETY: a NUL-terminated string from the test.
    let name = unsafe { text(name) };
    let found = runtime::ARCHS
        .iter()
        .position(|a| Some(a.name.split(':').next().unwrap_or("")) == name.as_deref());
    match found {
        Some(i) => {
            THREAD.with(|t| t.borrow_mut().arch = i);
            0
        }
        None => -1,
    }
}

/// This thread's records as JSON lines, into `buf` (`cap` bytes, NUL-terminated when it fits);
/// returns the full length (call again with a larger buffer when it is `cap` or more). The
/// records are kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_hip_log(buf: *mut c_char, cap: usize) -> usize {
    let text: String = THREAD.with(|t| t.borrow().log.iter().map(|v| format!("{v}\n")).collect());
    if !buf.is_null() && cap > text.len() {
        // SAFETY: `buf` has `cap > len` bytes, so the text and its NUL fit.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast(), text.len());
            *buf.add(text.len()) = 0;
        }
    }
    text.len()
}
