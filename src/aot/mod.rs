//! Ahead-of-time delivery: object files (`.o`) and shared libraries (`.so`).
//!
//! Objects are position-independent, carry `.eh_frame` with pc-relative pointers, and leave
//! the TVM-FFI C API symbols undefined. Shared libraries are linked by the system C compiler
//! (`cc -shared -Wl,-z,now -Wl,-z,text`), with the C API left for load time (whichever runtime
//! the process has: libtvm_ffi or safecall-runtime) or linked to `libsafecall_runtime.so`.

mod link;

pub use link::{LinkError, LinkOptions, link_shared_library};
