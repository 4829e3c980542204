//! GPU kernel launches on AMD GPUs through the HIP runtime, with no link-time dependency on
//! it: the same shape as the CUDA path ([`super`]), with HIP's rules.
//!
//! A module with launches of `hsaco` device binaries gets, once:
//! - a **runtime table** (one pointer per [`api::Entry`]) filled by an init function that
//!   finds the runtime (`$SAFECALL_LIBAMDHIP64_PATH`, else `libamdhip64.so` and its sonames),
//!   resolves every entry with `dlsym` and calls `hipInit` ([`runtime`]);
//! - per device binary, a **function cache** with one row of kernel handles per device, and a
//!   loader that loads the module on a device (HIP binds modules to the device current at load
//!   time) and fills its row ([`module`]).
//!
//! Each `launch` ([`launch`]) checks its operands, makes the launch device current (restored
//! after), and calls `hipModuleLaunchKernel`, `hipModuleLaunchCooperativeKernel` for a
//! cooperative grid, or `hipDrvLaunchKernelEx` for a launch with a cluster ([`cluster`]).
//! Every failure raises a TVM-FFI error naming what failed.

pub mod api;
mod cluster;
mod launch;
mod module;
mod runtime;

pub(crate) use launch::lower_launch;
