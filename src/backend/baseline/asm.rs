//! The code buffer of the baseline compiler: instructions are encoded by Cranelift's own x64
//! assembler (`cranelift-assembler-x64`); this module adds labels, branch fixups and the few
//! operand shapes the compiler uses.

use cranelift_assembler_x64::{
    Amode, AmodeOffset, AmodeOffsetPlusKnownOffset, CodeSink, DeferredTarget, KnownOffset,
    Registers, TrapCode,
};

/// Hardware register numbers.
pub mod reg {
    pub const RAX: u8 = 0;
    pub const RCX: u8 = 1;
    pub const RDX: u8 = 2;
    pub const RSP: u8 = 4;
    pub const RBP: u8 = 5;
    pub const RSI: u8 = 6;
    pub const RDI: u8 = 7;
    pub const R8: u8 = 8;
    pub const R9: u8 = 9;
    pub const R10: u8 = 10;
    pub const R11: u8 = 11;
    pub const XMM0: u8 = 0;
    pub const XMM1: u8 = 1;
}

/// Registers are plain hardware numbers.
pub struct Regs;

impl Registers for Regs {
    type ReadGpr = u8;
    type ReadWriteGpr = u8;
    type WriteGpr = u8;
    type ReadXmm = u8;
    type ReadWriteXmm = u8;
    type WriteXmm = u8;
}

/// A memory operand `[base + offset]`.
pub fn mem(base: u8, offset: i32) -> Amode<u8> {
    Amode::ImmReg {
        base,
        simm32: AmodeOffsetPlusKnownOffset {
            simm32: AmodeOffset::new(offset),
            offset: None,
        },
        trap: None,
    }
}

/// The trap code attached to divisions (the lowering guarantees they never trap).
pub fn div_trap() -> TrapCode {
    TrapCode(std::num::NonZeroU8::MIN)
}

/// Condition codes of branches, `setcc` and `cmov`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// Equal (ZF).
    E,
    /// Not equal.
    Ne,
    /// Signed less.
    L,
    /// Signed less or equal.
    Le,
    /// Signed greater.
    G,
    /// Signed greater or equal.
    Ge,
    /// Unsigned below (CF).
    B,
    /// Unsigned below or equal.
    Be,
    /// Unsigned above.
    A,
    /// Unsigned above or equal.
    Ae,
    /// Parity (unordered float compare).
    P,
    /// No parity.
    Np,
    /// Sign.
    S,
}

impl Cond {
    /// The opposite condition.
    pub fn invert(self) -> Cond {
        use Cond::*;
        match self {
            E => Ne,
            Ne => E,
            L => Ge,
            Le => G,
            G => Le,
            Ge => L,
            B => Ae,
            Be => A,
            A => Be,
            Ae => B,
            P => Np,
            Np => P,
            S => panic!("no inverse needed for S"),
        }
    }
}

/// The direction of a `mov` between a register and memory.
#[derive(Clone, Copy)]
enum MovDir {
    /// Memory to register.
    Load,
    /// Register to memory.
    Store,
}

/// A position in the code of the function being compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(u32);

/// Encodes `$name::new(args)` into the buffer.
macro_rules! emit {
    ($asm:expr, $name:ident ( $($arg:expr),* $(,)? )) => {{
        let inst = cranelift_assembler_x64::inst::$name::<$crate::backend::baseline::asm::Regs>::new(
            $($arg),*
        );
        $asm.flush();
        inst.encode(&mut $asm.buf)
    }};
    // Instructions without register operands are not generic.
    ($asm:expr, plain $name:ident ( $($arg:expr),* $(,)? )) => {{
        $asm.flush();
        cranelift_assembler_x64::inst::$name::new($($arg),*).encode(&mut $asm.buf)
    }};
}
pub(crate) use emit;

/// A result still in its register, not yet written to its variable's slot.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// The variable.
    pub var: u32,
    /// `rbp`-relative offset of its slot.
    pub offset: i32,
    /// The register holding it (its low bytes are the value; the rest is undefined).
    pub reg: u8,
    /// The variable is read exactly once, so the read that takes it from the register makes
    /// the store unnecessary.
    pub single_use: bool,
    /// The register holds the value zero-extended to 64 bits (a load), so a zero-extending
    /// read needs no extension.
    pub zero_extended: bool,
    /// The flags hold the value as this condition (a comparison's `setcc` result), so a branch
    /// on it needs no `test`.
    pub flags: Option<Cond>,
    /// The load that computes the value, not emitted yet: the register is loaded when the value
    /// is first needed, unless the one instruction that reads it reads the memory itself
    /// ([`Asm::take_deferred_load`]).
    pub load: Option<DeferredLoad>,
}

/// A load held back with its result (see [`Pending::load`]): `[base + disp]`, zero-extended
/// from `bytes` bytes.
#[derive(Clone, Copy, Debug)]
pub struct DeferredLoad {
    /// The address register (nothing changes it while the load is held back: any instruction
    /// emitted first emits the load).
    pub base: u8,
    /// The displacement.
    pub disp: i32,
    /// The width: 1, 2, 4 or 8 bytes.
    pub bytes: u8,
}

/// The bytes of the code. The assembler's own `CodeSink` for `Vec<u8>` lives in its crate and
/// is not inlined into the encoders; this one is.
#[derive(Default)]
pub struct Bytes(pub Vec<u8>);

impl CodeSink for Bytes {
    #[inline]
    fn put1(&mut self, v: u8) {
        self.0.push(v);
    }

    #[inline]
    fn put2(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    #[inline]
    fn put4(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    #[inline]
    fn put8(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    #[inline]
    fn add_trap(&mut self, _: TrapCode) {}

    #[inline]
    fn use_target(&mut self, _: DeferredTarget) {}

    fn known_offset(&self, offset: KnownOffset) -> i32 {
        unreachable!("the baseline compiler uses no known offsets (asked for {offset})")
    }
}

/// The machine code of a module being compiled, one function after another.
///
/// The last result written may be held back ([`Asm::defer_store`]): any instruction emitted
/// next writes it first (so labels, branches and calls always see every slot up to date),
/// unless the instruction that reads it takes it from its register ([`Asm::take`]).
#[derive(Default)]
pub struct Asm {
    /// Encoded bytes.
    pub buf: Bytes,
    /// The result held back, if any.
    pending: Option<Pending>,
    /// Bound position of each label of the current function.
    labels: Vec<Option<u32>>,
    /// `(position of a rel32, label)` to patch when the function ends.
    fixups: Vec<(u32, Label)>,
}

impl Asm {
    /// Current position.
    pub fn pos(&self) -> u32 {
        self.buf.0.len() as u32
    }

    /// A fresh label of the current function.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() as u32 - 1)
    }

    /// `n` fresh labels of the current function (one allocation, with room for as many
    /// branches to them).
    pub fn labels(&mut self, n: usize) -> Vec<Label> {
        let first = self.labels.len();
        self.labels.resize(first + n, None);
        self.fixups.reserve(n);
        (first..first + n).map(|i| Label(i as u32)).collect()
    }

    /// Writes the held-back result to its slot (emitting its load first, if held back too).
    #[inline]
    pub fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            if let Some(l) = p.load {
                self.emit_deferred_load(p.reg, l);
            }
            self.encode_mov64(MovDir::Store, p.reg, reg::RBP, p.offset);
        }
    }

    /// Emits a held-back load into `reg` (without flushing: it is what a flush or a take emits
    /// first). Out of line: the callers' common paths stay small.
    #[inline(never)]
    fn emit_deferred_load(&mut self, reg: u8, l: DeferredLoad) {
        let m = mem(l.base, l.disp);
        match l.bytes {
            1 => {
                cranelift_assembler_x64::inst::movzbq_rm::<Regs>::new(reg, m).encode(&mut self.buf)
            }
            2 => {
                cranelift_assembler_x64::inst::movzwq_rm::<Regs>::new(reg, m).encode(&mut self.buf)
            }
            4 => cranelift_assembler_x64::inst::movl_rm::<Regs>::new(reg, m).encode(&mut self.buf),
            _ => self.encode_mov64(MovDir::Load, reg, l.base, l.disp),
        }
    }

    /// `mov r, [base + disp]` (64 bits).
    pub fn load64(&mut self, r: u8, base: u8, disp: i32) {
        self.flush();
        self.encode_mov64(MovDir::Load, r, base, disp);
    }

    /// Encodes a 64-bit `mov` between `r` and `[base + disp]` here rather than through the
    /// assembler: slot loads and stores are most of the code, and the assembler's general
    /// memory-operand path costs several times more per instruction. The bytes are exactly
    /// those of the assembler's `movq_rm` / `movq_mr` (`REX.W 8B /r`, `REX.W 89 /r`, the
    /// shortest displacement; a unit test compares them). `base` is not `rsp` or `r12`, whose
    /// encodings need a SIB byte.
    fn encode_mov64(&mut self, dir: MovDir, r: u8, base: u8, disp: i32) {
        debug_assert!(base & 7 != reg::RSP, "rsp/r12 bases need a SIB byte");
        let rex = 0x48 | ((r >> 3) & 1) << 2 | ((base >> 3) & 1);
        let opcode = match dir {
            MovDir::Load => 0x8b,
            MovDir::Store => 0x89,
        };
        // rbp and r13 always take a displacement (mod 00 with them means rip-relative).
        let (mode, disp_len) = if disp == 0 && base & 7 != reg::RBP {
            (0b00, 0)
        } else if i8::try_from(disp).is_ok() {
            (0b01, 1)
        } else {
            (0b10, 4)
        };
        let modrm = mode << 6 | (r & 7) << 3 | (base & 7);
        let d = disp.to_le_bytes();
        // A fixed-size copy (no `memcpy` call), then the unused displacement bytes dropped.
        let end = self.buf.0.len() + 3 + disp_len;
        self.buf
            .0
            .extend_from_slice(&[rex, opcode, modrm, d[0], d[1], d[2], d[3]]);
        self.buf.0.truncate(end);
    }

    /// Holds back the store of a result (see [`Asm`]); writes the previous one first.
    pub fn defer_store(&mut self, p: Pending) {
        self.flush();
        self.pending = Some(p);
    }

    /// The register holding variable `var` if it is the held-back result. The store is dropped
    /// when this is the variable's only read, else written now.
    pub fn take(&mut self, var: u32) -> Option<u8> {
        self.take_extended(var).map(|(r, _)| r)
    }

    /// [`Asm::take`], and whether the register holds the value zero-extended to 64 bits.
    pub fn take_extended(&mut self, var: u32) -> Option<(u8, bool)> {
        self.take_pending(var).map(|p| (p.reg, p.zero_extended))
    }

    /// The held-back result if it is variable `var`'s, taken as [`Asm::take`] does.
    #[inline]
    pub fn take_pending(&mut self, var: u32) -> Option<Pending> {
        let mut p = self.pending.filter(|p| p.var == var)?;
        if p.single_use {
            self.pending = None;
            if let Some(l) = p.load {
                self.emit_deferred_load(p.reg, l);
            }
        } else {
            self.flush();
        }
        p.load = None;
        Some(p)
    }

    /// The held-back load of variable `var`, when it is the held-back result, read only once
    /// and not emitted yet: taken (nothing is emitted), for the instruction that reads its
    /// memory operand directly instead.
    pub fn take_deferred_load(&mut self, var: u32) -> Option<DeferredLoad> {
        let load = self
            .pending
            .filter(|p| p.var == var && p.single_use)?
            .load?;
        self.pending = None;
        Some(load)
    }

    /// [`Asm::take_deferred_load`] without taking it.
    pub fn deferred_load(&self, var: u32) -> Option<DeferredLoad> {
        self.pending.filter(|p| p.var == var && p.single_use)?.load
    }

    /// Whether variable `var` is the held-back result.
    pub fn holds(&self, var: u32) -> bool {
        self.pending.is_some_and(|p| p.var == var)
    }

    /// Binds `l` here.
    pub fn bind(&mut self, l: Label) {
        self.flush();
        self.labels[l.0 as usize] = Some(self.pos());
    }

    /// Pads with `nop`s to a multiple of `align`.
    pub fn align(&mut self, align: usize) {
        self.flush();
        while !self.buf.0.len().is_multiple_of(align) {
            self.buf.0.push(0x90);
        }
    }

    fn fixup_here(&mut self, l: Label) {
        let at = self.pos() - 4;
        self.fixups.push((at, l));
    }

    /// `jmp l`.
    pub fn jmp(&mut self, l: Label) {
        emit!(self, plain jmp_d32(0));
        self.fixup_here(l);
    }

    /// `j<cc> l`.
    pub fn jcc(&mut self, cc: Cond, l: Label) {
        match cc {
            Cond::E => emit!(self, plain je_d32(0)),
            Cond::Ne => emit!(self, plain jne_d32(0)),
            Cond::L => emit!(self, plain jl_d32(0)),
            Cond::Le => emit!(self, plain jle_d32(0)),
            Cond::G => emit!(self, plain jg_d32(0)),
            Cond::Ge => emit!(self, plain jge_d32(0)),
            Cond::B => emit!(self, plain jb_d32(0)),
            Cond::Be => emit!(self, plain jbe_d32(0)),
            Cond::A => emit!(self, plain ja_d32(0)),
            Cond::Ae => emit!(self, plain jae_d32(0)),
            Cond::P => emit!(self, plain jp_d32(0)),
            Cond::Np => emit!(self, plain jnp_d32(0)),
            Cond::S => emit!(self, plain js_d32(0)),
        }
        self.fixup_here(l);
    }

    /// `set<cc> r8`.
    pub fn setcc(&mut self, cc: Cond, r: u8) {
        match cc {
            Cond::E => emit!(self, sete_m(r)),
            Cond::Ne => emit!(self, setne_m(r)),
            Cond::L => emit!(self, setl_m(r)),
            Cond::Le => emit!(self, setle_m(r)),
            Cond::G => emit!(self, setg_m(r)),
            Cond::Ge => emit!(self, setge_m(r)),
            Cond::B => emit!(self, setb_m(r)),
            Cond::Be => emit!(self, setbe_m(r)),
            Cond::A => emit!(self, seta_m(r)),
            Cond::Ae => emit!(self, setae_m(r)),
            Cond::P => emit!(self, setp_m(r)),
            Cond::Np => emit!(self, setnp_m(r)),
            Cond::S => emit!(self, sets_m(r)),
        }
    }

    /// `cmov<cc> dst, src` (64-bit).
    pub fn cmov(&mut self, cc: Cond, dst: u8, src: u8) {
        match cc {
            Cond::E => emit!(self, cmoveq_rm(dst, src)),
            Cond::Ne => emit!(self, cmovneq_rm(dst, src)),
            Cond::L => emit!(self, cmovlq_rm(dst, src)),
            Cond::Le => emit!(self, cmovleq_rm(dst, src)),
            Cond::G => emit!(self, cmovgq_rm(dst, src)),
            Cond::Ge => emit!(self, cmovgeq_rm(dst, src)),
            Cond::B => emit!(self, cmovbq_rm(dst, src)),
            Cond::Be => emit!(self, cmovbeq_rm(dst, src)),
            Cond::A => emit!(self, cmovaq_rm(dst, src)),
            Cond::Ae => emit!(self, cmovaeq_rm(dst, src)),
            Cond::P => emit!(self, cmovpq_rm(dst, src)),
            Cond::Np => emit!(self, cmovnpq_rm(dst, src)),
            Cond::S => emit!(self, cmovsq_rm(dst, src)),
        }
    }

    /// `mov r, imm` in the shortest form (never touches the flags).
    pub fn mov_imm(&mut self, r: u8, value: i64) {
        if let Ok(v) = u32::try_from(value) {
            emit!(self, movl_oi(r, v));
        } else if let Ok(v) = i32::try_from(value) {
            emit!(self, movq_mi_sxl(r, v));
        } else {
            emit!(self, movabsq_oi(r, value as u64));
        }
    }

    /// `movabs r, imm64` (always 10 bytes); returns the position of the immediate, for
    /// relocations.
    pub fn mov_abs(&mut self, r: u8, value: u64) -> u32 {
        emit!(self, movabsq_oi(r, value));
        self.pos() - 8
    }

    /// Patches the branches of the current function and forgets its labels. Every label that
    /// a branch refers to must be bound.
    pub fn finish_function(&mut self) {
        self.flush();
        for (at, l) in self.fixups.drain(..) {
            let target = self.labels[l.0 as usize].expect("every branch target is bound");
            let rel = target as i64 - (at as i64 + 4);
            let rel = i32::try_from(rel).expect("functions are below 2 GiB");
            self.buf.0[at as usize..at as usize + 4].copy_from_slice(&rel.to_le_bytes());
        }
        self.labels.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-encoded 64-bit slot moves are byte for byte the assembler's, for every register,
    /// every base it accepts and displacements of every size class.
    #[test]
    fn mov64_matches_the_assembler() {
        let disps = [
            0,
            1,
            -1,
            8,
            -8,
            127,
            -128,
            128,
            -129,
            4096,
            -4096,
            i32::MAX,
            i32::MIN,
        ];
        for r in 0..16u8 {
            for base in (0..16u8).filter(|b| b & 7 != reg::RSP) {
                for disp in disps {
                    let mut ours = Asm::default();
                    ours.encode_mov64(MovDir::Load, r, base, disp);
                    let mut theirs = Bytes::default();
                    cranelift_assembler_x64::inst::movq_rm::<Regs>::new(r, mem(base, disp))
                        .encode(&mut theirs);
                    assert_eq!(ours.buf.0, theirs.0, "mov r{r}, [r{base} + {disp}]");

                    let mut ours = Asm::default();
                    ours.encode_mov64(MovDir::Store, r, base, disp);
                    let mut theirs = Bytes::default();
                    cranelift_assembler_x64::inst::movq_mr::<Regs>::new(mem(base, disp), r)
                        .encode(&mut theirs);
                    assert_eq!(ours.buf.0, theirs.0, "mov [r{base} + {disp}], r{r}");
                }
            }
        }
    }
}
