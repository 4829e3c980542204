//! Text dump of the lowered form, annotated with the host-IR item each part came from.

use std::fmt::{self, Write as _};

use super::{Block, Callee, Data, Function, Inst, Linkage, Module, Signature, Symbol, Terminator};

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "; lowered module {}", self.name)?;
        for import in &self.imports {
            writeln!(f, "import {}{}", import.name, SigDisplay(&import.sig))?;
        }
        for data in &self.data {
            write_data(f, self, data)?;
        }
        for (alias, target) in &self.aliases {
            writeln!(f, "alias {alias} = {}", self.func(*target).name)?;
        }
        for func in &self.functions {
            writeln!(f)?;
            write_function(f, self, func)?;
        }
        Ok(())
    }
}

struct SigDisplay<'a>(&'a Signature);

impl fmt::Display for SigDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        for (i, p) in self.0.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        f.write_char(')')?;
        if let Some(r) = self.0.ret {
            write!(f, " -> {r}")?;
        }
        Ok(())
    }
}

fn linkage(l: Linkage) -> &'static str {
    match l {
        Linkage::Export => "export ",
        Linkage::Local => "",
    }
}

fn symbol_name(m: &Module, s: Symbol) -> &str {
    match s {
        Symbol::Data(d) => &m.data_object(d).name,
        Symbol::Func(id) => &m.func(id).name,
    }
}

fn write_data(f: &mut fmt::Formatter<'_>, m: &Module, d: &Data) -> fmt::Result {
    let kind = if d.writable { "data" } else { "rodata" };
    write!(
        f,
        "{}{kind} {} align {}",
        linkage(d.linkage),
        d.name,
        d.align
    )?;
    if let Some(section) = &d.section {
        write!(f, " section {section:?}")?;
    }
    if d.contents.iter().all(|b| *b == 0) {
        write!(f, " = zeroes({})", d.contents.len())?;
    } else if let Ok(text) = std::str::from_utf8(&d.contents) {
        write!(f, " = {text:?}")?;
    } else {
        write!(f, " = bytes({})", d.contents.len())?;
    }
    for r in &d.relocs {
        write!(
            f,
            " [+{}: &{}+{}]",
            r.offset,
            symbol_name(m, r.symbol),
            r.addend
        )?;
    }
    writeln!(f)
}

fn write_function(f: &mut fmt::Formatter<'_>, m: &Module, func: &Function) -> fmt::Result {
    write!(
        f,
        "function {}{}{}(",
        if func.cold { "cold " } else { "" },
        linkage(func.linkage),
        func.name
    )?;
    for (i, p) in func.sig.params.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "v{i}: {p}")?;
    }
    f.write_char(')')?;
    if let Some(r) = func.sig.ret {
        write!(f, " -> {r}")?;
    }
    writeln!(f, " {{")?;
    for (i, s) in func.slots.iter().enumerate() {
        writeln!(f, "    ss{i} = stack {} align {}", s.size, s.align)?;
    }
    for (i, b) in func.blocks.iter().enumerate() {
        write_block(f, m, func, i, b)?;
    }
    writeln!(f, "}}")
}

fn write_block(
    f: &mut fmt::Formatter<'_>,
    m: &Module,
    func: &Function,
    i: usize,
    b: &Block,
) -> fmt::Result {
    writeln!(f, "block{i}{}:", if b.cold { " (cold)" } else { "" })?;
    for inst in &b.insts {
        write_inst(f, m, func, inst)?;
    }
    match &b.term {
        Terminator::Jump(t) => writeln!(f, "    jump block{}", t.0),
        Terminator::Branch {
            cond,
            then_block,
            else_block,
        } => {
            writeln!(
                f,
                "    brif v{}, block{}, block{}",
                cond.0, then_block.0, else_block.0
            )
        }
        Terminator::Return(Some(v)) => writeln!(f, "    return v{}", v.0),
        Terminator::Return(None) => writeln!(f, "    return"),
    }
}

fn write_inst(f: &mut fmt::Formatter<'_>, m: &Module, func: &Function, inst: &Inst) -> fmt::Result {
    let ty = |v: super::Var| func.ty(v);
    match inst {
        Inst::Source(i) => writeln!(f, "    ; {}", func.sources[*i as usize]),
        Inst::Iconst { dst, value } => writeln!(f, "    v{} = iconst.{} {value}", dst.0, ty(*dst)),
        Inst::Fconst { dst, bits } => {
            writeln!(
                f,
                "    v{} = fconst.{} {:?}",
                dst.0,
                ty(*dst),
                f64::from_bits(*bits)
            )
        }
        Inst::Copy { dst, src } => writeln!(f, "    v{} = v{}", dst.0, src.0),
        Inst::Unary { dst, op, src } => {
            writeln!(
                f,
                "    v{} = {} v{}",
                dst.0,
                format!("{op:?}").to_lowercase(),
                src.0
            )
        }
        Inst::Binary { dst, op, a, b } => writeln!(
            f,
            "    v{} = {}.{} v{}, v{}",
            dst.0,
            format!("{op:?}").to_lowercase(),
            ty(*dst),
            a.0,
            b.0
        ),
        Inst::Icmp { dst, cc, a, b } => writeln!(
            f,
            "    v{} = icmp {} v{}, v{}",
            dst.0,
            format!("{cc:?}").to_lowercase(),
            a.0,
            b.0
        ),
        Inst::Fcmp { dst, cc, a, b } => writeln!(
            f,
            "    v{} = fcmp {} v{}, v{}",
            dst.0,
            format!("{cc:?}").to_lowercase(),
            a.0,
            b.0
        ),
        Inst::Select { dst, cond, a, b } => {
            writeln!(f, "    v{} = select v{}, v{}, v{}", dst.0, cond.0, a.0, b.0)
        }
        Inst::Convert { dst, op, src } => writeln!(
            f,
            "    v{} = {}.{} v{}",
            dst.0,
            format!("{op:?}").to_lowercase(),
            ty(*dst),
            src.0
        ),
        Inst::Load { dst, addr, offset } => {
            writeln!(f, "    v{} = load.{} v{}+{offset}", dst.0, ty(*dst), addr.0)
        }
        Inst::Store {
            addr,
            offset,
            value,
        } => {
            writeln!(
                f,
                "    store.{} v{}+{offset}, v{}",
                ty(*value),
                addr.0,
                value.0
            )
        }
        Inst::AtomicCas {
            dst,
            addr,
            expected,
            replacement,
        } => writeln!(
            f,
            "    v{} = atomic_cas.i64 v{}, v{}, v{}",
            dst.0, addr.0, expected.0, replacement.0
        ),
        Inst::PtrAdd { dst, ptr, offset } => {
            writeln!(f, "    v{} = ptr_add v{}, v{}", dst.0, ptr.0, offset.0)
        }
        Inst::StackAddr { dst, slot, offset } => {
            writeln!(f, "    v{} = stack_addr ss{}+{offset}", dst.0, slot.0)
        }
        Inst::SymbolAddr { dst, symbol } => {
            writeln!(
                f,
                "    v{} = symbol_addr {}",
                dst.0,
                symbol_name(m, *symbol)
            )
        }
        Inst::Call { dst, callee, args } => {
            f.write_str("    ")?;
            if let Some(d) = dst {
                write!(f, "v{} = ", d.0)?;
            }
            match callee {
                Callee::Import(id) => write!(f, "call {}", m.import(*id).name)?,
                Callee::Func(id) => write!(f, "call {}", m.func(*id).name)?,
                Callee::Indirect(v, sig) => write!(f, "call_indirect v{}{}", v.0, SigDisplay(sig))?,
            }
            f.write_char('(')?;
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "v{}", a.0)?;
            }
            writeln!(f, ")")
        }
    }
}
