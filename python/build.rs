//! The extension exports `PyInit__native` and nothing else. safecall-runtime is linked in for
//! its Rust API, but its `#[no_mangle]` TVM-FFI C API must not become a second runtime next to
//! the `libtvm_ffi` that `tvm_ffi` loaded (DESIGN.md §9): `--exclude-libs,ALL` makes every
//! symbol of the linked Rust libraries (rlibs are archives) hidden, so none is exported and
//! the extension's own references bind inside it. python/tests/test_runtime.py checks this.
fn main() {
    println!("cargo::rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
}
