//! Names the cdylib `libcuda.so.1` (its ELF `SONAME`), as NVIDIA's driver library is named.
//!
//! Code linked against the driver (Triton's launcher module links `-l:libcuda.so.1`) needs a
//! library of that name when it is loaded; a process that has loaded the double (by its path,
//! as safecall's tests do through `SAFECALL_LIBCUDA_PATH`) satisfies that need with the double,
//! with no `LD_LIBRARY_PATH` set before the process started.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
