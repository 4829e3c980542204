//! Benchmark mode, in a process of its own (it is process-wide).

mod common;

use common::{KERNELS, function, launch, load, records};
use safecall_fake_hip::*;

#[test]
fn quiet_mode_records_and_checks_nothing() {
    safecall_fake_hip_reset();
    let f = function(load(KERNELS).unwrap(), "empty").unwrap();
    let before = records().len();
    safecall_fake_hip_quiet(1);
    assert_eq!(launch(f, [0, 1, 1], 0, 1 << 20, &mut []), 0, "unchecked");
    // SAFETY: no parameters (the kernel has none); a grid the runtime would refuse.
    let cooperative = unsafe {
        hipModuleLaunchCooperativeKernel(f, 0, 1, 1, 1, 1, 1, 0, 0, std::ptr::null_mut())
    };
    assert_eq!(cooperative, 0, "unchecked");
    assert_eq!(hipInit(0), 0);
    // The current device is still answered (the generated code compares it).
    assert_eq!(hipSetDevice(1), 0);
    let mut device = -1;
    // SAFETY: an output pointer.
    assert_eq!(unsafe { hipGetDevice(&mut device) }, 0);
    assert_eq!(device, 1);
    assert_eq!(hipSetDevice(0), 0);
    safecall_fake_hip_quiet(0);
    assert_eq!(records().len(), before, "unrecorded");
}
