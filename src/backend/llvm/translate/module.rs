//! The module-level part of the translation: declaring the module's imports, functions and data
//! objects with their attributes and linkage, then data initializers, aliases and `llvm.used`.
//! Function bodies are [`super::function`]'s.

use std::collections::HashSet;

use inkwell::AddressSpace;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::module::{Linkage as LlvmLinkage, Module};
use inkwell::targets::TargetMachine;
use inkwell::types::{
    AsTypeRef, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FunctionType, PointerType,
};
use inkwell::values::{AsValueRef, BasicValueEnum, FunctionValue, GlobalValue, PointerValue};

use super::address::const_byte_offset;
use crate::backend::llvm::error::LlvmError;
use crate::lir::{self, Ext, Linkage, Signature, Symbol, Ty};

/// The module being built, and what the function translators look up in it.
pub(super) struct ModuleTranslator<'a, 'ctx> {
    pub(super) ctx: &'ctx Context,
    pub(super) module: Module<'ctx>,
    pub(super) lir: &'a lir::Module,
    pub(super) annotate: bool,
    /// The `frame-pointer` attribute of every function: `all` or `none`.
    pub(super) frame_pointer: &'static str,
    pub(super) ptr: PointerType<'ctx>,
    pub(super) functions: Vec<FunctionValue<'ctx>>,
    pub(super) imports: Vec<FunctionValue<'ctx>>,
    pub(super) data: Vec<GlobalValue<'ctx>>,
    pub(super) symbols: HashSet<String>,
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

impl<'a, 'ctx> ModuleTranslator<'a, 'ctx> {
    /// An empty LLVM module of `ctx` named after `lir`, for `machine`'s target.
    pub(super) fn new(
        ctx: &'ctx Context,
        lir: &'a lir::Module,
        machine: &TargetMachine,
        annotate: bool,
        frame_pointers: bool,
    ) -> Self {
        let module = ctx.create_module(&lir.name);
        module.set_triple(&machine.get_triple());
        module.set_data_layout(&machine.get_target_data().get_data_layout());
        ModuleTranslator {
            ctx,
            module,
            lir,
            annotate,
            frame_pointer: if frame_pointers { "all" } else { "none" },
            ptr: ctx.ptr_type(AddressSpace::default()),
            functions: Vec::new(),
            imports: Vec::new(),
            data: Vec::new(),
            symbols: HashSet::new(),
        }
    }

    pub(super) fn ty(&self, ty: Ty) -> BasicTypeEnum<'ctx> {
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

    pub(super) fn fn_type(&self, sig: &Signature) -> FunctionType<'ctx> {
        let params: Vec<BasicMetadataTypeEnum<'ctx>> =
            sig.params.iter().map(|&t| self.ty(t).into()).collect();
        match sig.ret {
            Some(r) => self.ty(r).fn_type(&params, false),
            None => self.ctx.void_type().fn_type(&params, false),
        }
    }

    pub(super) fn enum_attr(&self, name: &str, value: u64) -> Attribute {
        self.ctx
            .create_enum_attribute(Attribute::get_named_enum_kind_id(name), value)
    }

    /// `signext` / `zeroext` attributes of a signature, for a declaration or a call site.
    pub(super) fn ext_attributes(&self, sig: &Signature) -> Vec<(AttributeLoc, Attribute)> {
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
    pub(super) fn claim_symbol(&mut self, name: &str) -> Result<(), LlvmError> {
        if name.is_empty() || name.starts_with("llvm.") || !self.symbols.insert(name.to_owned()) {
            return Err(LlvmError(format!(
                "module `{}`: symbol `{name}` is defined twice or reserved",
                self.lir.name
            )));
        }
        Ok(())
    }

    pub(super) fn declare(&mut self) -> Result<(), LlvmError> {
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
        // Functions off the success path (the cold error helpers, and the explain functions
        // only a failing call reaches) stay out of line and unoptimized: inlined into the fast
        // path, their frame (message parts, saved registers) would be set up on every call,
        // and optimizing them is compile time spent on an error path.
        let on_success_path = crate::lir::success_path::success_path_functions(self.lir);
        for (func, hot) in self.lir.functions.iter().zip(on_success_path) {
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
                self.ctx
                    .create_string_attribute("frame-pointer", self.frame_pointer),
            );
            f.add_attribute(fun, self.ctx.create_string_attribute("no-builtins", ""));
            if !hot {
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

    pub(super) fn symbol_ptr(&self, symbol: Symbol) -> PointerValue<'ctx> {
        match symbol {
            Symbol::Data(id) => self.data[id.0 as usize].as_pointer_value(),
            Symbol::Func(id) => self.functions[id.0 as usize]
                .as_global_value()
                .as_pointer_value(),
        }
    }

    pub(super) fn define_data(&mut self) -> Result<(), LlvmError> {
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

    pub(super) fn define_aliases(&mut self) -> Result<(), LlvmError> {
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
    pub(super) fn emit_used(&self) {
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
