//! Helpers of the GPU lowering shared by the driver and launch code: zeroed data, the
//! `init(void** out)` functions run once per process, driver calls and their error messages.

use crate::lir::{
    BinOp, Callee, DataId, FuncId, IntCC, Linkage, Signature, SlotId, Symbol, Ty, Var,
    builder::FuncBuilder,
};

use crate::ir::{BinaryFormat, DeviceBinary};

use super::super::context::FnCtx;
use super::super::modctx::ModuleCtx;
use super::super::raise::{MsgPart, PART_SIZE, Tag, emit_raise};
use super::cuda::{self, Entry};
use safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR;

/// A writable, 8-byte aligned, zeroed data object of `bytes` bytes.
pub(super) fn zeroed(m: &mut ModuleCtx<'_>, what: &str, bytes: usize) -> DataId {
    let name = m.local_name(what);
    m.add_data(crate::lir::Data {
        name,
        linkage: Linkage::Local,
        writable: true,
        align: 8,
        contents: vec![0; bytes],
        relocs: Vec::new(),
        section: None,
    })
}

/// Embeds the image of device binary `binary` as read-only module data (PTX with the NUL the
/// CUDA driver needs appended); returns it with the binary's description for messages,
/// `device binary 'NAME' (FORMAT, N bytes)`.
pub(super) fn embed_image(
    m: &mut ModuleCtx<'_>,
    binary: &DeviceBinary,
    what: &str,
) -> (DataId, String) {
    let mut contents = binary.data.clone();
    if binary.format == BinaryFormat::Ptx && contents.last() != Some(&0) {
        contents.push(0);
    }
    let name = m.local_name(what);
    let image = m.add_data(crate::lir::Data {
        name,
        linkage: Linkage::Local,
        writable: false,
        align: 8,
        contents,
        relocs: Vec::new(),
        section: None,
    });
    let description = format!(
        "device binary '{}' ({}, {} bytes)",
        binary.name,
        binary.format.keyword(),
        binary.data.len()
    );
    (image, description)
}

/// A function of the `int init(void** out)` shape `TVMFFIHandleInitOnce` runs, with a slot
/// for error messages.
pub(super) struct InitFn<'a, 'm> {
    pub m: &'a mut ModuleCtx<'m>,
    pub b: FuncBuilder,
    pub parts: SlotId,
    pub out: Var,
}

impl<'a, 'm> InitFn<'a, 'm> {
    pub(super) fn new(m: &'a mut ModuleCtx<'m>, what: &str) -> Self {
        Self::with_params(m, what, vec![Ty::Ptr])
    }

    /// A cold local function `int f(params...)` of the same shape: `out` is its first
    /// parameter.
    pub(super) fn with_params(m: &'a mut ModuleCtx<'m>, what: &str, params: Vec<Ty>) -> Self {
        let name = m.local_name(what);
        let mut b = FuncBuilder::new(name, Linkage::Local, Signature::new(params, Some(Ty::I32)));
        b.set_cold();
        let parts = b.slot(PART_SIZE, 8);
        let out = b.param(0);
        InitFn { m, b, parts, out }
    }

    /// Raises a RuntimeError with `parts` and returns -1; the current block ends.
    pub(super) fn fail(&mut self, parts: Vec<MsgPart>) {
        emit_raise(self.m, &mut self.b, self.parts, RUNTIME_ERROR, parts);
        let rc = self.b.iconst(Ty::I32, -1);
        self.b.ret(Some(rc));
    }

    /// Continues when `ok`; otherwise raises the message `parts` builds.
    pub(super) fn check(&mut self, ok: Var, parts: impl FnOnce(&mut Self) -> Vec<MsgPart>) {
        let pass = self.b.new_block();
        let failing = self.b.new_cold_block();
        self.b.branch(ok, pass, failing);
        self.b.switch_to(failing);
        let parts = parts(self);
        self.fail(parts);
        self.b.switch_to(pass);
    }

    /// Stores `value` through `out`, returns 0 and adds the function to the module.
    pub(super) fn finish(mut self, value: Var) -> FuncId {
        self.b.store(self.out, 0, value);
        self.finish_ok()
    }

    /// Returns 0 and adds the function to the module.
    pub(super) fn finish_ok(mut self) -> FuncId {
        let zero = self.b.iconst(Ty::I32, 0);
        self.b.ret(Some(zero));
        self.m.add_function(self.b.finish())
    }
}

/// Calls driver entry `entry` through the table at `table`.
pub(super) fn call_entry(b: &mut FuncBuilder, table: Var, entry: Entry, args: Vec<Var>) -> Var {
    let f = b.load(Ty::Ptr, table, entry.offset());
    b.call(Callee::Indirect(f, entry.signature()), Some(Ty::I32), args)
        .expect("driver entries return CUresult")
}

/// `p`, or the static text `fallback` when `p` is NULL.
pub(super) fn cstr_or(m: &mut ModuleCtx<'_>, b: &mut FuncBuilder, p: Var, fallback: &str) -> Var {
    let data = m.cstring(fallback.as_bytes());
    let fallback = b.symbol_addr(Symbol::Data(data));
    let null = b.iconst(Ty::Ptr, 0);
    let is_null = b.icmp(IntCC::Eq, p, null);
    b.select(is_null, fallback, p)
}

/// Message parts describing the driver error `rc` (an `I32`):
/// `CUDA_ERROR_NAME (error N: description)`. The name and the description come from the
/// module's one [`describe_fn`], which asks the driver for them: a failing check calls it
/// instead of carrying both driver calls itself.
pub(super) fn describe_error(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    table: Var,
    rc: Var,
) -> Vec<MsgPart> {
    let describe = describe_fn(m);
    let slot = b.slot(16, 8);
    let out = b.stack_addr(slot, 0);
    b.call(Callee::Func(describe), None, vec![table, rc, out]);
    let name = b.load(Ty::Ptr, out, 0);
    let text = b.load(Ty::Ptr, out, 8);
    error_parts(name, rc, text)
}

/// `NAME (error N: description)`: the message parts of a driver or runtime error `rc` (an
/// `I32`) whose name and description are the C strings `name` and `text`.
pub(super) fn error_parts(name: Var, rc: Var, text: Var) -> Vec<MsgPart> {
    vec![
        MsgPart::Value(Tag::CStr, name),
        MsgPart::text(" (error "),
        MsgPart::Value(Tag::I64, rc),
        MsgPart::text(": "),
        MsgPart::Value(Tag::CStr, text),
        MsgPart::text(")"),
    ]
}

/// The cold local function `void describe(table, rc, out)` (emitted once per module): the
/// driver's name of error `rc` in `out[0]` and its description in `out[1]`
/// (`cuGetErrorName`, `cuGetErrorString`), each a static fallback when the driver gives none.
fn describe_fn(m: &mut ModuleCtx<'_>) -> FuncId {
    if let Some(id) = m.gpu.describe_error {
        return id;
    }
    let name = m.local_name("cuda_describe_error");
    let sig = Signature::new(vec![Ty::Ptr, Ty::I32, Ty::Ptr], None);
    let mut b = FuncBuilder::new(name, Linkage::Local, sig);
    b.set_cold();
    b.source("cold helper: the driver's name and description of an error code");
    let (table, rc, out) = (b.param(0), b.param(1), b.param(2));
    for (k, (entry, fallback)) in [
        (Entry::GetErrorName, "CUDA_ERROR_UNKNOWN_CODE"),
        (Entry::GetErrorString, "no description"),
    ]
    .into_iter()
    .enumerate()
    {
        b.store_imm(Ty::Ptr, out, 8 * k, 0);
        let at = b.ptr_add_imm(out, 8 * k as i64);
        call_entry(&mut b, table, entry, vec![rc, at]);
        let p = b.load(Ty::Ptr, out, 8 * k);
        let text = cstr_or(m, &mut b, p, fallback);
        b.store(out, 8 * k, text);
    }
    b.ret(None);
    let id = m.add_function(b.finish());
    m.gpu.describe_error = Some(id);
    id
}

/// Raises a RuntimeError (the text of `parts`, then the driver's description of `rc`) unless
/// `rc` is `CUDA_SUCCESS`. `parts` runs on the failure path, where it may also emit code that
/// undoes earlier steps (a TMA descriptor's cleanup).
pub(super) fn driver_check(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    rc: Var,
    parts: impl FnOnce(&mut FnCtx<'_, '_>) -> Vec<MsgPart>,
) {
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    fx.check(ok, RUNTIME_ERROR, |fx| {
        let mut all = parts(fx);
        all.extend(describe_error(fx.m, &mut fx.b, table, rc));
        all
    });
}

/// The address of `ordinal`'s 8-byte entry in the per-device cache `cache`; ordinals past
/// [`cuda::CACHED_DEVICES`] share a scratch entry that is reset to 0 (never a hit).
pub(super) fn cached_entry(fx: &mut FnCtx<'_, '_>, cache: DataId, ordinal: Var) -> Var {
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
