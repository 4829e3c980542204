//! The cold error path: messages assembled from parts by one shared helper per module.
//!
//! A failing check stores a short array of parts (`{tag: i64, value: i64}`, 16 bytes each)
//! on the stack and calls the helper `raise(kind, parts, n) -> -1`. Static text lives in
//! read-only data; run-time values (integers, type indices, dtypes, devices, floats, ...) are
//! formatted into stack buffers by the helper, which then calls
//! `TVMFFIErrorSetRaisedFromCStrParts` (a C API function, so no libc is needed). The success
//! path never touches any of this.

use crate::lir::{
    BinOp, Callee, ConvOp, Data, DataId, FloatCC, FuncId, ImportId, IntCC, Linkage, Module,
    Signature, Symbol, Ty, Var, builder::FuncBuilder,
};
use safecall_runtime::abi::{
    BYTE_ARRAY_DATA_OFFSET, BYTE_ARRAY_SIZE_OFFSET, TYPE_INFO_TYPE_KEY_OFFSET,
};

use super::{ModuleCtx, RaiseHelper, capi::CApi};

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
/// Longest type key copied into a message.
const MAX_TYPE_KEY: i64 = 40;

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

/// How a module reaches the helper.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RaiseTarget {
    Local(FuncId),
    External(ImportId),
}

/// The helper's signature: `int32 raise(const char* kind, const Part* parts, int32 n)`.
pub fn helper_signature() -> Signature {
    Signature::new(vec![Ty::Ptr, Ty::Ptr, Ty::I32], Some(Ty::I32))
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

/// A standalone module holding only the helper, exported as `symbol` (compiled once by the JIT).
pub fn helper_module(symbol: &str) -> Module {
    let ir = crate::ir::Module {
        name: "safecall_raise".to_owned(),
        externs: Vec::new(),
        imported_modules: Vec::new(),
        imports: Vec::new(),
        system_lib_prefix: None,
        functions: Vec::new(),
    };
    let options = super::LowerOptions::default();
    let mut ctx = ModuleCtx::new(&ir, &options);
    emit_helper(&mut ctx, symbol, Linkage::Export);
    ctx.finish()
}

/// A string table in read-only data: NUL-terminated names and a `u16` offset per index.
struct NameTable {
    blob: DataId,
    offsets: DataId,
    len: i64,
}

fn name_table(ctx: &mut ModuleCtx<'_>, what: &str, names: &[&str]) -> NameTable {
    let mut blob = Vec::new();
    let mut offsets = Vec::new();
    for name in names {
        offsets.extend_from_slice(&(blob.len() as u16).to_le_bytes());
        blob.extend_from_slice(name.as_bytes());
        blob.push(0);
    }
    let mut data = |name: String, contents: Vec<u8>, align: u32| {
        ctx.add_data(Data {
            name,
            linkage: Linkage::Local,
            writable: false,
            align,
            contents,
            relocs: Vec::new(),
            section: None,
        })
    };
    let blob_name = format!("__safecall_{what}_names");
    let offsets_name = format!("__safecall_{what}_offsets");
    NameTable {
        blob: data(blob_name, blob, 1),
        offsets: data(offsets_name, offsets, 2),
        len: names.len() as i64,
    }
}

/// Names of type indices 0..=78 used in messages ("got ffi.Shape").
const TYPE_NAMES: &[&str] = &[
    "None",
    "int",
    "bool",
    "float",
    "void*",
    "DataType",
    "Device",
    "DLTensor*",
    "const char*",
    "TVMFFIByteArray*",
    "ObjectRValueRef",
    "ffi.String",
    "ffi.Bytes",
    "ffi.Unchanged",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "",
    "ffi.Object",
    "ffi.String",
    "ffi.Bytes",
    "ffi.Error",
    "ffi.Function",
    "ffi.Shape",
    "ffi.Tensor",
    "ffi.Array",
    "ffi.Map",
    "ffi.Module",
    "ffi.OpaquePyObject",
    "ffi.List",
    "ffi.Dict",
    "ffi.VisitInterrupt",
    "ffi.BigInt",
];

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

/// Small formatting routines: each takes a cursor into a buffer and returns the advanced cursor.
struct Formatters {
    u64: FuncId,
    cstr: FuncId,
    bytes: FuncId,
    hex: FuncId,
    f64: FuncId,
}

fn emit_helper(ctx: &mut ModuleCtx<'_>, name: &str, linkage: Linkage) -> FuncId {
    assert!(const { TYPE_NAMES.len() == 79 });
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
    let types = name_table(ctx, "type", TYPE_NAMES);
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
    let tag = b.load(Ty::I64, part, PART_TAG_OFFSET);
    let value = b.load(Ty::I64, part, PART_VALUE_OFFSET);
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

fn call_cursor(b: &mut FuncBuilder, f: FuncId, args: Vec<Var>) -> Var {
    b.call(Callee::Func(f), Some(Ty::Ptr), args)
        .expect("formatters return the cursor")
}

fn terminate(b: &mut FuncBuilder, cursor: Var) {
    b.store_imm(Ty::I8, cursor, 0, 0);
}

fn write_byte(b: &mut FuncBuilder, cursor: Var, byte: u8) -> Var {
    b.store_imm(Ty::I8, cursor, 0, i64::from(byte));
    b.ptr_add_imm(cursor, 1)
}

fn write_static(b: &mut FuncBuilder, fmts: &Formatters, cursor: Var, text: DataId) -> Var {
    let src = b.symbol_addr(Symbol::Data(text));
    call_cursor(b, fmts.cstr, vec![cursor, src])
}

/// Writes a signed decimal: `-` then the magnitude (wrapping negation is right for MIN as u64).
fn write_i64(b: &mut FuncBuilder, fmts: &Formatters, cursor: Var, value: Var) -> Var {
    let out = b.mutable_var(Ty::Ptr);
    b.assign(out, cursor);
    let magnitude = b.mutable_var(Ty::I64);
    b.assign(magnitude, value);
    let negative = b.icmp_imm(IntCC::Slt, value, 0);
    let neg_block = b.new_block();
    let join = b.new_block();
    b.branch(negative, neg_block, join);
    b.switch_to(neg_block);
    let advanced = write_byte(b, cursor, b'-');
    b.assign(out, advanced);
    let negated = b.unary(crate::lir::UnOp::Ineg, value);
    b.assign(magnitude, negated);
    b.jump(join);
    b.switch_to(join);
    call_cursor(b, fmts.u64, vec![out, magnitude])
}

#[allow(clippy::too_many_arguments)]
fn write_type_name(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    types: &NameTable,
    get_type_info: ImportId,
    s_type_index: DataId,
    buf: Var,
    out: Var,
    value: Var,
) {
    let known = b.new_block();
    let not_static = b.new_block();
    let dynamic = b.new_block();
    let info_ok = b.new_block();
    let fallback = b.new_block();
    let join = b.new_block();
    let in_table = b.icmp_imm(IntCC::Ult, value, types.len);
    b.branch(in_table, known, not_static);

    // Static index: point straight at the name (unused POD slots have empty names).
    b.switch_to(known);
    let name = table_entry(b, types, value);
    let first = b.load(Ty::I8, name, 0);
    let empty = b.icmp_imm(IntCC::Eq, first, 0);
    let named = b.new_block();
    b.branch(empty, fallback, named);
    b.switch_to(named);
    b.store(out, 0, name);
    b.jump(join);

    // Dynamic types (>= 128) are registered: ask the runtime for the type key.
    b.switch_to(not_static);
    let is_dynamic = b.icmp_imm(
        IntCC::Sge,
        value,
        i64::from(safecall_runtime::abi::type_index::DYN_OBJECT_BEGIN),
    );
    b.branch(is_dynamic, dynamic, fallback);
    b.switch_to(dynamic);
    let index32 = b.resize(value, Ty::I32, true);
    let info = b
        .call(Callee::Import(get_type_info), Some(Ty::Ptr), vec![index32])
        .expect("TVMFFIGetTypeInfo returns a pointer");
    let null = b.iconst(Ty::Ptr, 0);
    let has_info = b.icmp(IntCC::Ne, info, null);
    b.branch(has_info, info_ok, fallback);
    b.switch_to(info_ok);
    let data = b.load(
        Ty::Ptr,
        info,
        TYPE_INFO_TYPE_KEY_OFFSET + BYTE_ARRAY_DATA_OFFSET,
    );
    let size = b.load(
        Ty::I64,
        info,
        TYPE_INFO_TYPE_KEY_OFFSET + BYTE_ARRAY_SIZE_OFFSET,
    );
    let cap = b.iconst(Ty::I64, MAX_TYPE_KEY);
    let len = b.binary(BinOp::Umin, size, cap);
    let cursor = b
        .call(
            Callee::Func(fmts.bytes),
            Some(Ty::Ptr),
            vec![buf, data, len],
        )
        .expect("cursor");
    terminate(b, cursor);
    b.jump(join);

    b.switch_to(fallback);
    let cursor = write_static(b, fmts, buf, s_type_index);
    let cursor = write_i64(b, fmts, cursor, value);
    terminate(b, cursor);
    b.jump(join);
    b.switch_to(join);
}

/// `blob + offsets[index]` of a [`NameTable`]; `index` must be in range.
fn table_entry(b: &mut FuncBuilder, table: &NameTable, index: Var) -> Var {
    let offsets = b.symbol_addr(Symbol::Data(table.offsets));
    let scaled = b.binary_imm(BinOp::Imul, index, 2);
    let entry = b.ptr_add(offsets, scaled);
    let off16 = b.load(Ty::I16, entry, 0);
    let off = b.resize(off16, Ty::I64, false);
    let blob = b.symbol_addr(Symbol::Data(table.blob));
    b.ptr_add(blob, off)
}

/// Writes a dtype the way `TVMFFIDataTypeToString` spells it.
fn write_dtype(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    codes: &NameTable,
    [s_x, s_xvscale, s_code]: [DataId; 3],
    buf: Var,
    packed: Var,
) {
    use safecall_runtime::abi::dtype_code as dc;
    let code = b.binary_imm(BinOp::And, packed, 0xff);
    let bits_shifted = b.binary_imm(BinOp::Ushr, packed, 8);
    let bits = b.binary_imm(BinOp::And, bits_shifted, 0xff);
    let lanes_shifted = b.binary_imm(BinOp::Ushr, packed, 16);
    let lanes_u = b.binary_imm(BinOp::And, lanes_shifted, 0xffff);
    let lanes16 = b.resize(lanes_u, Ty::I16, false);
    let lanes = b.resize(lanes16, Ty::I64, true);
    let cursor = b.mutable_var(Ty::Ptr);
    b.assign(cursor, buf);

    let known = b.new_block();
    let unknown = b.new_block();
    let join = b.new_block();
    let in_table = b.icmp_imm(IntCC::Ult, code, codes.len);
    b.branch(in_table, known, unknown);

    b.switch_to(unknown);
    let c = write_static(b, fmts, buf, s_code);
    let c = call_cursor(b, fmts.u64, vec![c, code]);
    b.assign(cursor, c);
    b.jump(join);

    b.switch_to(known);
    let name = table_entry(b, codes, code);
    let c = call_cursor(b, fmts.cstr, vec![buf, name]);
    b.assign(cursor, c);
    // bits are spelled for the codes below float8, except the plain 8-bit bool and handles.
    let below_fp8 = b.icmp_imm(IntCC::Ult, code, i64::from(dc::FLOAT8_E3M4));
    let is_bool = b.icmp_imm(IntCC::Eq, code, i64::from(dc::BOOL));
    let bits8 = b.icmp_imm(IntCC::Eq, bits, 8);
    let plain_bool = b.binary(BinOp::And, is_bool, bits8);
    let is_handle = b.icmp_imm(IntCC::Eq, code, i64::from(dc::OPAQUE_HANDLE));
    let skip = b.binary(BinOp::Or, plain_bool, is_handle);
    let one = b.iconst(Ty::I8, 1);
    let keep = b.binary(BinOp::Xor, skip, one);
    let show_bits = b.binary(BinOp::And, below_fp8, keep);
    let bits_block = b.new_block();
    let lanes_check = b.new_block();
    b.branch(show_bits, bits_block, lanes_check);
    b.switch_to(bits_block);
    let c = call_cursor(b, fmts.u64, vec![cursor, bits]);
    b.assign(cursor, c);
    b.jump(lanes_check);

    b.switch_to(lanes_check);
    let vector = b.icmp_imm(IntCC::Sgt, lanes, 1);
    let vector_block = b.new_block();
    let scalable_check = b.new_block();
    let scalable_block = b.new_block();
    b.branch(vector, vector_block, scalable_check);
    b.switch_to(vector_block);
    let c = write_static(b, fmts, cursor, s_x);
    let c = call_cursor(b, fmts.u64, vec![c, lanes]);
    b.assign(cursor, c);
    b.jump(join);
    b.switch_to(scalable_check);
    let scalable = b.icmp_imm(IntCC::Slt, lanes, -1);
    b.branch(scalable, scalable_block, join);
    b.switch_to(scalable_block);
    let c = write_static(b, fmts, cursor, s_xvscale);
    let magnitude = b.unary(crate::lir::UnOp::Ineg, lanes);
    let c = call_cursor(b, fmts.u64, vec![c, magnitude]);
    b.assign(cursor, c);
    b.jump(join);

    b.switch_to(join);
    terminate(b, cursor);
}

/// Writes a device as `cuda:0` (unknown types as their code).
fn write_device(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    devices: &NameTable,
    s_colon: DataId,
    buf: Var,
    packed: Var,
) {
    let type_code = b.binary_imm(BinOp::And, packed, 0xffff_ffff);
    let id_shifted = b.binary_imm(BinOp::Sshr, packed, 32);
    let cursor = b.mutable_var(Ty::Ptr);
    b.assign(cursor, buf);
    let known = b.new_block();
    let named = b.new_block();
    let unknown = b.new_block();
    let join = b.new_block();
    let in_table = b.icmp_imm(IntCC::Ult, type_code, devices.len);
    b.branch(in_table, known, unknown);
    b.switch_to(known);
    let name = table_entry(b, devices, type_code);
    let first = b.load(Ty::I8, name, 0);
    let empty = b.icmp_imm(IntCC::Eq, first, 0);
    b.branch(empty, unknown, named);
    b.switch_to(named);
    let c = call_cursor(b, fmts.cstr, vec![buf, name]);
    b.assign(cursor, c);
    b.jump(join);
    b.switch_to(unknown);
    let c = call_cursor(b, fmts.u64, vec![buf, type_code]);
    b.assign(cursor, c);
    b.jump(join);
    b.switch_to(join);
    let c = write_static(b, fmts, cursor, s_colon);
    let c = write_i64(b, fmts, c, id_shifted);
    terminate(b, c);
}

fn cursor_fn(ctx: &mut ModuleCtx<'_>, what: &str, extra: &[Ty]) -> FuncBuilder {
    let name = ctx.local_name(what);
    let mut params = vec![Ty::Ptr];
    params.extend_from_slice(extra);
    let mut b = FuncBuilder::new(name, Linkage::Local, Signature::new(params, Some(Ty::Ptr)));
    b.set_cold();
    b
}

/// `fmt_u64(cursor, value) -> cursor`: unsigned decimal, no terminator.
fn emit_fmt_u64(ctx: &mut ModuleCtx<'_>) -> FuncId {
    let mut b = cursor_fn(ctx, "fmt_u64", &[Ty::I64]);
    let (cursor, value) = (b.param(0), b.param(1));
    // Count digits.
    let len = b.mutable_var(Ty::I64);
    b.assign_iconst(len, 1);
    let rest = b.mutable_var(Ty::I64);
    let ten = b.iconst(Ty::I64, 10);
    let first = b.binary(BinOp::Udiv, value, ten);
    b.assign(rest, first);
    let count_head = b.new_block();
    let count_body = b.new_block();
    let write_init = b.new_block();
    b.jump(count_head);
    b.switch_to(count_head);
    let more = b.icmp_imm(IntCC::Ne, rest, 0);
    b.branch(more, count_body, write_init);
    b.switch_to(count_body);
    let l = b.binary_imm(BinOp::Iadd, len, 1);
    b.assign(len, l);
    let r = b.binary(BinOp::Udiv, rest, ten);
    b.assign(rest, r);
    b.jump(count_head);
    // Write digits backwards from the end.
    b.switch_to(write_init);
    let end = b.ptr_add(cursor, len);
    let p = b.mutable_var(Ty::Ptr);
    b.assign(p, end);
    let v = b.mutable_var(Ty::I64);
    b.assign(v, value);
    let write_body = b.new_block();
    let done = b.new_block();
    b.jump(write_body);
    b.switch_to(write_body);
    let p1 = b.ptr_add_imm(p, -1);
    b.assign(p, p1);
    let digit = b.binary(BinOp::Urem, v, ten);
    let ch = b.binary_imm(BinOp::Iadd, digit, i64::from(b'0'));
    let ch8 = b.resize(ch, Ty::I8, false);
    b.store(p, 0, ch8);
    let q = b.binary(BinOp::Udiv, v, ten);
    b.assign(v, q);
    let again = b.icmp_imm(IntCC::Ne, v, 0);
    b.branch(again, write_body, done);
    b.switch_to(done);
    b.ret(Some(end));
    ctx.add_function(b.finish())
}

/// `fmt_cstr(cursor, src) -> cursor`: copies a NUL-terminated string (without the NUL).
fn emit_fmt_cstr(ctx: &mut ModuleCtx<'_>) -> FuncId {
    let mut b = cursor_fn(ctx, "fmt_cstr", &[Ty::Ptr]);
    let (cursor, src) = (b.param(0), b.param(1));
    let dst = b.mutable_var(Ty::Ptr);
    b.assign(dst, cursor);
    let s = b.mutable_var(Ty::Ptr);
    b.assign(s, src);
    let head = b.new_block();
    let body = b.new_block();
    let done = b.new_block();
    b.jump(head);
    b.switch_to(head);
    let byte = b.load(Ty::I8, s, 0);
    let end = b.icmp_imm(IntCC::Eq, byte, 0);
    b.branch(end, done, body);
    b.switch_to(body);
    b.store(dst, 0, byte);
    let d1 = b.ptr_add_imm(dst, 1);
    b.assign(dst, d1);
    let s1 = b.ptr_add_imm(s, 1);
    b.assign(s, s1);
    b.jump(head);
    b.switch_to(done);
    b.ret(Some(dst));
    ctx.add_function(b.finish())
}

/// `fmt_bytes(cursor, src, len) -> cursor`: copies `len` bytes.
fn emit_fmt_bytes(ctx: &mut ModuleCtx<'_>) -> FuncId {
    let mut b = cursor_fn(ctx, "fmt_bytes", &[Ty::Ptr, Ty::I64]);
    let (cursor, src, len) = (b.param(0), b.param(1), b.param(2));
    let i = b.mutable_var(Ty::I64);
    b.assign_iconst(i, 0);
    let head = b.new_block();
    let body = b.new_block();
    let done = b.new_block();
    b.jump(head);
    b.switch_to(head);
    let more = b.icmp(IntCC::Ult, i, len);
    b.branch(more, body, done);
    b.switch_to(body);
    let from = b.ptr_add(src, i);
    let byte = b.load(Ty::I8, from, 0);
    let to = b.ptr_add(cursor, i);
    b.store(to, 0, byte);
    let i1 = b.binary_imm(BinOp::Iadd, i, 1);
    b.assign(i, i1);
    b.jump(head);
    b.switch_to(done);
    let end = b.ptr_add(cursor, len);
    b.ret(Some(end));
    ctx.add_function(b.finish())
}

/// `fmt_hex(cursor, value) -> cursor`: `0x` and lowercase hex digits, no leading zeros.
fn emit_fmt_hex(ctx: &mut ModuleCtx<'_>) -> FuncId {
    let mut b = cursor_fn(ctx, "fmt_hex", &[Ty::I64]);
    let (cursor, value) = (b.param(0), b.param(1));
    let c = write_byte(&mut b, cursor, b'0');
    let start = write_byte(&mut b, c, b'x');
    // Count nibbles.
    let len = b.mutable_var(Ty::I64);
    b.assign_iconst(len, 1);
    let rest = b.mutable_var(Ty::I64);
    let first = b.binary_imm(BinOp::Ushr, value, 4);
    b.assign(rest, first);
    let count_head = b.new_block();
    let count_body = b.new_block();
    let write_init = b.new_block();
    b.jump(count_head);
    b.switch_to(count_head);
    let more = b.icmp_imm(IntCC::Ne, rest, 0);
    b.branch(more, count_body, write_init);
    b.switch_to(count_body);
    let l = b.binary_imm(BinOp::Iadd, len, 1);
    b.assign(len, l);
    let r = b.binary_imm(BinOp::Ushr, rest, 4);
    b.assign(rest, r);
    b.jump(count_head);
    b.switch_to(write_init);
    let end = b.ptr_add(start, len);
    let p = b.mutable_var(Ty::Ptr);
    b.assign(p, end);
    let v = b.mutable_var(Ty::I64);
    b.assign(v, value);
    let write_body = b.new_block();
    let done = b.new_block();
    b.jump(write_body);
    b.switch_to(write_body);
    let p1 = b.ptr_add_imm(p, -1);
    b.assign(p, p1);
    let nibble = b.binary_imm(BinOp::And, v, 15);
    let is_letter = b.icmp_imm(IntCC::Uge, nibble, 10);
    let digit = b.binary_imm(BinOp::Iadd, nibble, i64::from(b'0'));
    let letter = b.binary_imm(BinOp::Iadd, nibble, i64::from(b'a') - 10);
    let ch = b.select(is_letter, letter, digit);
    let ch8 = b.resize(ch, Ty::I8, false);
    b.store(p, 0, ch8);
    let q = b.binary_imm(BinOp::Ushr, v, 4);
    b.assign(v, q);
    let again = b.icmp_imm(IntCC::Ne, v, 0);
    b.branch(again, write_body, done);
    b.switch_to(done);
    b.ret(Some(end));
    ctx.add_function(b.finish())
}

/// `fmt_f64(cursor, bits) -> cursor`: `nan`, `inf`, fixed notation with up to 6 decimals for
/// magnitudes in [1e-4, 1e15), scientific (`1.5e+20`) otherwise. Approximate in the last digit;
/// messages that need exactness also print the bits.
fn emit_fmt_f64(ctx: &mut ModuleCtx<'_>, fmts: &Formatters) -> FuncId {
    let s_nan = ctx.cstring(b"nan");
    let s_inf = ctx.cstring(b"inf");
    let mut b = cursor_fn(ctx, "fmt_f64", &[Ty::I64]);
    let (cursor, bits) = (b.param(0), b.param(1));
    let x = b.convert(ConvOp::Bitcast, bits, Ty::F64);
    let out = b.mutable_var(Ty::Ptr);
    b.assign(out, cursor);
    let ret_block = b.new_block();

    // NaN.
    let is_nan = b.fcmp(FloatCC::Ne, x, x);
    let nan_block = b.new_block();
    let not_nan = b.new_block();
    b.branch(is_nan, nan_block, not_nan);
    b.switch_to(nan_block);
    let c = write_static(&mut b, fmts, cursor, s_nan);
    b.assign(out, c);
    b.jump(ret_block);

    // Sign (also for -0.0: the sign bit).
    b.switch_to(not_nan);
    let negative = b.icmp_imm(IntCC::Slt, bits, 0);
    let neg_block = b.new_block();
    let magnitude_block = b.new_block();
    b.branch(negative, neg_block, magnitude_block);
    b.switch_to(neg_block);
    let c = write_byte(&mut b, cursor, b'-');
    b.assign(out, c);
    b.jump(magnitude_block);
    b.switch_to(magnitude_block);
    let abs_bits = b.binary_imm(BinOp::And, bits, i64::MAX);
    let ax = b.convert(ConvOp::Bitcast, abs_bits, Ty::F64);

    // Infinity.
    let inf = b.fconst(Ty::F64, f64::INFINITY.to_bits());
    let is_inf = b.fcmp(FloatCC::Eq, ax, inf);
    let inf_block = b.new_block();
    let finite = b.new_block();
    b.branch(is_inf, inf_block, finite);
    b.switch_to(inf_block);
    let c = write_static(&mut b, fmts, out, s_inf);
    b.assign(out, c);
    b.jump(ret_block);

    // Fixed or scientific.
    b.switch_to(finite);
    let zero = b.fconst(Ty::F64, 0f64.to_bits());
    let small = b.fconst(Ty::F64, 1e-4f64.to_bits());
    let big = b.fconst(Ty::F64, 1e15f64.to_bits());
    let is_zero = b.fcmp(FloatCC::Eq, ax, zero);
    let ge_small = b.fcmp(FloatCC::Ge, ax, small);
    let lt_big = b.fcmp(FloatCC::Lt, ax, big);
    let in_range = b.binary(BinOp::And, ge_small, lt_big);
    let fixed_ok = b.binary(BinOp::Or, in_range, is_zero);
    let fixed_block = b.new_block();
    let sci_block = b.new_block();
    b.branch(fixed_ok, fixed_block, sci_block);

    b.switch_to(fixed_block);
    let c = write_fixed(&mut b, fmts, out, ax);
    b.assign(out, c);
    b.jump(ret_block);

    // Scientific: scale into [1, 10) counting the exponent.
    b.switch_to(sci_block);
    let m = b.mutable_var(Ty::F64);
    b.assign(m, ax);
    let e = b.mutable_var(Ty::I64);
    b.assign_iconst(e, 0);
    let ten = b.fconst(Ty::F64, 10f64.to_bits());
    let one = b.fconst(Ty::F64, 1f64.to_bits());
    let down_head = b.new_block();
    let down_body = b.new_block();
    let up_head = b.new_block();
    let up_body = b.new_block();
    let emit = b.new_block();
    b.jump(down_head);
    b.switch_to(down_head);
    let too_big = b.fcmp(FloatCC::Ge, m, ten);
    b.branch(too_big, down_body, up_head);
    b.switch_to(down_body);
    let m1 = b.binary(BinOp::Fdiv, m, ten);
    b.assign(m, m1);
    let e1 = b.binary_imm(BinOp::Iadd, e, 1);
    b.assign(e, e1);
    b.jump(down_head);
    b.switch_to(up_head);
    let too_small = b.fcmp(FloatCC::Lt, m, one);
    b.branch(too_small, up_body, emit);
    b.switch_to(up_body);
    let m2 = b.binary(BinOp::Fmul, m, ten);
    b.assign(m, m2);
    let e2 = b.binary_imm(BinOp::Isub, e, 1);
    b.assign(e, e2);
    b.jump(up_head);
    b.switch_to(emit);
    // A mantissa that rounds up to 10 at 6 decimals is 1.0 of the next exponent (else 1e-5
    // as an f32, 9.99999997e-6, prints as `10.0e-6`).
    let near_ten = b.fconst(Ty::F64, 9.9999995f64.to_bits());
    let rounds_to_ten = b.fcmp(FloatCC::Ge, m, near_ten);
    let m = b.select(rounds_to_ten, one, m);
    let e_next = b.binary_imm(BinOp::Iadd, e, 1);
    let e = b.select(rounds_to_ten, e_next, e);
    let c = write_fixed(&mut b, fmts, out, m);
    let c = write_byte(&mut b, c, b'e');
    let exp_negative = b.icmp_imm(IntCC::Slt, e, 0);
    let plus = b.iconst(Ty::I8, i64::from(b'+'));
    let minus = b.iconst(Ty::I8, i64::from(b'-'));
    let sign = b.select(exp_negative, minus, plus);
    b.store(c, 0, sign);
    let c = b.ptr_add_imm(c, 1);
    let neg_e = b.unary(crate::lir::UnOp::Ineg, e);
    let abs_e = b.select(exp_negative, neg_e, e);
    let c = call_cursor(&mut b, fmts.u64, vec![c, abs_e]);
    b.assign(out, c);
    b.jump(ret_block);

    b.switch_to(ret_block);
    b.ret(Some(out));
    ctx.add_function(b.finish())
}

/// Writes a non-negative finite `x < 1e15` as `int.frac` with up to 6 decimals, at least one.
fn write_fixed(b: &mut FuncBuilder, fmts: &Formatters, cursor: Var, x: Var) -> Var {
    let million = b.fconst(Ty::F64, 1e6f64.to_bits());
    let half = b.fconst(Ty::F64, 0.5f64.to_bits());
    let int_part = b.convert(ConvOp::FtoUsat, x, Ty::I64);
    let int_f = b.convert(ConvOp::UtoF, int_part, Ty::F64);
    let frac = b.binary(BinOp::Fsub, x, int_f);
    let scaled = b.binary(BinOp::Fmul, frac, million);
    let rounded = b.binary(BinOp::Fadd, scaled, half);
    let frac_digits = b.convert(ConvOp::FtoUsat, rounded, Ty::I64);
    // Carry when the fraction rounds up to 1.000000.
    let carry = b.icmp_imm(IntCC::Uge, frac_digits, 1_000_000);
    let int_plus = b.binary_imm(BinOp::Iadd, int_part, 1);
    let int_final = b.select(carry, int_plus, int_part);
    let zero = b.iconst(Ty::I64, 0);
    let frac_final = b.select(carry, zero, frac_digits);
    let c = call_cursor(b, fmts.u64, vec![cursor, int_final]);
    let c = write_byte(b, c, b'.');
    // Strip trailing zeros, keeping at least one digit: divide out tens and count the width.
    let f = b.mutable_var(Ty::I64);
    b.assign(f, frac_final);
    let width = b.mutable_var(Ty::I64);
    b.assign_iconst(width, 6);
    let head = b.new_block();
    let body = b.new_block();
    let write = b.new_block();
    b.jump(head);
    b.switch_to(head);
    let ten = b.iconst(Ty::I64, 10);
    let rem = b.binary(BinOp::Urem, f, ten);
    let divisible = b.icmp_imm(IntCC::Eq, rem, 0);
    let wide = b.icmp_imm(IntCC::Sgt, width, 1);
    let strip = b.binary(BinOp::And, divisible, wide);
    b.branch(strip, body, write);
    b.switch_to(body);
    let f1 = b.binary(BinOp::Udiv, f, ten);
    b.assign(f, f1);
    let w1 = b.binary_imm(BinOp::Isub, width, 1);
    b.assign(width, w1);
    b.jump(head);
    // Write exactly `width` digits, zero-padded, backwards.
    b.switch_to(write);
    let end = b.ptr_add(c, width);
    let p = b.mutable_var(Ty::Ptr);
    b.assign(p, end);
    let digits_body = b.new_block();
    let done = b.new_block();
    let n = b.mutable_var(Ty::I64);
    b.assign(n, width);
    b.jump(digits_body);
    b.switch_to(digits_body);
    let p1 = b.ptr_add_imm(p, -1);
    b.assign(p, p1);
    let d = b.binary(BinOp::Urem, f, ten);
    let ch = b.binary_imm(BinOp::Iadd, d, i64::from(b'0'));
    let ch8 = b.resize(ch, Ty::I8, false);
    b.store(p, 0, ch8);
    let fq = b.binary(BinOp::Udiv, f, ten);
    b.assign(f, fq);
    let n1 = b.binary_imm(BinOp::Isub, n, 1);
    b.assign(n, n1);
    let again = b.icmp_imm(IntCC::Sgt, n, 0);
    b.branch(again, digits_body, done);
    b.switch_to(done);
    end
}
