//! What a kernel must be allowed before a launch, once per kernel and device: dynamic shared
//! memory beyond the default (counting the kernel's static shared memory), clusters of more
//! than 8 blocks, and a driver new enough for the attributes the launch passes.

use crate::ir::Expr;
use crate::lir::{BinOp, DataId, IntCC, Symbol, Ty, Var};

use super::super::context::FnCtx;
use super::super::raise::{MsgPart, Tag};
use super::cuda::{self, Entry};
use super::operands::{Operands, dims_parts};
use super::support::{cached_entry, call_entry, driver_check, zeroed};
use safecall_runtime::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};

/// The kernel a launch targets, for the driver calls of this file.
pub(super) struct Target<'a> {
    /// The driver table.
    pub table: Var,
    /// The `CUkernel`.
    pub kernel: Var,
    /// The `CUdevice`.
    pub dev: Var,
    /// The binary's and kernel's names (the caches' key).
    pub binary: &'a str,
    /// The kernel's entry name.
    pub name: &'a str,
    /// The start of every message.
    pub prefix: &'a str,
}

/// The cache of `kind` for the target's kernel: one 8-byte entry per device ordinal.
fn kernel_cache(fx: &mut FnCtx<'_, '_>, t: &Target<'_>, kind: &'static str) -> DataId {
    let key = (t.binary.to_owned(), t.name.to_owned(), kind);
    if let Some(&id) = fx.m.gpu.kernel_caches.get(&key) {
        return id;
    }
    let id = zeroed(fx.m, kind, cuda::CACHED_DEVICES as usize * 8);
    fx.m.gpu.kernel_caches.insert(key, id);
    id
}

/// Whose attribute [`get_attribute`] reads.
#[derive(Clone, Copy)]
enum Of {
    /// The kernel's on the device (`cuKernelGetAttribute`).
    Kernel,
    /// The device's (`cuDeviceGetAttribute`).
    Device,
}

/// Reads an `int` attribute into an `I64`, raising a RuntimeError naming `what` when the
/// driver fails.
fn get_attribute(fx: &mut FnCtx<'_, '_>, t: &Target<'_>, of: Of, attr: i64, what: &str) -> Var {
    let slot = fx.b.slot(8, 8);
    let out = fx.b.stack_addr(slot, 0);
    fx.b.store_imm(Ty::I32, out, 0, 0);
    let attr = fx.b.iconst(Ty::I32, attr);
    let (entry, args) = match of {
        Of::Kernel => (Entry::KernelGetAttribute, vec![out, attr, t.kernel, t.dev]),
        Of::Device => (Entry::DeviceGetAttribute, vec![out, attr, t.dev]),
    };
    let rc = call_entry(&mut fx.b, t.table, entry, args);
    let (prefix, what, name) = (t.prefix.to_owned(), what.to_owned(), entry.name());
    driver_check(fx, t.table, rc, |_| {
        vec![MsgPart::text(format!(
            "{prefix}: cannot read {what}: {name} returned "
        ))]
    });
    let v = fx.b.load(Ty::I32, out, 0);
    fx.b.resize(v, Ty::I64, true)
}

/// `cuKernelSetAttribute(attr, value, kernel, dev)`, raising a RuntimeError that starts with
/// `what(prefix)` and ends with the driver's words when it fails.
fn set_attribute(
    fx: &mut FnCtx<'_, '_>,
    t: &Target<'_>,
    attr: i64,
    value: Var,
    what: impl FnOnce(&str) -> Vec<MsgPart>,
) {
    let attr = fx.b.iconst(Ty::I32, attr);
    let rc = call_entry(
        &mut fx.b,
        t.table,
        Entry::KernelSetAttribute,
        vec![attr, value, t.kernel, t.dev],
    );
    let prefix = t.prefix.to_owned();
    driver_check(fx, t.table, rc, |_| {
        let mut parts = what(&prefix);
        parts.push(MsgPart::text(": cuKernelSetAttribute returned "));
        parts
    });
}

/// Dynamic shared memory: a driver allows 48 KiB of static plus dynamic shared memory per
/// block without an opt-in. The cache entry holds the most dynamic bytes known to launch
/// as things are (0 at first); a request above it reads the kernel's static size, checks
/// the device's opt-in maximum (a ValueError naming both numbers), opts in when static +
/// dynamic exceeds the default, and raises the entry.
pub(super) fn shared_memory(fx: &mut FnCtx<'_, '_>, t: &Target<'_>, ops: &Operands) {
    let Some(dynamic) = ops.shared_mem else {
        return;
    };
    let cache = kernel_cache(fx, t, "cuda_shared_mem");
    let entry = cached_entry(fx, cache, ops.device.var);
    let known = fx.b.load(Ty::I64, entry, 0);
    let more = fx.b.icmp(IntCC::Sgt, dynamic.var, known);
    let ask = fx.b.new_cold_block();
    let done = fx.b.new_block();
    fx.b.branch(more, ask, done);
    fx.b.switch_to(ask);
    let static_size = get_attribute(
        fx,
        t,
        Of::Kernel,
        cuda::SHARED_SIZE_BYTES,
        "the kernel's static shared memory size",
    );
    let total = fx.b.binary(BinOp::Iadd, static_size, dynamic.var);
    let over =
        fx.b.icmp_imm(IntCC::Sgt, total, cuda::DEFAULT_SHARED_MEM_LIMIT);
    let opt_in = fx.b.new_block();
    let fits = fx.b.new_block();
    fx.b.branch(over, opt_in, fits);

    fx.b.switch_to(fits);
    let free = fx.b.iconst(Ty::I64, cuda::DEFAULT_SHARED_MEM_LIMIT);
    let free = fx.b.binary(BinOp::Isub, free, static_size);
    fx.b.store(entry, 0, free);
    fx.b.jump(done);

    fx.b.switch_to(opt_in);
    let max = get_attribute(
        fx,
        t,
        Of::Device,
        cuda::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "the device's shared memory limit",
    );
    let allowed = fx.b.icmp(IntCC::Sle, total, max);
    let prefix = t.prefix.to_owned();
    fx.check(allowed, VALUE_ERROR, |fx| {
        let most = fx.b.binary(BinOp::Isub, max, static_size);
        vec![
            MsgPart::text(format!("{prefix}: shared_mem is ")),
            MsgPart::Value(dynamic.tag, dynamic.var),
            MsgPart::text(" bytes, but CUDA device "),
            MsgPart::Value(ops.device.tag, ops.device.var),
            MsgPart::text(" allows at most "),
            MsgPart::Value(Tag::I64, max),
            MsgPart::text(" bytes of shared memory per block and the kernel uses "),
            MsgPart::Value(Tag::I64, static_size),
            MsgPart::text(" of them statically (at most "),
            MsgPart::Value(Tag::I64, most),
            MsgPart::text(" dynamic bytes)"),
        ]
    });
    let value = fx.b.resize(dynamic.var, Ty::I32, false);
    let device = ops.device;
    set_attribute(
        fx,
        t,
        cuda::MAX_DYNAMIC_SHARED_SIZE_BYTES,
        value,
        |prefix| {
            vec![
                MsgPart::text(format!("{prefix}: cannot allow ")),
                MsgPart::Value(dynamic.tag, dynamic.var),
                MsgPart::text(" bytes of dynamic shared memory on CUDA device "),
                MsgPart::Value(device.tag, device.var),
            ]
        },
    );
    fx.b.store(entry, 0, dynamic.var);
    fx.b.jump(done);
    fx.b.switch_to(done);
}

/// Clusters of more than [`cuda::PORTABLE_CLUSTER_SIZE`] blocks: the kernel is allowed
/// non-portable cluster sizes once per device. Nothing is emitted for constant clusters
/// within the portable size.
pub(super) fn cluster_size(
    fx: &mut FnCtx<'_, '_>,
    t: &Target<'_>,
    ops: &Operands,
    constant_blocks: Option<i64>,
) {
    let Some(cluster) = ops.cluster else {
        return;
    };
    if constant_blocks.is_some_and(|n| n <= cuda::PORTABLE_CLUSTER_SIZE) {
        return;
    }
    // Any dim above the limit, or their product above it (the product is only read when
    // every dim is small, so it cannot overflow then).
    let mut big = fx.b.iconst(Ty::I8, 0);
    for d in &cluster {
        let over =
            fx.b.icmp_imm(IntCC::Ugt, d.var, cuda::PORTABLE_CLUSTER_SIZE);
        big = fx.b.binary(BinOp::Or, big, over);
    }
    let xy = fx.b.binary(BinOp::Imul, cluster[0].var, cluster[1].var);
    let blocks = fx.b.binary(BinOp::Imul, xy, cluster[2].var);
    let over =
        fx.b.icmp_imm(IntCC::Ugt, blocks, cuda::PORTABLE_CLUSTER_SIZE);
    let big = fx.b.binary(BinOp::Or, big, over);
    let cache = kernel_cache(fx, t, "cuda_non_portable_cluster");
    let entry = cached_entry(fx, cache, ops.device.var);
    let allowed = fx.b.load(Ty::I64, entry, 0);
    let not_yet = fx.b.icmp_imm(IntCC::Eq, allowed, 0);
    let needed = fx.b.binary(BinOp::And, big, not_yet);
    let set = fx.b.new_cold_block();
    let done = fx.b.new_block();
    fx.b.branch(needed, set, done);
    fx.b.switch_to(set);
    let one = fx.b.iconst(Ty::I32, 1);
    let device = ops.device;
    set_attribute(
        fx,
        t,
        cuda::NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
        one,
        |prefix| {
            let mut parts = vec![MsgPart::text(format!(
                "{prefix}: cannot allow a non-portable cluster size "
            ))];
            parts.extend(dims_parts(&cluster));
            parts.extend([
                MsgPart::text(" on CUDA device "),
                MsgPart::Value(device.tag, device.var),
            ]);
            parts
        },
    );
    fx.b.store_imm(Ty::I64, entry, 0, 1);
    fx.b.jump(done);
    fx.b.switch_to(done);
}

/// A preferred cluster needs CUDA 12.8: an older driver is a RuntimeError naming the
/// attribute and the driver's version (asked once per module and cached).
pub(super) fn driver_version(fx: &mut FnCtx<'_, '_>, t: &Target<'_>, ops: &Operands) {
    if ops.preferred_cluster.is_none() {
        return;
    }
    let cell = match fx.m.gpu.driver_version {
        Some(id) => id,
        None => {
            let id = zeroed(fx.m, "cuda_driver_version", 8);
            fx.m.gpu.driver_version = Some(id);
            id
        }
    };
    let at = fx.b.symbol_addr(Symbol::Data(cell));
    let known = fx.b.load(Ty::I64, at, 0);
    let unknown = fx.b.icmp_imm(IntCC::Eq, known, 0);
    let ask = fx.b.new_cold_block();
    let check = fx.b.new_block();
    fx.b.branch(unknown, ask, check);
    fx.b.switch_to(ask);
    let slot = fx.b.slot(8, 8);
    let out = fx.b.stack_addr(slot, 0);
    fx.b.store_imm(Ty::I32, out, 0, 0);
    let rc = call_entry(&mut fx.b, t.table, Entry::DriverGetVersion, vec![out]);
    let prefix = t.prefix.to_owned();
    driver_check(fx, t.table, rc, |_| {
        vec![MsgPart::text(format!(
            "{prefix}: cannot read the driver's version: cuDriverGetVersion returned "
        ))]
    });
    let v = fx.b.load(Ty::I32, out, 0);
    let v = fx.b.resize(v, Ty::I64, true);
    fx.b.store(at, 0, v);
    fx.b.jump(check);
    fx.b.switch_to(check);
    let version = fx.b.load(Ty::I64, at, 0);
    let new_enough =
        fx.b.icmp_imm(IntCC::Sge, version, cuda::PREFERRED_CLUSTER_DRIVER);
    let prefix = t.prefix.to_owned();
    fx.check(new_enough, RUNTIME_ERROR, |_| {
        vec![
            MsgPart::text(format!(
                "{prefix}: preferred_cluster (CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION) \
                 needs a CUDA 12.8 driver (version {}), but the driver's version is ",
                cuda::PREFERRED_CLUSTER_DRIVER
            )),
            MsgPart::Value(Tag::I64, version),
        ]
    });
}

/// The product of cluster dims when every one is an integer literal.
pub(super) fn constant_blocks(dims: &[Expr]) -> Option<i64> {
    let mut blocks: i64 = 1;
    for d in dims {
        let Expr::Int { value, .. } = d else {
            return None;
        };
        blocks = blocks.checked_mul(*value)?;
    }
    Some(blocks)
}
