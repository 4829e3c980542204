//! `_native.CUDA`: the CUDA driver API constants the Python side passes to the driver
//! through ctypes (safecall's Triton driver, the self-test), taken from cudarc's
//! `driver::sys` (CUDA 12.8 headers), the project's one source of CUDA facts.

use cudarc::driver::sys::{
    CUdevice_attribute_enum as Dev, CUfunc_cache_enum as Cache, CUfunction_attribute_enum as Func,
    CUlaunchAttributeID_enum as Launch, CUlimit_enum as Limit,
    CUtensorMapFloatOOBfill_enum as OobFill, CUtensorMapL2promotion_enum as L2,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Adds the `CUDA` dict (name without its `CU_` prefix -> value) to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let d = PyDict::new(m.py());
    let entries: &[(&str, i64)] = &[
        (
            "DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
            Dev::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_WARP_SIZE",
            Dev::CU_DEVICE_ATTRIBUTE_WARP_SIZE as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK",
            Dev::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_CLOCK_RATE",
            Dev::CU_DEVICE_ATTRIBUTE_CLOCK_RATE as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
            Dev::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE",
            Dev::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH",
            Dev::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
            Dev::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
            Dev::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH",
            Dev::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
            Dev::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR as i64,
        ),
        (
            "DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
            Dev::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as i64,
        ),
        (
            "FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
            Func::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as i64,
        ),
        (
            "FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
            Func::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as i64,
        ),
        (
            "FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
            Func::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES as i64,
        ),
        (
            "FUNC_ATTRIBUTE_NUM_REGS",
            Func::CU_FUNC_ATTRIBUTE_NUM_REGS as i64,
        ),
        (
            "FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
            Func::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as i64,
        ),
        (
            "FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
            Func::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as i64,
        ),
        (
            "FUNC_CACHE_PREFER_SHARED",
            Cache::CU_FUNC_CACHE_PREFER_SHARED as i64,
        ),
        (
            "LIMIT_PRINTF_FIFO_SIZE",
            Limit::CU_LIMIT_PRINTF_FIFO_SIZE as i64,
        ),
        (
            "LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION",
            Launch::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION as i64,
        ),
        (
            "TENSOR_MAP_L2_PROMOTION_L2_128B",
            L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B as i64,
        ),
        (
            "TENSOR_MAP_FLOAT_OOB_FILL_NONE",
            OobFill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE as i64,
        ),
        (
            "TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA",
            OobFill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA as i64,
        ),
    ];
    for (name, value) in entries {
        d.set_item(*name, *value)?;
    }
    m.add("CUDA", d)
}
