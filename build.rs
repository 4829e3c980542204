//! Test, example, bench and binary targets export their symbols (`-rdynamic`), so shared
//! libraries they load find the TVM-FFI C API of the linked safecall-runtime.
fn main() {
    println!("cargo::rustc-link-arg-tests=-rdynamic");
    println!("cargo::rustc-link-arg-examples=-rdynamic");
    println!("cargo::rustc-link-arg-benches=-rdynamic");
    println!("cargo::rustc-link-arg-bins=-rdynamic");
}
