//! The JIT path from Rust: build host IR with the builder API, compile it in-process (no C
//! compiler, no linker), call the functions at once, and hand one to C code as a TVM-FFI
//! function.
//!
//! ```text
//! cargo run --example jit
//! ```

use std::error::Error;
use std::time::Instant;

use safecall::ir::build::{FunctionBuilder, ModuleBuilder, TensorSpecBuilder, int, var};
use safecall::ir::{ErrorConvention, IntType, RetType, ScalarType};
use safecall::jit::{JitOptions, SymbolAddress};
use safecall_runtime::abi::device_type;
use safecall_runtime::{AnyView, Function, Tensor};

/// Stands in for a kernel launch function a DSL compiler would have produced: it receives the
/// data pointer, the element count and the grid, and records them.
extern "C" fn fake_launch(data: *mut f32, n: i64, grid: i32) -> i32 {
    // SAFETY: the host function passes the data of a checked float32 tensor of `n` elements.
    let values = unsafe { std::slice::from_raw_parts_mut(data, n as usize) };
    for v in values.iter_mut() {
        *v *= 2.0;
    }
    println!("  kernel launched: n = {n}, grid = {grid}");
    0
}

fn main() -> Result<(), Box<dyn Error>> {
    // `scale(x: tensor[(n,), float32, device=cpu]) -> i64`: launch with a grid of
    // ceil_div(n, 128) blocks and return n.
    let i32t = ScalarType::Int(IntType::I32);
    let mut module = ModuleBuilder::new("jit_demo");
    module.extern_fn(
        "fake_launch",
        [ScalarType::Ptr, ScalarType::Int(IntType::I64), i32t],
        Some(i32t),
        ErrorConvention::NonZeroIsRaised,
    );
    let mut f = FunctionBuilder::new("scale");
    f.doc("Doubles x in place through the (fake) kernel and returns its length.");
    f.returns(RetType::Scalar(ScalarType::Int(IntType::I64)));
    let x = f.tensor(
        "x",
        TensorSpecBuilder::new(["n"])
            .dtype_name("float32")
            .device(device_type::CPU),
    );
    let n = var("n");
    let grid = f.let_("grid", n.clone().ceil_div(int(128)).cast(i32t));
    f.call_extern("fake_launch", [x.data(), n.clone(), grid]);
    f.ret(n);
    module.function(f.finish());
    let module = module.build();
    println!("IR:\n{}", safecall::ir::print::print(&module));

    let mut options = JitOptions::default();
    options.symbols.insert("fake_launch".to_owned(), {
        // SAFETY: a function of this program with the C signature the IR declares for it.
        unsafe { SymbolAddress::new(fake_launch as *const u8) }
    });
    let start = Instant::now();
    // SAFETY: the example's IR dereferences only the arguments it checks and calls only
    // `fake_launch`, registered with its real signature.
    let jit = unsafe { safecall::jit::compile(&module, &options) }?;
    println!(
        "compiled in {:?} (debug builds and the first compile of a process are slower)",
        start.elapsed()
    );
    let scale = jit.function("scale").expect("defined").clone();

    let x = Tensor::cpu::<f32>(&[3])?;
    // SAFETY: a fresh tensor owned by this example.
    unsafe { x.as_mut_slice::<f32>() }?.copy_from_slice(&[1.0, 2.0, 3.0]);
    let n = scale.call(&[AnyView::from(&x)])?;
    println!(
        "scale(x) returned {}; x = {:?}",
        n.cast::<i64>()?,
        x.as_slice::<f32>()?
    );

    let wrong = Tensor::cpu::<i32>(&[3])?;
    let err = scale.call(&[AnyView::from(&wrong)]).unwrap_err();
    println!("scale(int32 tensor) -> {}: {}", err.kind(), err.message());

    // A TVM-FFI function like any other: register it globally, look it up, call it through
    // the C API (`TVMFFIFunctionCall`).
    scale.set_global("jit_demo.scale", true)?;
    let looked_up = Function::get_global("jit_demo.scale").expect("registered");
    // The function outlives the module value: the code is freed with the last function.
    drop(jit);
    looked_up.call(&[AnyView::from(&x)])?;
    println!(
        "through the global registry, after dropping the module: x = {:?}",
        x.as_slice::<f32>()?
    );
    Function::remove_global("jit_demo.scale");
    Ok(())
}
