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
mod driver;
mod launch;
mod operands;
mod opt_in;
mod support;

pub(crate) use launch::lower_launch;

use crate::lir::{BinOp, DataId, IntCC, Symbol, Ty, Var};
use safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR;

use super::context::FnCtx;
use super::raise::MsgPart;
use support::describe_error;

/// Raises a RuntimeError (the text of `parts`, then the driver's description of `rc`) unless
/// `rc` is `CUDA_SUCCESS`.
fn driver_check(fx: &mut FnCtx<'_, '_>, table: Var, rc: Var, parts: impl FnOnce() -> Vec<MsgPart>) {
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    fx.check(ok, RUNTIME_ERROR, |fx| {
        let mut all = parts();
        all.extend(describe_error(fx.m, &mut fx.b, table, rc));
        all
    });
}

/// The address of `ordinal`'s 8-byte entry in the per-device cache `cache`; ordinals past
/// [`cuda::CACHED_DEVICES`] share a scratch entry that is reset to 0 (never a hit).
fn cached_entry(fx: &mut FnCtx<'_, '_>, cache: DataId, ordinal: Var) -> Var {
    let base = fx.b.symbol_addr(Symbol::Data(cache));
    let scratch_slot = fx.b.slot(8, 8);
    let scratch = fx.b.stack_addr(scratch_slot, 0);
    fx.b.store_imm(Ty::I64, scratch, 0, 0);
    let offset = fx.b.binary_imm(BinOp::Imul, ordinal, 8);
    let entry = fx.b.ptr_add(base, offset);
    let cached =
        fx.b.icmp_imm(IntCC::Ult, ordinal, i64::from(cuda::CACHED_DEVICES));
    fx.b.select(cached, entry, scratch)
}

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
