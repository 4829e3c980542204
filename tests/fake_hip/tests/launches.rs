//! Modules, functions and launches on the double.

mod common;

use std::ffi::c_void;

use common::{KERNELS, function, last, launch, load, ok, records};
use safecall_fake_hip::abi;
use safecall_fake_hip::*;
use serde_json::json;

#[test]
fn a_launch_records_each_explicit_arguments_bytes() {
    safecall_fake_hip_reset();
    let module = load(KERNELS).unwrap();
    assert_eq!(
        records()[0],
        json!({ "call": "hipModuleLoadData", "device": 0, "image": "code object", "image_len": KERNELS.len(), "options": null })
    );
    let f = function(module, "scale").unwrap();
    let mut p = 0x7f00_0000_1000u64.to_le_bytes();
    let mut a = 1.5f32.to_le_bytes();
    let mut flag = [1u8];
    let mut b = 2.0f64.to_le_bytes();
    let mut h = 0x1234u16.to_le_bytes();
    ok(launch(
        f,
        [3, 2, 1],
        256,
        128,
        &mut [&mut p, &mut a, &mut flag, &mut b, &mut h],
    ));
    assert_eq!(
        last(),
        json!({
            "call": "hipModuleLaunchKernel", "kernel": "scale", "device": 0,
            "grid": [3, 2, 1], "block": [256, 1, 1], "shared_mem": 128, "stream": 0x5000,
            "args": ["00100000007f0000", "0000c03f", "01", "0000000000000040", "3412"],
            "extra": false,
        })
    );
    let e = function(module, "empty").unwrap();
    ok(launch(e, [1, 1, 1], 64, 0, &mut []));
    assert_eq!(last()["args"], json!([]));
}

#[test]
fn function_attributes_come_from_the_metadata() {
    safecall_fake_hip_reset();
    let module = load(KERNELS).unwrap();
    let attr = |name: &str, a: i32| {
        let mut v = -1;
        // SAFETY: an output pointer.
        let code = unsafe { hipFuncGetAttribute(&mut v, a, function(module, name).unwrap()) };
        assert_eq!(code, 0);
        v
    };
    assert_eq!(
        attr("staticky", abi::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        1024
    );
    assert_eq!(
        attr("add_one", abi::HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        0
    );
    assert_eq!(
        attr("add_one", abi::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        1024
    );
    assert_eq!(attr("add_one", abi::HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), 0);
    assert!(attr("add_one", abi::HIP_FUNC_ATTRIBUTE_NUM_REGS) > 0);
    assert_eq!(function(module, "nope"), Err(abi::hipErrorNotFound));
    let mut v = 0;
    // SAFETY: an output pointer; a module handle is not a function handle.
    let code = unsafe { hipFuncGetAttribute(&mut v, abi::HIP_FUNC_ATTRIBUTE_NUM_REGS, module) };
    assert_eq!(code, abi::hipErrorInvalidHandle);
}

#[test]
fn modules_are_per_device() {
    safecall_fake_hip_reset();
    let on_0 = load(KERNELS).unwrap();
    let f0 = function(on_0, "empty").unwrap();
    ok(hipSetDevice(1));
    assert_eq!(
        launch(f0, [1, 1, 1], 64, 0, &mut []),
        abi::hipErrorInvalidDevice
    );
    assert_eq!(last()["device"], 1);
    assert_eq!(function(on_0, "empty"), Err(abi::hipErrorInvalidDevice));
    let on_1 = load(KERNELS).unwrap();
    assert_eq!(last()["device"], 1);
    let f1 = function(on_1, "empty").unwrap();
    ok(launch(f1, [1, 1, 1], 64, 0, &mut []));
    ok(hipSetDevice(0));
    ok(launch(f0, [1, 1, 1], 64, 0, &mut []));
    assert_eq!(
        launch(f1, [1, 1, 1], 64, 0, &mut []),
        abi::hipErrorInvalidDevice
    );
}

#[test]
fn launches_are_checked_as_the_runtime_checks_them() {
    safecall_fake_hip_reset();
    let module = load(KERNELS).unwrap();
    let empty = function(module, "empty").unwrap();
    let staticky = function(module, "staticky").unwrap();
    let mut p = [0u8; 8];
    assert_eq!(
        launch(empty, [0, 1, 1], 64, 0, &mut []),
        abi::hipErrorInvalidValue
    );
    assert_eq!(
        launch(empty, [1, 1, 1], 0, 0, &mut []),
        abi::hipErrorInvalidConfiguration
    );
    assert_eq!(
        launch(empty, [1, 1, 1], 1025, 0, &mut []),
        abi::hipErrorInvalidValue
    );
    ok(launch(
        staticky,
        [1, 1, 1],
        64,
        65_536 - 1024,
        &mut [&mut p],
    ));
    let too_much = launch(staticky, [1, 1, 1], 64, 65_536 - 1023, &mut [&mut p]);
    assert_eq!(too_much, abi::hipErrorInvalidValue);
    assert_eq!(
        launch(0x1234, [1, 1, 1], 64, 0, &mut []),
        abi::hipErrorInvalidHandle
    );
    assert_eq!(last()["kernel"], json!(null));
    // A kernel with arguments needs `kernelParams` (or `extra`).
    // SAFETY: null parameter arrays.
    let code = unsafe {
        hipModuleLaunchKernel(
            staticky,
            1,
            1,
            1,
            64,
            1,
            1,
            0,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(code, abi::hipErrorInvalidValue);
    ok(hipModuleUnload(module));
    assert_eq!(
        launch(empty, [1, 1, 1], 64, 0, &mut []),
        abi::hipErrorInvalidHandle
    );
    assert_eq!(hipModuleUnload(module), abi::hipErrorInvalidHandle);
    assert_eq!(function(module, "empty"), Err(abi::hipErrorInvalidHandle));
}

#[test]
fn cooperative_grids_must_fit_on_the_device() {
    safecall_fake_hip_reset();
    let f = function(load(KERNELS).unwrap(), "empty").unwrap();
    let cooperative = |blocks: u32| {
        // SAFETY: the kernel has no arguments.
        unsafe {
            hipModuleLaunchCooperativeKernel(f, blocks, 1, 1, 64, 1, 1, 0, 7, std::ptr::null_mut())
        }
    };
    ok(cooperative(608));
    assert_eq!(last()["call"], "hipModuleLaunchCooperativeKernel");
    assert_eq!(last()["stream"], 7);
    assert_eq!(cooperative(609), abi::hipErrorCooperativeLaunchTooLarge);
}

/// A clang offload bundle of these entries (id, code object).
fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut header = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    header.extend((entries.len() as u64).to_le_bytes());
    let table: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
    let mut offset = (header.len() + table).next_multiple_of(4096);
    let mut body = Vec::new();
    for (id, code) in entries {
        header.extend((offset as u64).to_le_bytes());
        header.extend((code.len() as u64).to_le_bytes());
        header.extend((id.len() as u64).to_le_bytes());
        header.extend(id.as_bytes());
        body.push((offset, *code));
        offset = (offset + code.len()).next_multiple_of(4096);
    }
    for (at, code) in body {
        header.resize(at, 0);
        header.extend(code);
    }
    header
}

#[test]
fn bundles_load_their_gfx942_entry() {
    safecall_fake_hip_reset();
    let host: &[u8] = b"";
    let image = bundle(&[
        ("host-x86_64-unknown-linux-gnu-", host),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"not for this device"),
        ("hipv4-amdgcn-amd-amdhsa--gfx942", KERNELS),
    ]);
    let module = load(&image).unwrap();
    assert_eq!(records()[0]["image"], "offload bundle");
    assert_eq!(records()[0]["image_len"], image.len());
    function(module, "add_one").unwrap();
    let other = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", KERNELS)]);
    assert_eq!(load(&other), Err(abi::hipErrorNoBinaryForGpu));
    let features = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx942:xnack+", KERNELS)]);
    assert_eq!(load(&features), Err(abi::hipErrorNoBinaryForGpu));
}

#[test]
fn unreadable_images_are_invalid() {
    safecall_fake_hip_reset();
    assert_eq!(
        load(b"FAKE_INVALID_IMAGE\0"),
        Err(abi::hipErrorInvalidImage)
    );
    assert_eq!(load(b"some text\0"), Err(abi::hipErrorInvalidImage));
    let mut marked = KERNELS.to_vec();
    let at = marked.len() - 32;
    marked[at..at + 18].copy_from_slice(b"FAKE_INVALID_IMAGE");
    assert_eq!(load(&marked), Err(abi::hipErrorInvalidImage));
    // A code object for another processor (gfx90a's `EF_AMDGPU_MACH`, 0x3f).
    let mut gfx90a = KERNELS.to_vec();
    gfx90a[48] = 0x3f;
    assert_eq!(load(&gfx90a), Err(abi::hipErrorNoBinaryForGpu));
    let cubin = include_bytes!("../../kernel_params/scale_sm90.cubin");
    assert_eq!(load(cubin), Err(abi::hipErrorInvalidImage));
    let mut module = 0usize;
    // SAFETY: a null image is refused.
    let code = unsafe { hipModuleLoadData(&mut module, std::ptr::null::<c_void>()) };
    assert_eq!(code, abi::hipErrorInvalidValue);
}

#[test]
fn pointers_are_device_pointers_unless_null() {
    safecall_fake_hip_reset();
    let mut out = 0usize;
    let ptr = 0x7f00_0000_1000usize;
    let attr = abi::HIP_POINTER_ATTRIBUTE_DEVICE_POINTER;
    // SAFETY: `out` holds a pointer.
    unsafe {
        ok(hipPointerGetAttribute((&raw mut out).cast(), attr, ptr));
        assert_eq!(out, ptr);
        assert_eq!(
            last(),
            json!({ "call": "hipPointerGetAttribute", "attr": attr, "ptr": ptr })
        );
        let null = hipPointerGetAttribute((&raw mut out).cast(), attr, 0);
        assert_eq!(null, abi::hipErrorInvalidValue);
    }
}

#[test]
fn load_data_ex_counts_its_options() {
    safecall_fake_hip_reset();
    let mut module = 0usize;
    // SAFETY: a complete image; the options are not read.
    let code = unsafe {
        hipModuleLoadDataEx(
            &mut module,
            KERNELS.as_ptr().cast(),
            5,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    ok(code);
    assert_eq!(last()["options"], 5);
}

/// A `HIP_LAUNCH_CONFIG` with `attrs` (id, first three `int`s of the value), written at the
/// header's offsets.
fn launch_ex(f: usize, grid: [u32; 3], attrs: &[(i32, [i32; 3])]) -> abi::HipError {
    use abi::launch_layout as at;
    let mut attributes = vec![0u8; at::ATTR_SIZE * attrs.len()];
    for (i, (id, value)) in attrs.iter().enumerate() {
        let base = i * at::ATTR_SIZE;
        attributes[base + at::ATTR_ID..][..4].copy_from_slice(&id.to_le_bytes());
        for (k, v) in value.iter().enumerate() {
            attributes[base + at::ATTR_VALUE + 4 * k..][..4].copy_from_slice(&v.to_le_bytes());
        }
    }
    let mut config = [0u8; at::CONFIG_SIZE];
    let mut put =
        |offset: usize, bytes: &[u8]| config[offset..][..bytes.len()].copy_from_slice(bytes);
    for (offset, v) in [at::CONFIG_GRID_X, at::CONFIG_GRID_Y, at::CONFIG_GRID_Z]
        .iter()
        .zip(grid)
    {
        put(*offset, &v.to_le_bytes());
    }
    put(at::CONFIG_BLOCK_X, &64u32.to_le_bytes());
    put(at::CONFIG_BLOCK_Y, &1u32.to_le_bytes());
    put(at::CONFIG_BLOCK_Z, &1u32.to_le_bytes());
    put(at::CONFIG_SHARED_MEM, &32u32.to_le_bytes());
    put(at::CONFIG_STREAM, &0x7000usize.to_le_bytes());
    put(
        at::CONFIG_ATTRS,
        &(attributes.as_ptr() as usize).to_le_bytes(),
    );
    put(at::CONFIG_NUM_ATTRS, &(attrs.len() as u32).to_le_bytes());
    // SAFETY: a configuration of the header's size whose attributes outlive the call; the
    // kernel takes no arguments.
    unsafe {
        hipDrvLaunchKernelEx(
            config.as_ptr(),
            f,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

#[test]
fn an_extended_launch_records_its_configuration_and_attributes() {
    safecall_fake_hip_reset();
    let f = function(load(KERNELS).unwrap(), "empty").unwrap();
    ok(launch_ex(f, [8, 1, 1], &[(4, [2, 1, 1]), (2, [0, 0, 0])]));
    assert_eq!(
        last(),
        json!({
            "call": "hipDrvLaunchKernelEx", "kernel": "empty", "device": 0,
            "grid": [8, 1, 1], "block": [64, 1, 1], "shared_mem": 32, "stream": 0x7000,
            "args": [], "extra": false,
            "attrs": [4, 2], "cluster": [2, 1, 1], "cooperative": 0,
        })
    );
    ok(launch_ex(f, [1, 1, 1], &[]));
    assert_eq!(
        (last()["attrs"].clone(), last()["cluster"].clone()),
        (json!([]), json!(null))
    );
    // A cooperative attribute is checked as a cooperative launch.
    assert_eq!(
        launch_ex(f, [609, 1, 1], &[(4, [1, 1, 1]), (2, [1, 0, 0])]),
        abi::hipErrorCooperativeLaunchTooLarge
    );
    ok(launch_ex(f, [609, 1, 1], &[(4, [1, 1, 1]), (2, [0, 0, 0])]));
    // SAFETY: a null configuration, which the double refuses before reading anything.
    let code = unsafe {
        hipDrvLaunchKernelEx(
            std::ptr::null(),
            f,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(code, abi::hipErrorInvalidValue);
}
