//! A test double of the CUDA driver API for machines without a GPU.
//!
//! Generated launch code loads it through `SAFECALL_LIBCUDA_PATH` exactly as it would load
//! `libcuda.so.1`: it finds `cuGetProcAddress_v2`, resolves the entry points through it and
//! calls them. The double behaves like a driver with two devices (ordinals 0 and 1, device
//! handles 100 and 101) and per-thread current contexts, and:
//! - **records** every call on the calling thread (`safecall_fake_cuda_log` returns the
//!   records as JSON lines: the call's name and its arguments; launches with the context,
//!   kernel, grid, block, cluster, shared memory, stream and each argument's bytes);
//! - **fails** any call on request (`safecall_fake_cuda_fail(name, code)`: the next call of
//!   `name` on this thread returns `code`), or hides an entry point from
//!   `cuGetProcAddress_v2` (`safecall_fake_cuda_hide`);
//! - **checks** what a real driver checks: a launch needs a current context, non-zero grid
//!   and block, and an opt-in (`cuKernelSetAttribute`) on that device for more than 48 KiB
//!   of static plus dynamic shared memory (at most the device's 227 KiB opt-in limit), and
//!   for clusters of more than 8 blocks (16 at most); a cooperative grid must fit on the
//!   device at once ([`CO_RESIDENT_BLOCKS_PER_SM`] blocks per multiprocessor); a preferred
//!   cluster needs a driver reporting CUDA 12.8 or later
//!   (`safecall_fake_cuda_set_driver_version` sets what `cuDriverGetVersion` reports on
//!   the calling thread, 13000 by default).
//!
//! `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col` record their arguments and writes a descriptor that encodes them
//! (`tensormap.rs` gives the layout); `safecall_fake_cuda_tensormap_encodes` counts its calls.
//!
//! Launch records carry every launch attribute: `attrs` lists their ids in order, and
//! `cluster`, `cluster_policy`, `preferred_cluster`, `pdl`, `cooperative` and `priority`
//! their values (null when absent).
//!
//! Device binaries are PTX text (or anything containing PTX `.entry` declarations): the
//! double reads each `.entry NAME(.param .TYPE p, ...)` to know the kernels and the size of
//! each parameter, and the `.shared .align A .b8 NAME[BYTES];` declarations in its body for
//! its static shared memory. An image containing `FAKE_INVALID_IMAGE` fails to load. Cubins
//! (ELF) are read too, their parameter tables from `.nv.info.NAME` (`image.rs`).
//!
//! `memory.rs` serves memory, copies, streams and synchronization (host memory standing in for
//! the device's), for programs that read results back (the self-test).
//!
//! Besides the library API it serves the module API and the queries of Triton's launcher
//! (`module_api.rs`), so that Triton's own launches record in the same format.
//!
//! Records and failures are per thread, so tests running in parallel do not see each other.
//! `safecall_fake_cuda_quiet(1)` turns recording, failures and the launch checks off, for
//! benchmarks of the host-side launch path (each call then does next to nothing).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys::CUfunction_attribute_enum;
use serde_json::{Value, json};

mod context;
mod image;
mod launch;
mod memory;
mod module_api;
mod ptx;
mod tensormap;

type CUresult = c_int;
const SUCCESS: CUresult = 0;
const INVALID_VALUE: CUresult = 1;
const INVALID_DEVICE: CUresult = 101;
const INVALID_IMAGE: CUresult = 200;
const INVALID_CONTEXT: CUresult = 201;
const INVALID_HANDLE: CUresult = 400;
const NOT_FOUND: CUresult = 500;
const COOPERATIVE_LAUNCH_TOO_LARGE: CUresult = 720;
const INVALID_CLUSTER_SIZE: CUresult = 912;

/// Devices the double has.
const DEVICES: c_int = 2;
/// `CUdevice` of ordinal 0 (distinct from the ordinal, to catch code that mixes them up),
/// unless `safecall_fake_cuda_ordinal_handles(1)` made handles equal ordinals.
const DEVICE_BASE: c_int = 100;
/// The `CUdevice` of ordinal 0 now: [`DEVICE_BASE`], or 0 (see [`safecall_fake_cuda_ordinal_handles`]).
static HANDLE_BASE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(DEVICE_BASE);

/// The `CUdevice` of ordinal 0.
fn device_base() -> c_int {
    HANDLE_BASE.load(Ordering::Relaxed)
}
/// Shared memory a kernel may use without an opt-in.
const DEFAULT_SHARED_MEM: u32 = 48 * 1024;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
const MAX_DYNAMIC_SHARED: c_int =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
const NON_PORTABLE_CLUSTER: c_int =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as c_int;
/// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`.
const SHARED_SIZE_BYTES: c_int =
    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as c_int;
/// Shared memory per block with the opt-in (an H100's 227 KiB).
const OPTIN_SHARED_MEM: u32 = 227 * 1024;
/// Multiprocessors of each device (an H100 SXM's, as `cuDeviceGetAttribute` reports).
const MULTIPROCESSORS: u32 = 132;
/// Blocks of a cooperative grid that fit on one multiprocessor at once (the double's model
/// of occupancy, whatever the kernel).
pub const CO_RESIDENT_BLOCKS_PER_SM: u32 = 2;
/// Blocks in a cluster without the non-portable opt-in, and with it.
const PORTABLE_CLUSTER: u32 = 8;
const NON_PORTABLE_CLUSTER_MAX: u32 = 16;
/// What `cuDriverGetVersion` reports unless a test sets it.
const DEFAULT_DRIVER_VERSION: c_int = 13000;

/// Context handles: primary contexts at `PRIMARY + 16 * ordinal`, user ones at `USER + ...`.
const PRIMARY: usize = 0x1000;
const USER: usize = 0x2000;

#[derive(Default)]
struct Thread {
    log: Vec<Value>,
    failures: HashMap<String, CUresult>,
    hidden: Vec<String>,
    current: usize,
    /// What `cuDriverGetVersion` reports (0: the default).
    driver_version: c_int,
    /// Ordinals whose primary context was retained on this thread: active, for
    /// `cuDevicePrimaryCtxGetState` (per thread, like every state of the double, so that tests
    /// running in parallel do not see each other's).
    active_primaries: Vec<c_int>,
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

struct Kernel {
    name: String,
    params: Vec<usize>,
    /// Static shared memory in bytes.
    static_shared: u32,
    /// Shared memory opted in, by device ordinal.
    shared_mem: HashMap<c_int, u32>,
    /// Devices (ordinals) on which non-portable cluster sizes are allowed.
    non_portable: Vec<c_int>,
}

/// Loaded libraries (each a list of kernel ids) and kernels; handles are index + 1.
#[derive(Default)]
struct Registry {
    libraries: Vec<Option<Vec<usize>>>,
    kernels: Vec<Kernel>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Benchmark mode: no records, no failures, launches accepted without checks.
static QUIET: AtomicBool = AtomicBool::new(false);

fn registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut guard = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Registry::default))
}

/// Records a call (its fields are only built when recording) and returns the injected
/// failure for it, if any.
fn record(name: &str, fields: impl FnOnce() -> Value) -> Option<CUresult> {
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

fn context_name(ctx: usize) -> Value {
    match ctx {
        0 => Value::Null,
        c if c >= USER => json!(format!("user:{}", (c - USER) / 16)),
        c => json!(format!("primary:{}", (c - PRIMARY) / 16)),
    }
}

/// The device ordinal of a context handle, if it is one.
fn context_device(ctx: usize) -> Option<c_int> {
    let (base, offset) = if ctx >= USER {
        (USER, ctx - USER)
    } else {
        (PRIMARY, ctx.checked_sub(PRIMARY)?)
    };
    let ordinal = (offset / 16) as c_int;
    (offset % 16 == 0 && ordinal < DEVICES && base + offset == ctx).then_some(ordinal)
}

unsafe fn write<T>(out: *mut T, value: T) -> CUresult {
    if out.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller (generated code) passes a pointer to writable storage for a T.
    unsafe { out.write(value) };
    SUCCESS
}

// ---- control ------------------------------------------------------------------------------

/// Clears this thread's records, failures and hidden entry points, and its current context.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_reset() {
    THREAD.with(|t| *t.borrow_mut() = Thread::default());
}

/// Turns benchmark mode on (non-zero) or off: no records, no failures, unchecked launches.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_quiet(on: c_int) {
    QUIET.store(on != 0, Ordering::Relaxed);
}

/// Process-wide: non-zero makes each `CUdevice` equal its ordinal, as real drivers number
/// them (for code that passes one where the other is expected, as Triton's own driver does
/// with `get_current_device()`); zero restores the distinct handles (100 + ordinal).
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_ordinal_handles(on: c_int) {
    HANDLE_BASE.store(if on != 0 { 0 } else { DEVICE_BASE }, Ordering::Relaxed);
}

/// The next call of `name` on this thread returns `code`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_cuda_fail(name: *const c_char, code: c_int) {
    // SAFETY: a NUL-terminated string from the test.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    THREAD.with(|t| t.borrow_mut().failures.insert(name, code));
}

/// `cuGetProcAddress_v2` does not find `name` (on this thread).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_cuda_hide(name: *const c_char) {
    // SAFETY: a NUL-terminated string from the test.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    THREAD.with(|t| t.borrow_mut().hidden.push(name));
}

/// Makes a user (non-primary) context of device `ordinal` current on this thread (-1: none).
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_set_user_context(ordinal: c_int) {
    let ctx = if ordinal < 0 {
        0
    } else {
        USER + 16 * ordinal as usize
    };
    THREAD.with(|t| t.borrow_mut().current = ctx);
}

/// This thread's current context as text (`primary:0`, `user:1`, or `none`), into `buf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_cuda_current(buf: *mut c_char, cap: usize) -> usize {
    let text = match context_name(THREAD.with(|t| t.borrow().current)) {
        Value::String(s) => s,
        _ => "none".to_owned(),
    };
    // SAFETY: `buf` has `cap` bytes.
    unsafe { copy_out(&text, buf, cap) }
}

/// This thread's records as JSON lines, into `buf` (`cap` bytes); returns the full length
/// (call again with a larger buffer when it exceeds `cap`). The records are kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn safecall_fake_cuda_log(buf: *mut c_char, cap: usize) -> usize {
    let text: String = THREAD.with(|t| t.borrow().log.iter().map(|v| format!("{v}\n")).collect());
    // SAFETY: `buf` has `cap` bytes.
    unsafe { copy_out(&text, buf, cap) }
}

unsafe fn copy_out(text: &str, buf: *mut c_char, cap: usize) -> usize {
    if !buf.is_null() && cap > text.len() {
        // SAFETY: `cap > len`, so the text and its NUL fit.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast(), text.len());
            *buf.add(text.len()) = 0;
        }
    }
    text.len()
}

// ---- the driver API ----------------------------------------------------------------------

/// `cuGetProcAddress_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    // SAFETY: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) }
        .to_string_lossy()
        .into_owned();
    if let Some(code) = record(
        "cuGetProcAddress_v2",
        || json!({ "symbol": name, "version": version, "flags": flags }),
    ) {
        return code;
    }
    let hidden = THREAD.with(|t| t.borrow().hidden.contains(&name));
    let address: Option<*mut c_void> = if hidden {
        None
    } else {
        ENTRIES
            .iter()
            .chain(module_api::ENTRIES)
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f as *mut c_void)
    };
    // SAFETY: output pointers from the caller.
    unsafe {
        let _ = write(status, if address.is_some() { 0 } else { 1 });
        let _ = write(pfn, address.unwrap_or(std::ptr::null_mut()));
    }
    if address.is_some() {
        SUCCESS
    } else {
        NOT_FOUND
    }
}

/// The entry points `cuGetProcAddress_v2` serves.
const ENTRIES: &[(&str, *const ())] = &[
    ("cuGetErrorName", cuGetErrorName as *const ()),
    ("cuGetErrorString", cuGetErrorString as *const ()),
    ("cuInit", cuInit as *const ()),
    ("cuDeviceGet", cuDeviceGet as *const ()),
    ("cuCtxGetCurrent", cuCtxGetCurrent as *const ()),
    ("cuCtxGetDevice", cuCtxGetDevice as *const ()),
    ("cuCtxSetCurrent", cuCtxSetCurrent as *const ()),
    (
        "cuDevicePrimaryCtxRetain",
        cuDevicePrimaryCtxRetain as *const (),
    ),
    (
        "cuDevicePrimaryCtxGetState",
        context::cuDevicePrimaryCtxGetState as *const (),
    ),
    ("cuLibraryLoadData", cuLibraryLoadData as *const ()),
    ("cuLibraryUnload", cuLibraryUnload as *const ()),
    ("cuLibraryGetKernel", cuLibraryGetKernel as *const ()),
    ("cuKernelSetAttribute", cuKernelSetAttribute as *const ()),
    ("cuKernelGetAttribute", cuKernelGetAttribute as *const ()),
    ("cuDriverGetVersion", cuDriverGetVersion as *const ()),
    ("cuLaunchKernelEx", launch::cuLaunchKernelEx as *const ()),
    (
        "cuTensorMapEncodeTiled",
        tensormap::cuTensorMapEncodeTiled as *const (),
    ),
    (
        "cuTensorMapEncodeIm2col",
        tensormap::cuTensorMapEncodeIm2col as *const (),
    ),
];

fn error_text(code: CUresult) -> Option<(&'static CStr, &'static CStr)> {
    Some(match code {
        0 => (c"CUDA_SUCCESS", c"no error"),
        1 => (c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
        2 => (c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
        3 => (c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error"),
        100 => (
            c"CUDA_ERROR_NO_DEVICE",
            c"no CUDA-capable device is detected",
        ),
        101 => (c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal"),
        200 => (
            c"CUDA_ERROR_INVALID_IMAGE",
            c"device kernel image is invalid",
        ),
        201 => (c"CUDA_ERROR_INVALID_CONTEXT", c"invalid device context"),
        218 => (c"CUDA_ERROR_INVALID_PTX", c"a PTX JIT compilation failed"),
        400 => (c"CUDA_ERROR_INVALID_HANDLE", c"invalid resource handle"),
        500 => (c"CUDA_ERROR_NOT_FOUND", c"named symbol not found"),
        701 => (
            c"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            c"too many resources requested for launch",
        ),
        719 => (c"CUDA_ERROR_LAUNCH_FAILED", c"unspecified launch failure"),
        720 => (
            c"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
            c"too many blocks in cooperative launch",
        ),
        912 => (c"CUDA_ERROR_INVALID_CLUSTER_SIZE", c"invalid cluster size"),
        _ => return None,
    })
}

/// `cuGetErrorName` (not recorded).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, out: *mut *const c_char) -> CUresult {
    match error_text(error) {
        // SAFETY: output pointer from the caller.
        Some((name, _)) => unsafe { write(out, name.as_ptr()) },
        None => INVALID_VALUE,
    }
}

/// `cuGetErrorString` (not recorded).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, out: *mut *const c_char) -> CUresult {
    match error_text(error) {
        // SAFETY: output pointer from the caller.
        Some((_, text)) => unsafe { write(out, text.as_ptr()) },
        None => INVALID_VALUE,
    }
}

/// `cuInit`.
#[unsafe(no_mangle)]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    record("cuInit", || json!({ "flags": flags })).unwrap_or(SUCCESS)
}

/// `cuDeviceGet`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    if let Some(code) = record("cuDeviceGet", || json!({ "ordinal": ordinal })) {
        return code;
    }
    if !(0..DEVICES).contains(&ordinal) {
        return INVALID_DEVICE;
    }
    // SAFETY: output pointer from the caller.
    unsafe { write(device, device_base() + ordinal) }
}

/// `cuCtxGetCurrent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut usize) -> CUresult {
    if let Some(code) = record("cuCtxGetCurrent", || json!({})) {
        return code;
    }
    let current = THREAD.with(|t| t.borrow().current);
    // SAFETY: output pointer from the caller.
    unsafe { write(ctx, current) }
}

/// `cuCtxGetDevice`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut c_int) -> CUresult {
    if let Some(code) = record("cuCtxGetDevice", || json!({})) {
        return code;
    }
    match context_device(THREAD.with(|t| t.borrow().current)) {
        // SAFETY: output pointer from the caller.
        Some(ordinal) => unsafe { write(device, device_base() + ordinal) },
        None => INVALID_CONTEXT,
    }
}

/// `cuCtxSetCurrent`.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCurrent(ctx: usize) -> CUresult {
    if let Some(code) = record("cuCtxSetCurrent", || json!({ "ctx": context_name(ctx) })) {
        return code;
    }
    if ctx != 0 && context_device(ctx).is_none() {
        return INVALID_CONTEXT;
    }
    THREAD.with(|t| t.borrow_mut().current = ctx);
    SUCCESS
}

/// `cuDevicePrimaryCtxRetain`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut usize, device: c_int) -> CUresult {
    if let Some(code) = record("cuDevicePrimaryCtxRetain", || json!({ "device": device })) {
        return code;
    }
    let ordinal = device - device_base();
    if !(0..DEVICES).contains(&ordinal) {
        return INVALID_DEVICE;
    }
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        if !t.active_primaries.contains(&ordinal) {
            t.active_primaries.push(ordinal);
        }
    });
    // SAFETY: output pointer from the caller.
    unsafe { write(ctx, PRIMARY + 16 * ordinal as usize) }
}

/// `cuLibraryLoadData`: reads the kernels declared in the image.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut usize,
    image: *const c_char,
    _jit_options: *mut c_void,
    _jit_values: *mut *mut c_void,
    num_jit_options: c_uint,
    _library_options: *mut c_void,
    _library_values: *mut *mut c_void,
    num_library_options: c_uint,
) -> CUresult {
    // SAFETY: the caller passes a complete image (NUL-terminated text or an ELF cubin).
    let image = unsafe { image::read(image) };
    let fields = json!({
        "image": image.summary,
        "image_len": image.len,
        "options": num_jit_options + num_library_options,
    });
    if let Some(code) = record("cuLibraryLoadData", || fields) {
        return code;
    }
    let Some(kernels) = image.kernels else {
        return INVALID_IMAGE;
    };
    let ids = module_api::register(kernels);
    let handle = registry(|r| {
        r.libraries.push(Some(ids));
        r.libraries.len()
    });
    // SAFETY: output pointer from the caller.
    unsafe { write(library, handle) }
}

/// `cuLibraryUnload`.
#[unsafe(no_mangle)]
pub extern "C" fn cuLibraryUnload(library: usize) -> CUresult {
    if let Some(code) = record("cuLibraryUnload", || json!({ "library": library })) {
        return code;
    }
    registry(
        |r| match library.checked_sub(1).and_then(|i| r.libraries.get_mut(i)) {
            Some(slot @ Some(_)) => {
                *slot = None;
                SUCCESS
            }
            _ => INVALID_HANDLE,
        },
    )
}

/// `cuLibraryGetKernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut usize,
    library: usize,
    name: *const c_char,
) -> CUresult {
    // SAFETY: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    if let Some(code) = record("cuLibraryGetKernel", || json!({ "name": name })) {
        return code;
    }
    let found = registry(|r| {
        let ids = r.libraries.get(library.checked_sub(1)?)?.as_ref()?;
        ids.iter().copied().find(|&id| r.kernels[id].name == name)
    });
    match found {
        // SAFETY: output pointer from the caller.
        Some(id) => unsafe { write(kernel, id + 1) },
        None => NOT_FOUND,
    }
}

/// `cuKernelSetAttribute`.
#[unsafe(no_mangle)]
pub extern "C" fn cuKernelSetAttribute(
    attr: c_int,
    value: c_int,
    kernel: usize,
    device: c_int,
) -> CUresult {
    let name = registry(|r| {
        kernel
            .checked_sub(1)
            .and_then(|i| r.kernels.get(i))
            .map(|k| k.name.clone())
    });
    let fields = json!({ "attr": attr, "value": value, "kernel": name, "device": device });
    if let Some(code) = record("cuKernelSetAttribute", || fields) {
        return code;
    }
    let ordinal = device - device_base();
    if value < 0 || !(0..DEVICES).contains(&ordinal) {
        return INVALID_VALUE;
    }
    registry(
        |r| match kernel.checked_sub(1).and_then(|i| r.kernels.get_mut(i)) {
            Some(k) if attr == MAX_DYNAMIC_SHARED => {
                if value as u32 + k.static_shared > OPTIN_SHARED_MEM {
                    return INVALID_VALUE;
                }
                k.shared_mem.insert(ordinal, value as u32);
                SUCCESS
            }
            Some(k) if attr == NON_PORTABLE_CLUSTER => {
                k.non_portable.retain(|d| *d != ordinal);
                if value != 0 {
                    k.non_portable.push(ordinal);
                }
                SUCCESS
            }
            Some(_) => INVALID_VALUE,
            None => INVALID_HANDLE,
        },
    )
}

/// `cuKernelGetAttribute`: a kernel's static shared memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(
    out: *mut c_int,
    attr: c_int,
    kernel: usize,
    device: c_int,
) -> CUresult {
    let found = registry(|r| {
        let k = r.kernels.get(kernel.checked_sub(1)?)?;
        Some((k.name.clone(), k.static_shared))
    });
    let fields = json!({
        "attr": attr,
        "kernel": found.as_ref().map(|k| k.0.clone()),
        "device": device,
    });
    if let Some(code) = record("cuKernelGetAttribute", || fields) {
        return code;
    }
    let Some((_, static_shared)) = found else {
        return INVALID_HANDLE;
    };
    if attr != SHARED_SIZE_BYTES || !(0..DEVICES).contains(&(device - device_base())) {
        return INVALID_VALUE;
    }
    // SAFETY: output pointer from the caller.
    unsafe { write(out, static_shared as c_int) }
}

/// `cuDriverGetVersion`: 13000 unless `safecall_fake_cuda_set_driver_version` said otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(out: *mut c_int) -> CUresult {
    if let Some(code) = record("cuDriverGetVersion", || json!({})) {
        return code;
    }
    let version = THREAD.with(|t| t.borrow().driver_version);
    let version = if version == 0 {
        DEFAULT_DRIVER_VERSION
    } else {
        version
    };
    // SAFETY: output pointer from the caller.
    unsafe { write(out, version) }
}

/// Sets what `cuDriverGetVersion` reports on this thread (0: the default, 13000).
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_set_driver_version(version: c_int) {
    THREAD.with(|t| t.borrow_mut().driver_version = version);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_know_their_device() {
        assert_eq!(context_device(PRIMARY + 16), Some(1));
        assert_eq!(context_device(USER), Some(0));
        assert_eq!(context_device(0), None);
        assert_eq!(context_device(PRIMARY + 16 * DEVICES as usize), None);
    }
}
