//! The translation of one lowered function: values, blocks, terminators.

mod inst;

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::intrinsics::Intrinsic;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, CallSiteValue, FunctionValue,
    InstructionOpcode, InstructionValue, IntValue, LLVMTailCallKind, PointerValue, ValueKind,
};
use inkwell::{FloatPredicate, IntPredicate};

use super::address::byte_offset;
use super::analyze::{self, VarInfo};
use super::module::ModuleTranslator;
use crate::backend::llvm::error::LlvmError;
use crate::lir::{self, BinOp, Callee, ConvOp, FloatCC, Inst, IntCC, Terminator, Ty, UnOp, Var};

/// Metadata kind naming the host-IR item an instruction starts (see
/// [`annotate`](crate::backend::llvm::annotate)).
pub(crate) const SOURCE_KIND: &str = "safecall.source";

/// Branch weights of a branch with one cold target: the values `llvm.expect` uses.
const LIKELY_WEIGHT: u64 = 2000;
const UNLIKELY_WEIGHT: u64 = 1;

/// A broken invariant of the lowered form, which the LIR verifier rules out: a bug in
/// safecall, reported as such rather than translated into something arbitrary.
fn broken(func: &lir::Function, what: impl std::fmt::Display) -> ! {
    unreachable!(
        "internal error: lowered function `{}` passed the LIR verifier but {what}",
        func.name
    )
}

pub(super) struct FunctionTranslator<'a, 'm, 'ctx> {
    m: &'a ModuleTranslator<'m, 'ctx>,
    func: &'m lir::Function,
    llvm: FunctionValue<'ctx>,
    b: Builder<'ctx>,
    /// SSA values of single-assignment variables.
    values: Vec<Option<BasicValueEnum<'ctx>>>,
    /// Stack homes of mutable variables.
    homes: Vec<Option<PointerValue<'ctx>>>,
    /// Reads and writes of each mutable variable so far (for value names).
    versions: Vec<u32>,
    /// The `i1` a single-assignment boolean was made from (a comparison).
    bools: HashMap<Var, IntValue<'ctx>>,
    /// Single-assignment integers known to be `ptrtoint(base) [+ offset]`: `inttoptr` of them
    /// becomes `getelementptr i8, base, offset`, so LLVM keeps seeing pointers.
    ptr_ints: HashMap<Var, (PointerValue<'ctx>, Option<IntValue<'ctx>>)>,
    slots: Vec<PointerValue<'ctx>>,
    blocks: Vec<Option<BasicBlock<'ctx>>>,
    info: VarInfo,
    /// `Inst::Source` markers: block, last instruction before the marker, source index.
    markers: Vec<(BasicBlock<'ctx>, Option<InstructionValue<'ctx>>, u32)>,
}

impl<'a, 'm, 'ctx> FunctionTranslator<'a, 'm, 'ctx> {
    pub(super) fn new(m: &'a ModuleTranslator<'m, 'ctx>, index: usize) -> Result<Self, LlvmError> {
        let func = &m.lir.functions[index];
        let n = func.vars.len();
        let info = analyze::analyze(func);
        Ok(FunctionTranslator {
            m,
            func,
            llvm: m.functions[index],
            b: m.ctx.create_builder(),
            values: vec![None; n],
            homes: vec![None; n],
            versions: vec![0; n],
            bools: HashMap::new(),
            ptr_ints: HashMap::new(),
            slots: Vec::new(),
            blocks: vec![None; func.blocks.len()],
            info,
            markers: Vec::new(),
        })
    }

    /// A value name (empty, hence free, unless annotating).
    fn name(&self, make: impl FnOnce() -> String) -> String {
        if self.m.annotate {
            make()
        } else {
            String::new()
        }
    }

    /// The name of a new value of `v`: `vN`, or `vN.K` for a mutable variable.
    fn value_name(&mut self, v: Var) -> String {
        if !self.m.annotate {
            return String::new();
        }
        if self.homes[v.0 as usize].is_some() {
            self.versions[v.0 as usize] += 1;
            format!("v{}.{}", v.0, self.versions[v.0 as usize])
        } else {
            format!("v{}", v.0)
        }
    }

    fn lty(&self, v: Var) -> BasicTypeEnum<'ctx> {
        self.m.ty(self.func.ty(v))
    }

    pub(super) fn translate(mut self) -> Result<(), LlvmError> {
        let func = self.func;
        let order: Vec<usize> = lir::cfg::reverse_postorder(func)
            .into_iter()
            .map(|b| b.0 as usize)
            .collect();
        let mut reachable = vec![false; func.blocks.len()];
        for &b in &order {
            reachable[b] = true;
        }
        let entry_has_preds = order
            .iter()
            .any(|&b| func.blocks[b].term.successors().any(|s| s.0 == 0));

        // Layout: the entry, then hot blocks in lowered order, then cold ones.
        let ctx = self.m.ctx;
        let separate_entry = entry_has_preds.then(|| {
            let name = self.name(|| "entry".to_owned());
            ctx.append_basic_block(self.llvm, &name)
        });
        let layout = std::iter::once(0)
            .chain((1..func.blocks.len()).filter(|&i| !func.blocks[i].cold))
            .chain((1..func.blocks.len()).filter(|&i| func.blocks[i].cold))
            .filter(|&i| reachable[i]);
        for i in layout {
            let name = self.name(|| format!("block{i}"));
            self.blocks[i] = Some(ctx.append_basic_block(self.llvm, &name));
        }
        let entry = separate_entry.unwrap_or(self.blocks[0].expect("block0 is reachable"));
        self.b.position_at_end(entry);
        self.build_entry()?;
        if separate_entry.is_some() {
            self.b
                .build_unconditional_branch(self.blocks[0].expect("reachable"))?;
        }
        for &bi in &order {
            let bb = self.blocks[bi].expect("reachable blocks are created");
            self.b.position_at_end(bb);
            for inst in &func.blocks[bi].insts {
                self.inst(inst, bb)?;
            }
            if tail_call(self.m.lir, func, &func.blocks[bi]) {
                self.mark_tail_call(bb);
            }
            self.terminator(&func.blocks[bi].term)?;
        }
        if self.m.annotate {
            self.attach_markers()?;
        }
        Ok(())
    }

    /// Stack slots, homes of mutable variables, and the parameters.
    fn build_entry(&mut self) -> Result<(), LlvmError> {
        let func = self.func;
        let i8t = self.m.ctx.i8_type();
        for (i, s) in func.slots.iter().enumerate() {
            let name = self.name(|| format!("ss{i}"));
            let slot = self.b.build_alloca(i8t.array_type(s.size.max(1)), &name)?;
            set_alignment(slot.as_instruction(), s.align.max(1))?;
            self.slots.push(slot);
        }
        for (i, decl) in func.vars.iter().enumerate() {
            if self.info.home[i] {
                let name = self.name(|| format!("v{i}.addr"));
                let home = self.b.build_alloca(self.m.ty(decl.ty), &name)?;
                self.homes[i] = Some(home);
            }
        }
        for i in 0..func.sig.params.len() {
            let p = self.llvm.get_nth_param(i as u32).expect("declared");
            if self.m.annotate {
                p.set_name(&format!("v{i}"));
            }
            self.def(Var(i as u32), p)?;
        }
        Ok(())
    }

    fn get(&mut self, v: Var) -> Result<BasicValueEnum<'ctx>, LlvmError> {
        let i = v.0 as usize;
        if let Some(home) = self.homes[i] {
            let name = self.value_name(v);
            return Ok(self.b.build_load(self.lty(v), home, &name)?);
        }
        Ok(self.values[i].unwrap_or_else(|| {
            broken(
                self.func,
                format!("v{i} is used where its single assignment does not dominate the use"),
            )
        }))
    }

    fn def(&mut self, v: Var, value: BasicValueEnum<'ctx>) -> Result<(), LlvmError> {
        let i = v.0 as usize;
        if value.get_type() != self.lty(v) {
            broken(
                self.func,
                format!(
                    "v{i} of type {} is assigned a value of another type",
                    self.func.ty(v)
                ),
            );
        }
        match self.homes[i] {
            Some(home) => {
                self.b.build_store(home, value)?;
            }
            None => self.values[i] = Some(value),
        }
        Ok(())
    }

    fn is_home(&self, v: Var) -> bool {
        self.homes[v.0 as usize].is_some()
    }

    /// An integer operand (pointers converted with `ptrtoint`).
    fn get_int(&mut self, v: Var) -> Result<IntValue<'ctx>, LlvmError> {
        match self.get(v)? {
            BasicValueEnum::IntValue(x) => Ok(x),
            BasicValueEnum::PointerValue(p) => {
                Ok(self.b.build_ptr_to_int(p, self.m.ctx.i64_type(), "")?)
            }
            _ => broken(self.func, format!("v{} is not an integer", v.0)),
        }
    }

    /// A pointer operand (integers converted with `inttoptr`).
    fn get_ptr(&mut self, v: Var) -> Result<PointerValue<'ctx>, LlvmError> {
        match self.get(v)? {
            BasicValueEnum::PointerValue(p) => Ok(p),
            BasicValueEnum::IntValue(x) => Ok(self.b.build_int_to_ptr(x, self.m.ptr, "")?),
            _ => broken(self.func, format!("v{} is not a pointer", v.0)),
        }
    }

    /// A boolean as `i1` (`!= 0`).
    fn cond(&mut self, v: Var) -> Result<IntValue<'ctx>, LlvmError> {
        if !self.is_home(v)
            && let Some(c) = self.bools.get(&v)
        {
            return Ok(*c);
        }
        let x = self.get_int(v)?;
        let name = self.name(|| format!("v{}.c", v.0));
        Ok(self
            .b
            .build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), &name)?)
    }

    /// A value of `dst`'s type from an integer result (`inttoptr` for pointers).
    fn int_result(
        &mut self,
        dst: Var,
        x: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>, LlvmError> {
        if self.func.ty(dst) == Ty::Ptr {
            let name = self.value_name(dst);
            Ok(self.b.build_int_to_ptr(x, self.m.ptr, &name)?.into())
        } else {
            Ok(x.into())
        }
    }

    fn intrinsic(
        &mut self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
        value_name: &str,
    ) -> Result<BasicValueEnum<'ctx>, LlvmError> {
        let f = Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&self.m.module, types))
            .ok_or_else(|| LlvmError(format!("intrinsic {name} is not available")))?;
        let args: Vec<BasicMetadataValueEnum<'ctx>> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &args, value_name)?;
        match call.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(v),
            ValueKind::Instruction(_) => Err(LlvmError(format!("{name} returns no value"))),
        }
    }

    fn address(&mut self, addr: Var, offset: i32) -> Result<PointerValue<'ctx>, LlvmError> {
        let base = self.get_ptr(addr)?;
        self.offset_ptr(base, offset)
    }

    fn offset_ptr(
        &mut self,
        base: PointerValue<'ctx>,
        offset: i32,
    ) -> Result<PointerValue<'ctx>, LlvmError> {
        if offset == 0 {
            return Ok(base);
        }
        let off = self.m.ctx.i64_type().const_int(offset as i64 as u64, true);
        byte_offset(self.m.ctx, &self.b, base, off, "")
    }

    fn terminator(&mut self, term: &Terminator) -> Result<(), LlvmError> {
        // Successors of reachable blocks are reachable, and the verifier checked they exist.
        let block = |s: &Self, b: lir::BlockId| -> Result<BasicBlock<'ctx>, LlvmError> {
            Ok(s.blocks[b.0 as usize]
                .unwrap_or_else(|| broken(s.func, format!("branch to missing block{}", b.0))))
        };
        match term {
            Terminator::Jump(target) => {
                let t = block(self, *target)?;
                self.b.build_unconditional_branch(t)?;
            }
            Terminator::Branch {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.cond(*cond)?;
                let (t, e) = (block(self, *then_block)?, block(self, *else_block)?);
                let br = self.b.build_conditional_branch(c, t, e)?;
                let cold = |b: lir::BlockId| self.func.blocks[b.0 as usize].cold;
                let weights = match (cold(*then_block), cold(*else_block)) {
                    (true, false) => Some((UNLIKELY_WEIGHT, LIKELY_WEIGHT)),
                    (false, true) => Some((LIKELY_WEIGHT, UNLIKELY_WEIGHT)),
                    _ => None,
                };
                if let Some((wt, we)) = weights {
                    let ctx = self.m.ctx;
                    let i32t = ctx.i32_type();
                    let node = ctx.metadata_node(&[
                        ctx.metadata_string("branch_weights").into(),
                        i32t.const_int(wt, false).into(),
                        i32t.const_int(we, false).into(),
                    ]);
                    br.set_metadata(node, ctx.get_kind_id("prof"))
                        .map_err(|e| LlvmError(format!("branch weights: {e}")))?;
                }
            }
            Terminator::Return(value) => match (value, self.func.sig.ret) {
                (Some(v), Some(_)) => {
                    let x = self.get(*v)?;
                    self.b.build_return(Some(&x))?;
                }
                (None, None) => {
                    self.b.build_return(None)?;
                }
                _ => broken(self.func, "return does not match the signature"),
            },
        }
        Ok(())
    }

    /// Marks the block's last instruction, a call whose result the block returns, `musttail`.
    fn mark_tail_call(&self, bb: BasicBlock<'ctx>) {
        let call = bb
            .get_last_instruction()
            .and_then(|i| CallSiteValue::try_from(i).ok());
        if let Some(call) = call {
            call.set_tail_call_kind(LLVMTailCallKind::LLVMTailCallKindMustTail);
        }
    }

    /// Attaches each marker's source text to the first instruction after it.
    fn attach_markers(&self) -> Result<(), LlvmError> {
        let ctx = self.m.ctx;
        let mut at: Vec<(InstructionValue<'ctx>, Vec<u32>)> = Vec::new();
        for &(bb, after, index) in &self.markers {
            let next = match after {
                Some(i) => i.get_next_instruction(),
                None => bb.get_first_instruction(),
            };
            let Some(next) = next else { continue };
            match at.iter_mut().find(|(i, _)| *i == next) {
                Some((_, list)) => list.push(index),
                None => at.push((next, vec![index])),
            }
        }
        let kind = ctx.get_kind_id(SOURCE_KIND);
        for (inst, indices) in at {
            let strings: Vec<BasicMetadataValueEnum<'ctx>> = indices
                .iter()
                .map(|&i| ctx.metadata_string(&self.func.sources[i as usize]).into())
                .collect();
            inst.set_metadata(ctx.metadata_node(&strings), kind)
                .map_err(|e| LlvmError(format!("source metadata: {e}")))?;
        }
        Ok(())
    }
}

pub(super) fn set_alignment(
    inst: Option<InstructionValue<'_>>,
    align: u32,
) -> Result<(), LlvmError> {
    if let Some(i) = inst {
        i.set_alignment(align)
            .map_err(|e| LlvmError(format!("alignment: {e}")))?;
    }
    Ok(())
}

/// Whether `block` ends in a call that can be a guaranteed tail call (`musttail`): it returns
/// the result of a call, its last instruction, to a function of the same signature, whose
/// arguments are the function's own parameters or constants, in a function that never takes
/// the address of its stack (so the callee cannot reach the caller's frame). The fast path's
/// call of the explain function is one: made a jump, a function whose checks pass makes no
/// call and needs no frame set up for one (and LLVM keeps the call's result, which
/// interprocedural constant propagation would otherwise replace by the explain function's
/// constant -1, turning the jump back into a call).
fn tail_call(module: &lir::Module, func: &lir::Function, block: &lir::Block) -> bool {
    // The last instruction, source markers aside (they emit nothing), so that annotated
    // builds (the dumps) and object files make the same calls tail calls.
    let last = block
        .insts
        .iter()
        .rev()
        .find(|i| !matches!(i, Inst::Source(_)));
    let Some(Inst::Call {
        dst: Some(dst),
        callee,
        args,
    }) = last
    else {
        return false;
    };
    // A mutable result would be stored to its home and loaded again before the return.
    if block.term != Terminator::Return(Some(*dst)) || func.vars[dst.0 as usize].mutable {
        return false;
    }
    let same_signature = match callee {
        Callee::Func(_) | Callee::Import(_) => *module.callee_sig(callee) == func.sig,
        Callee::Indirect(..) => false,
    };
    let params = func.sig.params.len();
    let own_or_constant = |a: &Var| {
        let i = a.0 as usize;
        (i < params && !func.vars[i].mutable)
            || block
                .insts
                .iter()
                .any(|inst| matches!(inst, Inst::Iconst { dst, .. } if dst == a))
    };
    let stack_taken = func
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| matches!(i, Inst::StackAddr { .. }));
    same_signature && args.iter().all(own_or_constant) && !stack_taken
}
