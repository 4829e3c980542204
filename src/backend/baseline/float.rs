//! Float arithmetic, comparisons and conversions of the baseline compiler (SSE2 scalar).

use super::asm::{Cond, emit, reg::*};
use super::isel::{FnGen, Widen};
use crate::lir::{BinOp, ConvOp, FloatCC, Ty, Var};

impl FnGen<'_> {
    /// Reads float `v` into `x`.
    pub fn load_float(&mut self, x: u8, v: Var) {
        if self.frame.vars[v.0 as usize].konst().is_some() {
            self.load_bits(RAX, v);
            emit!(self.a, movq_a(x, RAX));
            return;
        }
        let m = self.slot(v);
        if self.ty(v) == Ty::F32 {
            emit!(self.a, movss_a_m(x, m));
        } else {
            emit!(self.a, movsd_a_m(x, m));
        }
    }

    /// Writes float `x` to `v`'s slot.
    pub fn store_float(&mut self, v: Var, x: u8) {
        let m = self.slot(v);
        if self.ty(v) == Ty::F32 {
            emit!(self.a, movss_c_m(m, x));
        } else {
            emit!(self.a, movsd_c_m(m, x));
        }
    }

    /// `ucomis{s,d} x, y` for floats of type `ty`.
    fn ucomi(&mut self, ty: Ty, x: u8, y: u8) {
        if ty == Ty::F32 {
            emit!(self.a, ucomiss_a(x, y));
        } else {
            emit!(self.a, ucomisd_a(x, y));
        }
    }

    pub(super) fn float_binary(&mut self, dst: Var, op: BinOp, a: Var, b: Var) {
        let ty = self.ty(a);
        let single = ty == Ty::F32;
        self.load_float(XMM0, a);
        self.load_float(XMM1, b);
        match op {
            BinOp::Fadd if single => emit!(self.a, addss_a(XMM0, XMM1)),
            BinOp::Fadd => emit!(self.a, addsd_a(XMM0, XMM1)),
            BinOp::Fsub if single => emit!(self.a, subss_a(XMM0, XMM1)),
            BinOp::Fsub => emit!(self.a, subsd_a(XMM0, XMM1)),
            BinOp::Fmul if single => emit!(self.a, mulss_a(XMM0, XMM1)),
            BinOp::Fmul => emit!(self.a, mulsd_a(XMM0, XMM1)),
            BinOp::Fdiv if single => emit!(self.a, divss_a(XMM0, XMM1)),
            BinOp::Fdiv => emit!(self.a, divsd_a(XMM0, XMM1)),
            BinOp::Fmin | BinOp::Fmax => {
                // NaN if either is NaN; of equal operands (+0 and -0) the minimum has the
                // sign bit if either has it, the maximum only if both have it.
                let (nan, equal, done) = (self.a.label(), self.a.label(), self.a.label());
                self.ucomi(ty, XMM0, XMM1);
                self.a.jcc(Cond::P, nan);
                self.a.jcc(Cond::E, equal);
                match (op, single) {
                    (BinOp::Fmin, true) => emit!(self.a, minss_a(XMM0, XMM1)),
                    (BinOp::Fmin, false) => emit!(self.a, minsd_a(XMM0, XMM1)),
                    (_, true) => emit!(self.a, maxss_a(XMM0, XMM1)),
                    (_, false) => emit!(self.a, maxsd_a(XMM0, XMM1)),
                }
                self.a.jmp(done);
                self.a.bind(equal);
                if op == BinOp::Fmin {
                    emit!(self.a, orpd_a(XMM0, XMM1));
                } else {
                    emit!(self.a, andpd_a(XMM0, XMM1));
                }
                self.a.jmp(done);
                self.a.bind(nan);
                if single {
                    emit!(self.a, addss_a(XMM0, XMM1));
                } else {
                    emit!(self.a, addsd_a(XMM0, XMM1));
                }
                self.a.bind(done);
            }
            _ => unreachable!("integer operations on floats"),
        }
        self.store_float(dst, XMM0);
    }

    pub(super) fn fcmp(&mut self, dst: Var, cc: FloatCC, a: Var, b: Var) {
        let ty = self.ty(a);
        self.load_float(XMM0, a);
        self.load_float(XMM1, b);
        // `ucomis` sets ZF, PF and CF all for unordered operands.
        match cc {
            FloatCC::Eq | FloatCC::Ne => {
                self.ucomi(ty, XMM0, XMM1);
                if cc == FloatCC::Eq {
                    self.a.setcc(Cond::E, RAX);
                    self.a.setcc(Cond::Np, RCX);
                    emit!(self.a, andl_rm(RAX, RCX));
                } else {
                    self.a.setcc(Cond::Ne, RAX);
                    self.a.setcc(Cond::P, RCX);
                    emit!(self.a, orl_rm(RAX, RCX));
                }
            }
            FloatCC::Lt | FloatCC::Le => {
                self.ucomi(ty, XMM1, XMM0);
                let c = if cc == FloatCC::Lt { Cond::A } else { Cond::Ae };
                self.a.setcc(c, RAX);
            }
            FloatCC::Gt | FloatCC::Ge => {
                self.ucomi(ty, XMM0, XMM1);
                let c = if cc == FloatCC::Gt { Cond::A } else { Cond::Ae };
                self.a.setcc(c, RAX);
            }
        }
        self.store(dst, RAX);
    }

    pub(super) fn convert(&mut self, dst: Var, op: ConvOp, src: Var) {
        let (from, to) = (self.ty(src), self.ty(dst));
        match op {
            ConvOp::Sext => {
                self.load(RAX, src, Widen::Sign);
                self.store(dst, RAX);
            }
            ConvOp::Uext => {
                self.load(RAX, src, Widen::Zero);
                self.store(dst, RAX);
            }
            ConvOp::Trunc | ConvOp::PtrToInt | ConvOp::IntToPtr | ConvOp::Bitcast => {
                self.load_bits(RAX, src);
                self.store(dst, RAX);
            }
            ConvOp::Fpromote => {
                self.load_float(XMM0, src);
                emit!(self.a, cvtss2sd_a(XMM0, XMM0));
                self.store_float(dst, XMM0);
            }
            ConvOp::Fdemote => {
                self.load_float(XMM0, src);
                emit!(self.a, cvtsd2ss_a(XMM0, XMM0));
                self.store_float(dst, XMM0);
            }
            ConvOp::StoF => {
                self.load(RAX, src, Widen::Sign);
                self.int_to_float(to, RAX);
                self.store_float(dst, XMM0);
            }
            ConvOp::UtoF => {
                self.load(RAX, src, Widen::Zero);
                if from.bytes() < 8 {
                    self.int_to_float(to, RAX);
                } else {
                    self.u64_to_float(to);
                }
                self.store_float(dst, XMM0);
            }
            ConvOp::FtoSsat => {
                self.load_float(XMM0, src);
                self.float_to_i64_sat(from);
                if to.bytes() < 8 {
                    let bits = to.bytes() * 8;
                    self.clamp(-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
                }
                self.store(dst, RAX);
            }
            ConvOp::FtoUsat => {
                self.load_float(XMM0, src);
                if to.bytes() < 8 {
                    self.float_to_i64_sat(from);
                    self.clamp(0, (1i64 << (to.bytes() * 8)) - 1);
                } else {
                    self.float_to_u64_sat(from);
                }
                self.store(dst, RAX);
            }
        }
    }

    /// `xmm0 = (float) r` for a signed 64-bit `r`.
    fn int_to_float(&mut self, to: Ty, r: u8) {
        // Clear xmm0 first: `cvtsi2s*` writes only the low lane (a false dependency else).
        emit!(self.a, xorpd_a(XMM0, XMM0));
        if to == Ty::F32 {
            emit!(self.a, cvtsi2ssq_a(XMM0, r));
        } else {
            emit!(self.a, cvtsi2sdq_a(XMM0, r));
        }
    }

    /// `xmm0 = (float) rax` for an unsigned 64-bit `rax`: values with the top bit set are
    /// halved (keeping the low bit for rounding), converted and doubled.
    fn u64_to_float(&mut self, to: Ty) {
        let (big, done) = (self.a.label(), self.a.label());
        emit!(self.a, testq_mr(RAX, RAX));
        self.a.jcc(Cond::S, big);
        self.int_to_float(to, RAX);
        self.a.jmp(done);
        self.a.bind(big);
        emit!(self.a, movq_rm(RCX, RAX));
        emit!(self.a, shrq_mi(RCX, 1u8));
        emit!(self.a, andl_mi_sxb(RAX, 1i8));
        emit!(self.a, orq_rm(RCX, RAX));
        self.int_to_float(to, RCX);
        if to == Ty::F32 {
            emit!(self.a, addss_a(XMM0, XMM0));
        } else {
            emit!(self.a, addsd_a(XMM0, XMM0));
        }
        self.a.bind(done);
    }

    /// `cvtts*2si rax, xmm0` (64-bit result) for a float of type `from`.
    fn cvtt(&mut self, from: Ty) {
        if from == Ty::F32 {
            emit!(self.a, cvttss2si_aq(RAX, XMM0));
        } else {
            emit!(self.a, cvttsd2si_aq(RAX, XMM0));
        }
    }

    /// `rax = xmm0` converted to i64, saturating, NaN to 0.
    fn float_to_i64_sat(&mut self, from: Ty) {
        let done = self.a.label();
        self.cvtt(from);
        // The instruction gives i64::MIN for NaN and out-of-range values.
        self.a.mov_imm(RCX, i64::MIN);
        emit!(self.a, cmpq_rm(RAX, RCX));
        self.a.jcc(Cond::Ne, done);
        let (nan, positive) = (self.a.label(), self.a.label());
        emit!(self.a, xorpd_a(XMM1, XMM1));
        self.ucomi(from, XMM0, XMM1);
        self.a.jcc(Cond::P, nan);
        self.a.jcc(Cond::A, positive);
        self.a.jmp(done);
        self.a.bind(positive);
        self.a.mov_imm(RAX, i64::MAX);
        self.a.jmp(done);
        self.a.bind(nan);
        self.a.mov_imm(RAX, 0);
        self.a.bind(done);
    }

    /// `rax = xmm0` converted to u64, saturating, NaN and negative values to 0.
    fn float_to_u64_sat(&mut self, from: Ty) {
        let (zero, big, max, done) = (
            self.a.label(),
            self.a.label(),
            self.a.label(),
            self.a.label(),
        );
        emit!(self.a, xorpd_a(XMM1, XMM1));
        self.ucomi(from, XMM0, XMM1);
        self.a.jcc(Cond::P, zero);
        self.a.jcc(Cond::Be, zero);
        // 2^63 in the source type.
        let two63 = if from == Ty::F32 {
            i64::from(((1u64 << 63) as f32).to_bits())
        } else {
            ((1u64 << 63) as f64).to_bits() as i64
        };
        self.a.mov_imm(RCX, two63);
        emit!(self.a, movq_a(XMM1, RCX));
        self.ucomi(from, XMM0, XMM1);
        self.a.jcc(Cond::Ae, big);
        self.cvtt(from);
        self.a.jmp(done);
        self.a.bind(big);
        if from == Ty::F32 {
            emit!(self.a, subss_a(XMM0, XMM1));
        } else {
            emit!(self.a, subsd_a(XMM0, XMM1));
        }
        self.cvtt(from);
        emit!(self.a, testq_mr(RAX, RAX));
        self.a.jcc(Cond::S, max);
        self.a.mov_imm(RCX, i64::MIN);
        emit!(self.a, orq_rm(RAX, RCX));
        self.a.jmp(done);
        self.a.bind(max);
        self.a.mov_imm(RAX, -1);
        self.a.jmp(done);
        self.a.bind(zero);
        self.a.mov_imm(RAX, 0);
        self.a.bind(done);
    }

    /// Clamps the signed `rax` to `lo..=hi`.
    fn clamp(&mut self, lo: i64, hi: i64) {
        self.a.mov_imm(RCX, lo);
        emit!(self.a, cmpq_rm(RAX, RCX));
        self.a.cmov(Cond::L, RAX, RCX);
        self.a.mov_imm(RCX, hi);
        emit!(self.a, cmpq_rm(RAX, RCX));
        self.a.cmov(Cond::G, RAX, RCX);
    }
}
