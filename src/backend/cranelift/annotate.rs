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
use cranelift_codegen::ir::{Block, Function, Inst, Value};
use cranelift_codegen::write::{FuncWriter, PlainWriter, decorate_function};

use super::translate::SourceMarker;

struct CommentWriter {
    /// Comments printed before an instruction.
    before_inst: HashMap<Inst, Vec<String>>,
    /// Comments printed after a block header (markers at the end of an empty block).
    block_end: HashMap<Block, Vec<String>>,
}

impl FuncWriter for CommentWriter {
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
pub fn write_annotated(out: &mut String, name: &str, func: &Function, markers: &[SourceMarker]) {
    let mut writer = CommentWriter { before_inst: HashMap::new(), block_end: HashMap::new() };
    for m in markers {
        let next = match m.after {
            Some(i) => func.layout.next_inst(i),
            None => func.layout.first_inst(m.block),
        };
        match next {
            Some(inst) => writer.before_inst.entry(inst).or_default().push(m.text.clone()),
            None => writer.block_end.entry(m.block).or_default().push(m.text.clone()),
        }
    }
    let _ = writeln!(out, "; {name}");
    let _ = decorate_function(&mut writer, out, func);
    out.push('\n');
}
