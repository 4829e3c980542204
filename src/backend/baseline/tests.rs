//! Semantics the differential test reaches rarely: saturating conversions at their edges,
//! unsigned 64-bit conversions, float minimum and maximum of NaN and signed zeros, arguments
//! passed on the stack, and the one frame the compiler refuses.

use cranelift_jit::JITMemoryProvider;

use super::compile::compile;
use crate::backend::memory::PooledMemory;
use crate::lir::builder::FuncBuilder;
use crate::lir::{BinOp, Callee, ConvOp, FuncId, Linkage, Module, Signature, Ty, Var};

/// A linked module; its memory is freed on drop.
pub(super) struct Compiled {
    memory: PooledMemory,
    /// The address of each function.
    pub functions: Vec<*const u8>,
    /// The module's machine code as compiled (before linking).
    code: Vec<u8>,
}

impl Compiled {
    /// The module's machine code.
    pub fn code(&self) -> &[u8] {
        &self.code
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        // SAFETY: the tests call nothing after dropping the module.
        unsafe { self.memory.free_memory() };
    }
}

/// The code at `p` as the function pointer type `F`.
///
/// # Safety
/// `p` must be a function with the signature `F` describes.
pub(super) unsafe fn as_fn<F: Copy>(p: *const u8) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*const u8>());
    // SAFETY: `F` is a function pointer of the same size; the caller vouches for the signature.
    unsafe { std::mem::transmute_copy(&p) }
}

pub(super) fn link(functions: Vec<crate::lir::Function>) -> Compiled {
    let module = Module {
        name: "t".to_owned(),
        functions,
        ..Default::default()
    };
    let image = compile(&module, &[], &[]).expect("compiles");
    let code = image.code.clone();
    let mut memory = PooledMemory::default();
    let linked = image.link(&module, &mut memory).expect("links");
    Compiled {
        memory,
        functions: linked.functions,
        code,
    }
}

/// `f(x: from) -> to`, the result of `body`.
fn unary(from: Ty, to: Ty, body: impl FnOnce(&mut FuncBuilder, Var) -> Var) -> Compiled {
    let mut b = FuncBuilder::new("f", Linkage::Export, Signature::new(vec![from], Some(to)));
    let x = b.param(0);
    let r = body(&mut b, x);
    b.ret(Some(r));
    link(vec![b.finish()])
}

const INPUTS: [f64; 19] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.5,
    -1.5,
    127.9,
    128.0,
    -129.0,
    255.9,
    65536.0,
    -2147483649.0,
    4294967296.0,
    i64::MAX as f64,
    i64::MIN as f64,
    1.8446744073709552e19,
    1e30,
    -1e30,
];

/// What Rust's saturating `as` gives for `x` into `ty` (signed or not), as raw 64 bits of the
/// value's width.
fn rust_cast(x: f64, ty: Ty, signed: bool) -> u64 {
    match (ty, signed) {
        (Ty::I8, true) => x as i8 as u8 as u64,
        (Ty::I16, true) => x as i16 as u16 as u64,
        (Ty::I32, true) => x as i32 as u32 as u64,
        (Ty::I64, true) => x as i64 as u64,
        (Ty::I8, false) => x as u8 as u64,
        (Ty::I16, false) => x as u16 as u64,
        (Ty::I32, false) => x as u32 as u64,
        _ => x as u64,
    }
}

fn mask(ty: Ty) -> u64 {
    match ty.bytes() {
        8 => u64::MAX,
        n => (1u64 << (n * 8)) - 1,
    }
}

#[test]
fn float_to_int_conversions_saturate_like_rust_casts() {
    for from in [Ty::F64, Ty::F32] {
        for to in [Ty::I8, Ty::I16, Ty::I32, Ty::I64] {
            for signed in [true, false] {
                let op = if signed {
                    ConvOp::FtoSsat
                } else {
                    ConvOp::FtoUsat
                };
                let code = unary(from, to, |b, x| b.convert(op, x, to));
                for x in INPUTS {
                    let got = if from == Ty::F64 {
                        // SAFETY: `f(f64) -> int`, the low bytes of rax significant.
                        let f: extern "C" fn(f64) -> u64 = unsafe { as_fn(code.functions[0]) };
                        f(x)
                    } else {
                        // SAFETY: as above with an f32 parameter.
                        let f: extern "C" fn(f32) -> u64 = unsafe { as_fn(code.functions[0]) };
                        f(x as f32)
                    };
                    let input = if from == Ty::F64 {
                        x
                    } else {
                        f64::from(x as f32)
                    };
                    assert_eq!(
                        got & mask(to),
                        rust_cast(input, to, signed),
                        "{from} {x} to {to} (signed: {signed})"
                    );
                }
            }
        }
    }
}

#[test]
fn unsigned_64_bit_integers_convert_to_floats_rounding_to_nearest() {
    let inputs = [
        0u64,
        1,
        (1 << 53) + 1,
        (1 << 63) - 1,
        1 << 63,
        (1 << 63) + (1 << 11) + 1,
        u64::MAX,
    ];
    let to_f64 = unary(Ty::I64, Ty::F64, |b, x| b.convert(ConvOp::UtoF, x, Ty::F64));
    let to_f32 = unary(Ty::I64, Ty::F32, |b, x| b.convert(ConvOp::UtoF, x, Ty::F32));
    // SAFETY: `f(i64) -> f64` and `f(i64) -> f32`.
    let (f64_of, f32_of): (extern "C" fn(u64) -> f64, extern "C" fn(u64) -> f32) =
        unsafe { (as_fn(to_f64.functions[0]), as_fn(to_f32.functions[0])) };
    for x in inputs {
        assert_eq!(f64_of(x).to_bits(), (x as f64).to_bits(), "{x} as f64");
        assert_eq!(f32_of(x).to_bits(), (x as f32).to_bits(), "{x} as f32");
    }
}

#[test]
fn float_minimum_and_maximum_propagate_nan_and_order_signed_zeros() {
    let make = |op| {
        let sig = Signature::new(vec![Ty::F64, Ty::F64], Some(Ty::F64));
        let mut b = FuncBuilder::new("f", Linkage::Export, sig);
        let (x, y) = (b.param(0), b.param(1));
        let r = b.binary(op, x, y);
        b.ret(Some(r));
        link(vec![b.finish()])
    };
    let (min, max) = (make(BinOp::Fmin), make(BinOp::Fmax));
    // SAFETY: `f(f64, f64) -> f64`.
    let (fmin, fmax): (
        extern "C" fn(f64, f64) -> f64,
        extern "C" fn(f64, f64) -> f64,
    ) = unsafe { (as_fn(min.functions[0]), as_fn(max.functions[0])) };
    assert!(fmin(f64::NAN, 1.0).is_nan() && fmin(1.0, f64::NAN).is_nan());
    assert!(fmax(f64::NAN, 1.0).is_nan() && fmax(1.0, f64::NAN).is_nan());
    assert_eq!(fmin(0.0, -0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(fmin(-0.0, 0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(fmax(0.0, -0.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(fmax(-0.0, 0.0).to_bits(), 0.0f64.to_bits());
    assert_eq!((fmin(2.0, -3.0), fmax(2.0, -3.0)), (-3.0, 2.0));
}

#[test]
fn arguments_beyond_the_registers_pass_on_the_stack() {
    // g(a0..a7: i64, x0..x9: f64) -> i64 = sum(a_i * (i + 1)) + (x9 as i64) * 1000.
    let mut params = vec![Ty::I64; 8];
    params.extend([Ty::F64; 10]);
    let mut g = FuncBuilder::new("g", Linkage::Local, Signature::new(params, Some(Ty::I64)));
    let mut sum = g.iconst(Ty::I64, 0);
    for i in 0..8 {
        let weighted = g.binary_imm(BinOp::Imul, g.param(i), i as i64 + 1);
        sum = g.binary(BinOp::Iadd, sum, weighted);
    }
    let last = g.convert(ConvOp::FtoSsat, g.param(17), Ty::I64);
    let scaled = g.binary_imm(BinOp::Imul, last, 1000);
    let total = g.binary(BinOp::Iadd, sum, scaled);
    g.ret(Some(total));
    // h() = g(1, 2, ..., 8, 0.5, ..., 9.5).
    let mut h = FuncBuilder::new("h", Linkage::Export, Signature::new(vec![], Some(Ty::I64)));
    let mut args: Vec<Var> = (1..=8).map(|v| h.iconst(Ty::I64, v)).collect();
    for k in 0..10 {
        args.push(h.fconst(Ty::F64, (k as f64 + 0.5).to_bits()));
    }
    let r = h
        .call(Callee::Func(FuncId(0)), Some(Ty::I64), args)
        .unwrap();
    h.ret(Some(r));
    let code = link(vec![g.finish(), h.finish()]);
    let expected: i64 = (1..=8).map(|v: i64| v * v).sum::<i64>() + 9 * 1000;
    // SAFETY: `h() -> i64`.
    let run: extern "C" fn() -> i64 = unsafe { as_fn(code.functions[1]) };
    assert_eq!(run(), expected, "a call between compiled functions");
    type G = extern "C" fn(
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
    ) -> i64;
    // SAFETY: `g`'s signature.
    let g: G = unsafe { as_fn(code.functions[0]) };
    let direct = g(
        1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5,
    );
    assert_eq!(direct, expected, "a call from Rust");
}

#[test]
fn stack_slots_aligned_beyond_16_bytes_are_refused_by_name() {
    let mut b = FuncBuilder::new("wide", Linkage::Export, Signature::new(vec![], None));
    let slot = b.slot(64, 32);
    b.stack_addr(slot, 0);
    b.ret(None);
    let module = Module {
        name: "t".to_owned(),
        functions: vec![b.finish()],
        ..Default::default()
    };
    let err = compile(&module, &[], &[]).err().expect("refused");
    assert!(
        err.to_string()
            .contains("`wide`: stack slot 0 asks for alignment 32"),
        "{err}"
    );
}
