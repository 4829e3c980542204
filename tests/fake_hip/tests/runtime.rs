//! The double's devices, versions, errors and `hipGetProcAddress`.

mod common;

use std::ffi::{CString, c_int, c_void};

use common::{last, name, ok, records};
use safecall_fake_hip::abi::{self, prop};
use safecall_fake_hip::*;
use serde_json::json;

#[test]
fn two_devices_and_a_current_device_per_thread() {
    safecall_fake_hip_reset();
    let (mut count, mut device) = (0, -1);
    // SAFETY: output pointers.
    unsafe {
        ok(hipGetDeviceCount(&mut count));
        ok(hipGetDevice(&mut device));
    }
    assert_eq!((count, device), (2, 0));
    ok(hipSetDevice(1));
    assert_eq!(last(), json!({ "call": "hipSetDevice", "device": 1 }));
    assert_eq!(hipSetDevice(2), abi::hipErrorInvalidDevice);
    assert_eq!(hipSetDevice(-1), abi::hipErrorInvalidDevice);
    std::thread::spawn(|| {
        let mut other = -1;
        // SAFETY: an output pointer.
        unsafe { ok(hipGetDevice(&mut other)) };
        assert_eq!(other, 0, "another thread starts on device 0");
        assert!(records().len() == 1, "records are per thread");
    })
    .join()
    .unwrap();
    // SAFETY: an output pointer.
    unsafe { ok(hipGetDevice(&mut device)) };
    assert_eq!(device, 1);
    safecall_fake_hip_reset();
    // SAFETY: an output pointer.
    unsafe { ok(hipGetDevice(&mut device)) };
    assert_eq!(device, 0, "reset makes device 0 current");
}

#[test]
fn versions_are_hip_6_4_unless_set() {
    safecall_fake_hip_reset();
    let (mut driver, mut runtime) = (0, 0);
    // SAFETY: output pointers.
    unsafe {
        ok(hipDriverGetVersion(&mut driver));
        ok(hipRuntimeGetVersion(&mut runtime));
    }
    assert_eq!((driver, runtime), (60_443_482, 60_443_482));
    safecall_fake_hip_set_driver_version(50_700_000);
    // SAFETY: an output pointer.
    unsafe { ok(hipDriverGetVersion(&mut driver)) };
    assert_eq!(driver, 50_700_000);
    // SAFETY: a null output pointer is refused.
    assert_eq!(
        unsafe { hipDriverGetVersion(std::ptr::null_mut()) },
        abi::hipErrorInvalidValue
    );
}

#[test]
fn device_attributes_are_an_mi300xs() {
    safecall_fake_hip_reset();
    let attr = |a: c_int, device: c_int| {
        let mut v = -1;
        // SAFETY: an output pointer.
        let code = unsafe { hipDeviceGetAttribute(&mut v, a, device) };
        (code, v)
    };
    for (a, want) in [
        (abi::hipDeviceAttributeMaxSharedMemoryPerBlock, 65_536),
        (abi::hipDeviceAttributeMultiprocessorCount, 304),
        (abi::hipDeviceAttributeWarpSize, 64),
        (abi::hipDeviceAttributeCooperativeLaunch, 1),
        (abi::hipDeviceAttributeMaxThreadsPerBlock, 1024),
        (abi::hipDeviceAttributeComputeCapabilityMajor, 9),
        (abi::hipDeviceAttributeComputeCapabilityMinor, 4),
    ] {
        assert_eq!(attr(a, 1), (0, want), "attribute {a}");
    }
    assert_eq!(
        attr(abi::hipDeviceAttributeWarpSize, 2).0,
        abi::hipErrorInvalidDevice
    );
    assert_eq!(attr(12345, 0).0, abi::hipErrorInvalidValue);
}

#[test]
fn device_properties_fill_the_r0600_layout() {
    safecall_fake_hip_reset();
    let mut p = vec![0xaau8; abi::PROP_SIZE];
    // SAFETY: a buffer of the struct's size.
    unsafe { ok(hipGetDevicePropertiesR0600(p.as_mut_ptr(), 0)) };
    let int = |at: usize| i32::from_ne_bytes(p[at..at + 4].try_into().unwrap());
    let size = |at: usize| u64::from_ne_bytes(p[at..at + 8].try_into().unwrap());
    let text = |at: usize| {
        let field = &p[at..at + abi::PROP_NAME_LEN];
        String::from_utf8_lossy(&field[..field.iter().position(|&b| b == 0).unwrap()]).into_owned()
    };
    assert_eq!(size(prop::sharedMemPerBlock), 65_536);
    assert_eq!(int(prop::regsPerBlock), 65_536);
    assert_eq!(int(prop::multiProcessorCount), 304);
    assert_eq!(int(prop::clockRate), 2_100_000);
    assert_eq!(int(prop::memoryClockRate), 1_300_000);
    assert_eq!(int(prop::memoryBusWidth), 8192);
    assert_eq!(text(prop::gcnArchName), "gfx942:sramecc+:xnack-");
    assert_eq!(int(prop::warpSize), 64);
    assert_eq!(int(prop::maxThreadsPerMultiProcessor), 2048);
    assert_eq!(int(prop::cooperativeLaunch), 1);
    assert_eq!((int(prop::major), int(prop::minor)), (9, 4));
    assert_eq!(int(prop::maxThreadsPerBlock), 1024);
    assert_eq!(
        int(prop::l2CacheSize + 4),
        0,
        "fields the double does not model are zero"
    );
    // SAFETY: a buffer of the struct's size.
    let code = unsafe { hipGetDevicePropertiesR0600(p.as_mut_ptr(), 7) };
    assert_eq!(code, abi::hipErrorInvalidDevice);
}

fn proc_address(symbol: &str, version: c_int) -> (abi::HipError, *mut c_void, c_int) {
    let symbol = CString::new(symbol).unwrap();
    let (mut pfn, mut status) = (std::ptr::dangling_mut::<c_void>(), -1);
    // SAFETY: a NUL-terminated name and output pointers.
    let code = unsafe { hipGetProcAddress(symbol.as_ptr(), &mut pfn, version, 0, &mut status) };
    (code, pfn, status)
}

#[test]
fn get_proc_address_serves_every_entry_by_name_unless_hidden() {
    safecall_fake_hip_reset();
    for name in served_names() {
        let (code, pfn, status) = proc_address(name, 60_443_482);
        assert_eq!((code, status), (0, 0), "{name}");
        assert!(!pfn.is_null(), "{name}");
    }
    assert_eq!(
        last(),
        json!({ "call": "hipGetProcAddress", "symbol": "hipDrvLaunchKernelEx", "version": 60_443_482, "flags": 0 })
    );
    let launch = proc_address("hipModuleLaunchKernel", 604).1;
    assert_eq!(launch, hipModuleLaunchKernel as *mut c_void);
    // `hipGetDeviceProperties` is the R0600 entry from HIP 6.0 on, as in HIP.
    let (code, pfn, _) = proc_address("hipGetDeviceProperties", 600);
    assert_eq!((code, pfn), (0, hipGetDevicePropertiesR0600 as *mut c_void));
    let (code, pfn, status) = proc_address("hipGetDeviceProperties", 502);
    assert_eq!(
        (code, pfn, status),
        (abi::hipErrorInvalidValue, std::ptr::null_mut(), 2)
    );
    // Unknown and hidden names: not found, as in HIP.
    let (code, pfn, status) = proc_address("hipExtModuleLaunchKernel", 604);
    assert_eq!(
        (code, pfn, status),
        (abi::hipErrorInvalidValue, std::ptr::null_mut(), 1)
    );
    let hidden = CString::new("hipModuleLaunchKernel").unwrap();
    // SAFETY: a NUL-terminated name.
    unsafe { safecall_fake_hip_hide(hidden.as_ptr()) };
    let (code, pfn, status) = proc_address("hipModuleLaunchKernel", 604);
    assert_eq!(
        (code, pfn, status),
        (abi::hipErrorInvalidValue, std::ptr::null_mut(), 1)
    );
    safecall_fake_hip_reset();
    assert_eq!(
        proc_address("hipModuleLaunchKernel", 604).0,
        0,
        "reset unhides"
    );
}

#[test]
fn failures_are_injected_once_and_kept_as_the_last_error() {
    safecall_fake_hip_reset();
    let init = CString::new("hipInit").unwrap();
    // SAFETY: a NUL-terminated name.
    unsafe { safecall_fake_hip_fail(init.as_ptr(), abi::hipErrorNoDevice) };
    assert_eq!(hipInit(0), abi::hipErrorNoDevice);
    ok(hipInit(0));
    assert_eq!(hipGetLastError(), abi::hipErrorNoDevice);
    assert_eq!(
        hipGetLastError(),
        abi::hipSuccess,
        "reading the last error clears it"
    );
    assert_eq!(hipSetDevice(5), abi::hipErrorInvalidDevice);
    assert_eq!(hipGetLastError(), abi::hipErrorInvalidDevice);
    let calls: Vec<_> = records()
        .iter()
        .map(|r| r["call"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        calls,
        [
            "hipInit",
            "hipInit",
            "hipGetLastError",
            "hipGetLastError",
            "hipSetDevice",
            "hipGetLastError"
        ]
    );
}

#[test]
fn errors_have_hips_names_and_some_text() {
    assert_eq!(name(abi::hipErrorInvalidValue), "hipErrorInvalidValue");
    assert_eq!(name(abi::hipErrorNoBinaryForGpu), "hipErrorNoBinaryForGpu");
    assert_eq!(
        name(abi::hipErrorCooperativeLaunchTooLarge),
        "hipErrorCooperativeLaunchTooLarge"
    );
    assert_eq!(name(123_456), "hipErrorUnknown");
    for &(code, _, _) in abi::ERRORS {
        // SAFETY: static NUL-terminated strings.
        let text = unsafe { std::ffi::CStr::from_ptr(hipGetErrorString(code)) };
        assert!(!text.is_empty());
    }
}

#[test]
fn synchronization_is_recorded() {
    safecall_fake_hip_reset();
    ok(hipStreamSynchronize(0x5000));
    ok(hipDeviceSynchronize());
    assert_eq!(
        records(),
        [
            json!({ "call": "hipStreamSynchronize", "stream": 0x5000 }),
            json!({ "call": "hipDeviceSynchronize", "device": 0 }),
        ]
    );
}
