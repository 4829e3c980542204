//! Reading the relocatable object a backend wrote: which sections are placed where in the
//! library, which symbols it defines, exports and imports, and the relocations to apply.
//!
//! Anything outside the small set our backends emit is refused with a message naming it.

use cranelift_object::object::elf;
use cranelift_object::object::read::elf::{ElfFile64, FileHeader, SectionHeader, Sym};
use cranelift_object::object::{
    self, Endianness, Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationFlags,
    RelocationTarget, SymbolIndex,
};

use super::out::Out;
use super::relocs::{Reloc, classify};
use crate::target::Arch;

/// An output section's bytes as gathered from the object's sections.
#[derive(Debug, Default)]
pub(super) struct Contents {
    /// The bytes (for `.bss`, zeros that are never written to the file).
    pub(super) bytes: Vec<u8>,
    /// The largest alignment of an input section.
    pub(super) align: u64,
}

/// Where a symbol's address comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// At this offset in an output section.
    Local(Out, u64),
    /// Left for the dynamic loader (an undefined symbol).
    Import,
    /// Defined where the library has no bytes (a debug section, an absolute value): a
    /// relocation against it is refused.
    Unplaced(&'static str),
}

/// A symbol of the object.
#[derive(Clone, Debug)]
pub(super) struct Symbol {
    /// Its name (empty for section symbols).
    pub(super) name: String,
    /// Where it lives.
    pub(super) place: Place,
    /// Defined, global or weak, default visibility: it goes into `.dynsym`.
    pub(super) exported: bool,
    /// `STB_LOCAL`, `STB_GLOBAL` or `STB_WEAK`.
    pub(super) binding: u8,
    /// `st_other` (the visibility).
    pub(super) other: u8,
    /// `STT_FUNC`, `STT_OBJECT`, ... as in the object.
    pub(super) kind: u8,
    /// `st_size`.
    pub(super) size: u64,
}

/// The object, read.
#[derive(Debug)]
pub(super) struct Input {
    /// The machine it is for.
    pub(super) arch: Arch,
    /// Output sections' contents, indexed like [`Out::ALL`].
    pub(super) contents: [Contents; 6],
    /// Symbols, indexed like the object's symbol table.
    pub(super) symbols: Vec<Symbol>,
    /// Relocations to apply, with their places as output offsets.
    pub(super) relocs: Vec<Reloc>,
}

impl Input {
    /// An output section's contents.
    pub(super) fn contents(&self, out: Out) -> &Contents {
        &self.contents[out as usize]
    }
}

type Elf<'data> = ElfFile64<'data, Endianness, &'data [u8]>;

/// The largest section alignment accepted (a page of 64 KiB).
const MAX_ALIGN: u64 = 1 << 16;

/// The largest section accepted (far above what a module of ours needs; a bound on memory).
const MAX_SIZE: u64 = 1 << 30;

/// Reads `bytes`, a relocatable ELF object for x86-64 or AArch64.
pub(super) fn read(bytes: &[u8]) -> Result<Input, String> {
    let file = Elf::parse(bytes).map_err(|e| format!("the object is not a valid ELF file: {e}"))?;
    let endian = file.endian();
    let header = file.elf_header();
    if endian != Endianness::Little {
        return Err("the object is big-endian; only little-endian targets are linked".into());
    }
    if header.e_type(endian) != elf::ET_REL {
        return Err(format!(
            "the input is not a relocatable object (ELF type {})",
            header.e_type(endian)
        ));
    }
    let arch = match header.e_machine(endian) {
        elf::EM_X86_64 => Arch::X86_64,
        elf::EM_AARCH64 => Arch::Aarch64,
        other => {
            return Err(format!(
                "the object is for ELF machine {other}, not x86-64 or AArch64"
            ));
        }
    };

    let mut contents: [Contents; 6] = Default::default();
    // Per object section: its output section and offset there, if placed.
    let mut placed: Vec<Option<(Out, u64)>> = vec![None; file.elf_section_table().len()];
    for section in file.sections() {
        let name = section.name().unwrap_or("<unnamed>");
        let Some(out) = classify_section(section.elf_section_header(), endian, name)? else {
            continue;
        };
        let align = section.align().max(1);
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(format!(
                "section {name} has alignment {align}, not a power of two up to {MAX_ALIGN}"
            ));
        }
        if section.size() > MAX_SIZE {
            return Err(format!(
                "section {name} is {} bytes, more than the {MAX_SIZE} a library of ours holds",
                section.size()
            ));
        }
        let target = &mut contents[out as usize];
        target.align = target.align.max(align);
        let offset = target.bytes.len().next_multiple_of(align as usize);
        target.bytes.resize(offset, 0);
        if out == Out::Bss {
            target.bytes.resize(offset + section.size() as usize, 0);
        } else {
            let data = section
                .data()
                .map_err(|e| format!("cannot read section {name}: {e}"))?;
            target.bytes.extend_from_slice(data);
        }
        placed[section.index().0] = Some((out, offset as u64));
    }
    if contents[Out::Text as usize].bytes.is_empty() {
        return Err("the object has no code (no executable section such as .text)".into());
    }

    let symbols = read_symbols(&file, &placed)?;
    let mut relocs = Vec::new();
    for section in file.sections() {
        let Some((out, base)) = placed[section.index().0] else {
            continue;
        };
        let name = section.name().unwrap_or("<unnamed>");
        for (offset, relocation) in section.relocations() {
            let RelocationFlags::Elf { r_type } = relocation.flags() else {
                return Err(format!("section {name}: a relocation that is not ELF's"));
            };
            let symbol = match relocation.target() {
                RelocationTarget::Symbol(SymbolIndex(i)) if i < symbols.len() => i,
                other => {
                    return Err(format!(
                        "section {name}, offset {offset:#x}: relocation target {other:?} is not \
                         a symbol of the object"
                    ));
                }
            };
            let Some(kind) = classify(arch, r_type)
                .map_err(|e| format!("section {name}, offset {offset:#x}: {e}"))?
            else {
                continue;
            };
            if out == Out::Bss {
                return Err(format!(
                    "section {name} has no bytes but a relocation at {offset:#x}"
                ));
            }
            if offset
                .checked_add(kind.width())
                .is_none_or(|end| end > section.size())
            {
                return Err(format!(
                    "section {name}: relocation at {offset:#x} reaches past the section's end"
                ));
            }
            relocs.push(Reloc {
                out,
                offset: base + offset,
                kind,
                symbol,
                addend: relocation.addend(),
                what: format!("{name}+{offset:#x}"),
            });
        }
    }
    Ok(Input {
        arch,
        contents,
        symbols,
        relocs,
    })
}

/// The output section of an object section, `None` for what the library leaves out (symbol
/// and string tables, relocation sections, notes and debug information that are not loaded).
fn classify_section(
    header: &elf::SectionHeader64<Endianness>,
    endian: Endianness,
    name: &str,
) -> Result<Option<Out>, String> {
    let kind = header.sh_type(endian);
    let flags = header.sh_flags(endian);
    match kind {
        elf::SHT_NULL | elf::SHT_SYMTAB | elf::SHT_STRTAB | elf::SHT_RELA | elf::SHT_GROUP => {
            return Ok(None);
        }
        elf::SHT_REL => {
            return Err(format!(
                "section {name} holds REL relocations; only RELA objects are linked"
            ));
        }
        elf::SHT_FINI_ARRAY | elf::SHT_PREINIT_ARRAY => {
            return Err(format!(
                "section {name} ({}) is not supported: only .init_array constructors",
                if kind == elf::SHT_FINI_ARRAY {
                    "fini array"
                } else {
                    "preinit array"
                }
            ));
        }
        _ => {}
    }
    if flags & u64::from(elf::SHF_ALLOC) == 0 {
        return Ok(None);
    }
    if flags & u64::from(elf::SHF_TLS) != 0 {
        return Err(format!(
            "section {name} is thread-local, which is not supported"
        ));
    }
    let writable = flags & u64::from(elf::SHF_WRITE) != 0;
    Ok(Some(
        if name == ".eh_frame" || kind == elf::SHT_X86_64_UNWIND {
            Out::EhFrame
        } else if kind == elf::SHT_INIT_ARRAY {
            Out::InitArray
        } else if flags & u64::from(elf::SHF_EXECINSTR) != 0 {
            if writable {
                return Err(format!("section {name} is both writable and executable"));
            }
            Out::Text
        } else if writable && kind == elf::SHT_NOBITS {
            Out::Bss
        } else if writable {
            Out::Data
        } else if kind == elf::SHT_NOBITS {
            return Err(format!("section {name} has no bytes but is read-only"));
        } else {
            Out::Rodata
        },
    ))
}

fn read_symbols(file: &Elf<'_>, placed: &[Option<(Out, u64)>]) -> Result<Vec<Symbol>, String> {
    let endian = file.endian();
    let Some(table) = file.symbol_table() else {
        return Err("the object has no symbol table".into());
    };
    let mut symbols = Vec::new();
    for symbol in table.symbols() {
        let raw = symbol.elf_symbol();
        let name = symbol.name().unwrap_or("").to_owned();
        let index = raw.st_shndx(endian);
        let kind = raw.st_type();
        let binding = raw.st_bind();
        let place = match index {
            elf::SHN_UNDEF if symbol.index().0 == 0 => Place::Unplaced("the null symbol"),
            elf::SHN_UNDEF => Place::Import,
            elf::SHN_ABS => Place::Unplaced("an absolute value"),
            elf::SHN_COMMON => {
                return Err(format!(
                    "symbol `{name}` is a common symbol, which is not supported"
                ));
            }
            _ => {
                let section = file
                    .elf_symbol_table()
                    .symbol_section(endian, raw, symbol.index())
                    .map_err(|e| format!("symbol `{name}`: {e}"))?
                    .map_or(usize::MAX, |s| s.0);
                match placed.get(section).copied().flatten() {
                    Some((out, base)) => {
                        let value = raw.st_value(endian);
                        let size = file
                            .elf_section_table()
                            .section(object::SectionIndex(section))
                            .map_or(0, |h| h.sh_size(endian));
                        if value > size {
                            return Err(format!(
                                "symbol `{name}` (value {value:#x}) lies outside its section"
                            ));
                        }
                        Place::Local(out, base + value)
                    }
                    None => Place::Unplaced("a section the library does not load"),
                }
            }
        };
        let global = binding == elf::STB_GLOBAL || binding == elf::STB_WEAK;
        let visible = raw.st_other() & 0x3 == elf::STV_DEFAULT;
        let exported = global
            && visible
            && matches!(place, Place::Local(..))
            && matches!(kind, elf::STT_FUNC | elf::STT_OBJECT | elf::STT_NOTYPE)
            && !name.is_empty();
        symbols.push(Symbol {
            name,
            place,
            exported,
            binding,
            other: raw.st_other(),
            kind,
            size: raw.st_size(endian),
        });
    }
    // Symbol indices in relocations count the null symbol; `symbols()` skips it.
    symbols.insert(
        0,
        Symbol {
            name: String::new(),
            place: Place::Unplaced("the null symbol"),
            exported: false,
            binding: elf::STB_LOCAL,
            other: 0,
            kind: elf::STT_NOTYPE,
            size: 0,
        },
    );
    Ok(symbols)
}
