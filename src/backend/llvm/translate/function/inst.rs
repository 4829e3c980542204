//! The translation of instructions: arithmetic, comparisons, conversions, memory, calls.

use super::*;

impl<'ctx> FunctionTranslator<'_, '_, 'ctx> {
    pub(super) fn inst(&mut self, inst: &Inst, bb: BasicBlock<'ctx>) -> Result<(), LlvmError> {
        let ctx = self.m.ctx;
        match inst {
            Inst::Source(i) => {
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
                    _ => broken(self.func, "iconst into a float variable"),
                };
                self.def(*dst, v)?;
            }
            Inst::Fconst { dst, bits } => {
                let v = match self.func.ty(*dst) {
                    Ty::F32 => ctx.f32_type().const_float(f64::from_bits(*bits)),
                    Ty::F64 => ctx.f64_type().const_float(f64::from_bits(*bits)),
                    _ => broken(self.func, "fconst into a non-float variable"),
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
                    _ => broken(self.func, "icmp of mismatched operands"),
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
            Inst::AtomicCas {
                dst,
                addr,
                expected,
                replacement,
            } => {
                let p = self.address(*addr, 0)?;
                let (e, x) = (self.get_int(*expected)?, self.get_int(*replacement)?);
                let seq = inkwell::AtomicOrdering::SequentiallyConsistent;
                let pair = self.b.build_cmpxchg(p, e, x, seq, seq)?;
                let name = self.value_name(*dst);
                let old = self.b.build_extract_value(pair, 0, &name)?;
                self.def(*dst, old)?;
            }
            Inst::StackAddr { dst, slot, offset } => {
                let base = self.slots[slot.0 as usize];
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
    pub(super) fn def_bool(&mut self, dst: Var, c: IntValue<'ctx>) -> Result<(), LlvmError> {
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

    pub(super) fn binary(&mut self, dst: Var, op: BinOp, a: Var, b: Var) -> Result<(), LlvmError> {
        if op == BinOp::Iadd && self.info.tracked[dst.0 as usize] {
            self.track_ptr_add(dst, a, b)?;
            if self.info.virtual_int[dst.0 as usize] {
                return Ok(());
            }
        }
        if matches!(op, BinOp::And | BinOp::Or)
            && let (Some(&x), Some(&y)) = (self.bools.get(&a), self.bools.get(&b))
            && !self.is_home(a)
            && !self.is_home(b)
        {
            return self.logical(dst, op == BinOp::And, x, y);
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
                None => self.float_min_max(op == BinOp::Fmin, x, y, &name)?,
            }
        };
        self.def(dst, v)
    }

    /// `a && b` (`and`) or `a || b` of two conditions, as the `select` LLVM reads as a
    /// short-circuit: the order of the two tests is kept through to the branches (an `and` /
    /// `or` of `i1`s is commutative, and LLVM may test either first or combine both with
    /// `setcc`).
    fn logical(
        &mut self,
        dst: Var,
        and: bool,
        a: IntValue<'ctx>,
        b: IntValue<'ctx>,
    ) -> Result<(), LlvmError> {
        let name = self.name(|| format!("v{}.c", dst.0));
        let (t, f) = if and {
            (b, self.m.ctx.bool_type().const_zero())
        } else {
            (self.m.ctx.bool_type().const_all_ones(), b)
        };
        let c = self.b.build_select(a, t, f, &name)?.into_int_value();
        self.def_bool(dst, c)
    }

    /// `min(x, y)` (`min`) or `max(x, y)` of floats: NaN-propagating, with -0 < +0, the
    /// semantics of `llvm.minimum` / `llvm.maximum`, written as comparisons and selects: LLVM
    /// 19 optimizes chains of those intrinsics on x86 into code that returns the other operand
    /// for a signaling NaN (`min(x, min(y, sNaN))` gave `x` at -O3, where the lowered form,
    /// Cranelift and the baseline tier give NaN), and cannot quiet one first
    /// (`llvm.canonicalize` has no x86 lowering).
    fn float_min_max(
        &mut self,
        min: bool,
        x: inkwell::values::FloatValue<'ctx>,
        y: inkwell::values::FloatValue<'ctx>,
        name: &str,
    ) -> Result<BasicValueEnum<'ctx>, LlvmError> {
        let bits = if x.get_type() == self.m.ctx.f32_type() {
            self.m.ctx.i32_type()
        } else {
            self.m.ctx.i64_type()
        };
        let x_nan = self.b.build_float_compare(FloatPredicate::UNO, x, x, "")?;
        let y_nan = self.b.build_float_compare(FloatPredicate::UNO, y, y, "")?;
        let (keep_x, keep_y) = if min {
            (FloatPredicate::OLT, FloatPredicate::OGT)
        } else {
            (FloatPredicate::OGT, FloatPredicate::OLT)
        };
        let x_wins = self.b.build_float_compare(keep_x, x, y, "")?;
        let y_wins = self.b.build_float_compare(keep_y, x, y, "")?;
        // Equal values: the same bits, or +0 and -0, whose sign bits `or` (min: -0) or `and`
        // (max: +0) combine.
        let xb = self.b.build_bit_cast(x, bits, "")?.into_int_value();
        let yb = self.b.build_bit_cast(y, bits, "")?.into_int_value();
        let tied = if min {
            self.b.build_or(xb, yb, "")?
        } else {
            self.b.build_and(xb, yb, "")?
        };
        let tied = self.b.build_bit_cast(tied, x.get_type(), "")?;
        let r = self.b.build_select(y_wins, y.into(), tied, "")?;
        let r = self.b.build_select(x_wins, x.into(), r, "")?;
        let r = self.b.build_select(y_nan, y.into(), r, "")?;
        Ok(self.b.build_select(x_nan, x.into(), r, name)?)
    }

    /// Records `dst = ptrtoint(base) + offset` for an add of a tracked value and an offset.
    pub(super) fn track_ptr_add(&mut self, dst: Var, a: Var, b: Var) -> Result<(), LlvmError> {
        let (tracked, other) = if self.info.tracked[a.0 as usize] {
            (a, b)
        } else {
            (b, a)
        };
        let (base, old) = *self.ptr_ints.get(&tracked).unwrap_or_else(|| {
            broken(
                self.func,
                format!("v{} is used before its definition", tracked.0),
            )
        });
        let add = self.get_int(other)?;
        let offset = match old {
            None => add,
            Some(o) => self.b.build_int_add(o, add, "")?,
        };
        self.ptr_ints.insert(dst, (base, Some(offset)));
        Ok(())
    }

    pub(super) fn convert(&mut self, dst: Var, op: ConvOp, src: Var) -> Result<(), LlvmError> {
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
                    Some(*self.ptr_ints.get(&src).unwrap_or_else(|| {
                        broken(
                            self.func,
                            format!("v{} is used before its definition", src.0),
                        )
                    }))
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

    pub(super) fn call(
        &mut self,
        dst: Option<Var>,
        callee: &Callee,
        args: &[Var],
    ) -> Result<(), LlvmError> {
        let sig = self.m.lir.callee_sig(callee);
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
                let f = self.m.imports[id.0 as usize];
                self.b.build_call(f, &argv, &name)?
            }
            Callee::Func(id) => {
                let f = self.m.functions[id.0 as usize];
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
                broken(self.func, "result of a call returning void")
            }
        }
    }
}
