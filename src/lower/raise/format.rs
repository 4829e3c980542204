//! The formatting routines of the cold helper, as lowered code: decimal and hex integers,
//! C strings, byte runs, floats, type names, dtypes and devices, each writing at a cursor into
//! a stack buffer and returning the advanced cursor.

use crate::lir::{
    BinOp, Callee, ConvOp, DataId, FloatCC, FuncId, ImportId, IntCC, Linkage, Signature, Symbol,
    Ty, Var, builder::FuncBuilder,
};
use safecall_runtime::abi::{
    BYTE_ARRAY_DATA_OFFSET, BYTE_ARRAY_SIZE_OFFSET, TYPE_INFO_TYPE_KEY_OFFSET,
};

use crate::lower::modctx::ModuleCtx;

/// Longest type key copied into a message.
const MAX_TYPE_KEY: i64 = 40;

/// Small formatting routines: each takes a cursor into a buffer and returns the advanced cursor.
pub(super) struct Formatters {
    pub u64: FuncId,
    pub cstr: FuncId,
    pub bytes: FuncId,
    pub hex: FuncId,
    pub f64: FuncId,
}

/// A string table in read-only data: NUL-terminated names and a `u16` offset per index.
pub(super) struct NameTable {
    blob: DataId,
    offsets: DataId,
    len: i64,
}

pub(super) fn name_table(ctx: &mut ModuleCtx<'_>, what: &str, names: &[&str]) -> NameTable {
    let mut blob = Vec::new();
    let mut offsets = Vec::new();
    for name in names {
        offsets.extend_from_slice(&(blob.len() as u16).to_le_bytes());
        blob.extend_from_slice(name.as_bytes());
        blob.push(0);
    }
    let blob_name = format!("{}{what}_names", crate::lower::INTERNAL_PREFIX);
    let offsets_name = format!("{}{what}_offsets", crate::lower::INTERNAL_PREFIX);
    NameTable {
        blob: ctx.read_only_named(blob_name, 1, blob),
        offsets: ctx.read_only_named(offsets_name, 2, offsets),
        len: names.len() as i64,
    }
}

pub(super) fn call_cursor(b: &mut FuncBuilder, f: FuncId, args: Vec<Var>) -> Var {
    b.call(Callee::Func(f), Some(Ty::Ptr), args)
        .expect("formatters return the cursor")
}

pub(super) fn terminate(b: &mut FuncBuilder, cursor: Var) {
    b.store_imm(Ty::I8, cursor, 0, 0);
}

pub(super) fn write_byte(b: &mut FuncBuilder, cursor: Var, byte: u8) -> Var {
    b.store_imm(Ty::I8, cursor, 0, i64::from(byte));
    b.ptr_add_imm(cursor, 1)
}

pub(super) fn write_static(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    cursor: Var,
    text: DataId,
) -> Var {
    let src = b.symbol_addr(Symbol::Data(text));
    call_cursor(b, fmts.cstr, vec![cursor, src])
}

/// Writes a signed decimal: `-` then the magnitude (wrapping negation is right for MIN as u64).
pub(super) fn write_i64(b: &mut FuncBuilder, fmts: &Formatters, cursor: Var, value: Var) -> Var {
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
pub(super) fn write_type_name(
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
pub(super) fn table_entry(b: &mut FuncBuilder, table: &NameTable, index: Var) -> Var {
    let offsets = b.symbol_addr(Symbol::Data(table.offsets));
    let scaled = b.binary_imm(BinOp::Imul, index, 2);
    let entry = b.ptr_add(offsets, scaled);
    let off16 = b.load(Ty::I16, entry, 0);
    let off = b.resize(off16, Ty::I64, false);
    let blob = b.symbol_addr(Symbol::Data(table.blob));
    b.ptr_add(blob, off)
}

/// Writes a dtype the way `TVMFFIDataTypeToString` spells it.
pub(super) fn write_dtype(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    codes: &NameTable,
    [s_x, s_xvscale, s_code]: [DataId; 3],
    buf: Var,
    packed: Var,
) {
    use safecall_runtime::abi::{DTYPE_BITS_SHIFT, DTYPE_LANES_SHIFT, dtype_code as dc};
    let code = b.binary_imm(BinOp::And, packed, 0xff);
    let bits_shifted = b.binary_imm(BinOp::Ushr, packed, i64::from(DTYPE_BITS_SHIFT));
    let bits = b.binary_imm(BinOp::And, bits_shifted, 0xff);
    let lanes_shifted = b.binary_imm(BinOp::Ushr, packed, i64::from(DTYPE_LANES_SHIFT));
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
pub(super) fn write_device(
    b: &mut FuncBuilder,
    fmts: &Formatters,
    devices: &NameTable,
    s_colon: DataId,
    buf: Var,
    packed: Var,
) {
    let type_code = b.binary_imm(BinOp::And, packed, 0xffff_ffff);
    let id_shifted = b.binary_imm(
        BinOp::Sshr,
        packed,
        i64::from(safecall_runtime::abi::DEVICE_ID_SHIFT),
    );
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

pub(super) fn cursor_fn(ctx: &mut ModuleCtx<'_>, what: &str, extra: &[Ty]) -> FuncBuilder {
    let name = ctx.local_name(what);
    let mut params = vec![Ty::Ptr];
    params.extend_from_slice(extra);
    let mut b = FuncBuilder::new(name, Linkage::Local, Signature::new(params, Some(Ty::Ptr)));
    b.set_cold();
    b
}

/// `fmt_u64(cursor, value) -> cursor`: unsigned decimal, no terminator.
pub(super) fn emit_fmt_u64(ctx: &mut ModuleCtx<'_>) -> FuncId {
    emit_fmt_radix(ctx, "fmt_u64", 10, "")
}

/// `fmt_hex(cursor, value) -> cursor`: `0x` and lowercase hex digits, no leading zeros.
pub(super) fn emit_fmt_hex(ctx: &mut ModuleCtx<'_>) -> FuncId {
    emit_fmt_radix(ctx, "fmt_hex", 16, "0x")
}

/// `fmt(cursor, value) -> cursor`: `prefix`, then the unsigned value in `radix` (10 or 16,
/// lowercase), no leading zeros, no terminator: count the digits, then write them backwards.
pub(super) fn emit_fmt_radix(
    ctx: &mut ModuleCtx<'_>,
    what: &str,
    radix: i64,
    prefix: &str,
) -> FuncId {
    let mut b = cursor_fn(ctx, what, &[Ty::I64]);
    let (cursor, value) = (b.param(0), b.param(1));
    let mut start = cursor;
    for byte in prefix.bytes() {
        start = write_byte(&mut b, start, byte);
    }
    let radix_v = b.iconst(Ty::I64, radix);
    // Count digits.
    let len = b.mutable_var(Ty::I64);
    b.assign_iconst(len, 1);
    let rest = b.mutable_var(Ty::I64);
    let first = b.binary(BinOp::Udiv, value, radix_v);
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
    let r = b.binary(BinOp::Udiv, rest, radix_v);
    b.assign(rest, r);
    b.jump(count_head);
    // Write digits backwards from the end.
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
    let digit = b.binary(BinOp::Urem, v, radix_v);
    let is_letter = b.icmp_imm(IntCC::Uge, digit, 10);
    let numeral = b.binary_imm(BinOp::Iadd, digit, i64::from(b'0'));
    let letter = b.binary_imm(BinOp::Iadd, digit, i64::from(b'a') - 10);
    let ch = b.select(is_letter, letter, numeral);
    let ch8 = b.resize(ch, Ty::I8, false);
    b.store(p, 0, ch8);
    let q = b.binary(BinOp::Udiv, v, radix_v);
    b.assign(v, q);
    let again = b.icmp_imm(IntCC::Ne, v, 0);
    b.branch(again, write_body, done);
    b.switch_to(done);
    b.ret(Some(end));
    ctx.add_function(b.finish())
}

/// `fmt_cstr(cursor, src) -> cursor`: copies a NUL-terminated string (without the NUL).
pub(super) fn emit_fmt_cstr(ctx: &mut ModuleCtx<'_>) -> FuncId {
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
pub(super) fn emit_fmt_bytes(ctx: &mut ModuleCtx<'_>) -> FuncId {
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

/// `fmt_f64(cursor, bits) -> cursor`: `nan`, `inf`, fixed notation with up to 6 decimals for
/// magnitudes in [1e-4, 1e15), scientific (`1.5e+20`) otherwise. Approximate in the last digit;
/// messages that need exactness also print the bits.
pub(super) fn emit_fmt_f64(ctx: &mut ModuleCtx<'_>, fmts: &Formatters) -> FuncId {
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
pub(super) fn write_fixed(b: &mut FuncBuilder, fmts: &Formatters, cursor: Var, x: Var) -> Var {
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
