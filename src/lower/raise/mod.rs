//! The cold error path: messages assembled from parts by one shared helper per module.
//!
//! A message is a template, read-only data of parts (`{tag: i64, value: i64}`, 16 bytes
//! each), made once per distinct message: static text is an offset into the module's one
//! object of message texts, a run-time value the index of a word the failing check stores
//! on the stack. So a failing check stores only its values and calls the helper
//! `raise(kind, template, n, values, texts) -> -1`. The helper formats the run-time values
//! (integers, type indices, dtypes, devices, floats, ...) into stack buffers, then calls
//! `TVMFFIErrorSetRaisedFromCStrParts` (a C API function, so no libc is needed). The success
//! path never touches any of this.

mod format;
#[cfg(test)]
mod tests;

use crate::lir::{
    BinOp, Callee, ConvOp, DataId, FuncId, IntCC, Linkage, Module, Signature, SlotId, Symbol, Ty,
    Var, builder::FuncBuilder,
};

use super::capi::CApi;
use super::modctx::{ModuleCtx, RaiseTarget};
use super::options::{LowerSettings, RaiseHelper};

use format::{
    Formatters, call_cursor, emit_fmt_bytes, emit_fmt_cstr, emit_fmt_f64, emit_fmt_hex,
    emit_fmt_u64, name_table, terminate, write_device, write_dtype, write_i64, write_type_name,
};

/// Size of one message part.
pub const PART_SIZE: u32 = 16;
/// Offset of the tag in a part.
pub const PART_TAG_OFFSET: usize = 0;
/// Offset of the value in a part.
pub const PART_VALUE_OFFSET: usize = 8;
/// Most parts one message may have.
pub const MAX_PARTS: u32 = 64;
/// Bytes of formatting buffer per part.
const PART_BUF: u32 = 48;
/// A template part's tag flag: its value is the index of a word in the `values` the failing
/// check stored (a run-time value).
pub const STORED: i64 = 1 << 32;
/// A template part's tag flag: its value is an offset into the module's message texts.
pub const TEXT: i64 = 1 << 33;
/// The bits of a template part's tag that are its [`Tag`].
const TAG_BITS: i64 = 0xffff_ffff;

/// Part tags: how the helper renders the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum Tag {
    /// A pointer to a NUL-terminated string.
    CStr = 0,
    /// A signed 64-bit integer, in decimal.
    I64 = 1,
    /// An unsigned 64-bit integer, in decimal.
    U64 = 2,
    /// A type index, by its type name (`int`, `ffi.Shape`, a registered type key...).
    TypeIndex = 3,
    /// A `DLDataType` packed in the low 32 bits, by name (`float32`).
    DType = 4,
    /// A `DLDevice` packed in 64 bits, as `cuda:0`.
    Device = 5,
    /// The bits of an `f64`.
    F64 = 6,
    /// A bool (0/1), as `true` / `false`.
    Bool = 7,
    /// A pointer, in hex.
    Ptr = 8,
}

/// One part of a message, as the lowering describes it.
#[derive(Clone, Debug)]
pub enum MsgPart {
    /// Static text.
    Text(String),
    /// A run-time value (an `I64`/`I32`/... variable, widened as the tag requires) and how to render it.
    Value(Tag, Var),
}

impl MsgPart {
    /// Static text.
    pub fn text(s: impl Into<String>) -> Self {
        MsgPart::Text(s.into())
    }
}

/// The helper's signature: `int32 raise(const char* kind, const Part* template, int32 n,
/// const int64_t* values, const char* texts)`.
pub fn helper_signature() -> Signature {
    Signature::new(
        vec![Ty::Ptr, Ty::Ptr, Ty::I32, Ty::Ptr, Ty::Ptr],
        Some(Ty::I32),
    )
}

impl ModuleCtx<'_> {
    /// The callee of the raise helper, emitting or declaring it on first use.
    pub(crate) fn raise_callee(&mut self) -> Callee {
        let target = match self.raise {
            Some(t) => t,
            None => {
                let t = match &self.options.raise_helper {
                    RaiseHelper::Embedded => {
                        let name = self.local_name("raise");
                        RaiseTarget::Local(emit_helper(self, &name, Linkage::Local))
                    }
                    RaiseHelper::External(symbol) => {
                        let symbol = symbol.clone();
                        RaiseTarget::External(self.import(&symbol, helper_signature()))
                    }
                };
                self.raise = Some(t);
                t
            }
        };
        match target {
            RaiseTarget::Local(id) => Callee::Func(id),
            RaiseTarget::External(id) => Callee::Import(id),
        }
    }
}

/// A message ready for the raise helper ([`store_message`]): its kind's name, its template,
/// the template's part count (an `I32`), the stored values and the module's message texts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Message {
    /// The kind's name (a `Ptr` to a C string: `ValueError`).
    pub kind: Var,
    /// The template's address (a `Ptr`).
    pub template: Var,
    /// The template's part count (an `I32`).
    pub count: Var,
    /// The stored run-time values (a `Ptr` to the stack slot).
    pub values: Var,
    /// The module's message texts (a `Ptr`).
    pub texts: Var,
}

/// Stores the run-time values of the message `parts` in the stack slot `slot` (grown to fit)
/// and calls the raise helper with `kind`; returns the helper's result (-1). The caller then
/// returns its error code.
pub(crate) fn emit_raise(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    slot: SlotId,
    kind: &str,
    parts: Vec<MsgPart>,
) -> Var {
    let message = store_message(m, b, slot, kind, parts);
    call_raise(m, b, message)
}

/// Calls the raise helper with `message`; returns its result (-1).
pub(crate) fn call_raise(m: &mut ModuleCtx<'_>, b: &mut FuncBuilder, message: Message) -> Var {
    let raise = m.raise_callee();
    let args = vec![
        message.kind,
        message.template,
        message.count,
        message.values,
        message.texts,
    ];
    b.call(raise, Some(Ty::I32), args).expect("returns")
}

/// The message `parts` as a template (made once per distinct message) whose run-time values
/// are stored in the stack slot `slot` (grown to fit), for the raise helper with `kind`.
pub(crate) fn store_message(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    slot: SlotId,
    kind: &str,
    parts: Vec<MsgPart>,
) -> Message {
    let parts = merge_text(parts);
    let count = parts.len().min(MAX_PARTS as usize);
    let stored = parts
        .iter()
        .take(count)
        .filter(|p| matches!(p, MsgPart::Value(..)))
        .count();
    b.grow_slot(slot, stored.max(1) as u32 * 8);
    let values = b.stack_addr(slot, 0);
    let mut template = Vec::with_capacity(count * PART_SIZE as usize);
    let mut next = 0i64;
    for part in parts.into_iter().take(count) {
        let (tag, value) = match part {
            MsgPart::Text(text) => (
                Tag::CStr as i64 | TEXT,
                i64::from(m.message_text(text.as_bytes())),
            ),
            MsgPart::Value(tag, var) => {
                let word = widen_for_message(b, tag, var);
                b.store(values, 8 * next as usize, word);
                next += 1;
                (tag as i64 | STORED, next - 1)
            }
        };
        template.extend_from_slice(&tag.to_le_bytes());
        template.extend_from_slice(&value.to_le_bytes());
    }
    let template = m.message_template(template);
    let texts = m.message_texts();
    let kind_data = m.cstring(kind.as_bytes());
    Message {
        kind: b.symbol_addr(Symbol::Data(kind_data)),
        template: b.symbol_addr(Symbol::Data(template)),
        count: b.iconst(Ty::I32, count as i64),
        values,
        texts: b.symbol_addr(Symbol::Data(texts)),
    }
}

/// Widens a message value to the `I64` a part holds.
fn widen_for_message(b: &mut FuncBuilder, tag: Tag, var: Var) -> Var {
    match b.ty(var) {
        Ty::I64 => var,
        Ty::Ptr => b.convert(ConvOp::PtrToInt, var, Ty::I64),
        Ty::F64 => b.convert(ConvOp::Bitcast, var, Ty::I64),
        Ty::F32 => {
            let wide = b.convert(ConvOp::Fpromote, var, Ty::F64);
            b.convert(ConvOp::Bitcast, wide, Ty::I64)
        }
        // Unsigned renderings zero-extend; everything else sign-extends.
        Ty::I8 | Ty::I16 | Ty::I32 => {
            let signed = !matches!(tag, Tag::U64 | Tag::DType | Tag::Bool | Tag::Ptr);
            b.resize(var, Ty::I64, signed)
        }
    }
}

/// Joins adjacent text parts.
fn merge_text(parts: Vec<MsgPart>) -> Vec<MsgPart> {
    let mut out: Vec<MsgPart> = Vec::with_capacity(parts.len());
    for part in parts {
        match (out.last_mut(), part) {
            (Some(MsgPart::Text(prev)), MsgPart::Text(next)) => prev.push_str(&next),
            (_, MsgPart::Text(t)) if t.is_empty() => {}
            (_, part @ (MsgPart::Text(_) | MsgPart::Value(..))) => out.push(part),
        }
    }
    out
}

/// A standalone module holding only the helper, exported as `symbol` (compiled once by the JIT).
pub fn helper_module(symbol: &str) -> Module {
    let ir = crate::ir::Module::new("safecall_raise");
    let options = LowerSettings::default();
    let no_expressions = crate::ir::typing::ExprTypes::default();
    let mut ctx = ModuleCtx::new(&ir, &no_expressions, &options);
    emit_helper(&mut ctx, symbol, Linkage::Export);
    ctx.finish()
}

/// Type indices below this one are named from a table in the generated code; dynamic types
/// (from 128) are asked of the runtime.
const TYPE_TABLE_LEN: i32 = safecall_runtime::abi::type_index::STATIC_OBJECT_END;

/// The name messages use for a static type index ("got ffi.Shape"): the runtime's type key,
/// except that inline strings and bytes are named like the objects a user thinks of.
fn type_name(index: i32) -> &'static str {
    use safecall_runtime::abi::type_index as ti;
    match index {
        ti::SMALL_STR => "ffi.String",
        ti::SMALL_BYTES => "ffi.Bytes",
        _ => safecall_runtime::registry::static_type_key(index).unwrap_or(""),
    }
}

/// DLPack device type names, by code.
pub const DEVICE_NAMES: &[&str] = &[
    "",
    "cpu",
    "cuda",
    "cuda_host",
    "opencl",
    "",
    "",
    "vulkan",
    "metal",
    "vpi",
    "rocm",
    "rocm_host",
    "ext_dev",
    "cuda_managed",
    "oneapi",
    "webgpu",
    "hexagon",
    "maia",
    "trn",
];

/// The name of a device type code, or `None`.
pub fn device_name(code: i32) -> Option<&'static str> {
    DEVICE_NAMES
        .get(usize::try_from(code).ok()?)
        .copied()
        .filter(|n| !n.is_empty())
}

fn dtype_code_names() -> Vec<&'static str> {
    (0u8..=17)
        .map(|c| safecall_runtime::dtype::code_name(c).unwrap_or(""))
        .collect()
}

fn emit_helper(ctx: &mut ModuleCtx<'_>, name: &str, linkage: Linkage) -> FuncId {
    let fmts = Formatters {
        u64: emit_fmt_u64(ctx),
        cstr: emit_fmt_cstr(ctx),
        bytes: emit_fmt_bytes(ctx),
        hex: emit_fmt_hex(ctx),
        f64: FuncId(0),
    };
    let fmts = Formatters {
        f64: emit_fmt_f64(ctx, &fmts),
        ..fmts
    };
    let type_names: Vec<&str> = (0..TYPE_TABLE_LEN).map(type_name).collect();
    let types = name_table(ctx, "type", &type_names);
    let codes = name_table(ctx, "dtype_code", &dtype_code_names());
    let devices = name_table(ctx, "device", DEVICE_NAMES);
    let set_raised = ctx.capi(CApi::ErrorSetRaisedFromCStrParts);
    let get_type_info = ctx.capi(CApi::GetTypeInfo);
    let strings: Vec<DataId> = [
        "true",
        "false",
        "type_index=",
        "x",
        "xvscalex",
        ":",
        "code=",
    ]
    .iter()
    .map(|s| ctx.cstring(s.as_bytes()))
    .collect();
    let [
        s_true,
        s_false,
        s_type_index,
        s_x,
        s_xvscale,
        s_colon,
        s_code,
    ] = strings[..]
    else {
        unreachable!()
    };

    let mut b = FuncBuilder::new(name, linkage, helper_signature());
    b.set_cold();
    b.source("cold helper: format the message parts and raise the error");
    let (kind, parts, n) = (b.param(0), b.param(1), b.param(2));
    let (values, texts) = (b.param(3), b.param(4));
    let ptrs_slot = b.slot(MAX_PARTS * 8, 8);
    let bufs_slot = b.slot(MAX_PARTS * PART_BUF, 8);
    let ptrs = b.stack_addr(ptrs_slot, 0);
    let bufs = b.stack_addr(bufs_slot, 0);
    let n64 = b.resize(n, Ty::I64, true);
    let i = b.mutable_var(Ty::I64);
    b.assign_iconst(i, 0);
    let head = b.new_block();
    let body = b.new_block();
    let next = b.new_block();
    let done = b.new_block();
    b.jump(head);

    b.switch_to(head);
    let more = b.icmp(IntCC::Slt, i, n64);
    b.branch(more, body, done);

    b.switch_to(body);
    let part_off = b.binary_imm(BinOp::Imul, i, i64::from(PART_SIZE));
    let part = b.ptr_add(parts, part_off);
    let tag_word = b.load(Ty::I64, part, PART_TAG_OFFSET);
    let raw = b.load(Ty::I64, part, PART_VALUE_OFFSET);
    // The part's value: a stored word (`values[raw]`), a text (`texts + raw`) or `raw` itself.
    let value = b.mutable_var(Ty::I64);
    b.assign(value, raw);
    let load_stored = b.new_block();
    let not_stored = b.new_block();
    let add_text = b.new_block();
    let valued = b.new_block();
    let flag = b.binary_imm(BinOp::And, tag_word, STORED);
    let is_stored = b.icmp_imm(IntCC::Ne, flag, 0);
    b.branch(is_stored, load_stored, not_stored);
    b.switch_to(load_stored);
    let at = b.binary_imm(BinOp::Imul, raw, 8);
    let word = b.ptr_add(values, at);
    let stored = b.load(Ty::I64, word, 0);
    b.assign(value, stored);
    b.jump(valued);
    b.switch_to(not_stored);
    let flag = b.binary_imm(BinOp::And, tag_word, TEXT);
    let is_text = b.icmp_imm(IntCC::Ne, flag, 0);
    b.branch(is_text, add_text, valued);
    b.switch_to(add_text);
    let base = b.convert(ConvOp::PtrToInt, texts, Ty::I64);
    let text = b.binary(BinOp::Iadd, base, raw);
    b.assign(value, text);
    b.jump(valued);
    b.switch_to(valued);
    let tag = b.binary_imm(BinOp::And, tag_word, TAG_BITS);
    let buf_off = b.binary_imm(BinOp::Imul, i, i64::from(PART_BUF));
    let buf = b.ptr_add(bufs, buf_off);
    let ptr_off = b.binary_imm(BinOp::Imul, i, 8);
    let out = b.ptr_add(ptrs, ptr_off);
    // Default: the formatted text starts at `buf`; tags that point elsewhere overwrite it.
    b.store(out, 0, buf);

    // Dispatch on the tag: a chain of compares, each case ends by jumping to `next`.
    type EmitCase<'a> = &'a dyn Fn(&mut FuncBuilder);
    let cases: [(Tag, EmitCase<'_>); 9] = [
        (Tag::CStr, &|b: &mut FuncBuilder| {
            let p = b.convert(ConvOp::IntToPtr, value, Ty::Ptr);
            b.store(out, 0, p);
        }),
        (Tag::I64, &|b: &mut FuncBuilder| {
            let cursor = write_i64(b, &fmts, buf, value);
            terminate(b, cursor);
        }),
        (Tag::U64, &|b: &mut FuncBuilder| {
            let cursor = call_cursor(b, fmts.u64, vec![buf, value]);
            terminate(b, cursor);
        }),
        (Tag::TypeIndex, &|b: &mut FuncBuilder| {
            write_type_name(
                b,
                &fmts,
                &types,
                get_type_info,
                s_type_index,
                buf,
                out,
                value,
            );
        }),
        (Tag::DType, &|b: &mut FuncBuilder| {
            write_dtype(b, &fmts, &codes, [s_x, s_xvscale, s_code], buf, value);
        }),
        (Tag::Device, &|b: &mut FuncBuilder| {
            write_device(b, &fmts, &devices, s_colon, buf, value);
        }),
        (Tag::F64, &|b: &mut FuncBuilder| {
            let cursor = call_cursor(b, fmts.f64, vec![buf, value]);
            terminate(b, cursor);
        }),
        (Tag::Bool, &|b: &mut FuncBuilder| {
            let t = b.symbol_addr(Symbol::Data(s_true));
            let f = b.symbol_addr(Symbol::Data(s_false));
            let zero = b.iconst(Ty::I64, 0);
            let is_true = b.icmp(IntCC::Ne, value, zero);
            let p = b.select(is_true, t, f);
            b.store(out, 0, p);
        }),
        (Tag::Ptr, &|b: &mut FuncBuilder| {
            let cursor = call_cursor(b, fmts.hex, vec![buf, value]);
            terminate(b, cursor);
        }),
    ];
    for (case_tag, emit) in cases {
        let this = b.new_block();
        let other = b.new_block();
        let is = b.icmp_imm(IntCC::Eq, tag, case_tag as i64);
        b.branch(is, this, other);
        b.switch_to(this);
        emit(&mut b);
        b.jump(next);
        b.switch_to(other);
    }
    // Unknown tag (a lowering bug): leave the empty string.
    b.store_imm(Ty::I8, buf, 0, 0);
    b.jump(next);

    b.switch_to(next);
    let i_next = b.binary_imm(BinOp::Iadd, i, 1);
    b.assign(i, i_next);
    b.jump(head);

    b.switch_to(done);
    b.call(Callee::Import(set_raised), None, vec![kind, ptrs, n]);
    let minus_one = b.iconst(Ty::I32, -1);
    b.ret(Some(minus_one));
    ctx.add_function(b.finish())
}
