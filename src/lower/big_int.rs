//! `ffi.BigInt` values at the call boundary. TVM-FFI ints are signed 64-bit; tvm_ffi passes a
//! Python int outside that range as a BigInt object (`c_api.h`'s `kTVMFFIBigInt`: the header,
//! a word count, then minimal two's-complement words, least significant first). A `u64` of
//! 2^63 or more is such an object of two words: the value, then a zero sign word.

use safecall_runtime::abi::{
    BIG_INT_OBJECT_SIZE_OFFSET, BIG_INT_OBJECT_WORDS_OFFSET, BYTE_ARRAY_DATA_OFFSET,
    BYTE_ARRAY_SIZE, BYTE_ARRAY_SIZE_OFFSET,
};

use crate::lir::{self, IntCC, Linkage, Signature, Ty, Var, builder::FuncBuilder};

use super::capi::CApi;
use super::context::FnCtx;

/// The value of the BigInt object `obj` as a `u64` (its low word), for one of 2^63 to
/// 2^64 - 1. `require(fx, ok)` guards each condition, in order (two words, then a zero high
/// word): it must not let the code after it run unless `ok`, since the second word is read
/// only once the count is known to be 2.
pub(crate) fn read_u64(
    fx: &mut FnCtx<'_, '_>,
    obj: Var,
    mut require: impl FnMut(&mut FnCtx<'_, '_>, Var),
) -> Var {
    let count = fx.b.load(Ty::I64, obj, BIG_INT_OBJECT_SIZE_OFFSET);
    let two = fx.b.icmp_imm(IntCC::Eq, count, 2);
    require(fx, two);
    let high = fx.b.load(Ty::I64, obj, BIG_INT_OBJECT_WORDS_OFFSET + 8);
    let unsigned = fx.b.icmp_imm(IntCC::Eq, high, 0);
    require(fx, unsigned);
    fx.b.load(Ty::I64, obj, BIG_INT_OBJECT_WORDS_OFFSET)
}

/// Writes the `u64` `value` (2^63 or more) into the `TVMFFIAny` at `dst` as a new BigInt of
/// two words, made by `TVMFFIBigIntFromByteArray`; leaves through the error exit when it
/// fails.
pub(crate) fn write_u64(fx: &mut FnCtx<'_, '_>, dst: Var, value: Var) {
    let words = fx.b.slot(16, 8);
    let low = fx.b.stack_addr(words, 0);
    fx.b.store(low, 0, value);
    fx.b.store_imm(Ty::I64, low, 8, 0);
    let slot = fx.b.slot(BYTE_ARRAY_SIZE as u32, 8);
    let bytes = fx.b.stack_addr(slot, 0);
    fx.b.store(bytes, BYTE_ARRAY_DATA_OFFSET, low);
    fx.b.store_imm(Ty::I64, bytes, BYTE_ARRAY_SIZE_OFFSET, 16);
    let f = fx.m.capi(CApi::BigIntFromByteArray);
    let rc =
        fx.b.call(lir::Callee::Import(f), Some(Ty::I32), vec![bytes, dst])
            .expect("returns");
    fx.fail_on_nonzero(rc);
}

/// What a ValueError says of a BigInt that no `f64` holds, after the argument's prefix.
pub(crate) const F64_RANGE_TEXT: &str =
    "the int is out of range for a float: its magnitude rounds to 2^1024 or more";

/// The largest word count whose value can be a finite `f64`: a minimal BigInt of 18 words or
/// more has a magnitude of at least 2^1087.
const F64_MAX_WORDS: i64 = 17;

/// The value of the BigInt object `obj` as the nearest `f64` (ties to even), as Python's
/// `float(int)` computes it. `require(fx, ok)` guards the result: `ok` is false for a
/// magnitude that rounds to 2^1024 or more (Python's `OverflowError`). The conversion is one
/// cold function of the module, emitted on first use ([`nearest_f64`]).
pub(crate) fn read_f64(
    fx: &mut FnCtx<'_, '_>,
    obj: Var,
    mut require: impl FnMut(&mut FnCtx<'_, '_>, Var),
) -> Var {
    let helper = match fx.m.big_int_f64 {
        Some(id) => id,
        None => {
            let name = fx.m.local_name("big_int_f64");
            let mut b = FuncBuilder::new(
                name,
                Linkage::Local,
                Signature::new(vec![Ty::Ptr], Some(Ty::F64)),
            );
            b.set_cold();
            b.source("cold helper: an ffi.BigInt to the nearest f64 (+-inf beyond the range)");
            let obj = b.param(0);
            let value = nearest_f64(&mut b, obj);
            b.ret(Some(value));
            let id = fx.m.add_function(b.finish());
            fx.m.big_int_f64 = Some(id);
            id
        }
    };
    let value =
        fx.b.call(lir::Callee::Func(helper), Some(Ty::F64), vec![obj])
            .expect("returns");
    // Finite exactly when `value - value` is 0 (NaN for an infinity).
    let difference = fx.b.binary(lir::BinOp::Fsub, value, value);
    let zero = fx.b.fconst(Ty::F64, 0);
    let finite = fx.b.fcmp(lir::FloatCC::Eq, difference, zero);
    require(fx, finite);
    value
}

/// A float parameter's or cast's `f64`: `selected` (its reading of a float or an int), or, when
/// `big` holds, the nearest `f64` of the BigInt object `load_object` reads, in a cold block
/// (see [`read_f64`] for `require`).
pub(crate) fn f64_or_big_int(
    fx: &mut FnCtx<'_, '_>,
    selected: Var,
    big: Var,
    load_object: impl FnOnce(&mut FnCtx<'_, '_>) -> Var,
    require: impl FnMut(&mut FnCtx<'_, '_>, Var),
) -> Var {
    let wide = fx.b.mutable_var(Ty::F64);
    fx.b.assign(wide, selected);
    let words = fx.b.new_cold_block();
    let join = fx.b.new_block();
    fx.branch(big, words, join);
    fx.b.switch_to(words);
    // The object is a BigInt (the caller's type check holds here).
    let obj = load_object(fx);
    let converted = read_f64(fx, obj, require);
    fx.b.assign(wide, converted);
    fx.jump(join);
    fx.b.switch_to(join);
    wide
}

/// The nearest `f64` to the BigInt object `obj`, +-infinity when its magnitude rounds to
/// 2^1024 or more (and +infinity for a word count outside 2 to [`F64_MAX_WORDS`]: a BigInt has
/// at least two, and more means at least 2^1087). Only the words the count names are read.
/// The words must be minimal, as TVM-FFI requires (`c_api.h`): a redundant sign word would
/// give a wrong value (never a read beyond the object).
///
/// The rounding: the magnitude's leading 128 bits (the top two words, negated for a negative
/// value) are normalized to 64 bits, the bits below them (the other words, and what the
/// normalization shifts out) folded into the lowest bit as a sticky bit, so that one
/// unsigned-to-float conversion rounds exactly as the whole value would; the result is then
/// scaled by a power of two, which is exact until it overflows.
fn nearest_f64(b: &mut FuncBuilder, obj: Var) -> Var {
    use lir::{BinOp, ConvOp, UnOp};
    let count = b.load(Ty::I64, obj, BIG_INT_OBJECT_SIZE_OFFSET);
    // 2 <= count <= 17, as one unsigned comparison.
    let from_two = b.binary_imm(BinOp::Isub, count, 2);
    let counted = b.icmp_imm(IntCC::Ule, from_two, F64_MAX_WORDS - 2);
    let read = b.new_block();
    let beyond = b.new_block();
    b.branch(counted, read, beyond);
    b.switch_to(beyond);
    let infinity = b.fconst(Ty::F64, f64::INFINITY.to_bits());
    b.ret(Some(infinity));
    b.switch_to(read);
    let words = b.ptr_add_imm(obj, BIG_INT_OBJECT_WORDS_OFFSET as i64);
    // The top two words: `high` signed (it holds the sign), `low` below it.
    let low_offset = b.binary_imm(BinOp::Imul, from_two, 8);
    let low_at = b.ptr_add(words, low_offset);
    let low = b.load(Ty::I64, low_at, 0);
    let high = b.load(Ty::I64, low_at, 8);
    let below = or_of_words(b, words, from_two);
    let below_nonzero = b.icmp_imm(IntCC::Ne, below, 0);
    // The magnitude of the top two words' part. For a negative value v = H * 2^k + L
    // (0 <= L < 2^k), -v = -H * 2^k when L is 0, else (-H - 1) * 2^k + (2^k - L): the top is
    // -H or ~H, and the bits below are non-zero exactly when L's are.
    let negative = b.icmp_imm(IntCC::Slt, high, 0);
    let not_high = b.unary(UnOp::Bnot, high);
    let not_low = b.unary(UnOp::Bnot, low);
    let exact = b.icmp_imm(IntCC::Eq, below, 0);
    let plus_one = b.resize(exact, Ty::I64, false);
    let negated_low = b.binary(BinOp::Iadd, not_low, plus_one);
    let low_zero = b.icmp_imm(IntCC::Eq, low, 0);
    let carry = b.binary(BinOp::And, low_zero, exact);
    let carry = b.resize(carry, Ty::I64, false);
    let negated_high = b.binary(BinOp::Iadd, not_high, carry);
    let m_high = b.select(negative, negated_high, high);
    let m_low = b.select(negative, negated_low, low);
    // Normalized to 64 bits: `lz` leading zeros of the high word shifted out, the low word's
    // leading bits shifted in, the rest of it sticky. A zero high word leaves the low word,
    // whose top bit is set whenever words below it exist (the representation is minimal).
    let (shifted, lz) = leading_zeros(b, m_high);
    let low_top = b.binary_imm(BinOp::Ushr, m_low, 1);
    let right = b.binary_imm(BinOp::Isub, lz, 63);
    let right = b.unary(UnOp::Ineg, right);
    let low_top = b.binary(BinOp::Ushr, low_top, right);
    let from_high = b.binary(BinOp::Or, shifted, low_top);
    let low_rest = b.binary(BinOp::Shl, m_low, lz);
    let rest_nonzero = b.icmp_imm(IntCC::Ne, low_rest, 0);
    let high_zero = b.icmp_imm(IntCC::Eq, m_high, 0);
    let high_nonzero = b.icmp_imm(IntCC::Ne, m_high, 0);
    let rest_nonzero = b.binary(BinOp::And, rest_nonzero, high_nonzero);
    let significand = b.select(high_zero, m_low, from_high);
    let sticky = b.binary(BinOp::Or, below_nonzero, rest_nonzero);
    let sticky = b.resize(sticky, Ty::I64, false);
    let significand = b.binary(BinOp::Or, significand, sticky);
    let rounded = b.convert(ConvOp::UtoF, significand, Ty::F64);
    // Scaled by 2^e, e = 64 * (count - 2) (+ 64 - lz when the high word is not zero): at most
    // 1024, as two exact factors of at most 2^512.
    let base = b.binary_imm(BinOp::Imul, from_two, 64);
    let extra = b.binary_imm(BinOp::Isub, lz, 64);
    let extra = b.unary(UnOp::Ineg, extra);
    let zero = b.iconst(Ty::I64, 0);
    let extra = b.select(high_zero, zero, extra);
    let e = b.binary(BinOp::Iadd, base, extra);
    let half = b.binary_imm(BinOp::Ushr, e, 1);
    let other = b.binary(BinOp::Isub, e, half);
    let first = power_of_two(b, half);
    let second = power_of_two(b, other);
    let scaled = b.binary(BinOp::Fmul, rounded, first);
    let scaled = b.binary(BinOp::Fmul, scaled, second);
    let negated = b.unary(UnOp::Fneg, scaled);
    b.select(negative, negated, scaled)
}

/// The bitwise or of the `n` words at `words` (a loop: `n` is at most 15 here).
fn or_of_words(b: &mut FuncBuilder, words: Var, n: Var) -> Var {
    let acc = b.mutable_var(Ty::I64);
    b.assign_iconst(acc, 0);
    let i = b.mutable_var(Ty::I64);
    b.assign_iconst(i, 0);
    let body = b.new_block();
    let exit = b.new_block();
    let enter = b.icmp(IntCC::Slt, i, n);
    b.branch(enter, body, exit);
    b.switch_to(body);
    let offset = b.binary_imm(lir::BinOp::Imul, i, 8);
    let at = b.ptr_add(words, offset);
    let word = b.load(Ty::I64, at, 0);
    let merged = b.binary(lir::BinOp::Or, acc, word);
    b.assign(acc, merged);
    let next = b.binary_imm(lir::BinOp::Iadd, i, 1);
    b.assign(i, next);
    let again = b.icmp(IntCC::Slt, i, n);
    b.branch(again, body, exit);
    b.switch_to(exit);
    acc
}

/// `x` shifted left until its top bit is set, and the shift (its leading zeros; 63 for 0,
/// whose shifted value is 0): a binary search of six steps.
fn leading_zeros(b: &mut FuncBuilder, x: Var) -> (Var, Var) {
    let mut x = x;
    let mut lz = b.iconst(Ty::I64, 0);
    for step in [32, 16, 8, 4, 2, 1] {
        let small = b.icmp_imm(IntCC::Ult, x, 1i64 << (64 - step));
        let shifted = b.binary_imm(lir::BinOp::Shl, x, step);
        x = b.select(small, shifted, x);
        let more = b.binary_imm(lir::BinOp::Iadd, lz, step);
        lz = b.select(small, more, lz);
    }
    (x, lz)
}

/// 2^k as an `f64`, for 0 <= k <= 1023 (its exponent field).
fn power_of_two(b: &mut FuncBuilder, k: Var) -> Var {
    let biased = b.binary_imm(lir::BinOp::Iadd, k, 1023);
    let bits = b.binary_imm(lir::BinOp::Shl, biased, 52);
    b.convert(lir::ConvOp::Bitcast, bits, Ty::F64)
}
