//! Device binaries on HIP: a module is loaded per device (HIP binds a module to the device
//! current when it is loaded), so each binary gets a function cache with one row of kernel
//! handles per device ordinal, and a cold function that loads the module on one device and
//! fills that device's row.
//!
//! Two threads that launch on a device for the first time at once may both load the module;
//! each stores valid handles, and one module stays loaded unused (nothing is ever unloaded).

use crate::ir::{DeviceBinary, Platform};
use crate::lir::{Callee, DataId, FuncId, IntCC, Symbol, Ty, Var};

use super::super::super::modctx::ModuleCtx;
use super::super::super::options::LowerError;
use super::super::super::raise::{MsgPart, Tag};
use super::super::driver::static_str;
use super::super::support::{InitFn, embed_image, zeroed};
use super::api::{self, Entry};
use super::runtime::{call, describe_error};

impl ModuleCtx<'_> {
    /// The function cache of HIP device binary `name` (`CACHED_DEVICES` rows of one handle
    /// per kernel) and its loader `int load(table, int device, void** row)`, emitted on first
    /// use.
    pub(crate) fn hip_binary(&mut self, name: &str) -> Result<(DataId, FuncId), LowerError> {
        if let Some(b) = self.gpu.hip_binaries.get(name) {
            return Ok(*b);
        }
        let binary = self
            .ir
            .device_binaries
            .iter()
            .find(|b| b.name == name && b.format.platform() == Platform::Hip)
            .ok_or_else(|| {
                LowerError::internal(format!(
                    "no HIP device binary `{name}` (the verifier should have rejected this)"
                ))
            })?
            .clone();
        let cache = zeroed(
            self,
            "hip_functions",
            api::CACHED_DEVICES as usize * binary.kernels.len() * 8,
        );
        let loader = emit_loader(self, &binary);
        self.gpu
            .hip_binaries
            .insert(name.to_owned(), (cache, loader));
        Ok((cache, loader))
    }
}

/// `int load(void* table, int device, void** row)`: makes `device` current, loads the image,
/// looks each kernel up into `row`, makes the caller's device current again.
fn emit_loader(m: &mut ModuleCtx<'_>, binary: &DeviceBinary) -> FuncId {
    let (image, what) = embed_image(m, binary, "hip_image");

    let mut f = InitFn::with_params(m, "hip_binary_load", vec![Ty::Ptr, Ty::I32, Ty::Ptr]);
    let table = f.b.param(0);
    let device = f.b.param(1);
    let row = f.b.param(2);
    let ordinal = f.b.resize(device, Ty::I64, true);
    let slot = f.b.slot(16, 8);
    let previous_at = f.b.stack_addr(slot, 0);
    let module_at = f.b.stack_addr(slot, 8);
    f.b.store_imm(Ty::Ptr, module_at, 0, 0);
    let switch = device_switch(&mut f, &what, table, device, ordinal, previous_at);
    let image = f.b.symbol_addr(Symbol::Data(image));
    let rc = call(
        &mut f.b,
        table,
        Entry::ModuleLoadData,
        vec![module_at, image],
    );
    let ok = f.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![
            MsgPart::text(format!("cannot load {what} on HIP device ")),
            MsgPart::Value(Tag::I64, ordinal),
            MsgPart::text(": hipModuleLoadData returned "),
        ];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        restore(f, table, &switch);
        parts
    });
    let module = f.b.load(Ty::Ptr, module_at, 0);
    for (k, kernel) in binary.kernels.iter().enumerate() {
        let name = static_str(&mut f, kernel);
        let at = f.b.ptr_add_imm(row, 8 * k as i64);
        let rc = call(
            &mut f.b,
            table,
            Entry::ModuleGetFunction,
            vec![at, module, name],
        );
        let ok = f.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
        f.check(ok, |f| {
            let mut parts = vec![MsgPart::text(format!(
                "{what}: cannot get kernel '{kernel}': hipModuleGetFunction returned "
            ))];
            parts.extend(describe_error(f.m, &mut f.b, table, rc));
            // The module is useless without all its kernels: forget the ones found, unload
            // it (the next launch tries again).
            for j in 0..k {
                f.b.store_imm(Ty::Ptr, row, 8 * j, 0);
            }
            call(&mut f.b, table, Entry::ModuleUnload, vec![module]);
            restore(f, table, &switch);
            parts
        });
    }
    restore(&mut f, table, &switch);
    f.finish_ok()
}

/// Whether a function switched devices, and the caller's device.
struct Switch {
    previous_at: Var,
    switched: Var,
}

/// Makes `device` current unless it is; `previous_at` receives the caller's device.
fn device_switch(
    f: &mut InitFn<'_, '_>,
    what: &str,
    table: Var,
    device: Var,
    ordinal: Var,
    previous_at: Var,
) -> Switch {
    f.b.store_imm(Ty::I32, previous_at, 0, -1);
    let rc = call(&mut f.b, table, Entry::GetDevice, vec![previous_at]);
    let ok = f.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![MsgPart::text(format!(
            "cannot load {what}: cannot ask for the current HIP device: hipGetDevice returned "
        ))];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        parts
    });
    let previous = f.b.load(Ty::I32, previous_at, 0);
    let switched = f.b.icmp(IntCC::Ne, previous, device);
    let set = f.b.new_block();
    let done = f.b.new_block();
    f.b.branch(switched, set, done);
    f.b.switch_to(set);
    let rc = call(&mut f.b, table, Entry::SetDevice, vec![device]);
    let ok = f.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![
            MsgPart::text(format!("cannot load {what}: HIP device ")),
            MsgPart::Value(Tag::I64, ordinal),
            MsgPart::text(" is not available: hipSetDevice returned "),
        ];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        parts
    });
    f.b.jump(done);
    f.b.switch_to(done);
    Switch {
        previous_at,
        switched,
    }
}

/// Makes the caller's device current again when [`device_switch`] switched.
fn restore(f: &mut InitFn<'_, '_>, table: Var, switch: &Switch) {
    let back = f.b.new_block();
    let done = f.b.new_block();
    f.b.branch(switch.switched, back, done);
    f.b.switch_to(back);
    let previous = f.b.load(Ty::I32, switch.previous_at, 0);
    call(&mut f.b, table, Entry::SetDevice, vec![previous]);
    f.b.jump(done);
    f.b.switch_to(done);
}

/// Calls the loader of a binary: `rc = load(table, device, row)`.
pub(super) fn call_loader(
    b: &mut crate::lir::builder::FuncBuilder,
    loader: FuncId,
    table: Var,
    device: Var,
    row: Var,
) -> Var {
    b.call(
        Callee::Func(loader),
        Some(Ty::I32),
        vec![table, device, row],
    )
    .expect("returns")
}
