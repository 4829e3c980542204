//! The main job, end to end: compile `examples/ir/add_one.scir` (y = x + 1 over float32
//! tensors) to a shared library with safecall, load it, call it and print the result.
//!
//! ```text
//! cargo run --example add_one
//! ```

use std::error::Error;
use std::path::PathBuf;

use safecall_runtime::abi::TVMFFISafeCallType;
use safecall_runtime::{AnyView, Function, Tensor};

fn main() -> Result<(), Box<dyn Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("examples/ir/add_one.scir");
    let text = std::fs::read_to_string(&source)?;
    let module = safecall::ir::parse::parse(&text)
        .map_err(|e| e.render(&source.display().to_string(), &text))?;

    // 1. Compile to a shared library (Cranelift, then `cc -shared`).
    let out_dir = std::env::temp_dir().join(format!("safecall-add-one-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir)?;
    let library = out_dir.join("add_one.so");
    safecall::build_shared_library(
        &module,
        &library,
        &safecall::Options::default(),
        &Default::default(),
    )?;
    println!("compiled {} -> {}", source.display(), library.display());

    // 2. Load it. The library leaves the TVM-FFI C API undefined; this program exports the
    //    bundled safecall-runtime's (it is linked with -rdynamic), so the library runs on it.
    // SAFETY: loading a library safecall just produced; its initializers are our own.
    let lib = unsafe { libloading::Library::new(&library)? };
    // SAFETY: `__tvm_ffi_add_one` has the safe-call signature; `lib` outlives every call.
    let add_one: TVMFFISafeCallType =
        unsafe { *lib.get::<TVMFFISafeCallType>(b"__tvm_ffi_add_one")? };
    // SAFETY: the pointer follows the safe-call contract and stays valid while `lib` is loaded.
    let add_one = unsafe { Function::from_safe_call(add_one, std::ptr::null_mut(), None) };

    // 3. Call it with two float32 tensors.
    let x = Tensor::cpu::<f32>(&[5])?;
    let y = Tensor::cpu::<f32>(&[5])?;
    // SAFETY: fresh CPU tensors of 5 float32 elements, not shared with anything else.
    unsafe { x.as_mut_slice::<f32>() }?.copy_from_slice(&[0.0, 1.0, 2.0, 3.0, 4.0]);
    add_one.call(&[AnyView::from(&x), AnyView::from(&y)])?;
    println!("x = {:?}", x.as_slice::<f32>()?);
    println!("y = {:?}", y.as_slice::<f32>()?);

    // 4. A wrong call raises a precise error instead of reading memory it should not.
    let short = Tensor::cpu::<f32>(&[3])?;
    let err = add_one
        .call(&[AnyView::from(&x), AnyView::from(&short)])
        .unwrap_err();
    println!("add_one(x, short) -> {}: {}", err.kind(), err.message());
    drop(add_one);
    drop(lib);
    std::fs::remove_dir_all(&out_dir)?;
    Ok(())
}
