//! The JIT path from Rust: build host IR with the builder API, compile it in-process (no C
//! compiler, no linker), call the functions at once, and hand one to C code as a TVM-FFI
//! function.
//!
//! ```text
//! cargo run --example jit
//! ```

use std::error::Error;
use std::time::Instant;

use safecall::jit::{JitOptions, SymbolAddress};
use safecall_runtime::{AnyView, Function, Tensor};

#[path = "shared/jit_demo.rs"]
mod jit_demo;

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
    // ceil_div(n, 128) blocks and return n (the builder calls are in shared/jit_demo.rs).
    let module = jit_demo::jit_demo();
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
