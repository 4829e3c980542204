//! Shared by the GPU-launch tests: the CUDA driver test double (tests/fake_cuda), building a
//! module for each delivery path (`tests/common/delivery.rs`) and argument building.

#![allow(dead_code)]

use std::ffi::{CString, c_char, c_int};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use safecall::ir;
use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIValue, type_index};
use safecall_runtime::{Any, AnyView, Error, Function};
use serde_json::Value;

/// The driver test double, loaded into this process (the same instance generated code
/// reaches through `SAFECALL_LIBCUDA_PATH`).
pub struct Fake {
    lib: libloading::Library,
    /// Its path.
    pub path: PathBuf,
}

/// Path of the double's shared library (built next to the test binaries as a dev-dependency).
pub fn fake_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps directory");
    let path = deps.join("libsafecall_fake_cuda.so");
    assert!(
        path.exists(),
        "{} is missing (built as a dev-dependency)",
        path.display()
    );
    path
}

/// The double, with `SAFECALL_LIBCUDA_PATH` pointing at it. Every test calls this before
/// any generated code runs, so the variable is set before anyone reads it.
pub fn fake() -> &'static Fake {
    static FAKE: OnceLock<Fake> = OnceLock::new();
    FAKE.get_or_init(|| {
        let path = fake_path();
        // SAFETY: runs once, before any test thread calls generated code (every test goes
        // through this OnceLock first), so nothing reads the environment concurrently.
        unsafe { std::env::set_var("SAFECALL_LIBCUDA_PATH", &path) };
        // SAFETY: the double's initializers do nothing.
        let lib = unsafe { libloading::Library::new(&path) }.expect("load the driver double");
        Fake { lib, path }
    })
}

impl Fake {
    fn sym<T: Copy>(&self, name: &str) -> T {
        // SAFETY: the double exports these functions with the types the callers give.
        unsafe { *self.lib.get::<T>(name.as_bytes()).expect("exported") }
    }

    /// Clears this thread's records, failures and current context.
    pub fn reset(&self) {
        self.sym::<extern "C" fn()>("safecall_fake_cuda_reset")();
    }

    /// The next call of `name` on this thread returns `code`.
    pub fn fail(&self, name: &str, code: i32) {
        let name = CString::new(name).unwrap();
        let f = self.sym::<unsafe extern "C" fn(*const c_char, c_int)>("safecall_fake_cuda_fail");
        // SAFETY: a valid string.
        unsafe { f(name.as_ptr(), code) };
    }

    /// `cuGetProcAddress_v2` does not find `name` on this thread.
    pub fn hide(&self, name: &str) {
        let name = CString::new(name).unwrap();
        let f = self.sym::<unsafe extern "C" fn(*const c_char)>("safecall_fake_cuda_hide");
        // SAFETY: a valid string.
        unsafe { f(name.as_ptr()) };
    }

    /// Makes a user context of `ordinal` current on this thread (-1: none).
    pub fn set_user_context(&self, ordinal: i32) {
        self.sym::<extern "C" fn(c_int)>("safecall_fake_cuda_set_user_context")(ordinal);
    }

    /// Retains the primary context of `ordinal` and makes it current on this thread, as
    /// PyTorch's `cudaSetDevice` does (the two calls are recorded like any).
    pub fn set_primary_context(&self, ordinal: i32) {
        let mut dev = 0;
        let mut ctx = 0usize;
        let get = self.sym::<unsafe extern "C" fn(*mut c_int, c_int) -> c_int>("cuDeviceGet");
        let retain = self
            .sym::<unsafe extern "C" fn(*mut usize, c_int) -> c_int>("cuDevicePrimaryCtxRetain");
        let set = self.sym::<extern "C" fn(usize) -> c_int>("cuCtxSetCurrent");
        // SAFETY: valid out pointers.
        unsafe {
            assert_eq!(get(&mut dev, ordinal), 0);
            assert_eq!(retain(&mut ctx, dev), 0);
        }
        assert_eq!(set(ctx), 0);
    }

    /// Loads `image` (PTX ending in NUL) in the current context (`cuModuleLoadData`) and
    /// returns its kernel `name`'s handle (`cuModuleGetFunction`), as Triton's `load_binary`
    /// does.
    pub fn load_function(&self, image: &[u8], name: &str) -> usize {
        let load =
            self.sym::<unsafe extern "C" fn(*mut usize, *const u8) -> c_int>("cuModuleLoadData");
        let get = self.sym::<unsafe extern "C" fn(*mut usize, usize, *const c_char) -> c_int>(
            "cuModuleGetFunction",
        );
        let (mut module, mut function) = (0usize, 0usize);
        let name = CString::new(name).unwrap();
        // SAFETY: a NUL-terminated image and valid out pointers.
        unsafe {
            assert_eq!(load(&mut module, image.as_ptr()), 0, "cuModuleLoadData");
            assert_eq!(
                get(&mut function, module, name.as_ptr()),
                0,
                "cuModuleGetFunction"
            );
        }
        function
    }

    /// What `cuDriverGetVersion` reports on this thread (0: the double's default, 13000).
    pub fn set_driver_version(&self, version: i32) {
        self.sym::<extern "C" fn(c_int)>("safecall_fake_cuda_set_driver_version")(version);
    }

    fn text(&self, name: &str) -> String {
        let f = self.sym::<unsafe extern "C" fn(*mut c_char, usize) -> usize>(name);
        // SAFETY: a null buffer asks for the length; then a buffer of that length plus one.
        let len = unsafe { f(std::ptr::null_mut(), 0) };
        let mut buf = vec![0u8; len + 1];
        // SAFETY: `buf` has `len + 1` bytes.
        unsafe { f(buf.as_mut_ptr().cast(), buf.len()) };
        buf.truncate(len);
        String::from_utf8(buf).expect("UTF-8")
    }

    /// This thread's current context (`primary:0`, `user:1`, `none`).
    pub fn current(&self) -> String {
        self.text("safecall_fake_cuda_current")
    }

    /// This thread's records.
    pub fn log(&self) -> Vec<Value> {
        self.text("safecall_fake_cuda_log")
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON record"))
            .collect()
    }

    /// The names of this thread's recorded calls.
    pub fn calls(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|r| r["call"].as_str().unwrap().to_owned())
            .collect()
    }

    /// This thread's recorded launches.
    pub fn launches(&self) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|r| r["call"] == "cuLaunchKernelEx")
            .collect()
    }
}

pub use crate::common::built::Built;
use crate::common::built::deliver;
pub use crate::common::delivery::Delivery;

/// The delivery paths the launch tests run: every row of `tests/common/delivery.rs` but the
/// `.so` the C compiler links, which the `.o` row (linked by `cc -shared` here) covers.
pub fn deliveries() -> Vec<Delivery> {
    crate::common::delivery::deliveries()
        .into_iter()
        .filter(|d| !matches!(d, Delivery::Shared(_, safecall::aot::Linker::Cc)))
        .collect()
}

/// The module of `tests/gpu/launch.scir`.
pub fn module() -> ir::Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gpu/launch.scir");
    let text = std::fs::read_to_string(&path).expect("read launch.scir");
    ir::parse::parse(&text).unwrap_or_else(|e| panic!("{}", e.render("launch.scir", &text)))
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("output directory");
    dir
}

/// Builds `module` a fresh time (each build resolves the driver and loads its binaries
/// anew) and delivers it as `how`.
pub fn build(module: &ir::Module, how: Delivery) -> Built {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let so = out_dir().join(format!("gpu_{n}.so"));
    // Each JIT module finds the driver itself, as AOT code does, so that every delivery
    // path's first launch makes the same driver calls (the tables JIT modules share by
    // default: tests/gpu/shared_runtimes.rs).
    let jit = safecall::jit::JitOptions {
        share_gpu_runtimes: false,
        ..Default::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks and
    // calls only symbols it declares with their real signatures.
    unsafe { deliver(module, how, &so, jit) }
}

/// An argument.
pub enum Arg<'a> {
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// An opaque pointer.
    Ptr(usize),
    /// A DLTensor pointer.
    Tensor(&'a DLTensor),
}

/// A 1-D float32 tensor of `n` elements on CUDA device `id`, whose data pointer is `data`
/// (never dereferenced by host code).
pub fn cuda_tensor(data: usize, id: i32, shape: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data as *mut _,
        device: DLDevice {
            device_type: safecall_runtime::abi::device_type::CUDA,
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

/// Calls `f`.
pub fn call(f: &Function, args: &[Arg<'_>]) -> Result<Any, Error> {
    let raw: Vec<TVMFFIAny> = args
        .iter()
        .map(|a| {
            let (type_index, value) = match a {
                Arg::Int(v) => (type_index::INT, TVMFFIValue { v_int64: *v }),
                Arg::Bool(v) => (type_index::BOOL, TVMFFIValue { v_int64: *v as i64 }),
                Arg::Float(v) => (type_index::FLOAT, TVMFFIValue { v_float64: *v }),
                Arg::Ptr(p) => (
                    type_index::OPAQUE_PTR,
                    TVMFFIValue {
                        v_ptr: *p as *mut _,
                    },
                ),
                Arg::Tensor(t) => (
                    type_index::DL_TENSOR_PTR,
                    TVMFFIValue {
                        v_ptr: (*t as *const DLTensor).cast_mut().cast(),
                    },
                ),
            };
            TVMFFIAny {
                type_index,
                small_str_len: 0,
                value,
            }
        })
        .collect();
    // SAFETY: each TVMFFIAny is a valid view (POD values, or a DLTensor that outlives the call).
    let views: Vec<AnyView<'_>> = raw
        .iter()
        .map(|r| unsafe { AnyView::from_raw_ref(r) })
        .collect();
    f.call(&views)
}

/// Calls `f`, expecting an error; returns `kind: message` without the `when calling` line
/// that messages raised in a host function end with (see [`call_err_full`]).
pub fn call_err(f: &Function, args: &[Arg<'_>]) -> String {
    let full = call_err_full(f, args);
    full.split("\n  when calling ")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Calls `f`, expecting an error; returns `kind: message`.
pub fn call_err_full(f: &Function, args: &[Arg<'_>]) -> String {
    match call(f, args) {
        Ok(_) => panic!("the call succeeded"),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    }
}

/// Little-endian hex of a value's bytes, as the double records kernel arguments.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
