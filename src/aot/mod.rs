//! Ahead-of-time delivery: object files (`.o`) and shared libraries (`.so`).
//!
//! Objects are position-independent, carry `.eh_frame` with pc-relative pointers, and leave
//! the TVM-FFI C API symbols undefined. Shared libraries are linked in this process by
//! safecall's own ELF linker (no C compiler needed), or on request by the system C compiler
//! (`cc -shared -Wl,-z,now -Wl,-z,text`, [`Linker::Cc`]), with the C API left for load time
//! (whichever runtime the process has: libtvm_ffi or safecall-runtime) or linked to
//! `libsafecall_runtime.so`.

mod elf;
mod link;

pub use link::{LinkError, LinkOptions, Linker, link_object_bytes, link_shared_library};
