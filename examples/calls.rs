//! A host function that calls out: `examples/ir/calls.scir` reports to a global function
//! (`call_packed global "example.log"`) and runs a function of the module the library imports
//! (`call_packed import "scale_in_place"`). This program provides both, the way a runtime
//! around a DSL would: it registers the global function and the loader that rebuilds the
//! imported module from the payload embedded in the library.
//!
//! ```text
//! cargo run --example calls
//! ```

use std::error::Error;
use std::path::PathBuf;

use safecall_runtime::{Any, AnyView, Function, Module, Tensor};

fn main() -> Result<(), Box<dyn Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("examples/ir/calls.scir");
    let text = std::fs::read_to_string(&source)?;
    let module = safecall::ir::parse::parse(&text)
        .map_err(|e| e.render(&source.display().to_string(), &text))?;

    let out_dir = std::env::temp_dir().join(format!("safecall-calls-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir)?;
    let library = out_dir.join("calls.so");
    safecall::build_shared_library(&module, &library, &Default::default(), &Default::default())?;
    println!("compiled {} -> calls.so", source.display());

    // 1. The global function the host function looks up by name (once per call site).
    Function::from_closure(|args| {
        let n: i64 = args[0].cast()?;
        println!("  example.log: scaling {n} elements");
        Ok(Any::none())
    })
    .set_global("example.log", true)?;

    // Without a loader for its imported module's kind, the library does not load.
    let err = Module::load(&library).unwrap_err();
    println!(
        "loading before the loader is registered -> {}: {}",
        err.kind(),
        err.message()
    );

    // 2. The loader of the imported module's kind: loading the library calls it with the
    //    payload (`factor=3`) and imports the module it returns.
    Module::register_loader(
        "example_kernels",
        |payload| {
            let text = String::from_utf8_lossy(payload);
            let factor: f32 = text
                .strip_prefix("factor=")
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| {
                    safecall_runtime::Error::new("ValueError", &format!("bad payload {text:?}"))
                })?;
            println!("  loader: example_kernels module with factor {factor}");
            let scale = Function::from_closure(move |args| {
                let x: Tensor = args[0].cast()?;
                // SAFETY: the host function checked a compact float32 CPU tensor; nothing else
                // uses it during the call.
                let data = unsafe { x.as_mut_slice::<f32>() }?;
                data.iter_mut().for_each(|v| *v *= factor);
                Ok(Any::from(data.len() as i64))
            });
            Ok(Module::from_functions(
                "example_kernels",
                [("scale_in_place".to_owned(), scale)],
            ))
        },
        true,
    )?;

    let lib = Module::load(&library)?;
    for import in lib.imports() {
        println!("calls.so imports a module of kind {}", import.kind());
    }
    let scale = lib.get_function("scale")?.expect("exported");

    let x = Tensor::cpu::<f32>(&[4])?;
    // SAFETY: a fresh tensor owned by this example.
    unsafe { x.as_mut_slice::<f32>() }?.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
    let returned = scale.call(&[AnyView::from(&x)])?;
    println!(
        "scale(x) returned {}; x = {:?}",
        returned.cast::<i64>()?,
        x.as_slice::<f32>()?
    );

    // Arguments are checked before anything is called.
    let wrong = Tensor::cpu::<f64>(&[4])?;
    let err = scale.call(&[AnyView::from(&wrong)]).unwrap_err();
    println!("scale(float64 tensor) -> {}: {}", err.kind(), err.message());

    drop(scale);
    drop(lib);
    Function::remove_global("example.log");
    std::fs::remove_dir_all(&out_dir)?;
    Ok(())
}
