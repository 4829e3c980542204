//! `hipModuleLaunchKernel`, `hipModuleLaunchCooperativeKernel` and `hipDrvLaunchKernelEx`: the
//! launch record and the checks the runtime makes before it launches.
//!
//! The record (`call` is the entry's name): `kernel` (its name; null for an unknown handle),
//! `device` (the thread's current device), `grid` and `block` (`[x, y, z]`, as passed),
//! `shared_mem` (dynamic LDS in bytes), `stream` (the handle as an integer), `args` (one hex
//! string per explicit kernel argument, exactly its size in bytes, read through
//! `kernelParams[i]`; empty when `kernelParams` is null) and `extra` (whether `extra` is
//! non-null). `hipDrvLaunchKernelEx`'s record adds its configuration's attributes: `attrs`
//! (their ids, in order), `cluster` (the cluster dimension attribute's three `int`s, or null)
//! and `cooperative` (the cooperative attribute's value, or null); a cooperative value other
//! than 0 is checked as a cooperative launch.
//!
//! The checks, in the order of clr's `ihipModuleLaunchKernel` and `ihipLaunchKernel_validate`
//! (`hipamd/src/hip_module.cpp`), each with HIP's answer:
//! - a function of a loaded module, else `hipErrorInvalidHandle` (HIP: a null function is
//!   `hipErrorInvalidResourceHandle`, the same code; an unloaded one is undefined there);
//! - not both `kernelParams` and `extra`: `hipErrorInvalidValue`;
//! - a non-zero grid (`hipErrorInvalidValue`) and a non-zero block (`hipErrorInvalidConfiguration`);
//! - static plus dynamic LDS at most 64 KiB (`hipErrorInvalidValue`);
//! - at most 1024 threads per block (`hipErrorInvalidValue`);
//! - `kernelParams` or `extra` when the kernel has arguments (`hipErrorInvalidValue`);
//! - the function's device is the current one, else `hipErrorInvalidDevice` (HIP: the kernel
//!   has no code for the launch's device);
//! - at most the kernel's `.max_flat_workgroup_size` threads per block (`hipErrorLaunchFailure`);
//! - a cooperative grid fits on the device at once (304 compute units times
//!   [`CO_RESIDENT_BLOCKS_PER_CU`] blocks), else `hipErrorCooperativeLaunchTooLarge`.
//!
//! The launch device is the current device: the double's streams are plain numbers, all of
//! them on the current device (HIP takes the stream's device; for the null stream, the current
//! one).

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

use serde_json::json;

use super::abi::{self, HipError, hipErrorInvalidValue, hipSuccess};
use super::runtime::{CO_RESIDENT_BLOCKS_PER_CU, MAX_BLOCK, MAX_SHARED, MULTIPROCESSORS};
use super::{QUIET, call, current_device, module, registry};

/// One launch as the entry points receive it.
struct Launch {
    function: usize,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    stream: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
    /// `hipDrvLaunchKernelEx`'s attributes, as its record shows them.
    attributes: Option<Attributes>,
}

/// The attributes of a `HIP_LAUNCH_CONFIG`.
struct Attributes {
    ids: Vec<c_int>,
    cluster: Option<[c_int; 3]>,
    cooperative: Option<c_int>,
}

impl Attributes {
    /// Reads `count` attributes at `attrs`.
    ///
    /// # Safety
    /// `attrs` points at `count` attributes of `abi::launch_layout::ATTR_SIZE` bytes each.
    unsafe fn read(attrs: *const u8, count: c_uint) -> Attributes {
        use abi::launch_layout::{ATTR_ID, ATTR_SIZE, ATTR_VALUE};
        let mut out = Attributes {
            ids: Vec::new(),
            cluster: None,
            cooperative: None,
        };
        for i in 0..count as usize {
            let base = i * ATTR_SIZE;
            // SAFETY: the caller's promise: attribute `i` lies at `attrs + base`, an `int` id
            // then a 64-byte value, of which the first three `int`s are read.
            let int = |at: usize| unsafe { read_at::<c_int>(attrs, base + at) };
            let id = int(ATTR_ID);
            out.ids.push(id);
            if id == abi::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {
                out.cluster = Some([0, 4, 8].map(|o| int(ATTR_VALUE + o)));
            } else if id == abi::hipLaunchAttributeCooperative {
                out.cooperative = Some(int(ATTR_VALUE));
            }
        }
        out
    }
}

/// The `T` at `base + offset`, read unaligned.
///
/// # Safety
/// `base + offset` is valid for reading `size_of::<T>()` bytes.
unsafe fn read_at<T: Copy>(base: *const u8, offset: usize) -> T {
    // SAFETY: the caller's promise.
    unsafe { base.add(offset).cast::<T>().read_unaligned() }
}

/// What a launch needs to know of its kernel.
struct Target {
    name: String,
    params: Vec<usize>,
    static_lds: u32,
    max_threads: u32,
    device: i32,
    loaded: bool,
}

fn target(function: usize) -> Option<Target> {
    let id = module::kernel_id(function)?;
    Some(registry(|r| {
        let k = &r.kernels[id];
        let m = &r.modules[k.module];
        Target {
            name: k.name.clone(),
            params: k.params.clone(),
            static_lds: k.info.static_lds,
            max_threads: k.info.max_threads,
            device: m.device,
            loaded: m.loaded,
        }
    }))
}

/// Each explicit argument's bytes as hex.
///
/// # Safety
/// `params` is null or holds one pointer per size in `sizes`, each to that many bytes.
unsafe fn argument_bytes(params: *mut *mut c_void, sizes: &[usize]) -> Vec<String> {
    if params.is_null() {
        return Vec::new();
    }
    let hex = |(i, &size): (usize, &usize)| {
        // SAFETY: the caller's promise: `params[i]` points at `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts((*params.add(i)).cast::<u8>(), size) };
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    };
    sizes.iter().enumerate().map(hex).collect()
}

/// Records a launch, then checks it as the runtime does.
///
/// # Safety
/// `l.params` is null or holds one pointer per explicit argument of the kernel.
unsafe fn launch(entry: &str, l: Launch) -> HipError {
    if QUIET.load(Ordering::Relaxed) {
        return hipSuccess;
    }
    let target = target(l.function);
    let device = current_device();
    let fields = || {
        let sizes = target.as_ref().map_or(&[][..], |t| &t.params[..]);
        let mut record = json!({
            "kernel": target.as_ref().map(|t| t.name.clone()),
            "device": device,
            "grid": l.grid,
            "block": l.block,
            "shared_mem": l.shared_mem,
            "stream": l.stream,
            // SAFETY: the caller's promise about `params`.
            "args": unsafe { argument_bytes(l.params, sizes) },
            "extra": !l.extra.is_null(),
        });
        if let Some(a) = &l.attributes {
            record["attrs"] = json!(a.ids);
            record["cluster"] = json!(a.cluster);
            record["cooperative"] = json!(a.cooperative);
        }
        record
    };
    call(entry, fields, || check(&l, target.as_ref(), device))
}

fn check(l: &Launch, target: Option<&Target>, device: i32) -> HipError {
    let Some(t) = target.filter(|t| t.loaded) else {
        return abi::hipErrorInvalidHandle;
    };
    if !l.params.is_null() && !l.extra.is_null() {
        return hipErrorInvalidValue;
    }
    if l.grid.contains(&0) {
        return hipErrorInvalidValue;
    }
    if l.block.contains(&0) {
        return abi::hipErrorInvalidConfiguration;
    }
    if u64::from(l.shared_mem) + u64::from(t.static_lds) > u64::from(MAX_SHARED) {
        return hipErrorInvalidValue;
    }
    let threads = l.block.iter().map(|&d| u64::from(d)).product::<u64>();
    if threads > u64::from(MAX_BLOCK) {
        return hipErrorInvalidValue;
    }
    if !t.params.is_empty() && l.params.is_null() && l.extra.is_null() {
        return hipErrorInvalidValue;
    }
    if t.device != device {
        return abi::hipErrorInvalidDevice;
    }
    if threads > u64::from(t.max_threads) {
        return abi::hipErrorLaunchFailure;
    }
    let blocks = l.grid.iter().map(|&d| u64::from(d)).product::<u64>();
    if l.cooperative && blocks > u64::from(MULTIPROCESSORS * CO_RESIDENT_BLOCKS_PER_CU) {
        return abi::hipErrorCooperativeLaunchTooLarge;
    }
    hipSuccess
}

/// `hipModuleLaunchKernel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    function: usize,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_mem: c_uint,
    stream: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> HipError {
    if QUIET.load(Ordering::Relaxed) {
        // Benchmark mode: nothing to record or check (`launch` would return the same).
        return hipSuccess;
    }
    let l = Launch {
        function,
        grid: [grid_x, grid_y, grid_z],
        block: [block_x, block_y, block_z],
        shared_mem,
        stream,
        params,
        extra,
        cooperative: false,
        attributes: None,
    };
    // SAFETY: the caller passes one parameter pointer per kernel argument.
    unsafe { launch("hipModuleLaunchKernel", l) }
}

/// `hipModuleLaunchCooperativeKernel` (no `extra`, as in `hip_runtime_api.h`; Triton's launcher
/// declares and passes an eleventh argument, a null `extra`, which the C calling convention
/// lets the double ignore).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLaunchCooperativeKernel(
    function: usize,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_mem: c_uint,
    stream: usize,
    params: *mut *mut c_void,
) -> HipError {
    if QUIET.load(Ordering::Relaxed) {
        // Benchmark mode: nothing to record or check (`launch` would return the same).
        return hipSuccess;
    }
    let l = Launch {
        function,
        grid: [grid_x, grid_y, grid_z],
        block: [block_x, block_y, block_z],
        shared_mem,
        stream,
        params,
        extra: std::ptr::null_mut(),
        cooperative: true,
        attributes: None,
    };
    // SAFETY: the caller passes one parameter pointer per kernel argument.
    unsafe { launch("hipModuleLaunchCooperativeKernel", l) }
}

/// `hipDrvLaunchKernelEx(config, f, kernelParams, extra)` (Triton 3.9's AMD launcher calls it for
/// `num_ctas` above 1): the configuration read through
/// [`abi::launch_layout`], then the checks of the other launches. A null configuration, or
/// attributes missing where `numAttrs` counts some, is `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDrvLaunchKernelEx(
    config: *const u8,
    function: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> HipError {
    use abi::launch_layout as at;
    const NAME: &str = "hipDrvLaunchKernelEx";
    let invalid = || call(NAME, || json!({}), || hipErrorInvalidValue);
    if config.is_null() {
        return invalid();
    }
    // SAFETY: a non-null configuration of `CONFIG_SIZE` bytes (the caller's promise); every
    // offset read below lies inside it.
    let u32_at = |o: usize| unsafe { read_at::<c_uint>(config, o) };
    // SAFETY: as above.
    let ptr_at = |o: usize| unsafe { read_at::<usize>(config, o) };
    let count = u32_at(at::CONFIG_NUM_ATTRS);
    let attrs = ptr_at(at::CONFIG_ATTRS) as *const u8;
    if count > 0 && attrs.is_null() {
        return invalid();
    }
    // SAFETY: `attrs` holds `count` attributes (the caller's promise).
    let attributes = unsafe { Attributes::read(attrs, count) };
    let l = Launch {
        function,
        grid: [at::CONFIG_GRID_X, at::CONFIG_GRID_Y, at::CONFIG_GRID_Z].map(u32_at),
        block: [at::CONFIG_BLOCK_X, at::CONFIG_BLOCK_Y, at::CONFIG_BLOCK_Z].map(u32_at),
        shared_mem: u32_at(at::CONFIG_SHARED_MEM),
        stream: ptr_at(at::CONFIG_STREAM),
        params,
        extra,
        cooperative: attributes.cooperative.is_some_and(|c| c != 0),
        attributes: Some(attributes),
    };
    // SAFETY: the caller passes one parameter pointer per kernel argument.
    unsafe { launch(NAME, l) }
}
