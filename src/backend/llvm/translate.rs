//! Mechanical translation of lowered modules to LLVM IR.
//!
//! Blocks are translated in reverse postorder (so the single definition of a non-`mutable`
//! variable, which dominates its uses, is always translated before them) and laid out in
//! lowered order with the cold ones last. Variables that are `mutable` (or, defensively,
//! assigned more than once) live in entry-block allocas that `mem2reg` promotes; all others map
//! straight to SSA values.

use std::collections::{HashMap, HashSet};

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage as LlvmLinkage, Module};
use inkwell::targets::TargetMachine;
use inkwell::types::{
    AsTypeRef, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FunctionType, PointerType,
};
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, CallSiteValue, FunctionValue,
    GlobalValue, InstructionOpcode, InstructionValue, IntValue, PointerValue, ValueKind,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

use super::LlvmError;
use crate::lir::{
    self, BinOp, Callee, ConvOp, Ext, FloatCC, Inst, IntCC, Linkage, Signature, Symbol, Terminator,
    Ty, UnOp, Var,
};

/// Metadata kind naming the host-IR item an instruction starts (see [`super::annotate`]).
pub(crate) const SOURCE_KIND: &str = "safecall.source";

/// Branch weights of a branch with one cold target: the values `llvm.expect` uses.
const LIKELY_WEIGHT: u64 = 2000;
const UNLIKELY_WEIGHT: u64 = 1;

impl From<BuilderError> for LlvmError {
    fn from(e: BuilderError) -> Self {
        LlvmError(format!("IR builder: {e}"))
    }
}

fn malformed(func: &lir::Function, what: impl std::fmt::Display) -> LlvmError {
    LlvmError(format!(
        "malformed lowered function `{}`: {what}",
        func.name
    ))
}

/// Translates `lir` into a new LLVM module of `ctx` for `machine`'s target. With `annotate`,
/// values and blocks are named after the lowered form and instructions carry
/// [`SOURCE_KIND`] metadata. The result has passed LLVM's verifier.
pub(crate) fn translate_module<'ctx>(
    ctx: &'ctx Context,
    lir: &lir::Module,
    machine: &TargetMachine,
    annotate: bool,
) -> Result<Module<'ctx>, LlvmError> {
    let module = ctx.create_module(&lir.name);
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    let mut t = ModuleTranslator {
        ctx,
        module,
        lir,
        annotate,
        ptr: ctx.ptr_type(AddressSpace::default()),
        functions: Vec::new(),
        imports: Vec::new(),
        data: Vec::new(),
        symbols: HashSet::new(),
    };
    t.declare()?;
    t.define_data()?;
    t.define_aliases()?;
    for i in 0..lir.functions.len() {
        FunctionTranslator::new(&t, i)?.translate()?;
    }
    t.emit_used();
    t.module.verify().map_err(|e| {
        LlvmError(format!(
            "LLVM rejected the translation of module `{}`: {}",
            lir.name,
            e.to_string().trim_end()
        ))
    })?;
    Ok(t.module)
}

struct ModuleTranslator<'a, 'ctx> {
    ctx: &'ctx Context,
    module: Module<'ctx>,
    lir: &'a lir::Module,
    annotate: bool,
    ptr: PointerType<'ctx>,
    functions: Vec<FunctionValue<'ctx>>,
    imports: Vec<FunctionValue<'ctx>>,
    data: Vec<GlobalValue<'ctx>>,
    symbols: HashSet<String>,
}

/// A piece of a data object's initializer.
enum Piece {
    Bytes(std::ops::Range<usize>),
    Reloc(usize),
}

/// The initializer of `d` as plain bytes and pointer-sized relocations, in order.
fn pieces(d: &lir::Data) -> Result<Vec<Piece>, LlvmError> {
    let mut relocs: Vec<usize> = (0..d.relocs.len()).collect();
    relocs.sort_by_key(|&i| d.relocs[i].offset);
    let mut out = Vec::new();
    let mut pos = 0usize;
    for i in relocs {
        let at = d.relocs[i].offset as usize;
        if at < pos || at + 8 > d.contents.len() {
            return Err(LlvmError(format!(
                "data `{}`: relocation at offset {at} overlaps another or the end",
                d.name
            )));
        }
        if at > pos {
            out.push(Piece::Bytes(pos..at));
        }
        out.push(Piece::Reloc(i));
        pos = at + 8;
    }
    if pos < d.contents.len() || out.is_empty() {
        out.push(Piece::Bytes(pos..d.contents.len()));
    }
    Ok(out)
}

impl<'ctx> ModuleTranslator<'_, 'ctx> {
    fn ty(&self, ty: Ty) -> BasicTypeEnum<'ctx> {
        match ty {
            Ty::I8 => self.ctx.i8_type().into(),
            Ty::I16 => self.ctx.i16_type().into(),
            Ty::I32 => self.ctx.i32_type().into(),
            Ty::I64 => self.ctx.i64_type().into(),
            Ty::F32 => self.ctx.f32_type().into(),
            Ty::F64 => self.ctx.f64_type().into(),
            Ty::Ptr => self.ptr.into(),
        }
    }

    fn fn_type(&self, sig: &Signature) -> FunctionType<'ctx> {
        let params: Vec<BasicMetadataTypeEnum<'ctx>> =
            sig.params.iter().map(|&t| self.ty(t).into()).collect();
        match sig.ret {
            Some(r) => self.ty(r).fn_type(&params, false),
            None => self.ctx.void_type().fn_type(&params, false),
        }
    }

    fn enum_attr(&self, name: &str, value: u64) -> Attribute {
        self.ctx
            .create_enum_attribute(Attribute::get_named_enum_kind_id(name), value)
    }

    /// `signext` / `zeroext` attributes of a signature, for a declaration or a call site.
    fn ext_attributes(&self, sig: &Signature) -> Vec<(AttributeLoc, Attribute)> {
        let attr = |ext: Ext| match ext {
            Ext::None => None,
            Ext::Sext => Some(self.enum_attr("signext", 0)),
            Ext::Uext => Some(self.enum_attr("zeroext", 0)),
        };
        let params = (0..sig.params.len())
            .filter_map(|i| attr(sig.param_ext(i)).map(|a| (AttributeLoc::Param(i as u32), a)));
        params
            .chain(attr(sig.ret_ext).map(|a| (AttributeLoc::Return, a)))
            .collect()
    }

    /// Claims `name` for a new symbol; fails when it is taken (LLVM would rename the new one
    /// silently) or in LLVM's reserved `llvm.` namespace.
    fn claim_symbol(&mut self, name: &str) -> Result<(), LlvmError> {
        if name.is_empty() || name.starts_with("llvm.") || !self.symbols.insert(name.to_owned()) {
            return Err(LlvmError(format!(
                "module `{}`: symbol `{name}` is defined twice or reserved",
                self.lir.name
            )));
        }
        Ok(())
    }

    fn declare(&mut self) -> Result<(), LlvmError> {
        for imp in &self.lir.imports {
            self.claim_symbol(&imp.name)?;
            let f = self.module.add_function(
                &imp.name,
                self.fn_type(&imp.sig),
                Some(LlvmLinkage::External),
            );
            for (loc, a) in self.ext_attributes(&imp.sig) {
                f.add_attribute(loc, a);
            }
            self.imports.push(f);
        }
        for func in &self.lir.functions {
            self.claim_symbol(&func.name)?;
            let f = self.module.add_function(
                &func.name,
                self.fn_type(&func.sig),
                Some(linkage(func.linkage)),
            );
            for (loc, a) in self.ext_attributes(&func.sig) {
                f.add_attribute(loc, a);
            }
            let fun = AttributeLoc::Function;
            f.add_attribute(fun, self.enum_attr("nounwind", 0));
            // An asynchronous unwind table (2), as Cranelift's `.eh_frame` describes every
            // instruction.
            f.add_attribute(fun, self.enum_attr("uwtable", 2));
            f.add_attribute(
                fun,
                self.ctx.create_string_attribute("frame-pointer", "all"),
            );
            f.add_attribute(fun, self.ctx.create_string_attribute("no-builtins", ""));
            if func.cold {
                f.add_attribute(fun, self.enum_attr("cold", 0));
                f.add_attribute(fun, self.enum_attr("optnone", 0));
                f.add_attribute(fun, self.enum_attr("noinline", 0));
            }
            self.functions.push(f);
        }
        for d in &self.lir.data {
            self.claim_symbol(&d.name)?;
            let types: Vec<BasicTypeEnum<'ctx>> = pieces(d)?
                .iter()
                .map(|p| match p {
                    Piece::Bytes(r) => self.ctx.i8_type().array_type(r.len() as u32).into(),
                    Piece::Reloc(_) => self.ptr.into(),
                })
                .collect();
            let ty: BasicTypeEnum<'ctx> = if d.relocs.is_empty() {
                types[0]
            } else {
                self.ctx.struct_type(&types, true).into()
            };
            let g = self.module.add_global(ty, None, &d.name);
            g.set_linkage(linkage(d.linkage));
            g.set_constant(!d.writable);
            g.set_alignment(d.align.max(1));
            if let Some(section) = &d.section {
                g.set_section(Some(section));
            }
            self.data.push(g);
        }
        Ok(())
    }

    fn symbol_ptr(&self, symbol: Symbol) -> PointerValue<'ctx> {
        match symbol {
            Symbol::Data(id) => self.data[id.0 as usize].as_pointer_value(),
            Symbol::Func(id) => self.functions[id.0 as usize]
                .as_global_value()
                .as_pointer_value(),
        }
    }

    fn define_data(&mut self) -> Result<(), LlvmError> {
        for (d, g) in self.lir.data.iter().zip(&self.data) {
            let values: Vec<BasicValueEnum<'ctx>> = pieces(d)?
                .into_iter()
                .map(|p| match p {
                    Piece::Bytes(r) => self.ctx.const_string(&d.contents[r], false).into(),
                    Piece::Reloc(i) => {
                        let r = &d.relocs[i];
                        let base = self.symbol_ptr(r.symbol);
                        if r.addend == 0 {
                            base.into()
                        } else {
                            let addend = self.ctx.i64_type().const_int(r.addend as u64, true);
                            const_byte_offset(self.ctx, base, addend).into()
                        }
                    }
                })
                .collect();
            if d.relocs.is_empty() {
                g.set_initializer(&values[0]);
            } else {
                g.set_initializer(&self.ctx.const_struct(&values, true));
            }
        }
        Ok(())
    }

    fn define_aliases(&mut self) -> Result<(), LlvmError> {
        for (alias, target) in &self.lir.aliases {
            self.claim_symbol(alias)?;
            let f = *self
                .functions
                .get(target.0 as usize)
                .ok_or_else(|| LlvmError(format!("alias `{alias}`: no function {}", target.0)))?;
            add_function_alias(&self.module, alias, f)?;
        }
        Ok(())
    }

    /// `llvm.used` keeps data placed in an explicit section (`.init_array` entries), which
    /// nothing references, as Cranelift's `set_used` does.
    fn emit_used(&self) {
        let used: Vec<PointerValue<'ctx>> = self
            .lir
            .data
            .iter()
            .zip(&self.data)
            .filter(|(d, _)| d.section.is_some())
            .map(|(_, g)| g.as_pointer_value())
            .collect();
        if used.is_empty() {
            return;
        }
        let ty = self.ptr.array_type(used.len() as u32);
        let g = self.module.add_global(ty, None, "llvm.used");
        g.set_linkage(LlvmLinkage::Appending);
        g.set_section(Some("llvm.metadata"));
        g.set_initializer(&self.ptr.const_array(&used));
    }
}

fn linkage(l: Linkage) -> LlvmLinkage {
    match l {
        Linkage::Export => LlvmLinkage::External,
        Linkage::Local => LlvmLinkage::Internal,
    }
}

/// Adds `alias` as an exported alias of `target` (inkwell has no alias API).
fn add_function_alias<'ctx>(
    module: &Module<'ctx>,
    alias: &str,
    target: FunctionValue<'ctx>,
) -> Result<(), LlvmError> {
    let name = std::ffi::CString::new(alias)
        .map_err(|_| LlvmError(format!("alias `{alias}` contains a NUL byte")))?;
    // SAFETY: the module, the function type and the aliasee are live objects of the same
    // context; LLVM copies the name. The alias belongs to the module afterwards.
    unsafe {
        inkwell::llvm_sys::core::LLVMAddAlias2(
            module.as_mut_ptr(),
            target.get_type().as_type_ref(),
            0,
            target.as_value_ref(),
            name.as_ptr(),
        );
    }
    Ok(())
}

/// The blocks reachable from the entry, in reverse postorder.
fn reverse_postorder(func: &lir::Function) -> Vec<usize> {
    let n = func.blocks.len();
    let mut visited = vec![false; n];
    let mut post = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    if n > 0 {
        visited[0] = true;
        stack.push((0, 0));
    }
    while let Some(top) = stack.last_mut() {
        let (block, next) = *top;
        let succ = successors(&func.blocks[block].term);
        if let Some(&s) = succ.get(next) {
            top.1 += 1;
            if s < n && !visited[s] {
                visited[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(block);
            stack.pop();
        }
    }
    post.reverse();
    post
}

fn successors(term: &Terminator) -> Vec<usize> {
    match term {
        Terminator::Jump(b) => vec![b.0 as usize],
        Terminator::Branch {
            then_block,
            else_block,
            ..
        } => vec![then_block.0 as usize, else_block.0 as usize],
        Terminator::Return(_) => Vec::new(),
    }
}

/// The variable an instruction assigns.
fn destination(inst: &Inst) -> Option<Var> {
    match inst {
        Inst::Iconst { dst, .. }
        | Inst::Fconst { dst, .. }
        | Inst::Copy { dst, .. }
        | Inst::Unary { dst, .. }
        | Inst::Binary { dst, .. }
        | Inst::Icmp { dst, .. }
        | Inst::Fcmp { dst, .. }
        | Inst::Select { dst, .. }
        | Inst::Convert { dst, .. }
        | Inst::Load { dst, .. }
        | Inst::StackAddr { dst, .. }
        | Inst::PtrAdd { dst, .. }
        | Inst::SymbolAddr { dst, .. } => Some(*dst),
        Inst::Call { dst, .. } => *dst,
        Inst::Store { .. } | Inst::Source(_) => None,
    }
}

/// How an instruction or terminator uses a variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// As a branch or select condition.
    Cond,
    /// As the operand of `inttoptr`.
    IntToPtr,
    /// As an operand of an `iadd` defining this variable.
    Iadd(Var),
    /// Any other use.
    Other,
}

fn uses(inst: &Inst, mut f: impl FnMut(Var, Use)) {
    match inst {
        Inst::Copy { src, .. } | Inst::Unary { src, .. } => f(*src, Use::Other),
        Inst::Binary { dst, op, a, b } => {
            let u = if *op == BinOp::Iadd {
                Use::Iadd(*dst)
            } else {
                Use::Other
            };
            f(*a, u);
            f(*b, u);
        }
        Inst::Icmp { a, b, .. } | Inst::Fcmp { a, b, .. } => {
            f(*a, Use::Other);
            f(*b, Use::Other);
        }
        Inst::Select { cond, a, b, .. } => {
            f(*cond, Use::Cond);
            f(*a, Use::Other);
            f(*b, Use::Other);
        }
        Inst::Convert { op, src, .. } => f(
            *src,
            if *op == ConvOp::IntToPtr {
                Use::IntToPtr
            } else {
                Use::Other
            },
        ),
        Inst::Load { addr, .. } => f(*addr, Use::Other),
        Inst::PtrAdd { ptr, offset, .. } => {
            f(*ptr, Use::Other);
            f(*offset, Use::Other);
        }
        Inst::Store { addr, value, .. } => {
            f(*addr, Use::Other);
            f(*value, Use::Other);
        }
        Inst::Call { callee, args, .. } => {
            if let Callee::Indirect(target, _) = callee {
                f(*target, Use::Other);
            }
            for a in args {
                f(*a, Use::Other);
            }
        }
        Inst::Iconst { .. }
        | Inst::Fconst { .. }
        | Inst::StackAddr { .. }
        | Inst::SymbolAddr { .. }
        | Inst::Source(_) => {}
    }
}

/// What the translator needs to know about each variable before translating.
struct VarInfo {
    /// Lives in a stack home (mutable, or assigned more than once).
    home: Vec<bool>,
    /// A single-assignment `i64` that is `ptrtoint(p)` or a tracked value plus an offset.
    tracked: Vec<bool>,
    /// A tracked value only ever converted back to a pointer (directly or through tracked
    /// adds): it is never materialized as an integer.
    virtual_int: Vec<bool>,
    /// A single-assignment comparison only used as a condition: kept as an `i1`.
    bool_only: Vec<bool>,
}

fn analyze(func: &lir::Function) -> Result<VarInfo, LlvmError> {
    let n = func.vars.len();
    let mut defs = vec![0u32; n];
    let mut def_inst: Vec<Option<&Inst>> = vec![None; n];
    for d in defs.iter_mut().take(func.sig.params.len()) {
        *d += 1;
    }
    let check = |v: Var| {
        if (v.0 as usize) < n {
            Ok(())
        } else {
            Err(malformed(func, format!("undeclared variable v{}", v.0)))
        }
    };
    let mut all_uses: Vec<Vec<Use>> = vec![Vec::new(); n];
    let mut bad = None;
    for block in &func.blocks {
        for inst in &block.insts {
            if let Some(d) = destination(inst) {
                check(d)?;
                defs[d.0 as usize] += 1;
                def_inst[d.0 as usize] = Some(inst);
            }
            uses(inst, |v, u| match all_uses.get_mut(v.0 as usize) {
                Some(list) => list.push(u),
                None => bad = Some(v),
            });
        }
        match &block.term {
            Terminator::Branch { cond, .. } => {
                check(*cond)?;
                all_uses[cond.0 as usize].push(Use::Cond);
            }
            Terminator::Return(Some(v)) => {
                check(*v)?;
                all_uses[v.0 as usize].push(Use::Other);
            }
            _ => {}
        }
    }
    if let Some(v) = bad {
        check(v)?;
    }
    let home: Vec<bool> = (0..n)
        .map(|i| func.vars[i].mutable || defs[i] > 1)
        .collect();
    let single = |v: Var| defs[v.0 as usize] == 1 && !home[v.0 as usize];

    // Tracked pointer integers, in dependency order (operands are defined before use).
    let mut tracked = vec![false; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if tracked[i] || !single(Var(i as u32)) || func.vars[i].ty != Ty::I64 {
                continue;
            }
            let t = match def_inst[i] {
                Some(Inst::Convert {
                    op: ConvOp::PtrToInt,
                    ..
                }) => true,
                Some(Inst::Binary {
                    op: BinOp::Iadd,
                    a,
                    b,
                    ..
                }) => tracked[a.0 as usize] != tracked[b.0 as usize],
                _ => false,
            };
            if t {
                tracked[i] = true;
                changed = true;
            }
        }
    }
    let mut virtual_int = tracked.clone();
    changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if virtual_int[i]
                && !all_uses[i].iter().all(|u| match u {
                    Use::IntToPtr => true,
                    Use::Iadd(dst) => virtual_int[dst.0 as usize],
                    _ => false,
                })
            {
                virtual_int[i] = false;
                changed = true;
            }
        }
    }
    let bool_only = (0..n)
        .map(|i| {
            single(Var(i as u32))
                && matches!(def_inst[i], Some(Inst::Icmp { .. } | Inst::Fcmp { .. }))
                && all_uses[i].iter().all(|u| *u == Use::Cond)
        })
        .collect();
    Ok(VarInfo {
        home,
        tracked,
        virtual_int,
        bool_only,
    })
}

struct FunctionTranslator<'a, 'm, 'ctx> {
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
    fn new(m: &'a ModuleTranslator<'m, 'ctx>, index: usize) -> Result<Self, LlvmError> {
        let func = &m.lir.functions[index];
        let n = func.vars.len();
        let info = analyze(func)?;
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

    fn translate(mut self) -> Result<(), LlvmError> {
        let func = self.func;
        if func.blocks.is_empty() {
            return Err(malformed(func, "no blocks"));
        }
        if func.vars.len() < func.sig.params.len() {
            return Err(malformed(func, "fewer variables than parameters"));
        }
        let order = reverse_postorder(func);
        let mut reachable = vec![false; func.blocks.len()];
        for &b in &order {
            reachable[b] = true;
        }
        let entry_has_preds = order
            .iter()
            .any(|&b| successors(&func.blocks[b].term).contains(&0));

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
        for (i, &ty) in func.sig.params.iter().enumerate() {
            if func.vars[i].ty != ty {
                return Err(malformed(
                    func,
                    format!("parameter v{i} has the wrong type"),
                ));
            }
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
        if i >= self.values.len() {
            return Err(malformed(self.func, format!("undeclared variable v{i}")));
        }
        if let Some(home) = self.homes[i] {
            let name = self.value_name(v);
            return Ok(self.b.build_load(self.lty(v), home, &name)?);
        }
        self.values[i].ok_or_else(|| {
            malformed(
                self.func,
                format!("v{i} is used where its single assignment does not dominate the use"),
            )
        })
    }

    fn def(&mut self, v: Var, value: BasicValueEnum<'ctx>) -> Result<(), LlvmError> {
        let i = v.0 as usize;
        if value.get_type() != self.lty(v) {
            return Err(malformed(
                self.func,
                format!(
                    "v{i} of type {} is assigned a value of another type",
                    self.func.ty(v)
                ),
            ));
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
            _ => Err(malformed(self.func, format!("v{} is not an integer", v.0))),
        }
    }

    /// A pointer operand (integers converted with `inttoptr`).
    fn get_ptr(&mut self, v: Var) -> Result<PointerValue<'ctx>, LlvmError> {
        match self.get(v)? {
            BasicValueEnum::PointerValue(p) => Ok(p),
            BasicValueEnum::IntValue(x) => Ok(self.b.build_int_to_ptr(x, self.m.ptr, "")?),
            _ => Err(malformed(self.func, format!("v{} is not a pointer", v.0))),
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

    fn inst(&mut self, inst: &Inst, bb: BasicBlock<'ctx>) -> Result<(), LlvmError> {
        let ctx = self.m.ctx;
        match inst {
            Inst::Source(i) => {
                if (*i as usize) >= self.func.sources.len() {
                    return Err(malformed(self.func, format!("no source item {i}")));
                }
                if self.m.annotate {
                    self.markers.push((bb, bb.get_last_instruction(), *i));
                }
            }
            Inst::Iconst { dst, value } => {
                let v: BasicValueEnum<'ctx> = match self.func.ty(*dst) {
                    Ty::Ptr if *value == 0 => self.m.ptr.const_null().into(),
                    Ty::Ptr => ctx
                        .i64_type()
                        .const_int(*value as u64, false)
                        .const_to_pointer(self.m.ptr)
                        .into(),
                    ty if ty.is_int() => self
                        .m
                        .ty(ty)
                        .into_int_type()
                        .const_int(*value as u64, false)
                        .into(),
                    _ => return Err(malformed(self.func, "iconst into a float variable")),
                };
                self.def(*dst, v)?;
            }
            Inst::Fconst { dst, bits } => {
                let v = match self.func.ty(*dst) {
                    Ty::F32 => ctx.f32_type().const_float(f64::from_bits(*bits)),
                    Ty::F64 => ctx.f64_type().const_float(f64::from_bits(*bits)),
                    _ => return Err(malformed(self.func, "fconst into a non-float variable")),
                };
                self.def(*dst, v.into())?;
            }
            Inst::Copy { dst, src } => {
                let v = self.get(*src)?;
                if !self.is_home(*dst)
                    && let Some(&c) = self.bools.get(src)
                {
                    self.bools.insert(*dst, c);
                }
                self.def(*dst, v)?;
            }
            Inst::Unary { dst, op, src } => {
                let name = self.value_name(*dst);
                let v: BasicValueEnum<'ctx> = match op {
                    UnOp::Ineg => {
                        let x = self.get_int(*src)?;
                        let r = self.b.build_int_neg(x, &name)?;
                        self.int_result(*dst, r)?
                    }
                    UnOp::Bnot => {
                        let x = self.get_int(*src)?;
                        let r = self.b.build_not(x, &name)?;
                        self.int_result(*dst, r)?
                    }
                    UnOp::Fneg => {
                        let x = self.get(*src)?.into_float_value();
                        self.b.build_float_neg(x, &name)?.into()
                    }
                };
                self.def(*dst, v)?;
            }
            Inst::Binary { dst, op, a, b } => self.binary(*dst, *op, *a, *b)?,
            Inst::Icmp { dst, cc, a, b } => {
                let pred = match cc {
                    IntCC::Eq => IntPredicate::EQ,
                    IntCC::Ne => IntPredicate::NE,
                    IntCC::Slt => IntPredicate::SLT,
                    IntCC::Sle => IntPredicate::SLE,
                    IntCC::Sgt => IntPredicate::SGT,
                    IntCC::Sge => IntPredicate::SGE,
                    IntCC::Ult => IntPredicate::ULT,
                    IntCC::Ule => IntPredicate::ULE,
                    IntCC::Ugt => IntPredicate::UGT,
                    IntCC::Uge => IntPredicate::UGE,
                };
                let (x, y) = (self.get(*a)?, self.get(*b)?);
                let name = self.name(|| format!("v{}.c", dst.0));
                let c = match (x, y) {
                    (BasicValueEnum::PointerValue(x), BasicValueEnum::PointerValue(y)) => {
                        self.b.build_int_compare(pred, x, y, &name)?
                    }
                    (BasicValueEnum::IntValue(x), BasicValueEnum::IntValue(y)) => {
                        self.b.build_int_compare(pred, x, y, &name)?
                    }
                    _ => return Err(malformed(self.func, "icmp of mismatched operands")),
                };
                self.def_bool(*dst, c)?;
            }
            Inst::Fcmp { dst, cc, a, b } => {
                let pred = match cc {
                    FloatCC::Eq => FloatPredicate::OEQ,
                    FloatCC::Ne => FloatPredicate::UNE,
                    FloatCC::Lt => FloatPredicate::OLT,
                    FloatCC::Le => FloatPredicate::OLE,
                    FloatCC::Gt => FloatPredicate::OGT,
                    FloatCC::Ge => FloatPredicate::OGE,
                };
                let x = self.get(*a)?.into_float_value();
                let y = self.get(*b)?.into_float_value();
                let name = self.name(|| format!("v{}.c", dst.0));
                let c = self.b.build_float_compare(pred, x, y, &name)?;
                self.def_bool(*dst, c)?;
            }
            Inst::Select { dst, cond, a, b } => {
                let c = self.cond(*cond)?;
                let (x, y) = (self.get(*a)?, self.get(*b)?);
                let name = self.value_name(*dst);
                let v = self.b.build_select(c, x, y, &name)?;
                self.def(*dst, v)?;
            }
            Inst::Convert { dst, op, src } => self.convert(*dst, *op, *src)?,
            Inst::Load { dst, addr, offset } => {
                let p = self.address(*addr, *offset)?;
                let name = self.value_name(*dst);
                let v = self.b.build_load(self.lty(*dst), p, &name)?;
                // Lowered loads may be unaligned.
                set_alignment(v.as_instruction_value(), 1)?;
                self.def(*dst, v)?;
            }
            Inst::Store {
                addr,
                offset,
                value,
            } => {
                let x = self.get(*value)?;
                let p = self.address(*addr, *offset)?;
                let store = self.b.build_store(p, x)?;
                set_alignment(Some(store), 1)?;
            }
            Inst::StackAddr { dst, slot, offset } => {
                let base = *self
                    .slots
                    .get(slot.0 as usize)
                    .ok_or_else(|| malformed(self.func, format!("no stack slot {}", slot.0)))?;
                let p = self.offset_ptr(base, *offset)?;
                self.def(*dst, p.into())?;
            }
            Inst::SymbolAddr { dst, symbol } => {
                let p = self.m.symbol_ptr(*symbol);
                self.def(*dst, p.into())?;
            }
            Inst::PtrAdd { dst, ptr, offset } => {
                let base = self.get_ptr(*ptr)?;
                let off = self.get_int(*offset)?;
                let p = byte_offset(ctx, &self.b, base, off, "")?;
                self.def(*dst, p.into())?;
            }
            Inst::Call { dst, callee, args } => self.call(*dst, callee, args)?,
        }
        Ok(())
    }

    /// Defines a boolean from an `i1`, remembering the `i1` for branches and selects (and
    /// widening it to the `i8` of the lowered form only when something else uses it).
    fn def_bool(&mut self, dst: Var, c: IntValue<'ctx>) -> Result<(), LlvmError> {
        if !self.is_home(dst) {
            self.bools.insert(dst, c);
        }
        if self.info.bool_only[dst.0 as usize] {
            return Ok(());
        }
        let name = self.value_name(dst);
        let v = self.b.build_int_z_extend(c, self.m.ctx.i8_type(), &name)?;
        self.def(dst, v.into())
    }

    fn binary(&mut self, dst: Var, op: BinOp, a: Var, b: Var) -> Result<(), LlvmError> {
        if op == BinOp::Iadd && self.info.tracked[dst.0 as usize] {
            self.track_ptr_add(dst, a, b)?;
            if self.info.virtual_int[dst.0 as usize] {
                return Ok(());
            }
        }
        let name = self.value_name(dst);
        let int_op = match op {
            BinOp::Iadd => Some(InstructionOpcode::Add),
            BinOp::Isub => Some(InstructionOpcode::Sub),
            BinOp::Imul => Some(InstructionOpcode::Mul),
            BinOp::Sdiv => Some(InstructionOpcode::SDiv),
            BinOp::Udiv => Some(InstructionOpcode::UDiv),
            BinOp::Srem => Some(InstructionOpcode::SRem),
            BinOp::Urem => Some(InstructionOpcode::URem),
            BinOp::And => Some(InstructionOpcode::And),
            BinOp::Or => Some(InstructionOpcode::Or),
            BinOp::Xor => Some(InstructionOpcode::Xor),
            BinOp::Shl => Some(InstructionOpcode::Shl),
            BinOp::Sshr => Some(InstructionOpcode::AShr),
            BinOp::Ushr => Some(InstructionOpcode::LShr),
            _ => None,
        };
        let int_intrinsic = match op {
            BinOp::Smin => Some("llvm.smin"),
            BinOp::Smax => Some("llvm.smax"),
            BinOp::Umin => Some("llvm.umin"),
            BinOp::Umax => Some("llvm.umax"),
            _ => None,
        };
        let v: BasicValueEnum<'ctx> = if let Some(opcode) = int_op {
            let (x, y) = (self.get_int(a)?, self.get_int(b)?);
            let r = self.b.build_binop(opcode, x, y, &name)?.into_int_value();
            self.int_result(dst, r)?
        } else if let Some(intrinsic) = int_intrinsic {
            let (x, y) = (self.get_int(a)?, self.get_int(b)?);
            let r = self
                .intrinsic(
                    intrinsic,
                    &[x.get_type().into()],
                    &[x.into(), y.into()],
                    &name,
                )?
                .into_int_value();
            self.int_result(dst, r)?
        } else {
            let x = self.get(a)?.into_float_value();
            let y = self.get(b)?.into_float_value();
            let opcode = match op {
                BinOp::Fadd => Some(InstructionOpcode::FAdd),
                BinOp::Fsub => Some(InstructionOpcode::FSub),
                BinOp::Fmul => Some(InstructionOpcode::FMul),
                BinOp::Fdiv => Some(InstructionOpcode::FDiv),
                _ => None,
            };
            match opcode {
                Some(opcode) => self.b.build_binop(opcode, x, y, &name)?,
                None => {
                    // NaN-propagating, -0 < +0: exactly `llvm.minimum` / `llvm.maximum`.
                    let f = if op == BinOp::Fmin {
                        "llvm.minimum"
                    } else {
                        "llvm.maximum"
                    };
                    self.intrinsic(f, &[x.get_type().into()], &[x.into(), y.into()], &name)?
                }
            }
        };
        self.def(dst, v)
    }

    /// Records `dst = ptrtoint(base) + offset` for an add of a tracked value and an offset.
    fn track_ptr_add(&mut self, dst: Var, a: Var, b: Var) -> Result<(), LlvmError> {
        let (tracked, other) = if self.info.tracked[a.0 as usize] {
            (a, b)
        } else {
            (b, a)
        };
        let (base, old) = *self.ptr_ints.get(&tracked).ok_or_else(|| {
            malformed(
                self.func,
                format!("v{} is used before its definition", tracked.0),
            )
        })?;
        let add = self.get_int(other)?;
        let offset = match old {
            None => add,
            Some(o) => self.b.build_int_add(o, add, "")?,
        };
        self.ptr_ints.insert(dst, (base, Some(offset)));
        Ok(())
    }

    fn convert(&mut self, dst: Var, op: ConvOp, src: Var) -> Result<(), LlvmError> {
        let to = self.func.ty(dst);
        let from = self.func.ty(src);
        let to_ty = self.m.ty(to);
        let name = self.value_name(dst);
        let cast =
            |s: &mut Self, opcode: InstructionOpcode| -> Result<BasicValueEnum<'ctx>, LlvmError> {
                let x = s.get(src)?;
                Ok(s.b.build_cast(opcode, x, to_ty, &name)?)
            };
        let v: BasicValueEnum<'ctx> = match op {
            _ if from == to
                && matches!(
                    op,
                    ConvOp::Sext | ConvOp::Uext | ConvOp::Trunc | ConvOp::Bitcast
                ) =>
            {
                self.get(src)?
            }
            ConvOp::Sext => cast(self, InstructionOpcode::SExt)?,
            ConvOp::Uext => cast(self, InstructionOpcode::ZExt)?,
            ConvOp::Trunc => cast(self, InstructionOpcode::Trunc)?,
            ConvOp::StoF => cast(self, InstructionOpcode::SIToFP)?,
            ConvOp::UtoF => cast(self, InstructionOpcode::UIToFP)?,
            ConvOp::Fpromote => cast(self, InstructionOpcode::FPExt)?,
            ConvOp::Fdemote => cast(self, InstructionOpcode::FPTrunc)?,
            ConvOp::FtoSsat | ConvOp::FtoUsat => {
                let f = if op == ConvOp::FtoSsat {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let x = self.get(src)?;
                self.intrinsic(f, &[to_ty, x.get_type()], &[x], &name)?
            }
            ConvOp::PtrToInt => {
                let p = self.get_ptr(src)?;
                if self.info.tracked[dst.0 as usize] {
                    self.ptr_ints.insert(dst, (p, None));
                    if self.info.virtual_int[dst.0 as usize] {
                        return Ok(());
                    }
                }
                self.b
                    .build_ptr_to_int(p, to_ty.into_int_type(), &name)?
                    .into()
            }
            ConvOp::IntToPtr => {
                let tracked = if self.info.tracked[src.0 as usize] {
                    Some(*self.ptr_ints.get(&src).ok_or_else(|| {
                        malformed(
                            self.func,
                            format!("v{} is used before its definition", src.0),
                        )
                    })?)
                } else {
                    None
                };
                match tracked {
                    Some((base, None)) => base.into(),
                    // The same address as `inttoptr(ptrtoint(base) + offset)`.
                    Some((base, Some(offset))) => {
                        byte_offset(self.m.ctx, &self.b, base, offset, &name)?.into()
                    }
                    None => {
                        let x = self.get_int(src)?;
                        self.b.build_int_to_ptr(x, self.m.ptr, &name)?.into()
                    }
                }
            }
            ConvOp::Bitcast => match (from, to) {
                (Ty::Ptr, _) => {
                    let p = self.get_ptr(src)?;
                    self.b
                        .build_ptr_to_int(p, to_ty.into_int_type(), &name)?
                        .into()
                }
                (_, Ty::Ptr) => {
                    let x = self.get_int(src)?;
                    self.b.build_int_to_ptr(x, self.m.ptr, &name)?.into()
                }
                _ => cast(self, InstructionOpcode::BitCast)?,
            },
        };
        self.def(dst, v)
    }

    fn call(&mut self, dst: Option<Var>, callee: &Callee, args: &[Var]) -> Result<(), LlvmError> {
        let sig = self.m.lir.callee_sig(callee);
        if sig.params.len() != args.len() {
            return Err(malformed(
                self.func,
                "call with the wrong number of arguments",
            ));
        }
        let mut argv: Vec<BasicMetadataValueEnum<'ctx>> = Vec::with_capacity(args.len());
        for &a in args {
            argv.push(self.get(a)?.into());
        }
        let name = match (dst, sig.ret) {
            (Some(d), Some(_)) => self.value_name(d),
            _ => String::new(),
        };
        let site: CallSiteValue<'ctx> = match callee {
            Callee::Import(id) => {
                let f = *self
                    .m
                    .imports
                    .get(id.0 as usize)
                    .ok_or_else(|| malformed(self.func, format!("no import {}", id.0)))?;
                self.b.build_call(f, &argv, &name)?
            }
            Callee::Func(id) => {
                let f = *self
                    .m
                    .functions
                    .get(id.0 as usize)
                    .ok_or_else(|| malformed(self.func, format!("no function {}", id.0)))?;
                self.b.build_call(f, &argv, &name)?
            }
            Callee::Indirect(target, sig) => {
                let p = self.get_ptr(*target)?;
                let ty = self.m.fn_type(sig);
                self.b.build_indirect_call(ty, p, &argv, &name)?
            }
        };
        for (loc, a) in self.m.ext_attributes(sig) {
            site.add_attribute(loc, a);
        }
        match (dst, site.try_as_basic_value()) {
            (Some(d), ValueKind::Basic(v)) => self.def(d, v),
            (None, _) => Ok(()),
            (Some(_), ValueKind::Instruction(_)) => {
                Err(malformed(self.func, "result of a call returning void"))
            }
        }
    }

    fn terminator(&mut self, term: &Terminator) -> Result<(), LlvmError> {
        let block = |s: &Self, b: lir::BlockId| {
            s.blocks
                .get(b.0 as usize)
                .copied()
                .flatten()
                .ok_or_else(|| malformed(s.func, format!("branch to missing block{}", b.0)))
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
                _ => return Err(malformed(self.func, "return does not match the signature")),
            },
        }
        Ok(())
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

/// `getelementptr i8, base, offset`: `base + offset` bytes.
fn byte_offset<'ctx>(
    ctx: &'ctx Context,
    b: &Builder<'ctx>,
    base: PointerValue<'ctx>,
    offset: IntValue<'ctx>,
    name: &str,
) -> Result<PointerValue<'ctx>, LlvmError> {
    // SAFETY: a `getelementptr` without `inbounds` is wrapping address arithmetic, defined for
    // any base and offset; one `i8` index into an `i8` element type is well-formed.
    Ok(unsafe { b.build_gep(ctx.i8_type(), base, &[offset], name) }?)
}

/// The constant `getelementptr i8, base, offset`.
fn const_byte_offset<'ctx>(
    ctx: &'ctx Context,
    base: PointerValue<'ctx>,
    offset: IntValue<'ctx>,
) -> PointerValue<'ctx> {
    // SAFETY: as in `byte_offset`, for a constant expression; nothing is dereferenced.
    unsafe { base.const_gep(ctx.i8_type(), &[offset]) }
}

fn set_alignment(inst: Option<InstructionValue<'_>>, align: u32) -> Result<(), LlvmError> {
    if let Some(i) = inst {
        i.set_alignment(align)
            .map_err(|e| LlvmError(format!("alignment: {e}")))?;
    }
    Ok(())
}
