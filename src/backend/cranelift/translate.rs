//! Mechanical translation of lowered functions to CLIF.

use std::collections::HashMap;

use cranelift_codegen::ir::{
    self, AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, condcodes, types,
};
use cranelift_codegen::settings::OptLevel;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{DataId, FuncId, Module};

use super::conditions::{Conditions, Split};

use crate::lir::{
    self, BinOp, Callee, ConvOp, Ext, FloatCC, Inst, IntCC, Signature, Symbol, Terminator, Ty, UnOp,
};

/// The Cranelift ids of everything a lowered module declares.
pub struct Declared {
    /// Functions of the module, by lowered id.
    pub functions: Vec<FuncId>,
    /// Whether each function (by lowered id) is on the
    /// [success path](crate::lir::success_path): only there are branches split per
    /// comparison ([`conditions`](super::conditions)).
    pub on_success_path: Vec<bool>,
    /// Imports, by lowered id.
    pub imports: Vec<FuncId>,
    /// Data objects, by lowered id.
    pub data: Vec<DataId>,
}

/// The CLIF type of a lowered type.
pub fn clif_type(ty: Ty) -> ir::Type {
    match ty {
        Ty::I8 => types::I8,
        Ty::I16 => types::I16,
        Ty::I32 => types::I32,
        Ty::I64 | Ty::Ptr => types::I64,
        Ty::F32 => types::F32,
        Ty::F64 => types::F64,
    }
}

fn abi_param(ty: Ty, ext: Ext) -> AbiParam {
    let p = AbiParam::new(clif_type(ty));
    match ext {
        Ext::None => p,
        Ext::Sext => p.sext(),
        Ext::Uext => p.uext(),
    }
}

/// The CLIF signature of a lowered signature, in the module's default calling convention.
pub fn clif_signature<M: Module>(m: &M, sig: &Signature) -> ir::Signature {
    let mut s = m.make_signature();
    for (i, &p) in sig.params.iter().enumerate() {
        s.params.push(abi_param(p, sig.param_ext(i)));
    }
    if let Some(r) = sig.ret {
        s.returns.push(abi_param(r, sig.ret_ext));
    }
    s
}

/// Where an [`Inst::Source`] marker points: the first CLIF instruction after `after` in `block`.
pub struct SourceMarker {
    /// Block of the marker.
    pub block: ir::Block,
    /// Last instruction before the marker (`None`: the block start).
    pub after: Option<ir::Inst>,
    /// Source description.
    pub text: String,
}

/// Where the CLIF value of a lowered variable lives.
#[derive(Clone, Copy)]
enum Slot {
    /// A single-assignment variable: its value, once defined.
    Value(Option<ir::Value>),
    /// A mutable variable: SSA is built by the frontend.
    Variable(Variable),
}

/// Builds the CLIF of function `index` of `module`. Blocks unreachable from the entry are
/// dropped.
pub fn translate_function<M: Module>(
    m: &mut M,
    module: &lir::Module,
    declared: &Declared,
    index: usize,
    clif: &mut ir::Function,
    fb_ctx: &mut FunctionBuilderContext,
) -> Vec<SourceMarker> {
    let func = &module.functions[index];
    clif.signature = clif_signature(m, &func.sig);
    let mut b = FunctionBuilder::new(clif, fb_ctx);
    let mut vars: Vec<Slot> = func
        .vars
        .iter()
        .map(|d| {
            if d.mutable {
                Slot::Variable(b.declare_var(clif_type(d.ty)))
            } else {
                Slot::Value(None)
            }
        })
        .collect();
    let order: Vec<usize> = lir::cfg::reverse_postorder(func)
        .into_iter()
        .map(|b| b.0 as usize)
        .collect();
    let mut blocks: Vec<Option<ir::Block>> = vec![None; func.blocks.len()];
    for &bi in &order {
        blocks[bi] = Some(b.create_block());
    }
    let sealable = sealable_on_entry(func, &order);
    let slots: Vec<ir::StackSlot> = func
        .slots
        .iter()
        .map(|s| {
            let shift = s.align.max(1).trailing_zeros() as u8;
            b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                s.size,
                shift,
            ))
        })
        .collect();
    let entry = blocks[0].expect("the entry is reachable");
    b.append_block_params_for_function_params(entry);
    let params = b.block_params(entry).to_vec();
    let mut markers = Vec::new();
    let mut func_refs: HashMap<FuncId, ir::FuncRef> = HashMap::new();
    let mut data_refs: HashMap<DataId, ir::GlobalValue> = HashMap::new();
    // Optimized code on the success path only: the single-pass register allocator of
    // `--opt none` handles the extra blocks worse than the folded condition (launcher4d: 1102
    // -> 1222 instructions per call), and code off the path runs once per failed call.
    let split = declared.on_success_path[index] && m.isa().flags().opt_level() != OptLevel::None;
    let mut conditions = Conditions::new(func, split);
    let target = |blocks: &[Option<ir::Block>], id: lir::BlockId| {
        blocks[id.0 as usize].expect("successors of reachable blocks are reachable")
    };

    for &bi in &order {
        let block = &func.blocks[bi];
        let cb = blocks[bi].expect("reachable");
        b.switch_to_block(cb);
        if sealable[bi] {
            b.seal_block(cb);
        }
        if block.cold {
            b.set_cold_block(cb);
        }
        let mut t = Translator {
            b: &mut b,
            m: &mut *m,
            module,
            declared,
            vars: &mut vars,
            func_refs: &mut func_refs,
            data_refs: &mut data_refs,
            func,
        };
        if bi == 0 {
            for (i, &p) in params.iter().enumerate() {
                t.def(lir::Var(i as u32), p);
            }
        }
        for inst in &block.insts {
            match inst {
                Inst::Source(i) => {
                    let after = t.b.func.layout.last_inst(cb);
                    markers.push(SourceMarker {
                        block: cb,
                        after,
                        text: func.sources[*i as usize].clone(),
                    });
                }
                Inst::StackAddr { dst, slot, offset } => {
                    let v =
                        t.b.ins()
                            .stack_addr(types::I64, slots[slot.0 as usize], *offset);
                    t.def(*dst, v);
                }
                other => {
                    t.inst(other);
                    conditions.record(func, other);
                }
            }
        }
        match &block.term {
            Terminator::Jump(to) => {
                t.b.ins().jump(target(&blocks, *to), &[]);
            }
            Terminator::Branch {
                cond,
                then_block,
                else_block,
            } => {
                let (then_block, else_block) =
                    (target(&blocks, *then_block), target(&blocks, *else_block));
                t.branch(&conditions, *cond, then_block, else_block, block.cold);
            }
            Terminator::Return(value) => {
                let rets: Vec<ir::Value> = value.iter().map(|v| t.get(*v)).collect();
                t.b.ins().return_(&rets);
            }
        }
    }
    b.seal_all_blocks();
    b.finalize(m.target_config());
    markers
}

/// For each block (by index), whether every predecessor comes before it in `order` (the
/// reverse postorder the blocks are translated in): no loop's back edge enters it. Such a
/// block is sealed when it is reached, so that the mutable variables read in it resolve at
/// once to their values (which the peepholes here can see through) rather than to block
/// parameters resolved only when every block is sealed at the end.
fn sealable_on_entry(func: &lir::Function, order: &[usize]) -> Vec<bool> {
    let mut position = vec![usize::MAX; func.blocks.len()];
    for (i, &bi) in order.iter().enumerate() {
        position[bi] = i;
    }
    let mut sealable = vec![true; func.blocks.len()];
    for &bi in order {
        for succ in func.blocks[bi].term.successors() {
            if position[succ.0 as usize] <= position[bi] {
                sealable[succ.0 as usize] = false;
            }
        }
    }
    sealable
}

/// `(a, b)` when `x` and `y` are the same extension (both sign- or both zero-extended) of
/// `a` and `b` of one type: equal exactly when `a` and `b` are, so an equality compares them
/// as they are (two extensions fewer; a device id is a sign-extended `i32`).
fn same_extension(
    func: &ir::Function,
    x: ir::Value,
    y: ir::Value,
) -> Option<(ir::Value, ir::Value)> {
    let extension = |v: ir::Value| match func.dfg.insts[func.dfg.value_def(v).inst()?] {
        ir::InstructionData::Unary {
            opcode: opcode @ (ir::Opcode::Sextend | ir::Opcode::Uextend),
            arg,
        } => Some((opcode, arg)),
        _ => None,
    };
    let ((ox, a), (oy, b)) = (extension(x)?, extension(y)?);
    (ox == oy && func.dfg.value_type(a) == func.dfg.value_type(b)).then_some((a, b))
}

struct Translator<'a, 'b, M: Module> {
    b: &'a mut FunctionBuilder<'b>,
    m: &'a mut M,
    module: &'a lir::Module,
    declared: &'a Declared,
    vars: &'a mut [Slot],
    func_refs: &'a mut HashMap<FuncId, ir::FuncRef>,
    data_refs: &'a mut HashMap<DataId, ir::GlobalValue>,
    func: &'a lir::Function,
}

impl<M: Module> Translator<'_, '_, M> {
    fn get(&mut self, v: lir::Var) -> ir::Value {
        match self.vars[v.0 as usize] {
            Slot::Variable(var) => self.b.use_var(var),
            Slot::Value(Some(value)) => value,
            // The LIR verifier guarantees that a single-assignment variable's definition
            // dominates its uses, and blocks are translated in reverse postorder: reaching this
            // is a bug in safecall, never a reason to make up a value.
            Slot::Value(None) => unreachable!(
                "internal error: v{} of `{}` is used before its definition",
                v.0, self.func.name
            ),
        }
    }

    fn def(&mut self, v: lir::Var, value: ir::Value) {
        match &mut self.vars[v.0 as usize] {
            Slot::Variable(var) => self.b.def_var(*var, value),
            Slot::Value(slot) => {
                debug_assert!(
                    slot.is_none(),
                    "v{} of {} assigned twice",
                    v.0,
                    self.func.name
                );
                *slot = Some(value);
            }
        }
    }

    /// Ends the current block with a branch on `cond`: a branch per comparison where `cond`
    /// combines comparisons ([`conditions`](super::conditions)), each in a new block (cold
    /// when the branch's block is).
    fn branch(
        &mut self,
        conditions: &Conditions,
        cond: lir::Var,
        then_block: ir::Block,
        else_block: ir::Block,
        cold: bool,
    ) {
        // Work left: a condition, its targets, and the block that tests it (`None`: the
        // current one). Iterative: the checks of a function with many parameters make long
        // `and` chains.
        let mut work = vec![(cond, then_block, else_block, None)];
        while let Some((cond, then_block, else_block, block)) = work.pop() {
            if let Some(block) = block {
                // Its one predecessor (the branch that made it) is in place: sealed now, the
                // variables read through it resolve at once, with no block parameters for
                // values that are the same on every edge.
                self.b.switch_to_block(block);
                self.b.seal_block(block);
            }
            match conditions.split(cond) {
                Some(Split::And(a, b)) => {
                    let next = self.new_block(cold);
                    work.push((b, then_block, else_block, Some(next)));
                    work.push((a, next, else_block, None));
                }
                Some(Split::Or(a, b)) => {
                    let next = self.new_block(cold);
                    work.push((b, then_block, else_block, Some(next)));
                    work.push((a, then_block, next, None));
                }
                Some(Split::Not(a)) => work.push((a, else_block, then_block, None)),
                None => {
                    let c = self.get(cond);
                    self.b.ins().brif(c, then_block, &[], else_block, &[]);
                }
            }
        }
    }

    /// A new block, cold when `cold`.
    fn new_block(&mut self, cold: bool) -> ir::Block {
        let block = self.b.create_block();
        if cold {
            self.b.set_cold_block(block);
        }
        block
    }

    fn ty(&self, v: lir::Var) -> Ty {
        self.func.ty(v)
    }

    fn func_ref(&mut self, id: FuncId) -> ir::FuncRef {
        if let Some(r) = self.func_refs.get(&id) {
            return *r;
        }
        let r = self.m.declare_func_in_func(id, self.b.func);
        self.func_refs.insert(id, r);
        r
    }

    fn data_ref(&mut self, id: DataId) -> ir::GlobalValue {
        if let Some(r) = self.data_refs.get(&id) {
            return *r;
        }
        let r = self.m.declare_data_in_func(id, self.b.func);
        self.data_refs.insert(id, r);
        r
    }

    fn inst(&mut self, inst: &Inst) {
        match inst {
            Inst::Iconst { dst, value } => {
                let ty = self.ty(*dst);
                let v = if ty.is_float() {
                    unreachable!("iconst into a float variable")
                } else {
                    let bits = ty.bytes() * 8;
                    let masked = if bits == 64 {
                        *value
                    } else {
                        *value & ((1i64 << bits) - 1)
                    };
                    self.b.ins().iconst(clif_type(ty), masked)
                };
                self.def(*dst, v);
            }
            Inst::Fconst { dst, bits } => {
                let v = match self.ty(*dst) {
                    Ty::F32 => self.b.ins().f32const(f64::from_bits(*bits) as f32),
                    _ => self
                        .b
                        .ins()
                        .f64const(ir::immediates::Ieee64::with_bits(*bits)),
                };
                self.def(*dst, v);
            }
            Inst::Copy { dst, src } => {
                let v = self.get(*src);
                self.def(*dst, v);
            }
            Inst::Unary { dst, op, src } => {
                let x = self.get(*src);
                let v = match op {
                    UnOp::Ineg => self.b.ins().ineg(x),
                    UnOp::Bnot => self.b.ins().bnot(x),
                    UnOp::Fneg => self.b.ins().fneg(x),
                };
                self.def(*dst, v);
            }
            Inst::Binary { dst, op, a, b } => {
                let (x, y) = (self.get(*a), self.get(*b));
                let i = self.b.ins();
                let v = match op {
                    BinOp::Iadd => i.iadd(x, y),
                    BinOp::Isub => i.isub(x, y),
                    BinOp::Imul => i.imul(x, y),
                    BinOp::Sdiv => i.sdiv(x, y),
                    BinOp::Udiv => i.udiv(x, y),
                    BinOp::Srem => i.srem(x, y),
                    BinOp::Urem => i.urem(x, y),
                    BinOp::And => i.band(x, y),
                    BinOp::Or => i.bor(x, y),
                    BinOp::Xor => i.bxor(x, y),
                    BinOp::Shl => i.ishl(x, y),
                    BinOp::Sshr => i.sshr(x, y),
                    BinOp::Ushr => i.ushr(x, y),
                    BinOp::Smin => i.smin(x, y),
                    BinOp::Smax => i.smax(x, y),
                    BinOp::Umin => i.umin(x, y),
                    BinOp::Umax => i.umax(x, y),
                    BinOp::Fadd => i.fadd(x, y),
                    BinOp::Fsub => i.fsub(x, y),
                    BinOp::Fmul => i.fmul(x, y),
                    BinOp::Fdiv => i.fdiv(x, y),
                    BinOp::Fmin => i.fmin(x, y),
                    BinOp::Fmax => i.fmax(x, y),
                };
                self.def(*dst, v);
            }
            Inst::Icmp { dst, cc, a, b } => {
                let (mut x, mut y) = (self.get(*a), self.get(*b));
                if matches!(cc, IntCC::Eq | IntCC::Ne)
                    && let Some((nx, ny)) = same_extension(self.b.func, x, y)
                {
                    (x, y) = (nx, ny);
                }
                let cc = match cc {
                    IntCC::Eq => condcodes::IntCC::Equal,
                    IntCC::Ne => condcodes::IntCC::NotEqual,
                    IntCC::Slt => condcodes::IntCC::SignedLessThan,
                    IntCC::Sle => condcodes::IntCC::SignedLessThanOrEqual,
                    IntCC::Sgt => condcodes::IntCC::SignedGreaterThan,
                    IntCC::Sge => condcodes::IntCC::SignedGreaterThanOrEqual,
                    IntCC::Ult => condcodes::IntCC::UnsignedLessThan,
                    IntCC::Ule => condcodes::IntCC::UnsignedLessThanOrEqual,
                    IntCC::Ugt => condcodes::IntCC::UnsignedGreaterThan,
                    IntCC::Uge => condcodes::IntCC::UnsignedGreaterThanOrEqual,
                };
                let v = self.b.ins().icmp(cc, x, y);
                self.def(*dst, v);
            }
            Inst::Fcmp { dst, cc, a, b } => {
                let (x, y) = (self.get(*a), self.get(*b));
                let cc = match cc {
                    FloatCC::Eq => condcodes::FloatCC::Equal,
                    FloatCC::Ne => condcodes::FloatCC::NotEqual,
                    FloatCC::Lt => condcodes::FloatCC::LessThan,
                    FloatCC::Le => condcodes::FloatCC::LessThanOrEqual,
                    FloatCC::Gt => condcodes::FloatCC::GreaterThan,
                    FloatCC::Ge => condcodes::FloatCC::GreaterThanOrEqual,
                };
                let v = self.b.ins().fcmp(cc, x, y);
                self.def(*dst, v);
            }
            Inst::Select { dst, cond, a, b } => {
                let (c, x, y) = (self.get(*cond), self.get(*a), self.get(*b));
                let v = self.b.ins().select(c, x, y);
                self.def(*dst, v);
            }
            Inst::Convert { dst, op, src } => {
                let v = self.convert(*op, *src, self.ty(*dst));
                self.def(*dst, v);
            }
            Inst::Load { dst, addr, offset } => {
                let p = self.get(*addr);
                let ty = clif_type(self.ty(*dst));
                let v = self.b.ins().load(ty, MemFlagsData::new(), p, *offset);
                self.def(*dst, v);
            }
            Inst::Store {
                addr,
                offset,
                value,
            } => {
                let (p, x) = (self.get(*addr), self.get(*value));
                self.b.ins().store(MemFlagsData::new(), x, p, *offset);
            }
            Inst::AtomicCas {
                dst,
                addr,
                expected,
                replacement,
            } => {
                let p = self.get(*addr);
                let (e, x) = (self.get(*expected), self.get(*replacement));
                let v = self.b.ins().atomic_cas(MemFlagsData::trusted(), p, e, x);
                self.def(*dst, v);
            }
            Inst::SymbolAddr { dst, symbol } => {
                let v = match symbol {
                    Symbol::Data(id) => {
                        let gv = self.data_ref(self.declared.data[id.0 as usize]);
                        self.b.ins().symbol_value(types::I64, gv)
                    }
                    Symbol::Func(id) => {
                        let r = self.func_ref(self.declared.functions[id.0 as usize]);
                        self.b.ins().func_addr(types::I64, r)
                    }
                };
                self.def(*dst, v);
            }
            Inst::Call { dst, callee, args } => {
                let argv: Vec<ir::Value> = args.iter().map(|a| self.get(*a)).collect();
                let call = match callee {
                    Callee::Import(id) => {
                        let r = self.func_ref(self.declared.imports[id.0 as usize]);
                        self.b.ins().call(r, &argv)
                    }
                    Callee::Func(id) => {
                        let r = self.func_ref(self.declared.functions[id.0 as usize]);
                        self.b.ins().call(r, &argv)
                    }
                    Callee::Indirect(target, sig) => {
                        let s = clif_signature(self.m, sig);
                        let sig_ref = self.b.import_signature(s);
                        let t = self.get(*target);
                        self.b.ins().call_indirect(sig_ref, t, &argv)
                    }
                };
                if let Some(d) = dst {
                    let r = self.b.inst_results(call)[0];
                    self.def(*d, r);
                }
                let _ = self.module;
            }
            Inst::PtrAdd { dst, ptr, offset } => {
                let (p, o) = (self.get(*ptr), self.get(*offset));
                let v = self.b.ins().iadd(p, o);
                self.def(*dst, v);
            }
            Inst::Source(_) | Inst::StackAddr { .. } => unreachable!("handled by the caller"),
        }
    }

    /// A conversion; narrow integer conversions to and from floats go through `i32`, which every
    /// ISA supports.
    fn convert(&mut self, op: ConvOp, src: lir::Var, to: Ty) -> ir::Value {
        let from = self.ty(src);
        let x = self.get(src);
        let to_clif = clif_type(to);
        let narrow = |t: Ty| t.is_int() && t.bytes() < 4;
        let i = self.b.ins();
        match op {
            ConvOp::Sext => i.sextend(to_clif, x),
            ConvOp::Uext => i.uextend(to_clif, x),
            ConvOp::Trunc => i.ireduce(to_clif, x),
            ConvOp::PtrToInt | ConvOp::IntToPtr => x,
            ConvOp::Bitcast => i.bitcast(to_clif, MemFlagsData::new(), x),
            ConvOp::Fpromote => i.fpromote(to_clif, x),
            ConvOp::Fdemote => i.fdemote(to_clif, x),
            ConvOp::StoF | ConvOp::UtoF => {
                let x = if narrow(from) {
                    if op == ConvOp::StoF {
                        i.sextend(types::I32, x)
                    } else {
                        self.b.ins().uextend(types::I32, x)
                    }
                } else {
                    x
                };
                if op == ConvOp::StoF {
                    self.b.ins().fcvt_from_sint(to_clif, x)
                } else {
                    self.b.ins().fcvt_from_uint(to_clif, x)
                }
            }
            ConvOp::FtoSsat | ConvOp::FtoUsat => {
                if !narrow(to) {
                    return if op == ConvOp::FtoSsat {
                        i.fcvt_to_sint_sat(to_clif, x)
                    } else {
                        i.fcvt_to_uint_sat(to_clif, x)
                    };
                }
                // Saturate to i32, clamp to the narrow range, then truncate.
                let bits = to.bytes() * 8;
                let (lo, hi) = if op == ConvOp::FtoSsat {
                    (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
                } else {
                    (0, (1i64 << bits) - 1)
                };
                let wide = if op == ConvOp::FtoSsat {
                    i.fcvt_to_sint_sat(types::I32, x)
                } else {
                    i.fcvt_to_uint_sat(types::I32, x)
                };
                let lo_v = self.b.ins().iconst(types::I32, lo & 0xffff_ffff);
                let hi_v = self.b.ins().iconst(types::I32, hi);
                let clamped = if op == ConvOp::FtoSsat {
                    let c = self.b.ins().smax(wide, lo_v);
                    self.b.ins().smin(c, hi_v)
                } else {
                    let c = self.b.ins().umax(wide, lo_v);
                    self.b.ins().umin(c, hi_v)
                };
                self.b.ins().ireduce(to_clif, clamped)
            }
        }
    }
}

#[cfg(test)]
mod tests;
