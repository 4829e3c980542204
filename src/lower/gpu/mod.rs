//! GPU kernel launches through the CUDA driver API, with no runtime library and no link-time
//! dependency on the driver.
//!
//! A module with `launch` statements gets, once:
//! - a **driver table** (one pointer per [`cuda::Entry`]) filled by an init function that
//!   finds the driver (`$SAFECALL_LIBCUDA_PATH`, else a process that already loaded it
//!   through `dlsym(RTLD_DEFAULT)`, else `dlopen("libcuda.so.1")`), resolves every entry
//!   with `cuGetProcAddress_v2` and calls `cuInit` ([`driver`]);
//! - per device binary, a **kernel table** filled by an init function that loads the image
//!   with `cuLibraryLoadData` and looks up each kernel with `cuLibraryGetKernel`
//!   ([`binary`]);
//! - a primary-context cache and per-kernel shared-memory opt-in caches.
//!
//! Both init functions run once per process under `TVMFFIHandleInitOnce`, like the lookups
//! of global functions; nothing is ever released. Each `launch` statement ([`launch`])
//! checks its grid and block, makes sure a context of the launch device is current (the
//! caller's when it is on that device, else the device's primary context, restored after)
//! and calls `cuLaunchKernelEx`. Every failure raises a TVM-FFI error naming what failed.

mod args;
mod config;
mod context;
pub(crate) mod cuda;
mod descriptor_source;
mod driver;
pub(crate) mod hip;
mod launch;
mod operands;
mod opt_in;
mod settings;
mod shared;
mod support;
mod tdm;
mod tensormap;

pub(crate) use launch::lower_launch;
pub(crate) use shared::helper_module;

/// The names of the libc functions that launch code imports (a linker records libc as needed
/// when the code imports one of them).
pub(crate) fn libc_names() -> [&'static str; 4] {
    cuda::Libc::ALL.map(cuda::Libc::name)
}

/// The address of a libc function that launch code imports (`dlopen`, `dlsym`, `dlerror`,
/// `getenv`), for resolvers that do not search the process (the JIT).
pub(crate) fn libc_symbol(name: &str) -> Option<*const u8> {
    cuda::Libc::ALL
        .into_iter()
        .find(|f| f.name() == name)
        .map(cuda::Libc::address)
}
