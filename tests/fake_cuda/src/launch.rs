//! `cuLaunchKernelEx`: the launch record (configuration, every launch attribute, each
//! argument's bytes) and the checks a real driver makes before it launches (and one it does
//! not: 128-byte parameters, TMA descriptors, from 64-byte aligned storage).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cudarc::driver::sys::{CUlaunchAttributeID_enum, CUlaunchConfig};
use serde_json::{Value, json};

use super::{
    CO_RESIDENT_BLOCKS_PER_SM, COOPERATIVE_LAUNCH_TOO_LARGE, CUresult, DEFAULT_SHARED_MEM,
    INVALID_CLUSTER_SIZE, INVALID_CONTEXT, INVALID_HANDLE, INVALID_VALUE, MULTIPROCESSORS,
    NON_PORTABLE_CLUSTER_MAX, OPTIN_SHARED_MEM, PORTABLE_CLUSTER, QUIET, SUCCESS, THREAD,
    context_device, context_name, record, registry,
};

/// Microseconds each `cuLaunchKernelEx` sleeps before it returns (0: none), as a real launch
/// blocks while the driver's queue of pending launches is full.
static LAUNCH_DELAY_US: AtomicU64 = AtomicU64::new(0);

/// Process-wide: each later `cuLaunchKernelEx` sleeps `us` microseconds (0: not at all), so
/// that tests can see whether the caller holds a lock (Python's) during the launch.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_launch_delay(us: u64) {
    LAUNCH_DELAY_US.store(us, Ordering::Relaxed);
}

/// Whether launch records name the `CUfunction` launched (`"function"`).
static RECORD_FUNCTIONS: AtomicBool = AtomicBool::new(false);

/// Process-wide: non-zero adds the launched `CUfunction` handle to each later launch record
/// (`"function"`), so that a test can tell which of two kernels of one name was launched;
/// zero (the default) leaves it out, so that the records of launchers that loaded the same
/// kernel each for themselves compare equal.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_fake_cuda_record_functions(on: c_int) {
    RECORD_FUNCTIONS.store(on != 0, Ordering::Relaxed);
}

/// `cuLaunchKernelEx`: checks like a driver, records the launch with its argument bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const CUlaunchConfig,
    f: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    if config.is_null() {
        return INVALID_VALUE;
    }
    let delay = LAUNCH_DELAY_US.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_micros(delay));
    }
    if QUIET.load(Ordering::Relaxed) {
        return SUCCESS;
    }
    // SAFETY: the caller passes a valid configuration.
    let c = unsafe { &*config };
    let ctx = THREAD.with(|t| t.borrow().current);
    let kernel = registry(|r| {
        let k = r.kernels.get(f.checked_sub(1)?)?;
        Some((
            k.name.clone(),
            k.params.clone(),
            (
                k.shared_mem.clone(),
                k.static_shared,
                k.non_portable.clone(),
            ),
        ))
    });
    // SAFETY: `attrs` holds `numAttrs` attributes.
    let attrs = unsafe { Attributes::read(c) };
    let args: Vec<String> = match &kernel {
        Some((_, sizes, _)) => sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                // SAFETY: `params` holds one pointer per kernel parameter, each to `size` bytes.
                let bytes =
                    unsafe { std::slice::from_raw_parts((*params.add(i)).cast::<u8>(), size) };
                bytes.iter().map(|b| format!("{b:02x}")).collect()
            })
            .collect(),
        None => Vec::new(),
    };
    let mut fields = json!({
        "kernel": kernel.as_ref().map(|k| k.0.clone()),
        "ctx": context_name(ctx),
        "grid": [c.gridDimX, c.gridDimY, c.gridDimZ],
        "block": [c.blockDimX, c.blockDimY, c.blockDimZ],
        "attrs": attrs.ids,
        "cluster": attrs.cluster,
        "cluster_policy": attrs.cluster_policy,
        "preferred_cluster": attrs.preferred_cluster,
        "pdl": attrs.pdl,
        "cooperative": attrs.cooperative,
        "priority": attrs.priority,
        "shared_mem": c.sharedMemBytes,
        "stream": c.hStream as usize,
        "args": args,
        "extra": !extra.is_null(),
    });
    if RECORD_FUNCTIONS.load(Ordering::Relaxed) {
        fields["function"] = json!(f);
    }
    if let Some(code) = record("cuLaunchKernelEx", || fields) {
        return code;
    }
    let Some((_, sizes, (opted_in, static_shared, non_portable))) = kernel else {
        return INVALID_HANDLE;
    };
    // Stricter than a driver (which copies parameters from anywhere): a 128-byte parameter (a
    // TMA descriptor) must come from 64-byte aligned storage, as Triton and CUTLASS keep it.
    for (i, &size) in sizes.iter().enumerate() {
        // SAFETY: `params` holds one pointer per kernel parameter.
        if size == 128 && !(unsafe { *params.add(i) } as usize).is_multiple_of(64) {
            return INVALID_VALUE;
        }
    }
    let Some(ordinal) = context_device(ctx) else {
        return INVALID_CONTEXT;
    };
    let dims = [
        c.gridDimX,
        c.gridDimY,
        c.gridDimZ,
        c.blockDimX,
        c.blockDimY,
        c.blockDimZ,
    ];
    if dims.contains(&0) {
        return INVALID_VALUE;
    }
    let shared = c.sharedMemBytes.saturating_add(static_shared);
    if shared > OPTIN_SHARED_MEM
        || (shared > DEFAULT_SHARED_MEM
            && opted_in.get(&ordinal).copied().unwrap_or(0) < c.sharedMemBytes)
    {
        return INVALID_VALUE;
    }
    if let Some([x, y, z]) = attrs.cluster_dims {
        let blocks = u64::from(x) * u64::from(y) * u64::from(z);
        let limit = if non_portable.contains(&ordinal) {
            NON_PORTABLE_CLUSTER_MAX
        } else {
            PORTABLE_CLUSTER
        };
        if blocks == 0 || blocks > u64::from(limit) {
            return INVALID_CLUSTER_SIZE;
        }
    }
    if attrs.preferred_cluster_dims.is_some() {
        let version = THREAD.with(|t| t.borrow().driver_version);
        if version != 0 && version < 12080 {
            return INVALID_VALUE;
        }
    }
    if attrs.cooperative == json!(1) {
        let blocks = u64::from(c.gridDimX) * u64::from(c.gridDimY) * u64::from(c.gridDimZ);
        if blocks > u64::from(MULTIPROCESSORS * CO_RESIDENT_BLOCKS_PER_SM) {
            return COOPERATIVE_LAUNCH_TOO_LARGE;
        }
    }
    SUCCESS
}

/// The attributes of a launch configuration, as the launch record shows them.
struct Attributes {
    ids: Vec<u32>,
    cluster: Value,
    cluster_dims: Option<[u32; 3]>,
    cluster_policy: Value,
    preferred_cluster: Value,
    preferred_cluster_dims: Option<[u32; 3]>,
    pdl: Value,
    cooperative: Value,
    priority: Value,
}

impl Attributes {
    /// # Safety
    /// `c.attrs` holds `c.numAttrs` attributes.
    unsafe fn read(c: &CUlaunchConfig) -> Self {
        use CUlaunchAttributeID_enum as Id;
        let mut out = Attributes {
            ids: Vec::new(),
            cluster: Value::Null,
            cluster_dims: None,
            cluster_policy: Value::Null,
            preferred_cluster: Value::Null,
            preferred_cluster_dims: None,
            pdl: Value::Null,
            cooperative: Value::Null,
            priority: Value::Null,
        };
        for i in 0..c.numAttrs as usize {
            // SAFETY: `attrs` holds `numAttrs` attributes (the caller's promise).
            let a = unsafe { &*c.attrs.add(i) };
            out.ids.push(a.id as u32);
            // SAFETY: each arm reads the union member its attribute id selects.
            unsafe {
                match a.id {
                    Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION => {
                        let d = a.value.clusterDim;
                        out.cluster = json!([d.x, d.y, d.z]);
                        out.cluster_dims = Some([d.x, d.y, d.z]);
                    }
                    Id::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION => {
                        let d = a.value.preferredClusterDim;
                        out.preferred_cluster = json!([d.x, d.y, d.z]);
                        out.preferred_cluster_dims = Some([d.x, d.y, d.z]);
                    }
                    Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE => {
                        out.cluster_policy =
                            json!(a.value.clusterSchedulingPolicyPreference as u32);
                    }
                    Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION => {
                        out.pdl = json!(a.value.programmaticStreamSerializationAllowed);
                    }
                    Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE => {
                        out.cooperative = json!(a.value.cooperative);
                    }
                    Id::CU_LAUNCH_ATTRIBUTE_PRIORITY => out.priority = json!(a.value.priority),
                    _ => {}
                }
            }
        }
        out
    }
}
