//! Stack frame of a baseline-compiled function, worked out in one pass over its instructions.
//!
//! ```text
//!   [rbp + 16 + 8k]   k-th stack-passed parameter (its variable's home)
//!   [rbp + 8]         return address
//!   [rbp]             caller's rbp
//!   [rbp - 8(i+1)]    variable i (8 bytes each, low bytes significant)
//!   ...               stack slots of the function
//!   [rsp + 8k]        k-th stack-passed argument of calls made
//! ```
//!
//! Each variable's slot holds its value in its low bytes; the bytes above the variable's width
//! are undefined, so every read extends from the width. Variables defined once by a constant
//! get no code at all: their uses see the constant as an immediate.

use crate::lir::{BinOp, Function, Inst, Ty, Var};

use super::abi::{FLOAT_ARG_REGS, INT_ARG_REGS};

/// Where variables and slots live, and what is known about variables before code is emitted.
pub struct Frame {
    /// Each variable's slot, uses and constant (one vector: one allocation per function).
    pub vars: Vec<VarInfo>,
    /// `rbp`-relative offset of each stack slot.
    pub slot_offset: Vec<i32>,
    /// Bytes reserved below `rbp` (a multiple of 16, so calls see an aligned stack).
    pub size: u32,
}

/// What the frame knows about one variable.
#[derive(Clone, Copy, Debug, Default)]
pub struct VarInfo {
    /// `rbp`-relative offset of the variable's slot (0: none, for constants).
    pub offset: i32,
    /// How many times the variable is read (terminators included).
    pub uses: u32,
    /// The value of [`VarInfo::konst`] when `has_konst` (two fields rather than an `Option`,
    /// which would make the record a third larger).
    konst_value: i64,
    /// Whether the variable is a constant.
    has_konst: bool,
    /// A single-assignment variable known to be 0 or 1: a comparison, the constant 0 or 1, or
    /// `and`/`or`/`xor` of such variables defined before it in block order.
    pub boolean: bool,
    /// For a single-assignment comparison or `and`/`or`/`xor`, the index of the block defining
    /// it plus one (0: another kind of variable), for the branches that compute them.
    pub def_block: u32,
}

impl VarInfo {
    /// The constant of a single-assignment variable defined by `iconst` (truncated to its
    /// type's width) or `fconst` (its bits).
    #[inline]
    pub fn konst(&self) -> Option<i64> {
        self.has_konst.then_some(self.konst_value)
    }

    fn set_konst(&mut self, value: i64) {
        self.konst_value = value;
        self.has_konst = true;
    }
}

/// A stack slot the frame cannot hold.
#[derive(Debug)]
pub struct FrameError(pub String);

/// `value` truncated to the width of `ty` (zero-extended).
pub fn truncate(value: i64, ty: Ty) -> i64 {
    match ty.bytes() {
        8 => value,
        n => value & ((1i64 << (n * 8)) - 1),
    }
}

/// The bits of a float constant of type `ty` given as `f64` bits.
pub fn float_bits(bits: u64, ty: Ty) -> i64 {
    match ty {
        Ty::F32 => i64::from((f64::from_bits(bits) as f32).to_bits()),
        _ => bits as i64,
    }
}

/// Stack words the arguments of a call with these parameter types take.
pub fn stack_words(params: impl Iterator<Item = Ty>) -> u32 {
    let (mut ints, mut floats, mut stack) = (0, 0, 0);
    for ty in params {
        if ty.is_float() {
            floats += 1;
            if floats > FLOAT_ARG_REGS.len() {
                stack += 1;
            }
        } else {
            ints += 1;
            if ints > INT_ARG_REGS.len() {
                stack += 1;
            }
        }
    }
    stack
}

impl Frame {
    /// Lays out the frame of `func`, whose calls have the signatures `callee_params` gives.
    pub fn new(
        func: &Function,
        mut call_stack_words: impl FnMut(&Inst) -> u32,
    ) -> Result<Frame, FrameError> {
        let n = func.vars.len();
        let mut vars = vec![VarInfo::default(); n];
        let mut outgoing = 0u32;
        for (block_index, block) in func.blocks.iter().enumerate() {
            for inst in &block.insts {
                match inst {
                    Inst::Iconst { dst, value } => {
                        let d = func.vars[dst.0 as usize];
                        if !d.mutable && !d.ty.is_float() {
                            let v = &mut vars[dst.0 as usize];
                            v.set_konst(truncate(*value, d.ty));
                            v.boolean = matches!(value, 0 | 1);
                        }
                    }
                    Inst::Icmp { dst, .. } | Inst::Fcmp { dst, .. } => {
                        let v = &mut vars[dst.0 as usize];
                        v.boolean = !func.vars[dst.0 as usize].mutable;
                        v.def_block = block_index as u32 + 1;
                    }
                    Inst::Binary {
                        dst,
                        op: BinOp::And | BinOp::Or | BinOp::Xor,
                        a,
                        b,
                    } => {
                        let boolean = !func.vars[dst.0 as usize].mutable
                            && vars[a.0 as usize].boolean
                            && vars[b.0 as usize].boolean;
                        let v = &mut vars[dst.0 as usize];
                        v.boolean = boolean;
                        v.def_block = block_index as u32 + 1;
                    }
                    Inst::Fconst { dst, bits } => {
                        let d = func.vars[dst.0 as usize];
                        if !d.mutable {
                            vars[dst.0 as usize].set_konst(float_bits(*bits, d.ty));
                        }
                    }
                    Inst::Call { .. } => outgoing = outgoing.max(call_stack_words(inst)),
                    _ => {}
                }
                inst.for_each_use(&mut |v: Var| vars[v.0 as usize].uses += 1);
            }
            if let Some(v) = block.term.used() {
                vars[v.0 as usize].uses += 1;
            }
        }

        // Parameters passed on the stack live where the caller put them.
        let (mut ints, mut floats, mut stack) = (0usize, 0usize, 0i32);
        for (i, &ty) in func.sig.params.iter().enumerate() {
            let in_reg = if ty.is_float() {
                floats += 1;
                floats <= FLOAT_ARG_REGS.len()
            } else {
                ints += 1;
                ints <= INT_ARG_REGS.len()
            };
            if !in_reg {
                vars[i].offset = 16 + 8 * stack;
                stack += 1;
            }
        }
        let mut below: u32 = 0;
        for v in &mut vars {
            if v.offset == 0 && !v.has_konst {
                below += 8;
                v.offset = -(below as i32);
            }
        }
        let mut slot_offset = Vec::with_capacity(func.slots.len());
        for (i, s) in func.slots.iter().enumerate() {
            let align = s.align.max(1);
            if align > 16 || !align.is_power_of_two() {
                return Err(FrameError(format!(
                    "`{}`: stack slot {i} asks for alignment {align} (the baseline tier \
                     aligns slots to at most 16 bytes)",
                    func.name
                )));
            }
            below = (below + s.size).next_multiple_of(align);
            slot_offset.push(-(below as i32));
        }
        let size = (below + 8 * outgoing).next_multiple_of(16);
        if size > i32::MAX as u32 / 2 {
            return Err(FrameError(format!(
                "`{}`: a frame of {size} bytes is too large",
                func.name
            )));
        }
        Ok(Frame {
            vars,
            slot_offset,
            size,
        })
    }
}
