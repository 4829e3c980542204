//! A cursor-style builder for [`Function`]s of the lowered form.

use super::{
    BinOp, Block, BlockId, Callee, ConvOp, FloatCC, Function, Inst, IntCC, Linkage, Signature,
    SlotId, StackSlot, Symbol, Terminator, Ty, UnOp, Var, VarDecl,
};

/// Builds one [`Function`], appending instructions to a current block.
#[derive(Debug)]
pub struct FuncBuilder {
    func: Function,
    current: BlockId,
    /// Whether the current block already has its terminator.
    sealed: Vec<bool>,
    /// Integer constants already defined in a block: `(block, type, value) -> var`.
    constants: std::collections::HashMap<(BlockId, Ty, i64), Var, rustc_hash::FxBuildHasher>,
    /// The value of each variable made by [`FuncBuilder::iconst`] (never reassigned), by
    /// variable index.
    constant_values: Vec<Option<i64>>,
    /// Whether [`FuncBuilder::source`] records anything.
    annotate: bool,
}

impl FuncBuilder {
    /// Starts a function; its parameters are variables `0..sig.params.len()`, and the entry
    /// block is current.
    pub fn new(name: impl Into<String>, linkage: Linkage, sig: Signature) -> Self {
        // Room for a typical host function's variables and blocks, so that they rarely grow.
        let mut vars = Vec::with_capacity(256);
        vars.extend(sig.params.iter().map(|&ty| VarDecl { ty, mutable: false }));
        let func = Function {
            name: name.into(),
            linkage,
            sig,
            vars,
            slots: Vec::new(),
            blocks: Vec::with_capacity(32),
            cold: false,
            sources: Vec::new(),
        };
        let mut b = FuncBuilder {
            func,
            current: BlockId(0),
            sealed: Vec::with_capacity(32),
            // Sized for a typical host function, so that its constants rarely rehash.
            constants: std::collections::HashMap::with_capacity_and_hasher(
                64,
                rustc_hash::FxBuildHasher,
            ),
            constant_values: Default::default(),
            annotate: true,
        };
        let entry = b.new_block();
        b.switch_to(entry);
        b
    }

    /// Marks the whole function as cold.
    pub fn set_cold(&mut self) {
        self.func.cold = true;
    }

    /// The `i`th parameter.
    pub fn param(&self, i: usize) -> Var {
        assert!(i < self.func.sig.params.len(), "parameter {i} out of range");
        Var(i as u32)
    }

    /// Type of a variable.
    pub fn ty(&self, v: Var) -> Ty {
        self.func.ty(v)
    }

    /// A new single-assignment variable.
    pub fn var(&mut self, ty: Ty) -> Var {
        self.func.vars.push(VarDecl { ty, mutable: false });
        Var(self.func.vars.len() as u32 - 1)
    }

    /// A new variable that may be assigned several times (with [`FuncBuilder::assign`]).
    pub fn mutable_var(&mut self, ty: Ty) -> Var {
        self.func.vars.push(VarDecl { ty, mutable: true });
        Var(self.func.vars.len() as u32 - 1)
    }

    /// A new stack slot.
    pub fn slot(&mut self, size: u32, align: u32) -> SlotId {
        self.func.slots.push(StackSlot { size, align });
        SlotId(self.func.slots.len() as u32 - 1)
    }

    /// Grows a slot to at least `size` bytes.
    pub fn grow_slot(&mut self, slot: SlotId, size: u32) {
        let s = &mut self.func.slots[slot.0 as usize];
        s.size = s.size.max(size);
    }

    /// A new (empty, unterminated) block.
    pub fn new_block(&mut self) -> BlockId {
        self.func.blocks.push(Block {
            // Most blocks get a few instructions: one allocation instead of several regrowths.
            insts: Vec::with_capacity(8),
            term: Terminator::Return(None),
            cold: false,
        });
        self.sealed.push(false);
        BlockId(self.func.blocks.len() as u32 - 1)
    }

    /// A new cold block.
    pub fn new_cold_block(&mut self) -> BlockId {
        let b = self.new_block();
        self.func.blocks[b.0 as usize].cold = true;
        b
    }

    /// Makes `block` current.
    pub fn switch_to(&mut self, block: BlockId) {
        self.current = block;
    }

    /// The current block.
    pub fn current(&self) -> BlockId {
        self.current
    }

    /// Whether the current block already ends (more instructions would be unreachable).
    pub fn is_terminated(&self) -> bool {
        self.sealed[self.current.0 as usize]
    }

    fn push(&mut self, inst: Inst) {
        assert!(
            !self.is_terminated(),
            "instruction after the terminator in {}",
            self.func.name
        );
        self.func.blocks[self.current.0 as usize].insts.push(inst);
    }

    fn terminate(&mut self, term: Terminator) {
        assert!(
            !self.is_terminated(),
            "block terminated twice in {}",
            self.func.name
        );
        self.func.blocks[self.current.0 as usize].term = term;
        self.sealed[self.current.0 as usize] = true;
    }

    /// Stops recording source annotations (compiles that produce no dump).
    pub fn set_annotate(&mut self, annotate: bool) {
        self.annotate = annotate;
    }

    /// Whether source annotations are recorded (callers may skip building descriptions).
    pub fn annotating(&self) -> bool {
        self.annotate
    }

    /// Records that what follows implements `description` (for annotated dumps).
    pub fn source(&mut self, description: impl Into<String>) {
        if !self.annotate {
            return;
        }
        let description = description.into();
        let index = match self.func.sources.iter().position(|s| *s == description) {
            Some(i) => i,
            None => {
                self.func.sources.push(description);
                self.func.sources.len() - 1
            }
        };
        if !self.is_terminated() {
            self.push(Inst::Source(index as u32));
        }
    }

    /// An integer (or pointer) constant; reused when the current block already defines it.
    pub fn iconst(&mut self, ty: Ty, value: i64) -> Var {
        let key = (self.current, ty, value);
        if let Some(&v) = self.constants.get(&key) {
            return v;
        }
        let dst = self.var(ty);
        self.push(Inst::Iconst { dst, value });
        self.constants.insert(key, dst);
        let i = dst.0 as usize;
        if self.constant_values.len() <= i {
            // Grown to the variable count at least doubling, not one variable at a time.
            let len = (i + 1).max(2 * self.constant_values.len()).max(64);
            self.constant_values.resize(len, None);
        }
        self.constant_values[i] = Some(value);
        dst
    }

    /// A float constant from `f64` bits.
    pub fn fconst(&mut self, ty: Ty, bits: u64) -> Var {
        let dst = self.var(ty);
        self.push(Inst::Fconst { dst, bits });
        dst
    }

    /// Sets an existing (mutable) float variable from `f64` bits.
    pub fn push_fconst(&mut self, dst: Var, bits: u64) {
        self.push(Inst::Fconst { dst, bits });
    }

    /// `dst = src` into an existing (mutable) variable.
    pub fn assign(&mut self, dst: Var, src: Var) {
        self.push(Inst::Copy { dst, src });
    }

    /// Sets an existing (mutable) variable to an integer constant.
    pub fn assign_iconst(&mut self, dst: Var, value: i64) {
        self.push(Inst::Iconst { dst, value });
    }

    /// `op src`.
    pub fn unary(&mut self, op: UnOp, src: Var) -> Var {
        let dst = self.var(self.ty(src));
        self.push(Inst::Unary { dst, op, src });
        dst
    }

    /// `a op b`. When the operation is an identity on one operand (`x | 0`, `x * 1`, ...) or
    /// yields a constant operand (`x & 0`, `x * 0`), that operand is the result and nothing is
    /// emitted.
    pub fn binary(&mut self, op: BinOp, a: Var, b: Var) -> Var {
        if let Some(folded) = self.fold_identity(op, a, b) {
            return folded;
        }
        if let (Some(x), Some(y)) = (self.constant(a), self.constant(b))
            && let Some(value) = super::fold::binary(op, self.ty(a), x, y)
        {
            return self.iconst(self.ty(a), value);
        }
        let dst = self.var(self.ty(a));
        self.push(Inst::Binary { dst, op, a, b });
        dst
    }

    /// The value of `v` when it is an integer constant made by [`FuncBuilder::iconst`] (or
    /// folded from constants), which is never reassigned.
    pub fn constant(&self, v: Var) -> Option<i64> {
        self.constant_values.get(v.0 as usize).copied().flatten()
    }

    /// The operand `a op b` equals, if the operation is trivial on a constant operand. An
    /// operand that may still be reassigned (a mutable variable) is never the result: its later
    /// value would show through.
    fn fold_identity(&self, op: BinOp, a: Var, b: Var) -> Option<Var> {
        let constant = |v: Var| self.constant(v);
        let keep = |v: Var| (!self.func.vars[v.0 as usize].mutable).then_some(v);
        match (op, constant(a), constant(b)) {
            (BinOp::Or | BinOp::Xor | BinOp::Iadd, Some(0), _) | (BinOp::Imul, Some(1), _) => {
                keep(b)
            }
            (
                BinOp::Or
                | BinOp::Xor
                | BinOp::Iadd
                | BinOp::Isub
                | BinOp::Shl
                | BinOp::Sshr
                | BinOp::Ushr,
                _,
                Some(0),
            )
            | (BinOp::Imul, _, Some(1)) => keep(a),
            (BinOp::And | BinOp::Imul, Some(0), _) => Some(a),
            (BinOp::And | BinOp::Imul, _, Some(0)) => Some(b),
            _ => None,
        }
    }

    /// `a op constant`.
    pub fn binary_imm(&mut self, op: BinOp, a: Var, imm: i64) -> Var {
        let b = self.iconst(self.ty(a), imm);
        self.binary(op, a, b)
    }

    /// Integer comparison, an `I8` 0/1 (a constant when both operands are).
    pub fn icmp(&mut self, cc: IntCC, a: Var, b: Var) -> Var {
        if let (Some(x), Some(y)) = (self.constant(a), self.constant(b)) {
            let holds = super::fold::icmp(cc, self.ty(a), x, y);
            return self.iconst(Ty::I8, i64::from(holds));
        }
        let dst = self.var(Ty::I8);
        self.push(Inst::Icmp { dst, cc, a, b });
        dst
    }

    /// Integer comparison with a constant.
    pub fn icmp_imm(&mut self, cc: IntCC, a: Var, imm: i64) -> Var {
        let b = self.iconst(self.ty(a), imm);
        self.icmp(cc, a, b)
    }

    /// Float comparison, an `I8` 0/1.
    pub fn fcmp(&mut self, cc: FloatCC, a: Var, b: Var) -> Var {
        let dst = self.var(Ty::I8);
        self.push(Inst::Fcmp { dst, cc, a, b });
        dst
    }

    /// `cond ? a : b`.
    pub fn select(&mut self, cond: Var, a: Var, b: Var) -> Var {
        // A constant condition picks its operand, unless that may still be reassigned (its
        // later value would show through).
        if let Some(c) = self.constant(cond) {
            let picked = if c != 0 { a } else { b };
            if !self.func.vars[picked.0 as usize].mutable {
                return picked;
            }
        }
        let dst = self.var(self.ty(a));
        self.push(Inst::Select { dst, cond, a, b });
        dst
    }

    /// Conversion to `ty`.
    pub fn convert(&mut self, op: ConvOp, src: Var, ty: Ty) -> Var {
        let dst = self.var(ty);
        self.push(Inst::Convert { dst, op, src });
        dst
    }

    /// Integer resize: sign/zero extension or truncation as needed (identity when equal).
    pub fn resize(&mut self, src: Var, ty: Ty, signed: bool) -> Var {
        let from = self.ty(src).bytes();
        let to = ty.bytes();
        if from == to {
            src
        } else if from < to {
            self.convert(if signed { ConvOp::Sext } else { ConvOp::Uext }, src, ty)
        } else {
            self.convert(ConvOp::Trunc, src, ty)
        }
    }

    /// A load of type `ty` from `addr + offset`.
    pub fn load(&mut self, ty: Ty, addr: Var, offset: usize) -> Var {
        let dst = self.var(ty);
        self.push(Inst::Load {
            dst,
            addr,
            offset: offset as i32,
        });
        dst
    }

    /// A store of `value` at `addr + offset`.
    pub fn store(&mut self, addr: Var, offset: usize, value: Var) {
        self.push(Inst::Store {
            addr,
            offset: offset as i32,
            value,
        });
    }

    /// An atomic compare-and-swap of the `I64` at `addr` (see [`Inst::AtomicCas`]); returns
    /// the value found.
    pub fn atomic_cas(&mut self, addr: Var, expected: Var, replacement: Var) -> Var {
        let dst = self.var(Ty::I64);
        self.push(Inst::AtomicCas {
            dst,
            addr,
            expected,
            replacement,
        });
        dst
    }

    /// A store of an integer constant of type `ty`.
    pub fn store_imm(&mut self, ty: Ty, addr: Var, offset: usize, value: i64) {
        let v = self.iconst(ty, value);
        self.store(addr, offset, v);
    }

    /// `&slot + offset`.
    pub fn stack_addr(&mut self, slot: SlotId, offset: u32) -> Var {
        let dst = self.var(Ty::Ptr);
        self.push(Inst::StackAddr {
            dst,
            slot,
            offset: offset as i32,
        });
        dst
    }

    /// `&symbol`.
    pub fn symbol_addr(&mut self, symbol: Symbol) -> Var {
        let dst = self.var(Ty::Ptr);
        self.push(Inst::SymbolAddr { dst, symbol });
        dst
    }

    /// `ptr + offset` (a constant byte offset).
    pub fn ptr_add_imm(&mut self, ptr: Var, offset: i64) -> Var {
        if offset == 0 {
            return ptr;
        }
        let offset = self.iconst(Ty::I64, offset);
        self.ptr_add(ptr, offset)
    }

    /// `ptr + offset` (an `I64` byte offset).
    pub fn ptr_add(&mut self, ptr: Var, offset: Var) -> Var {
        let dst = self.var(Ty::Ptr);
        self.push(Inst::PtrAdd { dst, ptr, offset });
        dst
    }

    /// A call; returns the result variable when the callee returns a value.
    pub fn call(&mut self, callee: Callee, ret: Option<Ty>, args: Vec<Var>) -> Option<Var> {
        let dst = ret.map(|ty| self.var(ty));
        self.push(Inst::Call { dst, callee, args });
        dst
    }

    /// Ends the current block with a jump.
    pub fn jump(&mut self, target: BlockId) {
        self.terminate(Terminator::Jump(target));
    }

    /// Ends the current block with a conditional branch.
    pub fn branch(&mut self, cond: Var, then_block: BlockId, else_block: BlockId) {
        self.terminate(Terminator::Branch {
            cond,
            then_block,
            else_block,
        });
    }

    /// Ends the current block with a return.
    pub fn ret(&mut self, value: Option<Var>) {
        self.terminate(Terminator::Return(value));
    }

    /// Finishes the function. Every block must be terminated.
    pub fn finish(self) -> Function {
        if let Some(i) = self.sealed.iter().position(|s| !s) {
            panic!("block{i} of {} has no terminator", self.func.name);
        }
        self.func
    }
}

#[cfg(test)]
mod tests;
