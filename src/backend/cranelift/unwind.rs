//! `.eh_frame` for AOT objects, with pc-relative FDE pointers.
//!
//! Cranelift's default CIE encodes FDE addresses as absolute pointers, which needs dynamic
//! relocations in the read-only `.eh_frame` of a shared library (text relocations, refused by
//! `-z text`). This writer uses `DW_EH_PE_pcrel | DW_EH_PE_sdata4` and turns every symbol
//! reference into a 32-bit pc-relative relocation, so the section needs no load-time fixups.

use crate::backend::baseline::{FRAME_SETUP, FrameStep};
use cranelift_codegen::gimli::{
    self, RunTimeEndian,
    write::{Address, EhFrame, EndianVec, FrameTable, Writer},
};
use cranelift_codegen::isa::{TargetIsa, unwind::UnwindInfo};
use cranelift_object::object::write::{
    Object, Relocation, StandardSection, SymbolId, SymbolSection,
};
use cranelift_object::object::{RelocationEncoding, RelocationFlags, RelocationKind};

/// A gimli writer that records symbol references as relocations.
#[derive(Clone)]
struct RelocatingWriter {
    data: EndianVec<RunTimeEndian>,
    /// (offset in the section, symbol index, addend)
    relocs: Vec<(usize, usize, i64)>,
}

impl Writer for RelocatingWriter {
    type Endian = RunTimeEndian;

    fn endian(&self) -> RunTimeEndian {
        self.data.endian()
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    fn write(&mut self, bytes: &[u8]) -> gimli::write::Result<()> {
        self.data.write(bytes)
    }

    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> gimli::write::Result<()> {
        self.data.write_at(offset, bytes)
    }

    fn write_eh_pointer(
        &mut self,
        address: Address,
        eh_pe: gimli::DwEhPe,
        size: u8,
    ) -> gimli::write::Result<()> {
        match address {
            Address::Constant(_) => self.data.write_eh_pointer(address, eh_pe, size),
            Address::Symbol { symbol, addend } => {
                if eh_pe != pcrel_sdata4() {
                    return Err(gimli::write::Error::UnsupportedPointerEncoding(eh_pe));
                }
                self.relocs.push((self.data.len(), symbol, addend));
                self.data.write_udata(0, 4)
            }
        }
    }
}

fn pcrel_sdata4() -> gimli::DwEhPe {
    gimli::DwEhPe(gimli::DW_EH_PE_pcrel.0 | gimli::DW_EH_PE_sdata4.0)
}

/// Collects the unwind info of compiled functions and writes `.eh_frame`.
pub struct EhFrameBuilder {
    table: FrameTable,
    cie: Option<gimli::write::CieId>,
    symbols: Vec<SymbolId>,
}

impl EhFrameBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        EhFrameBuilder {
            table: FrameTable::default(),
            cie: None,
            symbols: Vec::new(),
        }
    }

    /// Adds the FDE of a function whose symbol is `symbol`.
    pub fn add(&mut self, isa: &dyn TargetIsa, symbol: SymbolId, info: UnwindInfo) {
        let UnwindInfo::SystemV(info) = info else {
            return;
        };
        let Some(cie) = self.cie(isa) else {
            return;
        };
        let address = self.address_of(symbol);
        self.table.add_fde(cie, info.to_fde(address));
    }

    /// Adds the FDE of an x86-64 function of `len` bytes compiled by the baseline compiler,
    /// whose frame is set up by `push rbp; mov rbp, rsp` ([`FRAME_SETUP`]).
    pub fn add_frame_pointer_function(&mut self, isa: &dyn TargetIsa, symbol: SymbolId, len: u32) {
        use gimli::write::{CallFrameInstruction, FrameDescriptionEntry};
        let Some(cie) = self.cie(isa) else {
            return;
        };
        let mut fde = FrameDescriptionEntry::new(self.address_of(symbol), len);
        for (offset, step) in FRAME_SETUP {
            match step {
                FrameStep::PushedFramePointer => {
                    fde.add_instruction(offset, CallFrameInstruction::CfaOffset(16));
                    fde.add_instruction(
                        offset,
                        CallFrameInstruction::Offset(gimli::X86_64::RBP, -16),
                    );
                }
                FrameStep::FramePointerIsCfaBase => {
                    fde.add_instruction(
                        offset,
                        CallFrameInstruction::CfaRegister(gimli::X86_64::RBP),
                    );
                }
            }
        }
        self.table.add_fde(cie, fde);
    }

    /// The CIE of `isa`, added on first use (`None` when the ISA has no System V unwind info).
    fn cie(&mut self, isa: &dyn TargetIsa) -> Option<gimli::write::CieId> {
        if let Some(c) = self.cie {
            return Some(c);
        }
        let mut cie = isa.create_systemv_cie()?;
        cie.fde_address_encoding = pcrel_sdata4();
        let id = self.table.add_cie(cie);
        self.cie = Some(id);
        Some(id)
    }

    /// The FDE address of `symbol` (its index among the unwound functions).
    fn address_of(&mut self, symbol: SymbolId) -> Address {
        let index = self.symbols.len();
        self.symbols.push(symbol);
        Address::Symbol {
            symbol: index,
            addend: 0,
        }
    }

    /// Appends `.eh_frame` (and its relocations) to `object`. Nothing when no FDE was added.
    pub fn finish(self, object: &mut Object<'static>) -> Result<(), String> {
        if self.cie.is_none() {
            return Ok(());
        }
        let mut eh_frame = EhFrame(RelocatingWriter {
            data: EndianVec::new(RunTimeEndian::Little),
            relocs: Vec::new(),
        });
        self.table
            .write_eh_frame(&mut eh_frame)
            .map_err(|e| format!("writing .eh_frame: {e}"))?;
        let writer = eh_frame.0;
        let section = object.section_id(StandardSection::EhFrame);
        let base = object.append_section_data(section, writer.data.slice(), 8);
        for (offset, symbol, addend) in writer.relocs {
            // Exported symbols may be interposed, so pc-relative references to them are refused
            // in shared objects: point at the function's section plus its offset instead.
            let target = object.symbol(self.symbols[symbol]);
            let (target_value, target_section) = (target.value, target.section);
            let SymbolSection::Section(target_section) = target_section else {
                return Err("an unwound function is not defined in this object".to_owned());
            };
            let section_symbol = object.section_symbol(target_section);
            object
                .add_relocation(
                    section,
                    Relocation {
                        offset: base + offset as u64,
                        symbol: section_symbol,
                        addend: addend + target_value as i64,
                        flags: RelocationFlags::Generic {
                            kind: RelocationKind::Relative,
                            encoding: RelocationEncoding::Generic,
                            size: 32,
                        },
                    },
                )
                .map_err(|e| format!("relocating .eh_frame: {e}"))?;
        }
        Ok(())
    }
}

impl Default for EhFrameBuilder {
    fn default() -> Self {
        Self::new()
    }
}
