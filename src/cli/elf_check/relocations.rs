//! Relocations, as the loader applies them: each of a type it knows, writing inside a
//! writable loaded segment, naming a symbol of the table; and the slots they fill, for the
//! checks of the initializer arrays.

use std::collections::BTreeMap;

use cranelift_object::object::Endianness;
use cranelift_object::object::elf;
use cranelift_object::object::endian::U64;

use super::dynamic::Dynamic;
use super::{Damage, Image};

/// The size of one relocation record.
pub const RELA_SIZE: u64 = size_of::<elf::Rela64<Endianness>>() as u64;
/// The size of a pointer (an initializer array entry, a `DT_RELR` entry).
pub const WORD: u64 = 8;

/// A relocation of this machine: how many bytes it writes, or `None` for a type the loader
/// does not know.
#[cfg(target_arch = "x86_64")]
fn relocation_size(kind: u32) -> Option<u64> {
    match kind {
        elf::R_X86_64_NONE => Some(0),
        elf::R_X86_64_32 | elf::R_X86_64_PC32 | elf::R_X86_64_SIZE32 => Some(4),
        elf::R_X86_64_TLSDESC => Some(16),
        elf::R_X86_64_64
        | elf::R_X86_64_GLOB_DAT
        | elf::R_X86_64_JUMP_SLOT
        | elf::R_X86_64_RELATIVE
        | elf::R_X86_64_DTPMOD64
        | elf::R_X86_64_DTPOFF64
        | elf::R_X86_64_TPOFF64
        | elf::R_X86_64_IRELATIVE
        | elf::R_X86_64_SIZE64
        | elf::R_X86_64_COPY => Some(8),
        _ => None,
    }
}
#[cfg(target_arch = "x86_64")]
const R_RELATIVE: u32 = elf::R_X86_64_RELATIVE;
#[cfg(target_arch = "x86_64")]
const R_IRELATIVE: u32 = elf::R_X86_64_IRELATIVE;

#[cfg(target_arch = "aarch64")]
fn relocation_size(kind: u32) -> Option<u64> {
    match kind {
        elf::R_AARCH64_NONE => Some(0),
        elf::R_AARCH64_TLSDESC => Some(16),
        elf::R_AARCH64_ABS64
        | elf::R_AARCH64_GLOB_DAT
        | elf::R_AARCH64_JUMP_SLOT
        | elf::R_AARCH64_RELATIVE
        | elf::R_AARCH64_TLS_DTPMOD
        | elf::R_AARCH64_TLS_DTPREL
        | elf::R_AARCH64_TLS_TPREL
        | elf::R_AARCH64_IRELATIVE
        | elf::R_AARCH64_COPY => Some(8),
        _ => None,
    }
}
#[cfg(target_arch = "aarch64")]
const R_RELATIVE: u32 = elf::R_AARCH64_RELATIVE;
#[cfg(target_arch = "aarch64")]
const R_IRELATIVE: u32 = elf::R_AARCH64_IRELATIVE;

// Other machines load nothing ([`super::check`] stops at the machine); these keep the code
// compiling there.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn relocation_size(_: u32) -> Option<u64> {
    None
}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const R_RELATIVE: u32 = u32::MAX;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const R_IRELATIVE: u32 = u32::MAX;

/// What a relocation puts in a slot.
pub enum Slot {
    /// The load address plus this addend.
    Relative(u64),
    /// The load address plus what the file has there (`DT_RELR`).
    InPlace,
    /// A symbol's address.
    Symbol,
}

/// Checks `DT_RELA`, `DT_JMPREL` and `DT_RELR`; returns the slots they fill and how many
/// symbols they refer to (the highest index, plus one).
pub fn check(dynamic: &Dynamic, image: &Image<'_>) -> Result<(BTreeMap<u64, Slot>, u64), Damage> {
    let endian = Endianness::default();
    let mut symbols = 0u64;
    let relas: [(&str, &[elf::Rela64<Endianness>]); 2] = [
        (
            "DT_RELA",
            dynamic.table(image, elf::DT_RELA, elf::DT_RELASZ)?,
        ),
        (
            "DT_JMPREL",
            dynamic.table(image, elf::DT_JMPREL, elf::DT_PLTRELSZ)?,
        ),
    ];
    let textrel = dynamic.get(elf::DT_TEXTREL).is_some()
        || dynamic
            .get(elf::DT_FLAGS)
            .is_some_and(|f| f & u64::from(elf::DF_TEXTREL) != 0);
    // Where relocations put an address: slot -> (relative addend | symbol index).
    let mut slots: BTreeMap<u64, Slot> = BTreeMap::new();
    for (name, table) in &relas {
        for (i, r) in table.iter().enumerate() {
            let what = || format!("relocation {i} of {name}");
            let kind = r.r_type(endian, false);
            let sym = r.r_sym(endian, false);
            let offset = r.r_offset.get(endian);
            let Some(size) = relocation_size(kind) else {
                return Err(format!(
                    "{}: type {kind}, which the loader does not know",
                    what()
                ));
            };
            symbols = symbols.max(u64::from(sym) + 1);
            if size == 0 {
                continue;
            }
            let Some(seg) = image.segment(offset, size) else {
                return Err(format!(
                    "{}: it writes at 0x{offset:x}, in no loaded segment",
                    what()
                ));
            };
            if !seg.writable() && !textrel {
                return Err(format!(
                    "{}: it writes at 0x{offset:x}, in a read-only segment",
                    what()
                ));
            }
            let addend = r.r_addend.get(endian) as u64;
            if kind == R_IRELATIVE && !image.is_code(addend) {
                return Err(format!(
                    "{}: its resolver 0x{addend:x} is not in code: the loader would call it",
                    what()
                ));
            }
            slots.insert(
                offset,
                if kind == R_RELATIVE {
                    Slot::Relative(addend)
                } else {
                    Slot::Symbol
                },
            );
        }
    }
    for slot in relr(dynamic, image)? {
        slots.insert(slot, Slot::InPlace);
    }

    Ok((slots, symbols))
}

/// Checks the packed relative relocations (`DT_RELR`) and returns the slots they write.
fn relr(dynamic: &Dynamic, image: &Image<'_>) -> Result<Vec<u64>, Damage> {
    let endian = Endianness::default();
    let entries = dynamic.table::<U64<Endianness>>(image, elf::DT_RELR, elf::DT_RELRSZ)?;
    let mut slots = Vec::new();
    let mut next = None;
    for (i, e) in entries.iter().enumerate() {
        let e = e.get(endian);
        if e & 1 == 0 {
            slots.push(e);
            next = Some(e.saturating_add(WORD));
        } else {
            let Some(base) = next else {
                return Err(format!("DT_RELR entry {i}: a bitmap before any address"));
            };
            for bit in 1..64 {
                if e >> bit & 1 != 0 {
                    slots.push(base.saturating_add((bit - 1) * WORD));
                }
            }
            next = Some(base.saturating_add(63 * WORD));
        }
    }
    for &slot in &slots {
        if !image
            .segment(slot, WORD)
            .is_some_and(super::Segment::writable)
        {
            return Err(format!(
                "a DT_RELR relocation writes at 0x{slot:x}, outside the writable segments"
            ));
        }
    }
    Ok(slots)
}
