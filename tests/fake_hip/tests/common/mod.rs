//! What the double's tests share: the fixture, the records, and calls that must succeed.

#![allow(dead_code)]

use std::ffi::{CString, c_void};

use safecall_fake_hip::abi::{HipError, hipSuccess};
use safecall_fake_hip::*;
use serde_json::Value;

/// Five kernels for gfx942 (tests/kernel_params/README.md).
pub const KERNELS: &[u8] = include_bytes!("../../../kernel_params/kernels_gfx942.hsaco");

/// This thread's records.
pub fn records() -> Vec<Value> {
    // SAFETY: a null buffer asks for the length only; then a buffer of that length plus NUL.
    let n = unsafe { safecall_fake_hip_log(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u8; n + 1];
    // SAFETY: `buf` has `n + 1` bytes.
    unsafe { safecall_fake_hip_log(buf.as_mut_ptr().cast(), buf.len()) };
    let text = std::str::from_utf8(&buf[..n]).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// This thread's last record.
pub fn last() -> Value {
    records().pop().expect("a record")
}

pub fn ok(code: HipError) {
    assert_eq!(code, hipSuccess, "{:?}", last());
}

/// Loads `image` on the current device.
pub fn load(image: &[u8]) -> Result<usize, HipError> {
    let mut module = 0usize;
    // SAFETY: a complete image.
    match unsafe { hipModuleLoadData(&mut module, image.as_ptr().cast()) } {
        0 => Ok(module),
        code => Err(code),
    }
}

pub fn function(module: usize, name: &str) -> Result<usize, HipError> {
    let name = CString::new(name).unwrap();
    let mut f = 0usize;
    // SAFETY: a NUL-terminated name and an output pointer.
    match unsafe { hipModuleGetFunction(&mut f, module, name.as_ptr()) } {
        0 => Ok(f),
        code => Err(code),
    }
}

/// Launches `f` with one block of `threads` and these argument bytes.
pub fn launch(
    f: usize,
    grid: [u32; 3],
    threads: u32,
    shared: u32,
    args: &mut [&mut [u8]],
) -> HipError {
    let mut params: Vec<*mut c_void> = args.iter_mut().map(|a| a.as_mut_ptr().cast()).collect();
    // SAFETY: one pointer per argument, each to its bytes.
    unsafe {
        hipModuleLaunchKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            threads,
            1,
            1,
            shared,
            0x5000,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

pub fn name(code: HipError) -> String {
    // SAFETY: HIP's names are static NUL-terminated strings.
    unsafe { std::ffi::CStr::from_ptr(hipGetErrorName(code)) }
        .to_string_lossy()
        .into_owned()
}
