//! The verifier of the lowered form: the invariants every backend relies on, checked once.
//!
//! [`verify`] checks, for every function of a module:
//! - every variable, block, slot, function, import, data object and source index exists;
//! - parameters are the first variables, with the signature's types;
//! - the operand and result types of every instruction (the rules documented on [`Inst`],
//!   [`ConvOp`] and [`BinOp`]; `sext`/`uext` only widen an integer, `trunc` only narrows one);
//! - calls: the argument count and types and the result type of the callee's signature;
//! - terminators: an `i8` branch condition, a returned value that matches the signature;
//! - definitions: a variable is assigned before every use along every path from the entry,
//!   and a variable that is not [`mutable`](super::VarDecl::mutable) is assigned by exactly
//!   one instruction (which therefore dominates its uses).
//!
//! The lowered form has no block parameters: values cross blocks through mutable variables.
//! Blocks unreachable from the entry are checked for types only (backends drop them).
//!
//! [`crate::lower::lower`] runs the verifier on its output in debug builds; the backends do
//! not check again.

use std::fmt;

use super::cfg::{predecessors, reverse_postorder};
use super::{
    BinOp, BlockId, Callee, ConvOp, Function, Inst, Module, Signature, Symbol, Terminator, Ty,
    UnOp, Var,
};

/// A broken invariant of the lowered form, located at a function, block and instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LirError {
    /// The function's symbol name.
    pub function: String,
    /// The block, when the error is inside one.
    pub block: Option<BlockId>,
    /// The instruction's index in the block (`None`: the terminator or the block itself).
    pub inst: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lowered function `{}`", self.function)?;
        if let Some(b) = self.block {
            write!(f, ", block{}", b.0)?;
            match self.inst {
                Some(i) => write!(f, ", instruction {i}")?,
                None => write!(f, ", terminator")?,
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LirError {}

/// Checks every function of `module` (see the [module documentation](self)).
pub fn verify(module: &Module) -> Result<(), LirError> {
    for func in &module.functions {
        FuncVerifier::new(module, func).run()?;
    }
    Ok(())
}

/// Runs [`verify`] in debug builds (every test) and panics on a broken invariant: the lowering
/// produced it, so it is a bug in safecall, not in the caller's input. Release builds trust
/// the lowering and skip the check.
pub(crate) fn debug_check(module: &Module) {
    if cfg!(debug_assertions)
        && let Err(e) = verify(module)
    {
        panic!("internal error: the lowering produced an invalid lowered form: {e}");
    }
}

/// A growable bit set over variables.
#[derive(Clone, PartialEq, Eq)]
struct VarSet(Vec<u64>);

impl VarSet {
    fn empty(n: usize) -> Self {
        VarSet(vec![0; n.div_ceil(64)])
    }

    fn full(n: usize) -> Self {
        VarSet(vec![!0; n.div_ceil(64)])
    }

    fn insert(&mut self, v: Var) {
        self.0[v.0 as usize / 64] |= 1 << (v.0 % 64);
    }

    fn contains(&self, v: Var) -> bool {
        self.0[v.0 as usize / 64] & (1 << (v.0 % 64)) != 0
    }

    fn intersect(&mut self, other: &VarSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
}

struct FuncVerifier<'a> {
    module: &'a Module,
    func: &'a Function,
    block: Option<BlockId>,
    inst: Option<usize>,
}

impl<'a> FuncVerifier<'a> {
    fn new(module: &'a Module, func: &'a Function) -> Self {
        FuncVerifier {
            module,
            func,
            block: None,
            inst: None,
        }
    }

    fn error(&self, message: impl Into<String>) -> LirError {
        LirError {
            function: self.func.name.clone(),
            block: self.block,
            inst: self.inst,
            message: message.into(),
        }
    }

    fn run(mut self) -> Result<(), LirError> {
        self.check_header()?;
        for (i, block) in self.func.blocks.iter().enumerate() {
            self.block = Some(BlockId(i as u32));
            for (j, inst) in block.insts.iter().enumerate() {
                self.inst = Some(j);
                self.check_inst(inst)?;
            }
            self.inst = None;
            self.check_terminator(&block.term)?;
        }
        self.block = None;
        self.check_single_assignments()?;
        self.check_defined_before_use()
    }

    fn check_header(&self) -> Result<(), LirError> {
        let func = self.func;
        if func.blocks.is_empty() {
            return Err(self.error("no blocks"));
        }
        let sig = &func.sig;
        if !sig.param_ext.is_empty() && sig.param_ext.len() != sig.params.len() {
            return Err(self.error(format!(
                "{} parameter extensions for {} parameters",
                sig.param_ext.len(),
                sig.params.len()
            )));
        }
        for (i, &ty) in sig.params.iter().enumerate() {
            match func.vars.get(i) {
                Some(decl) if decl.ty == ty => {}
                Some(decl) => {
                    return Err(self.error(format!(
                        "parameter v{i} is declared {} but the signature says {ty}",
                        decl.ty
                    )));
                }
                None => return Err(self.error(format!("parameter v{i} is not declared"))),
            }
        }
        for (i, slot) in func.slots.iter().enumerate() {
            if !slot.align.is_power_of_two() {
                return Err(self.error(format!(
                    "stack slot {i} has alignment {}, not a power of two",
                    slot.align
                )));
            }
        }
        Ok(())
    }

    /// The type of `v`, or an error if it is not declared.
    fn ty(&self, v: Var) -> Result<Ty, LirError> {
        self.func
            .vars
            .get(v.0 as usize)
            .map(|d| d.ty)
            .ok_or_else(|| self.error(format!("v{} is not declared", v.0)))
    }

    fn expect(&self, v: Var, what: &str, ok: impl Fn(Ty) -> bool) -> Result<Ty, LirError> {
        let ty = self.ty(v)?;
        if ok(ty) {
            Ok(ty)
        } else {
            Err(self.error(format!("v{} is {ty}, expected {what}", v.0)))
        }
    }

    fn same(&self, vars: &[Var]) -> Result<Ty, LirError> {
        let first = self.ty(vars[0])?;
        for &v in &vars[1..] {
            let ty = self.ty(v)?;
            if ty != first {
                let list: Vec<String> = vars.iter().map(|v| format!("v{}", v.0)).collect();
                return Err(self.error(format!(
                    "{} must have one type, but v{} is {first} and v{} is {ty}",
                    list.join(", "),
                    vars[0].0,
                    v.0
                )));
            }
        }
        Ok(first)
    }

    fn check_inst(&self, inst: &Inst) -> Result<(), LirError> {
        match *inst {
            Inst::Iconst { dst, .. } => {
                self.expect(dst, "an integer or pointer", |t| t.is_int() || t == Ty::Ptr)?;
            }
            Inst::Fconst { dst, .. } => {
                self.expect(dst, "a float", Ty::is_float)?;
            }
            Inst::Copy { dst, src } => {
                self.same(&[dst, src])?;
            }
            Inst::Unary { dst, op, src } => {
                let ty = self.same(&[dst, src])?;
                let ok = match op {
                    UnOp::Ineg | UnOp::Bnot => ty.is_int(),
                    UnOp::Fneg => ty.is_float(),
                };
                if !ok {
                    return Err(self.error(format!("{op:?} of a {ty}")));
                }
            }
            Inst::Binary { dst, op, a, b } => {
                let ty = self.same(&[dst, a, b])?;
                if binop_is_float(op) != ty.is_float() || ty == Ty::Ptr {
                    return Err(self.error(format!("{op:?} of {ty} operands")));
                }
            }
            Inst::Icmp { dst, a, b, .. } => {
                self.expect(dst, "i8", |t| t == Ty::I8)?;
                let ty = self.same(&[a, b])?;
                if ty.is_float() {
                    return Err(self.error(format!("icmp of {ty} operands")));
                }
            }
            Inst::Fcmp { dst, a, b, .. } => {
                self.expect(dst, "i8", |t| t == Ty::I8)?;
                let ty = self.same(&[a, b])?;
                if !ty.is_float() {
                    return Err(self.error(format!("fcmp of {ty} operands")));
                }
            }
            Inst::Select { dst, cond, a, b } => {
                self.expect(cond, "an i8 condition", |t| t == Ty::I8)?;
                self.same(&[dst, a, b])?;
            }
            Inst::Convert { dst, op, src } => {
                self.check_convert(op, self.ty(src)?, self.ty(dst)?)?
            }
            Inst::Load { dst, addr, .. } => {
                self.ty(dst)?;
                self.expect(addr, "a pointer", |t| t == Ty::Ptr)?;
            }
            Inst::Store { addr, value, .. } => {
                self.ty(value)?;
                self.expect(addr, "a pointer", |t| t == Ty::Ptr)?;
            }
            Inst::AtomicCas {
                dst,
                addr,
                expected,
                replacement,
            } => {
                self.expect(addr, "a pointer", |t| t == Ty::Ptr)?;
                for v in [dst, expected, replacement] {
                    self.expect(v, "an i64", |t| t == Ty::I64)?;
                }
            }
            Inst::PtrAdd { dst, ptr, offset } => {
                self.expect(dst, "a pointer", |t| t == Ty::Ptr)?;
                self.expect(ptr, "a pointer", |t| t == Ty::Ptr)?;
                self.expect(offset, "an i64 offset", |t| t == Ty::I64)?;
            }
            Inst::StackAddr { dst, slot, offset } => {
                self.expect(dst, "a pointer", |t| t == Ty::Ptr)?;
                let Some(s) = self.func.slots.get(slot.0 as usize) else {
                    return Err(self.error(format!("stack slot {} does not exist", slot.0)));
                };
                if offset < 0 || offset as u32 > s.size {
                    return Err(self.error(format!(
                        "offset {offset} is outside stack slot {} of {} bytes",
                        slot.0, s.size
                    )));
                }
            }
            Inst::SymbolAddr { dst, symbol } => {
                self.expect(dst, "a pointer", |t| t == Ty::Ptr)?;
                self.check_symbol(symbol)?;
            }
            Inst::Call {
                dst,
                ref callee,
                ref args,
            } => self.check_call(dst, callee, args)?,
            Inst::Source(i) => {
                if i as usize >= self.func.sources.len() {
                    return Err(self.error(format!("source item {i} does not exist")));
                }
            }
        }
        Ok(())
    }

    fn check_convert(&self, op: ConvOp, from: Ty, to: Ty) -> Result<(), LirError> {
        let ok = match op {
            ConvOp::Sext | ConvOp::Uext => {
                from.is_int() && to.is_int() && from.bytes() < to.bytes()
            }
            ConvOp::Trunc => from.is_int() && to.is_int() && from.bytes() > to.bytes(),
            ConvOp::FtoSsat | ConvOp::FtoUsat => from.is_float() && to.is_int(),
            ConvOp::StoF | ConvOp::UtoF => from.is_int() && to.is_float(),
            ConvOp::Fpromote => from == Ty::F32 && to == Ty::F64,
            ConvOp::Fdemote => from == Ty::F64 && to == Ty::F32,
            ConvOp::PtrToInt => from == Ty::Ptr && to == Ty::I64,
            ConvOp::IntToPtr => from == Ty::I64 && to == Ty::Ptr,
            ConvOp::Bitcast => {
                from != to
                    && from.bytes() == to.bytes()
                    && from != Ty::Ptr
                    && to != Ty::Ptr
                    && (from.is_float() || to.is_float())
            }
        };
        if ok {
            Ok(())
        } else {
            Err(self.error(format!("{op:?} from {from} to {to}")))
        }
    }

    fn check_symbol(&self, symbol: Symbol) -> Result<(), LirError> {
        let exists = match symbol {
            Symbol::Data(id) => (id.0 as usize) < self.module.data.len(),
            Symbol::Func(id) => (id.0 as usize) < self.module.functions.len(),
        };
        if exists {
            Ok(())
        } else {
            Err(self.error(format!("{symbol:?} does not exist")))
        }
    }

    fn callee_sig<'s>(&'s self, callee: &'s Callee) -> Result<&'s Signature, LirError> {
        match callee {
            Callee::Import(id) => self
                .module
                .imports
                .get(id.0 as usize)
                .map(|i| &i.sig)
                .ok_or_else(|| self.error(format!("import {} does not exist", id.0))),
            Callee::Func(id) => self
                .module
                .functions
                .get(id.0 as usize)
                .map(|f| &f.sig)
                .ok_or_else(|| self.error(format!("function {} does not exist", id.0))),
            Callee::Indirect(target, sig) => {
                self.expect(*target, "a function pointer", |t| t == Ty::Ptr)?;
                Ok(sig)
            }
        }
    }

    fn check_call(&self, dst: Option<Var>, callee: &Callee, args: &[Var]) -> Result<(), LirError> {
        let sig = self.callee_sig(callee)?;
        if args.len() != sig.params.len() {
            return Err(self.error(format!(
                "{} arguments for a callee of {} parameters",
                args.len(),
                sig.params.len()
            )));
        }
        for (i, (&arg, &param)) in args.iter().zip(&sig.params).enumerate() {
            let ty = self.ty(arg)?;
            if ty != param {
                return Err(self.error(format!(
                    "argument {i} (v{}) is {ty}, the callee takes {param}",
                    arg.0
                )));
            }
        }
        match (dst, sig.ret) {
            (Some(d), Some(ret)) => {
                let ty = self.ty(d)?;
                if ty != ret {
                    return Err(self.error(format!(
                        "the result v{} is {ty}, the callee returns {ret}",
                        d.0
                    )));
                }
            }
            (Some(d), None) => {
                return Err(self.error(format!(
                    "the result v{} of a callee that returns nothing",
                    d.0
                )));
            }
            (None, _) => {}
        }
        Ok(())
    }

    fn check_terminator(&self, term: &Terminator) -> Result<(), LirError> {
        for succ in term.successors() {
            if succ.0 as usize >= self.func.blocks.len() {
                return Err(self.error(format!("block{} does not exist", succ.0)));
            }
        }
        match (term, self.func.sig.ret) {
            (&Terminator::Branch { cond, .. }, _) => {
                self.expect(cond, "an i8 condition", |t| t == Ty::I8)?;
            }
            (&Terminator::Return(Some(v)), Some(ret)) => {
                self.expect(v, &format!("{ret} (the return type)"), |t| t == ret)?;
            }
            (Terminator::Return(None), None) | (Terminator::Jump(_), _) => {}
            (&Terminator::Return(Some(v)), None) => {
                return Err(self.error(format!("returns v{} from a function without result", v.0)));
            }
            (Terminator::Return(None), Some(ret)) => {
                return Err(self.error(format!("returns nothing from a function returning {ret}")));
            }
        }
        Ok(())
    }

    /// A variable that is not mutable is assigned exactly once (parameters by the call).
    fn check_single_assignments(&self) -> Result<(), LirError> {
        let mut count = vec![0u32; self.func.vars.len()];
        for c in count.iter_mut().take(self.func.sig.params.len()) {
            *c = 1;
        }
        for block in &self.func.blocks {
            for inst in &block.insts {
                if let Some(d) = inst.dst() {
                    count[d.0 as usize] += 1;
                }
            }
        }
        for (i, (decl, &n)) in self.func.vars.iter().zip(&count).enumerate() {
            if !decl.mutable && n > 1 {
                return Err(self.error(format!("v{i} is not mutable but is assigned {n} times")));
            }
        }
        Ok(())
    }

    /// Every use is preceded by an assignment on every path from the entry (a forward
    /// "definitely assigned" data flow over the reachable blocks).
    fn check_defined_before_use(&mut self) -> Result<(), LirError> {
        let func = self.func;
        let n = func.vars.len();
        let order = reverse_postorder(func);
        let preds = predecessors(func);
        let mut reachable = vec![false; func.blocks.len()];
        for b in &order {
            reachable[b.0 as usize] = true;
        }
        // `out[b]`: assigned at the end of block b. Start from "everything" and shrink.
        let mut out = vec![VarSet::full(n); func.blocks.len()];
        let entry_in = {
            let mut s = VarSet::empty(n);
            for i in 0..func.sig.params.len() {
                s.insert(Var(i as u32));
            }
            s
        };
        let block_in = |b: BlockId, out: &[VarSet]| -> VarSet {
            let mut set = if b.0 == 0 {
                entry_in.clone()
            } else {
                VarSet::full(n)
            };
            for p in &preds[b.0 as usize] {
                if reachable[p.0 as usize] {
                    set.intersect(&out[p.0 as usize]);
                }
            }
            set
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &order {
                let mut set = block_in(b, &out);
                for inst in &func.blocks[b.0 as usize].insts {
                    if let Some(d) = inst.dst() {
                        set.insert(d);
                    }
                }
                if set != out[b.0 as usize] {
                    out[b.0 as usize] = set;
                    changed = true;
                }
            }
        }
        for &b in &order {
            self.block = Some(b);
            let mut set = block_in(b, &out);
            for (j, inst) in func.blocks[b.0 as usize].insts.iter().enumerate() {
                self.inst = Some(j);
                let mut undefined = None;
                inst.for_each_use(|v| {
                    if undefined.is_none() && !set.contains(v) {
                        undefined = Some(v);
                    }
                });
                if let Some(v) = undefined {
                    return Err(self.error(format!(
                        "v{} is used before it is assigned on some path from the entry",
                        v.0
                    )));
                }
                if let Some(d) = inst.dst() {
                    set.insert(d);
                }
            }
            self.inst = None;
            if let Some(v) = func.blocks[b.0 as usize].term.used()
                && !set.contains(v)
            {
                return Err(self.error(format!(
                    "v{} is used before it is assigned on some path from the entry",
                    v.0
                )));
            }
        }
        Ok(())
    }
}

/// Whether a binary operation works on floats (the others work on integers).
fn binop_is_float(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Fadd | BinOp::Fsub | BinOp::Fmul | BinOp::Fdiv | BinOp::Fmin | BinOp::Fmax
    )
}

#[cfg(test)]
mod tests;
