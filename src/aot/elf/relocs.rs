//! The relocations our backends emit in position-independent objects, as a value to compute
//! and a field to write it into, and the instruction encodings that hold them.
//!
//! Cranelift (with `is_pic`) and LLVM (PIC relocation model) write, for a module of ours:
//! x86-64 `R_X86_64_PLT32` (calls), `GOTPCREL`/`GOTPCRELX`/`REX_GOTPCRELX` (addresses of
//! symbols through the GOT), `PC32` (local data, `.eh_frame`), `64` (`.init_array`); AArch64
//! `CALL26`/`JUMP26`, `ADR_GOT_PAGE` + `LD64_GOT_LO12_NC`, `ADR_PREL_PG_HI21` +
//! `ADD_ABS_LO12_NC`/`LDST*_ABS_LO12_NC`, `PREL32` (`.eh_frame`), `ABS64` (`.init_array`).
//! Any other type is refused with its number.

use cranelift_object::object::elf;

use super::out::Out;
use crate::target::Arch;

/// What a relocation computes (S: the symbol's address, A: the addend, P: the place, G: the
/// address of the symbol's GOT entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Value {
    /// S + A (an absolute address: a dynamic relocation at load time).
    Absolute,
    /// S + A - P.
    PcRelative,
    /// S + A - P where S is the import's stub for an undefined symbol.
    Call,
    /// G + A - P.
    GotPcRelative,
    /// (S + A) & 0xfff, the low bits of an address (paired with a [`Value::Page`]).
    Low12,
    /// (G + A) & 0xfff.
    GotLow12,
    /// Page(S + A) - Page(P), with 4 KiB pages.
    Page,
    /// Page(G + A) - Page(P).
    GotPage,
}

/// Where the value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    /// A 64-bit little-endian word.
    Word64,
    /// A 32-bit signed little-endian word (checked for overflow).
    Word32,
    /// An AArch64 `B`/`BL` immediate: bits 27..2 of a ±128 MiB offset.
    Branch26,
    /// An AArch64 `ADRP` immediate: a ±4 GiB page offset.
    Adrp,
    /// An AArch64 12-bit unsigned immediate at bits 21..10, scaled down by `1 << shift` (the
    /// access size of a load or store).
    Imm12 {
        /// log2 of the scale.
        shift: u32,
    },
}

/// A relocation kind: what to compute and where to put it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Kind {
    /// The value.
    pub(super) value: Value,
    /// The field.
    pub(super) field: Field,
}

impl Kind {
    /// How many bytes the field covers.
    pub(super) fn width(self) -> u64 {
        match self.field {
            Field::Word64 => 8,
            Field::Word32 | Field::Branch26 | Field::Adrp | Field::Imm12 { .. } => 4,
        }
    }
}

/// A relocation of the object, placed in the library.
#[derive(Clone, Debug)]
pub(super) struct Reloc {
    /// The output section it patches.
    pub(super) out: Out,
    /// The offset of the field there.
    pub(super) offset: u64,
    /// What it computes.
    pub(super) kind: Kind,
    /// The object's symbol index.
    pub(super) symbol: usize,
    /// The addend.
    pub(super) addend: i64,
    /// `section+offset` in the object, for messages.
    pub(super) what: String,
}

/// The kind of the ELF relocation type `r_type` on `arch`; `None` for the no-op relocation.
pub(super) fn classify(arch: Arch, r_type: u32) -> Result<Option<Kind>, String> {
    let kind = |value, field| Ok(Some(Kind { value, field }));
    match arch {
        Arch::X86_64 => match r_type {
            elf::R_X86_64_NONE => Ok(None),
            elf::R_X86_64_64 => kind(Value::Absolute, Field::Word64),
            elf::R_X86_64_PC32 => kind(Value::PcRelative, Field::Word32),
            elf::R_X86_64_PC64 => kind(Value::PcRelative, Field::Word64),
            elf::R_X86_64_PLT32 => kind(Value::Call, Field::Word32),
            elf::R_X86_64_GOTPCREL | elf::R_X86_64_GOTPCRELX | elf::R_X86_64_REX_GOTPCRELX => {
                kind(Value::GotPcRelative, Field::Word32)
            }
            other => Err(format!(
                "unsupported x86-64 relocation type {other} (only R_X86_64_64, PC32, PC64, \
                 PLT32 and the GOTPCREL family appear in position-independent code of ours)"
            )),
        },
        Arch::Aarch64 => match r_type {
            elf::R_AARCH64_NONE => Ok(None),
            elf::R_AARCH64_ABS64 => kind(Value::Absolute, Field::Word64),
            elf::R_AARCH64_PREL64 => kind(Value::PcRelative, Field::Word64),
            elf::R_AARCH64_PREL32 => kind(Value::PcRelative, Field::Word32),
            elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26 => kind(Value::Call, Field::Branch26),
            elf::R_AARCH64_ADR_PREL_PG_HI21 => kind(Value::Page, Field::Adrp),
            elf::R_AARCH64_ADD_ABS_LO12_NC | elf::R_AARCH64_LDST8_ABS_LO12_NC => {
                kind(Value::Low12, Field::Imm12 { shift: 0 })
            }
            elf::R_AARCH64_LDST16_ABS_LO12_NC => kind(Value::Low12, Field::Imm12 { shift: 1 }),
            elf::R_AARCH64_LDST32_ABS_LO12_NC => kind(Value::Low12, Field::Imm12 { shift: 2 }),
            elf::R_AARCH64_LDST64_ABS_LO12_NC => kind(Value::Low12, Field::Imm12 { shift: 3 }),
            elf::R_AARCH64_LDST128_ABS_LO12_NC => kind(Value::Low12, Field::Imm12 { shift: 4 }),
            elf::R_AARCH64_ADR_GOT_PAGE => kind(Value::GotPage, Field::Adrp),
            elf::R_AARCH64_LD64_GOT_LO12_NC => kind(Value::GotLow12, Field::Imm12 { shift: 3 }),
            other => Err(format!(
                "unsupported AArch64 relocation type {other} (only ABS64, PREL32/64, CALL26, \
                 JUMP26, ADR_PREL_PG_HI21, ADD/LDST*_ABS_LO12_NC, ADR_GOT_PAGE and \
                 LD64_GOT_LO12_NC appear in position-independent code of ours)"
            )),
        },
    }
}

/// Computes `value` for a field at `place` from the target address `target` (the symbol,
/// its stub, or its GOT entry, as the kind asks) plus `addend`.
pub(super) fn compute(value: Value, target: u64, addend: i64, place: u64) -> i64 {
    let sa = target.wrapping_add_signed(addend);
    match value {
        Value::Absolute => sa as i64,
        Value::PcRelative | Value::Call | Value::GotPcRelative => sa.wrapping_sub(place) as i64,
        Value::Low12 | Value::GotLow12 => (sa & 0xfff) as i64,
        Value::Page | Value::GotPage => ((sa & !0xfff).wrapping_sub(place & !0xfff)) as i64,
    }
}

/// Writes `value` into `field` at the start of `bytes`; an error when it does not fit.
pub(super) fn patch(field: Field, value: i64, bytes: &mut [u8]) -> Result<(), String> {
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    match field {
        Field::Word64 => bytes[..8].copy_from_slice(&value.to_le_bytes()),
        Field::Word32 => {
            let v = i32::try_from(value)
                .map_err(|_| format!("offset {value:#x} does not fit in 32 bits"))?;
            bytes[..4].copy_from_slice(&v.to_le_bytes());
        }
        Field::Branch26 => {
            if value & 3 != 0 || !(-(1 << 27)..(1 << 27)).contains(&value) {
                return Err(format!(
                    "branch offset {value:#x} is out of range (±128 MiB)"
                ));
            }
            let insn = (word(bytes) & !0x03ff_ffff) | ((value >> 2) as u32 & 0x03ff_ffff);
            bytes[..4].copy_from_slice(&insn.to_le_bytes());
        }
        Field::Adrp => {
            let pages = value >> 12;
            if !(-(1 << 20)..(1 << 20)).contains(&pages) {
                return Err(format!("page offset {value:#x} is out of range (±4 GiB)"));
            }
            let imm = pages as u32;
            let insn =
                (word(bytes) & 0x9f00_001f) | ((imm & 3) << 29) | (((imm >> 2) & 0x7ffff) << 5);
            bytes[..4].copy_from_slice(&insn.to_le_bytes());
        }
        Field::Imm12 { shift } => {
            if value & ((1 << shift) - 1) != 0 {
                return Err(format!(
                    "address low bits {value:#x} are not aligned to the {}-byte access",
                    1 << shift
                ));
            }
            let imm = ((value >> shift) as u32) & 0xfff;
            let insn = (word(bytes) & !(0xfff << 10)) | (imm << 10);
            bytes[..4].copy_from_slice(&insn.to_le_bytes());
        }
    }
    Ok(())
}

/// The size of one import stub (an indirect jump through the import's GOT entry).
pub(super) const STUB_SIZE: u64 = 16;

/// The code of an import stub at `stub` jumping through the GOT entry at `got`.
pub(super) fn stub(arch: Arch, stub: u64, got: u64) -> Result<[u8; STUB_SIZE as usize], String> {
    let mut code = [0u8; STUB_SIZE as usize];
    match arch {
        Arch::X86_64 => {
            // jmp *got(%rip); then int3 padding.
            code.fill(0xcc);
            code[..2].copy_from_slice(&[0xff, 0x25]);
            let value = compute(Value::PcRelative, got, -4, stub + 2);
            patch(Field::Word32, value, &mut code[2..6])?;
        }
        Arch::Aarch64 => {
            // adrp x16, got; ldr x17, [x16, :lo12:got]; br x17; nop
            let words: [u32; 4] = [0x9000_0010, 0xf940_0211, 0xd61f_0220, 0xd503_201f];
            for (i, w) in words.iter().enumerate() {
                code[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
            }
            patch(
                Field::Adrp,
                compute(Value::Page, got, 0, stub),
                &mut code[0..4],
            )?;
            patch(
                Field::Imm12 { shift: 3 },
                compute(Value::Low12, got, 0, stub + 4),
                &mut code[4..8],
            )?;
        }
    }
    Ok(code)
}

/// The dynamic relocation types of `arch`: (absolute with a symbol, GOT entry of a symbol,
/// base-relative).
pub(super) fn dynamic_types(arch: Arch) -> (u32, u32, u32) {
    match arch {
        Arch::X86_64 => (
            elf::R_X86_64_64,
            elf::R_X86_64_GLOB_DAT,
            elf::R_X86_64_RELATIVE,
        ),
        Arch::Aarch64 => (
            elf::R_AARCH64_ABS64,
            elf::R_AARCH64_GLOB_DAT,
            elf::R_AARCH64_RELATIVE,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adrp_and_lo12_fields_encode_like_the_assembler() {
        // adrp x16, #0x3000 (from page 0) is 0xb0000010 + immlo/immhi = 3 pages.
        let mut insn = 0x9000_0010u32.to_le_bytes();
        patch(Field::Adrp, 0x3000, &mut insn).unwrap();
        assert_eq!(u32::from_le_bytes(insn), 0xf000_0010);
        let mut ldr = 0xf940_0211u32.to_le_bytes();
        patch(Field::Imm12 { shift: 3 }, 0x18, &mut ldr).unwrap();
        assert_eq!(u32::from_le_bytes(ldr), 0xf940_0e11);
    }

    #[test]
    fn out_of_range_fields_are_errors() {
        let mut b = [0u8; 8];
        assert!(patch(Field::Word32, 1 << 40, &mut b).is_err());
        assert!(patch(Field::Branch26, 1 << 28, &mut b).is_err());
        assert!(patch(Field::Imm12 { shift: 3 }, 4, &mut b).is_err());
        assert!(classify(Arch::X86_64, elf::R_X86_64_32).is_err());
    }
}
