//! Shared set-up of the benchmarks: building libraries and tensor arguments.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use safecall_runtime::abi::{
    DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFISafeCallType, TVMFFIValue, type_index,
};

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory for this bench process.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("safecall-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Parses an example module from `examples/ir/<name>.scir`.
pub fn example(name: &str) -> safecall::ir::Module {
    let path = root().join("examples/ir").join(format!("{name}.scir"));
    let text = std::fs::read_to_string(&path).expect("read example");
    safecall::ir::parse::parse_in_dir(&text, path.parent())
        .map(|(module, _)| module)
        .unwrap_or_else(|e| panic!("{}", e.render(&path.display().to_string(), &text)))
}

/// The include directory of the real TVM-FFI headers: `SAFECALL_TVM_FFI_INCLUDE`, else the
/// repo's `.venv`, else `/tmp/venv`.
pub fn tvm_ffi_include() -> PathBuf {
    if let Ok(dir) = std::env::var("SAFECALL_TVM_FFI_INCLUDE") {
        return dir.into();
    }
    for python in [
        root().join(".venv/bin/python"),
        PathBuf::from("/tmp/venv/bin/python"),
    ] {
        let config = python.with_file_name("tvm-ffi-config");
        if let Ok(out) = Command::new(&config).arg("--includedir").output()
            && out.status.success()
        {
            return String::from_utf8_lossy(&out.stdout).trim().into();
        }
    }
    panic!(
        "the TVM-FFI headers are needed: run `cargo xtask venv` or set SAFECALL_TVM_FFI_INCLUDE"
    );
}

/// Compiles a C file into a shared library with `$CC` (or `cc`) and `flags`.
pub fn build_c_library(source: &Path, output: &Path, flags: &[&str]) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(cc)
        .args(flags)
        .args(["-shared", "-fPIC", "-o"])
        .arg(output)
        .arg(source)
        .arg(format!("-I{}", tvm_ffi_include().display()))
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed for {}", source.display());
}

/// A loaded library and one of its functions.
pub struct Loaded<F = TVMFFISafeCallType> {
    _lib: libloading::Library,
    /// The function.
    pub f: F,
}

/// Loads `symbol` (a safe-call function unless `F` says otherwise) from the library at `path`.
pub fn load<F: Copy>(path: &Path, symbol: &str) -> Loaded<F> {
    // SAFETY: libraries built by the bench itself.
    let lib = unsafe { libloading::Library::new(path) }.expect("dlopen");
    // SAFETY: the caller names the symbol's type.
    let f = unsafe { *lib.get::<F>(symbol.as_bytes()).expect("symbol") };
    Loaded { _lib: lib, f }
}

/// Stands in for the launcher's kernel launch function (`examples/ir/launcher.scir`).
#[allow(clippy::too_many_arguments)]
pub extern "C" fn fake_launch(
    _a: *const u8,
    _b: *const u8,
    _bias: *const u8,
    _c: *const u8,
    _m: i64,
    _n: i64,
    _k: i64,
    _grid_x: i32,
    _grid_y: i32,
    _stream: *const u8,
) -> i32 {
    0
}

/// JIT options binding the launcher's extern to [`fake_launch`].
pub fn launcher_options() -> safecall::jit::JitOptions {
    let mut options = safecall::jit::JitOptions::default();
    options.symbols.insert("matmul_kernel_launch".to_owned(), {
        // SAFETY: a function of this program with the C signature the IR declares for it.
        unsafe { safecall::jit::SymbolAddress::new(fake_launch as *const u8) }
    });
    options
}

/// A CPU float32 vector holding `0, 1, ..., n-1`, as a DLTensor (with its backing storage).
pub struct Vector {
    pub data: Vec<f32>,
    pub shape: [i64; 1],
    pub tensor: DLTensor,
}

impl Vector {
    pub fn new(n: usize) -> Box<Vector> {
        let mut v = Box::new(Vector {
            data: (0..n).map(|i| i as f32).collect(),
            shape: [n as i64],
            tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: 1,
                    device_id: 0,
                },
                ndim: 1,
                dtype: DLDataType {
                    code: 2,
                    bits: 32,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        });
        v.tensor.data = v.data.as_mut_ptr().cast();
        v.tensor.shape = v.shape.as_mut_ptr();
        v
    }

    /// A `DLTensor*` argument.
    pub fn arg(&mut self) -> TVMFFIAny {
        TVMFFIAny {
            type_index: type_index::DL_TENSOR_PTR,
            small_str_len: 0,
            value: TVMFFIValue {
                v_ptr: (&mut self.tensor as *mut DLTensor).cast(),
            },
        }
    }
}

/// Calls a safe-call function, panicking on an error.
#[inline(always)]
pub fn call(f: TVMFFISafeCallType, args: &[TVMFFIAny]) {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: arguments match the function's parameters; they outlive the call.
    let rc = unsafe {
        f(
            std::ptr::null_mut(),
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    assert_eq!(rc, 0, "the call failed");
}
