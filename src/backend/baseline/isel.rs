//! Instruction selection: each lowered instruction becomes a short fixed sequence that reads
//! its operands from their slots (or immediates), computes in `rax`/`rcx`/`rdx` or
//! `xmm0`/`xmm1`, and writes the result to its slot.

use cranelift_assembler_x64::{Amode, GprMem};

use super::asm::{Asm, Cond, DeferredLoad, Label, emit, mem, reg::*};
use super::frame::Frame;
use super::image::{Reloc, RelocKind};
use crate::lir::{self, BinOp, Function, Inst, IntCC, Symbol, Ty, UnOp, Var};

/// How a narrow integer is widened when read into a 64-bit register.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Widen {
    /// Sign-extended.
    Sign,
    /// Zero-extended.
    Zero,
}

/// A second operand: an immediate, or a register or slot.
pub enum Operand {
    /// A 32-bit immediate (sign-extended to 64 bits).
    Imm(i32),
    /// A register or a memory operand.
    Rm(GprMem<u8, u8>),
}

/// How compiled code reaches imports and the module's own symbols.
#[derive(Clone, Copy)]
pub enum Addressing<'a> {
    /// In-process code: imports at these addresses (`imports[i]` for import `i`), symbols by
    /// 64-bit absolute addresses patched in when the code is placed.
    Absolute {
        /// Address of each import.
        imports: &'a [u64],
    },
    /// Position-independent code for an object file, addressed as Cranelift's own PIC code is:
    /// imports called through the PLT, symbol addresses loaded from the GOT.
    Relocatable,
}

/// The compiler of one function.
pub struct FnGen<'a> {
    /// The code buffer.
    pub a: &'a mut Asm,
    /// The function.
    pub f: &'a Function,
    /// The module.
    pub module: &'a lir::Module,
    /// How imports and symbols are addressed.
    pub addressing: Addressing<'a>,
    /// The frame.
    pub frame: Frame,
    /// Relocations of the module.
    pub relocs: &'a mut Vec<Reloc>,
    /// Label of each block.
    pub blocks: Vec<Label>,
    /// The plan of the current block's branch.
    pub scratch: super::condition::BranchScratch,
    /// The pointer variable `r10` holds (see [`FnGen::base`]).
    pub base: Option<Var>,
    /// The index plus one of the block whose branch is being planned (see `branch`).
    pub block_tag: u32,
}

/// The sign-extension of the low `bytes` bytes of `v`.
fn sext(v: i64, bytes: u32) -> i64 {
    match bytes {
        1 => v as i8 as i64,
        2 => v as i16 as i64,
        4 => v as i32 as i64,
        _ => v,
    }
}

impl FnGen<'_> {
    /// Type of `v`.
    pub fn ty(&self, v: Var) -> Ty {
        self.f.vars[v.0 as usize].ty
    }

    /// The slot of `v`.
    pub fn slot(&self, v: Var) -> Amode<u8> {
        mem(RBP, self.frame.vars[v.0 as usize].offset)
    }

    /// The constant value of `v`, widened to 64 bits, if it is a constant.
    pub fn constant(&self, v: Var, widen: Widen) -> Option<i64> {
        let c = self.frame.vars[v.0 as usize].konst()?;
        Some(match widen {
            Widen::Zero => c,
            Widen::Sign => sext(c, self.ty(v).bytes()),
        })
    }

    /// Reads integer (or pointer) `v` into `r`, widened to 64 bits.
    pub fn load(&mut self, r: u8, v: Var, widen: Widen) {
        if let Some(c) = self.constant(v, widen) {
            self.a.mov_imm(r, c);
            return;
        }
        if let Some((src, extended)) = self.a.take_extended(v.0) {
            if extended && widen == Widen::Zero {
                if r != src {
                    emit!(self.a, movq_rm(r, src));
                }
                return;
            }
            match (self.ty(v).bytes(), widen) {
                (1, Widen::Sign) => emit!(self.a, movsbq_rm(r, src)),
                (1, Widen::Zero) => emit!(self.a, movzbq_rm(r, src)),
                (2, Widen::Sign) => emit!(self.a, movswq_rm(r, src)),
                (2, Widen::Zero) => emit!(self.a, movzwq_rm(r, src)),
                (4, Widen::Sign) => emit!(self.a, movslq_rm(r, src)),
                (4, Widen::Zero) => emit!(self.a, movl_rm(r, src)),
                _ if r != src => emit!(self.a, movq_rm(r, src)),
                _ => {}
            }
            return;
        }
        let bytes = self.ty(v).bytes();
        if bytes == 8 {
            self.a.load64(r, RBP, self.frame.vars[v.0 as usize].offset);
            return;
        }
        let m = self.slot(v);
        match (bytes, widen) {
            (1, Widen::Sign) => emit!(self.a, movsbq_rm(r, m)),
            (1, Widen::Zero) => emit!(self.a, movzbq_rm(r, m)),
            (2, Widen::Sign) => emit!(self.a, movswq_rm(r, m)),
            (2, Widen::Zero) => emit!(self.a, movzwq_rm(r, m)),
            (4, Widen::Sign) => emit!(self.a, movslq_rm(r, m)),
            _ => emit!(self.a, movl_rm(r, m)),
        }
    }

    /// Reads the 64 bits of `v`'s slot into `r` (any type; the bits above its width are
    /// undefined).
    pub fn load_bits(&mut self, r: u8, v: Var) {
        if let Some(c) = self.constant(v, Widen::Zero) {
            self.a.mov_imm(r, c);
        } else if let Some(src) = self.a.take(v.0) {
            if src != r {
                emit!(self.a, movq_rm(r, src));
            }
        } else {
            self.a.load64(r, RBP, self.frame.vars[v.0 as usize].offset);
        }
    }

    /// Writes `r` to `v`'s slot (held back until the next instruction, see [`Asm`]).
    pub fn store(&mut self, v: Var, r: u8) {
        self.store_with(v, r, false, None);
    }

    /// [`Self::store`] of a register that holds the value zero-extended to 64 bits when
    /// `zero_extended`, and whose value the flags hold as `flags`, if given.
    fn store_with(&mut self, v: Var, r: u8, zero_extended: bool, flags: Option<Cond>) {
        self.defer(v, r, zero_extended, flags, None);
    }

    /// Holds back `v`'s result in `r` (see [`Asm`](super::asm::Asm)), and its load too when
    /// `load` is given.
    fn defer(
        &mut self,
        v: Var,
        r: u8,
        zero_extended: bool,
        flags: Option<Cond>,
        load: Option<DeferredLoad>,
    ) {
        let decl = self.f.vars[v.0 as usize];
        self.forget_base(v);
        self.a.defer_store(super::asm::Pending {
            var: v.0,
            offset: self.frame.vars[v.0 as usize].offset,
            reg: r,
            single_use: !decl.mutable && self.frame.vars[v.0 as usize].uses == 1,
            zero_extended,
            flags,
            load,
        });
    }

    /// The register to address memory through `addr`: `r10`, which keeps the last address
    /// loaded this way until it is reassigned, a call or a join, or `rax` for a value held
    /// back in a register or a constant.
    fn base(&mut self, addr: Var) -> u8 {
        if self.base == Some(addr) {
            return R10;
        }
        if self.a.holds(addr.0) || self.frame.vars[addr.0 as usize].konst().is_some() {
            self.load(RAX, addr, Widen::Zero);
            return RAX;
        }
        self.load(R10, addr, Widen::Zero);
        self.base = Some(addr);
        R10
    }

    /// Forgets the address `r10` keeps if it is `v`'s (being reassigned).
    pub fn forget_base(&mut self, v: Var) {
        if self.base == Some(v) {
            self.base = None;
        }
    }

    /// Whether `inst` may be left out: it computes a single-assignment variable nothing reads,
    /// and has no effect (no memory access, call or division). The kinds are listed rather
    /// than found through `Inst::dst` and a second match: this runs for every instruction, and
    /// the one match costs the launcher's compile 3k instructions less.
    fn unused(&self, inst: &Inst) -> bool {
        let dst = match inst {
            Inst::Copy { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Icmp { dst, .. }
            | Inst::Fcmp { dst, .. }
            | Inst::Select { dst, .. }
            | Inst::Convert { dst, .. }
            | Inst::PtrAdd { dst, .. }
            | Inst::StackAddr { dst, .. }
            | Inst::SymbolAddr { dst, .. } => dst,
            Inst::Binary { dst, op, .. }
                if !matches!(op, BinOp::Sdiv | BinOp::Srem | BinOp::Udiv | BinOp::Urem) =>
            {
                dst
            }
            _ => return false,
        };
        !self.f.vars[dst.0 as usize].mutable && self.frame.vars[dst.0 as usize].uses == 0
    }

    /// `v` as a second operand widened to 64 bits: an immediate, its slot (64-bit types), or
    /// `scratch` loaded with it.
    pub fn operand(&mut self, v: Var, widen: Widen, scratch: u8) -> Operand {
        self.operand_bits(v, widen, scratch, false)
    }

    /// [`Self::operand`]; with `low_bits_only` (for operations whose low bits depend only on the
    /// operands' low bits) the slot of a narrow variable is used as it is.
    fn operand_bits(&mut self, v: Var, widen: Widen, scratch: u8, low_bits_only: bool) -> Operand {
        if let Some(c) = self.constant(v, widen) {
            if let Ok(i) = i32::try_from(c) {
                return Operand::Imm(i);
            }
        } else if (low_bits_only || self.ty(v).bytes() == 8) && !self.a.holds(v.0) {
            return Operand::Rm(GprMem::Mem(self.slot(v)));
        }
        self.load(scratch, v, widen);
        Operand::Rm(GprMem::Gpr(scratch))
    }

    /// Compiles one instruction (not `icmp`s fused into branches).
    pub fn inst(&mut self, inst: &Inst) {
        if self.unused(inst) {
            return;
        }
        match inst {
            Inst::Iconst { dst, value } => {
                if self.frame.vars[dst.0 as usize].konst().is_none() {
                    let v = super::frame::truncate(*value, self.ty(*dst));
                    match i32::try_from(v) {
                        Ok(i) => {
                            self.forget_base(*dst);
                            let m = self.slot(*dst);
                            emit!(self.a, movq_mi_sxl(m, i));
                        }
                        Err(_) => {
                            self.a.mov_imm(RAX, v);
                            self.store(*dst, RAX);
                        }
                    }
                }
            }
            Inst::Fconst { dst, bits } => {
                if self.frame.vars[dst.0 as usize].konst().is_none() {
                    let bits = super::frame::float_bits(*bits, self.ty(*dst));
                    self.a.mov_imm(RAX, bits);
                    self.store(*dst, RAX);
                }
            }
            Inst::Copy { dst, src } => {
                self.load_bits(RAX, *src);
                self.store(*dst, RAX);
            }
            Inst::Unary { dst, op, src } => self.unary(*dst, *op, *src),
            Inst::Binary { dst, op, a, b } => {
                if self.ty(*a).is_float() {
                    self.float_binary(*dst, *op, *a, *b);
                } else {
                    self.int_binary(*dst, *op, *a, *b);
                }
            }
            Inst::Icmp { dst, cc, a, b } => {
                let cond = self.icmp(*cc, *a, *b);
                self.a.setcc(cond, RAX);
                self.store_with(*dst, RAX, false, Some(cond));
            }
            Inst::Fcmp { dst, cc, a, b } => self.fcmp(*dst, *cc, *a, *b),
            Inst::Select { dst, cond, a, b } => {
                // The operands first: one held back in `rax` is taken from it (the test
                // changes no register).
                self.load_bits(RAX, *a);
                self.load_bits(RDX, *b);
                let holds = self.test_cond(*cond);
                self.a.cmov(holds.invert(), RAX, RDX);
                self.store(*dst, RAX);
            }
            Inst::Convert { dst, op, src } => self.convert(*dst, *op, *src),
            Inst::Load { dst, addr, offset } => {
                // Emitted when the value is first needed, or never when a comparison reads the
                // memory itself.
                let load = DeferredLoad {
                    base: self.base(*addr),
                    disp: *offset,
                    bytes: self.ty(*dst).bytes() as u8,
                };
                self.defer(*dst, RAX, true, None, Some(load));
            }
            Inst::Store {
                addr,
                offset,
                value,
            } => {
                let base = self.base(*addr);
                let m = mem(base, *offset);
                let bytes = self.ty(*value).bytes();
                match self.constant(*value, Widen::Sign) {
                    Some(c) if bytes < 8 || i32::try_from(c).is_ok() => match bytes {
                        1 => emit!(self.a, movb_mi(m, c as u8)),
                        2 => emit!(self.a, movw_mi(m, c as u16)),
                        4 => emit!(self.a, movl_mi(m, c as u32)),
                        _ => emit!(self.a, movq_mi_sxl(m, c as i32)),
                    },
                    _ => {
                        self.load_bits(RCX, *value);
                        match bytes {
                            1 => emit!(self.a, movb_mr(m, RCX)),
                            2 => emit!(self.a, movw_mr(m, RCX)),
                            4 => emit!(self.a, movl_mr(m, RCX)),
                            _ => emit!(self.a, movq_mr(m, RCX)),
                        }
                    }
                }
            }
            Inst::PtrAdd { dst, ptr, offset } => {
                self.load(RAX, *ptr, Widen::Zero);
                match self.operand(*offset, Widen::Sign, RCX) {
                    Operand::Imm(0) => {}
                    Operand::Imm(i) => emit!(self.a, addq_mi_sxl(RAX, i)),
                    Operand::Rm(rm) => emit!(self.a, addq_rm(RAX, rm)),
                }
                self.store(*dst, RAX);
            }
            Inst::AtomicCas {
                dst,
                addr,
                expected,
                replacement,
            } => {
                // `lock cmpxchg [rcx], rdx` compares with and leaves the old value in rax.
                self.load(RCX, *addr, Widen::Zero);
                self.load_bits(RDX, *replacement);
                self.load_bits(RAX, *expected);
                emit!(self.a, lock_cmpxchgq_mr(mem(RCX, 0), RDX, RAX));
                self.store(*dst, RAX);
            }
            Inst::StackAddr { dst, slot, offset } => {
                let off = self.frame.slot_offset[slot.0 as usize] + offset;
                emit!(self.a, leaq_rm(RAX, mem(RBP, off)));
                self.store(*dst, RAX);
            }
            Inst::SymbolAddr { dst, symbol } => {
                let (at, kind) = match self.addressing {
                    Addressing::Absolute { .. } => {
                        let at = self.a.mov_abs(RAX, 0);
                        let kind = match symbol {
                            Symbol::Data(d) => RelocKind::AbsData(*d),
                            Symbol::Func(f) => RelocKind::AbsFunc(*f),
                        };
                        (at, kind)
                    }
                    Addressing::Relocatable => {
                        // `mov rax, [rip + symbol@GOTPCREL]`
                        let rip = Amode::RipRelative {
                            target: cranelift_assembler_x64::DeferredTarget::None,
                        };
                        emit!(self.a, movq_rm(RAX, rip));
                        (self.a.pos() - 4, RelocKind::GotAddress(*symbol))
                    }
                };
                self.relocs.push(Reloc { at, kind });
                self.store(*dst, RAX);
            }
            Inst::Call { dst, callee, args } => self.call(*dst, callee, args),
            Inst::Source(_) => {}
        }
    }

    /// Sets the flags for `cond != 0`; returns the condition that holds when it is (`Ne`,
    /// or the comparison's own when the flags still hold the comparison that computed it).
    /// Changes no register but `rcx`, and that only for a constant.
    pub fn test_cond(&mut self, cond: Var) -> Cond {
        if let Some(c) = self.constant(cond, Widen::Zero) {
            self.a.mov_imm(RCX, c);
            emit!(self.a, testq_mr(RCX, RCX));
        } else if let Some(p) = self.a.take_pending(cond.0) {
            if let Some(holds) = p.flags {
                return holds;
            }
            emit!(self.a, testb_mr(p.reg, p.reg));
        } else {
            let m = self.slot(cond);
            emit!(self.a, cmpb_mi(m, 0u8));
        }
        Cond::Ne
    }

    /// Compares `a` with `b`; returns the condition that holds when `a cc b`.
    pub fn icmp(&mut self, cc: IntCC, a: Var, b: Var) -> Cond {
        let (widen, cond) = match cc {
            IntCC::Eq => (Widen::Zero, Cond::E),
            IntCC::Ne => (Widen::Zero, Cond::Ne),
            IntCC::Slt => (Widen::Sign, Cond::L),
            IntCC::Sle => (Widen::Sign, Cond::Le),
            IntCC::Sgt => (Widen::Sign, Cond::G),
            IntCC::Sge => (Widen::Sign, Cond::Ge),
            IntCC::Ult => (Widen::Zero, Cond::B),
            IntCC::Ule => (Widen::Zero, Cond::Be),
            IntCC::Ugt => (Widen::Zero, Cond::A),
            IntCC::Uge => (Widen::Zero, Cond::Ae),
        };
        if let Some(c) = self.constant(b, widen) {
            if self.compare_in_place(a, c) {
                return cond;
            }
            // A 64-bit constant against loaded memory: the constant in a register.
            if let Some(load) = self.a.deferred_load(a.0)
                && load.bytes == 8
            {
                self.a.take_deferred_load(a.0);
                self.a.mov_imm(RCX, c);
                emit!(self.a, cmpq_mr(mem(load.base, load.disp), RCX));
                return cond;
            }
        }
        self.load(RAX, a, widen);
        // Unsigned comparisons against zero-extended 32-bit immediates would be sign-extended
        // by the instruction: only immediates whose sign extension is the same value are used.
        let b_op = match self.constant(b, widen) {
            Some(c) if i32::try_from(c).is_ok() => Operand::Imm(c as i32),
            _ => self.operand_no_imm(b, widen, RCX),
        };
        match b_op {
            Operand::Imm(i) => emit!(self.a, cmpq_mi(RAX, i)),
            Operand::Rm(rm) => emit!(self.a, cmpq_rm(RAX, rm)),
        }
        cond
    }

    /// Compares `a` with the constant `c` (widened as the comparison widens) where `a` is,
    /// with no load: its slot at its own width (a comparison of the low bytes orders and
    /// equates them as the widened values do), or `r10` when it holds it. `false` (nothing
    /// emitted) when `a` is held back in a register, a constant, or `c` does not fit the
    /// instruction's immediate.
    fn compare_in_place(&mut self, a: Var, c: i64) -> bool {
        let bytes = self.ty(a).bytes();
        if let Some(load) = self.a.deferred_load(a.0) {
            // The loaded memory itself, at the load's width.
            if bytes == 8 && i32::try_from(c).is_err() {
                return false;
            }
            self.a.take_deferred_load(a.0);
            let m = mem(load.base, load.disp);
            match bytes {
                1 => emit!(self.a, cmpb_mi(m, c as u8)),
                2 => emit!(self.a, cmpw_mi(m, c as u16)),
                4 => emit!(self.a, cmpl_mi(m, c as u32)),
                _ => emit!(self.a, cmpq_mi(m, c as i32)),
            }
            return true;
        }
        if self.a.holds(a.0) || self.frame.vars[a.0 as usize].konst().is_some() {
            return false;
        }
        if self.base == Some(a) {
            let Ok(i) = i32::try_from(c) else {
                return false;
            };
            emit!(self.a, cmpq_mi(R10, i));
            return true;
        }
        let m = self.slot(a);
        match bytes {
            1 => emit!(self.a, cmpb_mi(m, c as u8)),
            2 => emit!(self.a, cmpw_mi(m, c as u16)),
            4 => emit!(self.a, cmpl_mi(m, c as u32)),
            _ => {
                let Ok(i) = i32::try_from(c) else {
                    return false;
                };
                emit!(self.a, cmpq_mi(m, i));
            }
        }
        true
    }

    /// `v` as a register or memory operand (never an immediate).
    fn operand_no_imm(&mut self, v: Var, widen: Widen, scratch: u8) -> Operand {
        if self.constant(v, widen).is_none() && self.ty(v).bytes() == 8 && !self.a.holds(v.0) {
            return Operand::Rm(GprMem::Mem(self.slot(v)));
        }
        self.load(scratch, v, widen);
        Operand::Rm(GprMem::Gpr(scratch))
    }

    fn unary(&mut self, dst: Var, op: UnOp, src: Var) {
        self.load_bits(RAX, src);
        match op {
            UnOp::Ineg => emit!(self.a, negq_m(RAX)),
            UnOp::Bnot => emit!(self.a, notq_m(RAX)),
            UnOp::Fneg => {
                if self.ty(src) == Ty::F32 {
                    emit!(self.a, xorl_mi(RAX, 0x8000_0000u32));
                } else {
                    self.a.mov_imm(RCX, i64::MIN);
                    emit!(self.a, xorq_rm(RAX, RCX));
                }
            }
        }
        self.store(dst, RAX);
    }

    fn int_binary(&mut self, dst: Var, op: BinOp, a: Var, b: Var) {
        match op {
            BinOp::Iadd | BinOp::Isub | BinOp::And | BinOp::Or | BinOp::Xor => {
                self.load_bits(RAX, a);
                match self.operand_bits(b, Widen::Sign, RCX, true) {
                    Operand::Imm(i) => match op {
                        BinOp::Iadd => emit!(self.a, addq_mi_sxl(RAX, i)),
                        BinOp::Isub => emit!(self.a, subq_mi_sxl(RAX, i)),
                        BinOp::And => emit!(self.a, andq_mi_sxl(RAX, i)),
                        BinOp::Or => emit!(self.a, orq_mi_sxl(RAX, i)),
                        _ => emit!(self.a, xorq_mi_sxl(RAX, i)),
                    },
                    Operand::Rm(rm) => match op {
                        BinOp::Iadd => emit!(self.a, addq_rm(RAX, rm)),
                        BinOp::Isub => emit!(self.a, subq_rm(RAX, rm)),
                        BinOp::And => emit!(self.a, andq_rm(RAX, rm)),
                        BinOp::Or => emit!(self.a, orq_rm(RAX, rm)),
                        _ => emit!(self.a, xorq_rm(RAX, rm)),
                    },
                }
            }
            BinOp::Imul => {
                self.load_bits(RAX, a);
                match self.operand_bits(b, Widen::Sign, RCX, true) {
                    Operand::Imm(i) => emit!(self.a, imulq_rmi_sxl(RAX, RAX, i)),
                    Operand::Rm(rm) => emit!(self.a, imulq_rm(RAX, rm)),
                }
            }
            BinOp::Sdiv | BinOp::Srem => {
                self.load(RAX, a, Widen::Sign);
                self.load(RCX, b, Widen::Sign);
                emit!(self.a, cqto_zo(RDX, RAX));
                emit!(self.a, idivq_m(RAX, RDX, RCX, super::asm::div_trap()));
                if op == BinOp::Srem {
                    emit!(self.a, movq_rm(RAX, RDX));
                }
            }
            BinOp::Udiv | BinOp::Urem => {
                self.load(RAX, a, Widen::Zero);
                self.load(RCX, b, Widen::Zero);
                emit!(self.a, movl_oi(RDX, 0u32));
                emit!(self.a, divq_m(RAX, RDX, RCX, super::asm::div_trap()));
                if op == BinOp::Urem {
                    emit!(self.a, movq_rm(RAX, RDX));
                }
            }
            BinOp::Shl | BinOp::Sshr | BinOp::Ushr => {
                let widen = if op == BinOp::Sshr {
                    Widen::Sign
                } else {
                    Widen::Zero
                };
                self.load(RAX, a, widen);
                match self.constant(b, Widen::Zero) {
                    Some(c) => {
                        let n = (c & 63) as u8;
                        match op {
                            BinOp::Shl => emit!(self.a, shlq_mi(RAX, n)),
                            BinOp::Sshr => emit!(self.a, sarq_mi(RAX, n)),
                            _ => emit!(self.a, shrq_mi(RAX, n)),
                        }
                    }
                    None => {
                        self.load_bits(RCX, b);
                        match op {
                            BinOp::Shl => emit!(self.a, shlq_mc(RAX, RCX)),
                            BinOp::Sshr => emit!(self.a, sarq_mc(RAX, RCX)),
                            _ => emit!(self.a, shrq_mc(RAX, RCX)),
                        }
                    }
                }
            }
            BinOp::Smin | BinOp::Smax | BinOp::Umin | BinOp::Umax => {
                let (widen, take_b) = match op {
                    BinOp::Smin => (Widen::Sign, Cond::G),
                    BinOp::Smax => (Widen::Sign, Cond::L),
                    BinOp::Umin => (Widen::Zero, Cond::A),
                    _ => (Widen::Zero, Cond::B),
                };
                self.load(RAX, a, widen);
                self.load(RCX, b, widen);
                emit!(self.a, cmpq_rm(RAX, RCX));
                self.a.cmov(take_b, RAX, RCX);
            }
            BinOp::Fadd | BinOp::Fsub | BinOp::Fmul | BinOp::Fdiv | BinOp::Fmin | BinOp::Fmax => {
                unreachable!("float operations on integers")
            }
        }
        self.store(dst, RAX);
    }
}
