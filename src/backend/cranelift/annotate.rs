//! CLIF dumps annotated with the host-IR item each part came from, written through
//! Cranelift's own `FuncWriter` / `decorate_function`.
//!
//! ```text
//! ; __tvm_ffi_add_one
//! function u0:0(i64, i64, i32, i64) -> i32 system_v {
//! ...
//! block1:
//!     ; check: add_one takes 2 argument(s)
//!     v4 = iconst.i32 2
//! ```

use std::collections::HashMap;
use std::fmt::Write;

use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::ir::entities::AnyEntity;
use cranelift_codegen::ir::{Block, ExternalName, Function, GlobalValueData, Inst, Value};
use cranelift_codegen::write::{FuncWriter, PlainWriter, decorate_function};

use super::translate::{Declared, SourceMarker};
use crate::lir;

/// Symbol names of Cranelift's user external names `(namespace, index)`: namespace 0 holds
/// functions (imports included), namespace 1 data objects.
pub type SymbolNames = HashMap<(u32, u32), String>;

struct CommentWriter<'a> {
    names: &'a SymbolNames,
    /// Comments printed before an instruction.
    before_inst: HashMap<Inst, Vec<String>>,
    /// Comments printed after a block header (markers at the end of an empty block).
    block_end: HashMap<Block, Vec<String>>,
}

impl CommentWriter<'_> {
    fn symbol_of(&self, func: &Function, name: &ExternalName) -> Option<&str> {
        let ExternalName::User(r) = name else {
            return None;
        };
        let user = func.params.user_named_funcs().get(*r)?;
        self.names
            .get(&(user.namespace, user.index))
            .map(String::as_str)
    }
}

impl FuncWriter for CommentWriter<'_> {
    fn write_entity_definition(
        &mut self,
        w: &mut dyn Write,
        func: &Function,
        entity: AnyEntity,
        value: &dyn std::fmt::Display,
    ) -> std::fmt::Result {
        let symbol = match entity {
            AnyEntity::GlobalValue(gv) => match &func.global_values[gv] {
                GlobalValueData::Symbol { name, .. } => self.symbol_of(func, name),
                _ => None,
            },
            AnyEntity::FuncRef(f) => self.symbol_of(func, &func.dfg.ext_funcs[f].name),
            _ => None,
        };
        match symbol {
            Some(s) => writeln!(w, "    {entity} = {value}  ; {s}"),
            None => writeln!(w, "    {entity} = {value}"),
        }
    }

    fn write_block_header(
        &mut self,
        w: &mut dyn Write,
        func: &Function,
        block: Block,
        indent: usize,
    ) -> std::fmt::Result {
        PlainWriter.write_block_header(w, func, block, indent)?;
        if let Some(comments) = self.block_end.get(&block) {
            for c in comments {
                writeln!(w, "{:indent$}; {c}", "")?;
            }
        }
        Ok(())
    }

    fn write_instruction(
        &mut self,
        w: &mut dyn Write,
        func: &Function,
        aliases: &SecondaryMap<Value, Vec<Value>>,
        inst: Inst,
        indent: usize,
    ) -> std::fmt::Result {
        if let Some(comments) = self.before_inst.get(&inst) {
            for c in comments {
                writeln!(w, "{:indent$}; {c}", "")?;
            }
        }
        PlainWriter.write_instruction(w, func, aliases, inst, indent)
    }
}

/// Appends `; <name>` and the annotated CLIF of `func` to `out`.
pub fn write_annotated(
    out: &mut String,
    names: &SymbolNames,
    name: &str,
    func: &Function,
    markers: &[SourceMarker],
) {
    let mut writer = CommentWriter {
        names,
        before_inst: HashMap::new(),
        block_end: HashMap::new(),
    };
    for m in markers {
        let next = match m.after {
            Some(i) => func.layout.next_inst(i),
            None => func.layout.first_inst(m.block),
        };
        match next {
            Some(inst) => writer
                .before_inst
                .entry(inst)
                .or_default()
                .push(m.text.clone()),
            None => writer
                .block_end
                .entry(m.block)
                .or_default()
                .push(m.text.clone()),
        }
    }
    let _ = writeln!(out, "; {name}");
    let _ = decorate_function(&mut writer, out, func);
    out.push('\n');
}

/// Names for the external names a module's functions refer to.
pub(super) fn symbol_names(module: &lir::Module, declared: &Declared) -> SymbolNames {
    use cranelift_codegen::entity::EntityRef;
    use cranelift_module::{DataId, FuncId};
    let mut names = SymbolNames::new();
    let funcs = module
        .functions
        .iter()
        .map(|f| &f.name)
        .zip(&declared.functions);
    let imports = module
        .imports
        .iter()
        .map(|i| &i.name)
        .zip(&declared.imports);
    for (name, id) in funcs.chain(imports) {
        names.insert((0, FuncId::index(*id) as u32), name.clone());
    }
    for (d, id) in module.data.iter().zip(&declared.data) {
        names.insert((1, DataId::index(*id) as u32), d.name.clone());
    }
    names
}
