//! The System V x86-64 calling convention: the prologue and epilogue, parameters, calls and
//! returns of baseline-compiled functions.
//!
//! Only caller-saved registers are used (`rax`, `rcx`, `rdx`, `r10`, `r11`, the argument
//! registers, `xmm0`, `xmm1`), so the prologue saves nothing but `rbp`.

use cranelift_assembler_x64::GprMem;

use super::abi::{FLOAT_ARG_REGS, INT_ARG_REGS};
use super::asm::{emit, mem, reg::*};
use super::image::{Reloc, RelocKind};
use super::isel::{Addressing, FnGen, Widen};
use crate::lir::{Callee, Ext, Ty, Var};

/// Bytes of stack a probe covers: frames larger than this touch every page on the way down,
/// so that a guard page below a thread's stack is never jumped over.
const PAGE: u32 = 4096;

impl FnGen<'_> {
    /// `push rbp; mov rbp, rsp; sub rsp, size`, then the register parameters into their slots.
    pub fn prologue(&mut self) {
        emit!(self.a, pushq_o(RBP));
        emit!(self.a, movq_mr(RBP, RSP));
        let size = self.frame.size;
        let mut probed = PAGE;
        while probed < size {
            emit!(self.a, testl_mr(mem(RSP, -(probed as i32)), RAX));
            probed += PAGE;
        }
        if size > 0 {
            emit!(self.a, subq_mi_sxl(RSP, size as i32));
        }
        let (mut ints, mut floats) = (0, 0);
        for (i, &ty) in self.f.sig.params.iter().enumerate() {
            let v = Var(i as u32);
            let has_slot = self.frame.vars[i].offset < 0;
            if ty.is_float() {
                if let Some(&x) = FLOAT_ARG_REGS.get(floats)
                    && has_slot
                {
                    self.store_float(v, x);
                }
                floats += 1;
            } else {
                if let Some(&r) = INT_ARG_REGS.get(ints)
                    && has_slot
                {
                    self.store(v, r);
                }
                ints += 1;
            }
        }
    }

    /// `mov rsp, rbp; pop rbp; ret`, with the return value (if any) in `rax` or `xmm0`.
    pub fn ret(&mut self, value: Option<Var>) {
        if let Some(v) = value {
            let ty = self.ty(v);
            if ty.is_float() {
                self.load_float(XMM0, v);
            } else {
                let widen = if self.f.sig.ret_ext == Ext::Sext {
                    Widen::Sign
                } else {
                    Widen::Zero
                };
                self.load(RAX, v, widen);
            }
        }
        emit!(self.a, movq_mr(RSP, RBP));
        emit!(self.a, popq_o(RBP));
        emit!(self.a, plain retq_zo());
    }

    /// A call: arguments into registers and the outgoing area, the call, the result into its
    /// slot.
    pub fn call(&mut self, dst: Option<Var>, callee: &Callee, args: &[Var]) {
        let module = self.module;
        let sig = module.callee_sig(callee);
        let (mut ints, mut floats, mut stack) = (0usize, 0usize, 0i32);
        for (i, &arg) in args.iter().enumerate() {
            let ty = sig.params.get(i).copied().unwrap_or_else(|| self.ty(arg));
            if ty.is_float() {
                if let Some(&x) = FLOAT_ARG_REGS.get(floats) {
                    self.load_float(x, arg);
                } else {
                    self.load_bits(RAX, arg);
                    emit!(self.a, movq_mr(mem(RSP, 8 * stack), RAX));
                    stack += 1;
                }
                floats += 1;
            } else {
                let widen = if sig.param_ext(i) == Ext::Sext {
                    Widen::Sign
                } else {
                    Widen::Zero
                };
                if let Some(&r) = INT_ARG_REGS.get(ints) {
                    self.load(r, arg, widen);
                } else {
                    self.load(RAX, arg, widen);
                    emit!(self.a, movq_mr(mem(RSP, 8 * stack), RAX));
                    stack += 1;
                }
                ints += 1;
            }
        }
        match callee {
            Callee::Import(id) => match self.addressing {
                Addressing::Absolute { imports } => {
                    self.a.mov_abs(R11, imports[id.0 as usize]);
                    emit!(self.a, callq_m(GprMem::Gpr(R11)));
                }
                Addressing::Relocatable => {
                    // `call import@PLT`
                    emit!(self.a, plain callq_d(0));
                    let at = self.a.pos() - 4;
                    self.relocs.push(Reloc {
                        at,
                        kind: RelocKind::CallImport(*id),
                    });
                }
            },
            Callee::Func(id) => {
                emit!(self.a, plain callq_d(0));
                let at = self.a.pos() - 4;
                self.relocs.push(Reloc {
                    at,
                    kind: RelocKind::CallFunc(*id),
                });
            }
            Callee::Indirect(target, _) => {
                self.load(R11, *target, Widen::Zero);
                emit!(self.a, callq_m(GprMem::Gpr(R11)));
            }
        }
        // The callee may change `r10`.
        self.base = None;
        if let Some(d) = dst {
            if sig.ret.is_some_and(Ty::is_float) {
                self.store_float(d, XMM0);
            } else {
                self.store(d, RAX);
            }
        }
    }
}
