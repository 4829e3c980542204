//! The HIP runtime test double (tests/fake_hip) seen from the HIP launch tests: loading it,
//! pointing generated code at it, reading and steering this thread's calls.

#![allow(dead_code)]

use std::ffi::{CString, c_char, c_int};
use std::path::PathBuf;
use std::sync::OnceLock;

use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor};
use serde_json::Value;

/// The double, loaded into this process (the same instance generated code reaches through
/// `SAFECALL_LIBAMDHIP64_PATH`).
pub struct Hip {
    lib: libloading::Library,
    /// Its path.
    pub path: PathBuf,
}

/// The double, with `SAFECALL_LIBAMDHIP64_PATH` pointing at it. Every test calls this before
/// any generated code runs, so the variable is set before anyone reads it.
pub fn hip() -> &'static Hip {
    static HIP: OnceLock<Hip> = OnceLock::new();
    HIP.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let path = exe.parent().expect("deps").join("libsafecall_fake_hip.so");
        assert!(
            path.exists(),
            "{} is missing (a dev-dependency)",
            path.display()
        );
        // SAFETY: runs once, before any test thread calls generated code (every test goes
        // through this OnceLock first), so nothing reads the environment concurrently.
        unsafe { std::env::set_var("SAFECALL_LIBAMDHIP64_PATH", &path) };
        // SAFETY: the double's initializers do nothing.
        let lib = unsafe { libloading::Library::new(&path) }.expect("load the HIP double");
        Hip { lib, path }
    })
}

impl Hip {
    fn sym<T: Copy>(&self, name: &str) -> T {
        // SAFETY: the double exports these functions with the types the callers give.
        unsafe { *self.lib.get::<T>(name.as_bytes()).expect("exported") }
    }

    /// Clears this thread's records and failures; device 0 current.
    pub fn reset(&self) {
        self.sym::<extern "C" fn()>("safecall_fake_hip_reset")();
    }

    /// The next call of `name` on this thread returns `code`.
    pub fn fail(&self, name: &str, code: i32) {
        let name = CString::new(name).unwrap();
        let f = self.sym::<unsafe extern "C" fn(*const c_char, c_int)>("safecall_fake_hip_fail");
        // SAFETY: a valid string.
        unsafe { f(name.as_ptr(), code) };
    }

    /// This thread's current device.
    pub fn current_device(&self) -> i32 {
        let mut d = -1;
        let f = self.sym::<unsafe extern "C" fn(*mut c_int) -> c_int>("hipGetDevice");
        // SAFETY: a valid out pointer.
        assert_eq!(unsafe { f(&mut d) }, 0);
        d
    }

    /// Makes `device` current on this thread (recorded like any call: reset after).
    pub fn set_device(&self, device: i32) {
        let f = self.sym::<extern "C" fn(c_int) -> c_int>("hipSetDevice");
        assert_eq!(f(device), 0);
    }

    /// Loads `image` on the current device (`hipModuleLoadData`) and returns its kernel
    /// `name`'s handle (`hipModuleGetFunction`), as Triton's `load_binary` does.
    pub fn load_function(&self, image: &[u8], name: &str) -> usize {
        let load =
            self.sym::<unsafe extern "C" fn(*mut usize, *const u8) -> c_int>("hipModuleLoadData");
        let get = self.sym::<unsafe extern "C" fn(*mut usize, usize, *const c_char) -> c_int>(
            "hipModuleGetFunction",
        );
        let (mut module, mut function) = (0usize, 0usize);
        let name = CString::new(name).unwrap();
        // SAFETY: a complete code object and valid out pointers.
        unsafe {
            assert_eq!(load(&mut module, image.as_ptr()), 0, "hipModuleLoadData");
            assert_eq!(
                get(&mut function, module, name.as_ptr()),
                0,
                "hipModuleGetFunction"
            );
        }
        function
    }

    /// This thread's records, oldest first.
    pub fn log(&self) -> Vec<Value> {
        let f =
            self.sym::<unsafe extern "C" fn(*mut c_char, usize) -> usize>("safecall_fake_hip_log");
        // SAFETY: a NULL buffer asks for the length only.
        let len = unsafe { f(std::ptr::null_mut(), 0) };
        let mut buf = vec![0u8; len + 1];
        // SAFETY: `buf` holds `len + 1` bytes.
        let len = unsafe { f(buf.as_mut_ptr().cast(), buf.len()) };
        String::from_utf8_lossy(&buf[..len])
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON record"))
            .collect()
    }

    /// The names of this thread's calls.
    pub fn calls(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|r| r["call"].as_str().unwrap().to_owned())
            .collect()
    }

    /// This thread's launch records.
    pub fn launches(&self) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|r| {
                let call = r["call"].as_str().unwrap();
                call.starts_with("hipModuleLaunch") || call == "hipDrvLaunchKernelEx"
            })
            .collect()
    }
}

/// A 1-D float32 tensor on ROCm device `id` whose data pointer is `data` (never
/// dereferenced by host code).
pub fn rocm_tensor(data: usize, id: i32, shape: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data as *mut _,
        device: DLDevice {
            device_type: safecall_runtime::abi::device_type::ROCM,
            device_id: id,
        },
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: 2,
            bits: 32,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}
