//! `ffi.BigInt` values at the call boundary. TVM-FFI ints are signed 64-bit; tvm_ffi passes a
//! Python int outside that range as a BigInt object (`c_api.h`'s `kTVMFFIBigInt`: the header,
//! a word count, then minimal two's-complement words, least significant first). A `u64` of
//! 2^63 or more is such an object of two words: the value, then a zero sign word.

use safecall_runtime::abi::{
    BIG_INT_OBJECT_SIZE_OFFSET, BIG_INT_OBJECT_WORDS_OFFSET, BYTE_ARRAY_DATA_OFFSET,
    BYTE_ARRAY_SIZE, BYTE_ARRAY_SIZE_OFFSET,
};

use crate::lir::{self, IntCC, Ty, Var};

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
