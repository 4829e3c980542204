//! A GPU-style launcher, run on the CPU: `examples/ir/launcher.scir` checks four CUDA tensors
//! with symbolic shapes, computes the launch grid from the shapes, gets the stream of the
//! first tensor's device and calls the kernel's launch function. Here a stand-in launch
//! function (defined in this program) records its arguments instead of launching anything,
//! and the tensors are host memory labelled `cuda:0`: every check the host function makes is
//! real, only the kernel is not.
//!
//! ```text
//! cargo run --example launcher
//! ```

use std::error::Error;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::Mutex;

use safecall_runtime::abi::{DLDataType, DLDevice, device_type, dtype_code};
use safecall_runtime::rust_api::registry;
use safecall_runtime::{AnyView, Module, Tensor};

/// What the stand-in launch function received.
#[derive(Debug)]
struct Launch {
    data: [usize; 4],
    m: i64,
    n: i64,
    k: i64,
    grid: (i32, i32),
    stream: usize,
}

static LAUNCHES: Mutex<Vec<Launch>> = Mutex::new(Vec::new());

/// Stands in for `extern fn matmul_kernel_launch(...) -> i32 nonzero_is_raised` of the IR,
/// the launch function a DSL compiler would have generated next to its kernel. The library
/// finds it in this program at load time (examples are linked with `-rdynamic`). It refuses
/// grids taller than 8 blocks the way a real launcher reports a failure: it raises a TVM-FFI
/// error and returns non-zero, and the host function propagates that error.
#[unsafe(no_mangle)]
pub extern "C" fn matmul_kernel_launch(
    a: *mut c_void,
    b: *mut c_void,
    bias: *mut c_void,
    c: *mut c_void,
    m: i64,
    n: i64,
    k: i64,
    grid_x: i32,
    grid_y: i32,
    stream: *mut c_void,
) -> i32 {
    if grid_y > 8 {
        safecall_runtime::Error::new(
            "RuntimeError",
            &format!("matmul_kernel_launch: grid ({grid_x}, {grid_y}) exceeds 8 blocks in y"),
        )
        .set_raised();
        return -1;
    }
    LAUNCHES.lock().unwrap().push(Launch {
        data: [a as usize, b as usize, bias as usize, c as usize],
        m,
        n,
        k,
        grid: (grid_x, grid_y),
        stream: stream as usize,
    });
    0
}

const CUDA0: DLDevice = DLDevice {
    device_type: device_type::CUDA,
    device_id: 0,
};

/// A zero-filled tensor of `shape` and `dtype` in host memory that says it is on `device`.
/// A real caller passes the GPU framework's tensors; the stand-in never reads the data.
fn tensor_on(device: DLDevice, dtype: DLDataType, shape: &[i64]) -> Result<Tensor, Box<dyn Error>> {
    let cpu = Tensor::empty(
        shape,
        dtype,
        DLDevice {
            device_type: device_type::CPU,
            device_id: 0,
        },
    )?;
    if device.device_type == device_type::CPU {
        return Ok(cpu);
    }
    let managed = cpu.to_dlpack();
    // SAFETY: a fresh DLPack export that `from_dlpack` takes over (it keeps `cpu` alive).
    unsafe {
        (*managed).dl_tensor.device = device;
        Ok(Tensor::from_dlpack(managed, 0, false)?)
    }
}

fn f16() -> DLDataType {
    DLDataType {
        code: dtype_code::FLOAT,
        bits: 16,
        lanes: 1,
    }
}

fn f32() -> DLDataType {
    DLDataType {
        code: dtype_code::FLOAT,
        bits: 32,
        lanes: 1,
    }
}

/// The four arguments of `matmul` for an (m, k) x (k, n) product.
fn operands(m: i64, n: i64, k: i64, device: DLDevice) -> Result<[Tensor; 4], Box<dyn Error>> {
    Ok([
        tensor_on(CUDA0, f16(), &[m, k])?,
        tensor_on(CUDA0, f16(), &[k, n])?,
        tensor_on(CUDA0, f32(), &[n])?,
        tensor_on(device, f32(), &[m, n])?,
    ])
}

fn call(
    matmul: &safecall_runtime::Function,
    t: &[Tensor; 4],
) -> Result<(), safecall_runtime::Error> {
    let args: Vec<AnyView<'_>> = t.iter().map(AnyView::from).collect();
    matmul.call(&args).map(drop)
}

fn main() -> Result<(), Box<dyn Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("examples/ir/launcher.scir");
    let text = std::fs::read_to_string(&source)?;
    let module = safecall::ir::parse::parse(&text)
        .map_err(|e| e.render(&source.display().to_string(), &text))?;

    let out_dir = std::env::temp_dir().join(format!("safecall-launcher-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir)?;
    let library = out_dir.join("launcher.so");
    safecall::build_shared_library(&module, &library, &Default::default(), &Default::default())?;
    println!("compiled {} -> launcher.so", source.display());

    // The library's `matmul_kernel_launch` resolves to the stand-in above as it loads.
    let lib = Module::load(&library)?;
    let matmul = lib.get_function("matmul")?.expect("exported");

    // The stream the launcher gets from TVMFFIEnvGetStream(cuda, 0): a framework sets it
    // (PyTorch's current stream, say); here a made-up handle.
    registry::set_stream(device_type::CUDA, 0, 0x5eed as *mut c_void);

    let (m, n, k) = (256, 384, 64);
    let t = operands(m, n, k, CUDA0)?;
    call(&matmul, &t)?;
    let launch = LAUNCHES.lock().unwrap().pop().expect("one launch");
    println!(
        "launched: m = {}, n = {}, k = {}, grid = {:?}, stream = {:#x}",
        launch.m, launch.n, launch.k, launch.grid, launch.stream
    );
    let same_data = launch
        .data
        .iter()
        .zip(&t)
        .all(|(d, t)| *d == t.data_ptr() as usize);
    println!("the launcher got the tensors' data pointers: {same_data}");

    // Each of these is rejected before anything is launched.
    let rejected = [
        (
            "k = 60 (not a multiple of 8)",
            operands(256, 384, 60, CUDA0)?,
        ),
        (
            "c on the CPU",
            operands(
                256,
                384,
                64,
                DLDevice {
                    device_type: device_type::CPU,
                    device_id: 0,
                },
            )?,
        ),
        (
            "c on another GPU",
            operands(
                256,
                384,
                64,
                DLDevice {
                    device_type: device_type::CUDA,
                    device_id: 1,
                },
            )?,
        ),
    ];
    for (what, t) in &rejected {
        let err = call(&matmul, t).unwrap_err();
        println!("{what}: {}: {}", err.kind(), err.message());
    }
    // An error the launch function raises comes out of the host function unchanged.
    let err = call(&matmul, &operands(2048, 384, 64, CUDA0)?).unwrap_err();
    println!("m = 2048: {}: {}", err.kind(), err.message());
    println!(
        "launches recorded after the rejected calls: {}",
        LAUNCHES.lock().unwrap().len()
    );

    drop(matmul);
    drop(lib);
    std::fs::remove_dir_all(&out_dir)?;
    Ok(())
}
