//! Names the cdylib `libamdhip64.so` (its ELF `SONAME`), as AMD's HIP runtime library is named.
//!
//! Triton's launcher module `dlopen`s the runtime by path (`TRITON_LIBHIP_PATH`, which must
//! name a file called `libamdhip64.so*`); code linked against `libamdhip64.so` needs a library
//! of that name when it is loaded, and a process that has loaded the double by its path (as
//! safecall's tests do through `SAFECALL_LIBAMDHIP64_PATH`) satisfies that need with the
//! double, with no `LD_LIBRARY_PATH` set before the process started.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libamdhip64.so");
}
