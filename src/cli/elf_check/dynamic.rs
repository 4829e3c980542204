//! The dynamic section and what it points at, as the loader reads them: string, symbol, hash
//! and version tables, relocations, initializers.

use std::collections::BTreeMap;

use cranelift_object::object::Endianness;
use cranelift_object::object::elf;
use cranelift_object::object::endian::{U16, U32, U64};
use cranelift_object::object::read::elf::Sym as _;

use super::relocations::{self, Slot};
use super::{Damage, Image, MAX_CHAIN, Verdict};

/// The size of one symbol record.
const SYM_SIZE: u64 = size_of::<elf::Sym64<Endianness>>() as u64;
use super::relocations::{RELA_SIZE, WORD};

/// The entries of the dynamic section, up to `DT_NULL`.
pub struct Dynamic {
    /// `(tag, value)` in file order.
    entries: Vec<(i64, u64)>,
}

/// A dynamic tag's name, for messages.
fn tag_name(tag: i64) -> String {
    let name = match tag {
        elf::DT_NEEDED => "DT_NEEDED",
        elf::DT_PLTRELSZ => "DT_PLTRELSZ",
        elf::DT_PLTGOT => "DT_PLTGOT",
        elf::DT_HASH => "DT_HASH",
        elf::DT_STRTAB => "DT_STRTAB",
        elf::DT_SYMTAB => "DT_SYMTAB",
        elf::DT_RELA => "DT_RELA",
        elf::DT_RELASZ => "DT_RELASZ",
        elf::DT_RELAENT => "DT_RELAENT",
        elf::DT_STRSZ => "DT_STRSZ",
        elf::DT_SYMENT => "DT_SYMENT",
        elf::DT_INIT => "DT_INIT",
        elf::DT_FINI => "DT_FINI",
        elf::DT_SONAME => "DT_SONAME",
        elf::DT_RPATH => "DT_RPATH",
        elf::DT_REL => "DT_REL",
        elf::DT_PLTREL => "DT_PLTREL",
        elf::DT_JMPREL => "DT_JMPREL",
        elf::DT_INIT_ARRAY => "DT_INIT_ARRAY",
        elf::DT_FINI_ARRAY => "DT_FINI_ARRAY",
        elf::DT_INIT_ARRAYSZ => "DT_INIT_ARRAYSZ",
        elf::DT_FINI_ARRAYSZ => "DT_FINI_ARRAYSZ",
        elf::DT_RUNPATH => "DT_RUNPATH",
        elf::DT_RELR => "DT_RELR",
        elf::DT_RELRSZ => "DT_RELRSZ",
        elf::DT_GNU_HASH => "DT_GNU_HASH",
        elf::DT_VERSYM => "DT_VERSYM",
        elf::DT_VERDEF => "DT_VERDEF",
        elf::DT_VERNEED => "DT_VERNEED",
        elf::DT_AUXILIARY => "DT_AUXILIARY",
        elf::DT_FILTER => "DT_FILTER",
        _ => return format!("tag 0x{tag:x}"),
    };
    name.to_owned()
}

impl Dynamic {
    /// Reads the entries of the dynamic section, which must end with `DT_NULL`.
    pub fn read(image: &Image<'_>) -> Result<Dynamic, Damage> {
        let (addr, size) = image.dynamic;
        let count = size / size_of::<elf::Dyn64<Endianness>>() as u64;
        let records = image
            .records::<elf::Dyn64<Endianness>>(addr, count)
            .map_err(|e| format!("the dynamic section at 0x{addr:x}: {e}"))?;
        let endian = Endianness::default();
        let mut entries = Vec::new();
        for d in records {
            let tag = d.d_tag.get(endian);
            if tag == elf::DT_NULL {
                return Ok(Dynamic { entries });
            }
            entries.push((tag, d.d_val.get(endian)));
        }
        Err("the dynamic section has no end (DT_NULL)".to_owned())
    }

    /// The value of `tag` (the loader keeps the last of repeated entries).
    pub(super) fn get(&self, tag: i64) -> Option<u64> {
        self.entries
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .map(|&(_, v)| v)
    }

    /// `tag`'s value, which must be present.
    fn require(&self, tag: i64) -> Result<u64, Damage> {
        self.get(tag).ok_or_else(|| {
            format!(
                "the dynamic section has no {}, which a library needs",
                tag_name(tag)
            )
        })
    }

    /// The table at `tag` with the size at `size_tag` (both or neither), as records of `T`.
    pub(super) fn table<'data, T: cranelift_object::object::Pod>(
        &self,
        image: &Image<'data>,
        tag: i64,
        size_tag: i64,
    ) -> Result<&'data [T], Damage> {
        let Some(addr) = self.get(tag) else {
            return Ok(&[]);
        };
        let size = self.require(size_tag)?;
        let unit = size_of::<T>() as u64;
        if size % unit != 0 {
            return Err(format!(
                "the dynamic section's {} ({size}) is not a multiple of {unit} bytes",
                tag_name(size_tag)
            ));
        }
        if size / unit > MAX_CHAIN as u64 {
            return Err(format!(
                "the dynamic section's {} ({size}) is far larger than the file",
                tag_name(size_tag)
            ));
        }
        image.records::<T>(addr, size / unit).map_err(|e| {
            format!(
                "the dynamic section's {} at 0x{addr:x}..+0x{size:x}: {e}",
                tag_name(tag)
            )
        })
    }

    /// Checks everything the loader reads through the dynamic section.
    pub fn check(&self, image: &Image<'_>) -> Result<Verdict, Damage> {
        self.check_addresses(image)?;
        self.check_tags()?;
        let strtab = self.string_table(image)?;
        let symtab = self.require(elf::DT_SYMTAB)?;
        let mut symbols = hash_tables(self, image)?;

        let (slots, referenced) = relocations::check(self, image)?;
        symbols = symbols.max(referenced);

        if symbols > MAX_CHAIN as u64 {
            return Err(format!(
                "the symbol table would have {symbols} entries, far more than the file holds"
            ));
        }
        self.check_symbols(image, &strtab, symtab, symbols)?;
        self.check_versions(image, &strtab, symbols)?;
        self.check_init_fini(image, &slots)?;
        Ok(Verdict::Loadable)
    }

    /// The addresses the loader follows are in loaded segments.
    fn check_addresses(&self, image: &Image<'_>) -> Result<(), Damage> {
        for tag in [
            elf::DT_HASH,
            elf::DT_GNU_HASH,
            elf::DT_STRTAB,
            elf::DT_SYMTAB,
            elf::DT_RELA,
            elf::DT_JMPREL,
            elf::DT_RELR,
            elf::DT_VERSYM,
            elf::DT_VERNEED,
            elf::DT_VERDEF,
            elf::DT_PLTGOT,
            elf::DT_INIT,
            elf::DT_FINI,
            elf::DT_INIT_ARRAY,
            elf::DT_FINI_ARRAY,
        ] {
            if let Some(addr) = self.get(tag)
                && image.segment(addr, 1).is_none()
            {
                return Err(format!(
                    "the dynamic section's {} (0x{addr:x}) is in no loaded segment",
                    tag_name(tag)
                ));
            }
        }
        Ok(())
    }

    /// Entry sizes and relocation kinds are this machine's.
    fn check_tags(&self) -> Result<(), Damage> {
        for (tag, expected) in [
            (elf::DT_SYMENT, SYM_SIZE),
            (elf::DT_RELAENT, RELA_SIZE),
            (elf::DT_RELRENT, WORD),
            (elf::DT_PLTREL, elf::DT_RELA as u64),
        ] {
            if let Some(value) = self.get(tag)
                && value != expected
            {
                return Err(format!(
                    "the dynamic section's {} is {value}, where this machine has {expected}",
                    tag_name(tag)
                ));
            }
        }
        if self.get(elf::DT_REL).is_some() {
            return Err(
                "the dynamic section has DT_REL relocations: this machine uses DT_RELA".to_owned(),
            );
        }
        Ok(())
    }

    /// The string table, with every string the dynamic section names checked.
    fn string_table<'data>(&self, image: &Image<'data>) -> Result<Strings<'data>, Damage> {
        let strtab_addr = self.require(elf::DT_STRTAB)?;
        let strsz = self.require(elf::DT_STRSZ)?;
        let strtab = Strings::new(image.bytes(strtab_addr, strsz).map_err(|e| {
            format!("the string table (DT_STRTAB 0x{strtab_addr:x}..+0x{strsz:x}): {e}")
        })?);
        for &(tag, value) in &self.entries {
            if matches!(
                tag,
                elf::DT_NEEDED
                    | elf::DT_SONAME
                    | elf::DT_RPATH
                    | elf::DT_RUNPATH
                    | elf::DT_AUXILIARY
                    | elf::DT_FILTER
            ) {
                strtab
                    .get(value)
                    .map_err(|e| format!("the dynamic section's {}: {e}", tag_name(tag)))?;
            }
        }
        Ok(strtab)
    }

    /// The first `symbols` dynamic symbols: names in the string table, defined ones in loaded
    /// segments, functions in code.
    fn check_symbols(
        &self,
        image: &Image<'_>,
        strtab: &Strings<'_>,
        symtab: u64,
        symbols: u64,
    ) -> Result<(), Damage> {
        let endian = Endianness::default();
        let syms = image
            .records::<elf::Sym64<Endianness>>(symtab, symbols)
            .map_err(|e| {
                format!(
                    "the symbol table (DT_SYMTAB 0x{symtab:x}, {symbols} symbols as its hash \
                     table and relocations count them): {e}"
                )
            })?;
        for (i, sym) in syms.iter().enumerate().skip(1) {
            let what = || format!("dynamic symbol {i}");
            strtab
                .get(u64::from(sym.st_name(endian)))
                .map_err(|e| format!("{}: its name: {e}", what()))?;
            let shndx = sym.st_shndx(endian);
            let kind = sym.st_type();
            if shndx == elf::SHN_UNDEF || shndx == elf::SHN_ABS || kind == elf::STT_TLS {
                continue;
            }
            let value = sym.st_value(endian);
            let name = || {
                String::from_utf8_lossy(
                    strtab
                        .get(u64::from(sym.st_name(endian)))
                        .unwrap_or_default(),
                )
                .into_owned()
            };
            if image.segment(value, 0).is_none() {
                return Err(format!(
                    "{} ({}): its address 0x{value:x} is in no loaded segment",
                    what(),
                    name()
                ));
            }
            if matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC) && !image.is_code(value) {
                return Err(format!(
                    "{} ({}): a function at 0x{value:x}, which is not in code",
                    what(),
                    name()
                ));
            }
        }
        Ok(())
    }

    /// Symbol versions name versions the file defines.
    fn check_versions(
        &self,
        image: &Image<'_>,
        strtab: &Strings<'_>,
        symbols: u64,
    ) -> Result<(), Damage> {
        let endian = Endianness::default();
        let versions = versions(self, image, strtab)?;
        if let Some(addr) = self.get(elf::DT_VERSYM) {
            let table = image
                .records::<U16<Endianness>>(addr, symbols)
                .map_err(|e| format!("the version table (DT_VERSYM 0x{addr:x}): {e}"))?;
            for (i, v) in table.iter().enumerate() {
                let index = v.get(endian) & elf::VERSYM_VERSION;
                if index > elf::VER_NDX_GLOBAL && index > versions {
                    return Err(format!(
                        "the version of dynamic symbol {i} is {index}, and the file defines \
                         versions up to {versions}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// `DT_INIT`/`DT_FINI` and every init/fini array entry (after relocation) are in code: the
    /// loader calls them.
    fn check_init_fini(
        &self,
        image: &Image<'_>,
        slots: &BTreeMap<u64, Slot>,
    ) -> Result<(), Damage> {
        let endian = Endianness::default();
        for tag in [elf::DT_INIT, elf::DT_FINI] {
            if let Some(addr) = self.get(tag)
                && !image.is_code(addr)
            {
                return Err(format!(
                    "the dynamic section's {} (0x{addr:x}) is not in code: the loader calls it",
                    tag_name(tag)
                ));
            }
        }
        for (tag, size_tag) in [
            (elf::DT_INIT_ARRAY, elf::DT_INIT_ARRAYSZ),
            (elf::DT_FINI_ARRAY, elf::DT_FINI_ARRAYSZ),
        ] {
            let Some(base) = self.get(tag) else { continue };
            let entries = self.table::<U64<Endianness>>(image, tag, size_tag)?;
            for (i, raw) in entries.iter().enumerate() {
                let slot = base.saturating_add(i as u64 * WORD);
                let target = match slots.get(&slot) {
                    Some(Slot::Relative(addend)) => *addend,
                    Some(Slot::InPlace) => raw.get(endian),
                    // Resolved to a symbol (checked above) at load time.
                    Some(Slot::Symbol) => continue,
                    None => {
                        return Err(format!(
                            "{} entry {i} (at 0x{slot:x}) has no relocation: the loader would \
                             call the unrelocated address 0x{:x}",
                            tag_name(tag),
                            raw.get(endian)
                        ));
                    }
                };
                if !image.is_code(target) {
                    return Err(format!(
                        "{} entry {i} points at 0x{target:x}, which is not in code: the loader \
                         calls it",
                        tag_name(tag)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A string table, with where its NUL bytes are: finding the end of a string is a binary
/// search (a damaged table may have few terminators and many names pointing into it).
struct Strings<'data> {
    bytes: &'data [u8],
    nuls: Vec<usize>,
}

impl<'data> Strings<'data> {
    fn new(bytes: &'data [u8]) -> Strings<'data> {
        let nuls = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == 0)
            .map(|(i, _)| i)
            .collect();
        Strings { bytes, nuls }
    }

    /// The NUL-terminated string at `offset`.
    fn get(&self, offset: u64) -> Result<&'data [u8], Damage> {
        let start = usize::try_from(offset)
            .ok()
            .filter(|&o| o < self.bytes.len())
            .ok_or_else(|| {
                format!(
                    "string offset {offset} is past the string table (0x{:x} bytes)",
                    self.bytes.len()
                )
            })?;
        let end = self
            .nuls
            .get(self.nuls.partition_point(|&n| n < start))
            .ok_or_else(|| {
                format!("the string at offset {offset} runs to the end of the string table")
            })?;
        Ok(&self.bytes[start..*end])
    }
}

/// Checks the hash tables (the loader looks up every symbol through them; it divides by their
/// bucket counts and follows their chains) and returns how many symbols they cover.
fn hash_tables(dynamic: &Dynamic, image: &Image<'_>) -> Result<u64, Damage> {
    let endian = Endianness::default();
    let mut symbols = 0u64;
    let gnu = dynamic.get(elf::DT_GNU_HASH);
    let sysv = dynamic.get(elf::DT_HASH);
    if gnu.is_none() && sysv.is_none() {
        return Err(
            "the dynamic section has neither DT_GNU_HASH nor DT_HASH: no symbol can be looked up"
                .to_owned(),
        );
    }
    if let Some(addr) = gnu {
        let what = |e: String| format!("the GNU hash table (DT_GNU_HASH 0x{addr:x}): {e}");
        let header = image
            .records::<elf::GnuHashHeader<Endianness>>(addr, 1)
            .map_err(what)?[0];
        let buckets = u64::from(header.bucket_count.get(endian));
        let base = u64::from(header.symbol_base.get(endian));
        let bloom = u64::from(header.bloom_count.get(endian));
        if buckets == 0 {
            return Err(what("no buckets".to_owned()));
        }
        if !bloom.is_power_of_two() {
            return Err(what(format!(
                "{bloom} bloom filter words, not a power of two"
            )));
        }
        if header.bloom_shift.get(endian) >= 64 {
            return Err(what(format!(
                "a bloom shift of {}",
                header.bloom_shift.get(endian)
            )));
        }
        let buckets_at = addr
            .saturating_add(size_of::<elf::GnuHashHeader<Endianness>>() as u64)
            .saturating_add(bloom * WORD);
        let table = image
            .records::<U32<Endianness>>(buckets_at, buckets)
            .map_err(what)?;
        let chains_at = buckets_at.saturating_add(buckets * 4);
        let chains_bytes = image.bytes_from(chains_at).unwrap_or_default();
        // Where each chain position's chain ends (the entry with the low bit set), found in
        // one pass from the end, so that many buckets sharing a long chain cost no more.
        let mut ends: Vec<Option<u64>> = vec![None; chains_bytes.len() / 4];
        let mut end = None;
        for (at, word) in chains_bytes.chunks_exact(4).enumerate().rev() {
            // Little-endian (checked): the low bit is in the first byte.
            if word[0] & 1 != 0 {
                end = Some(at as u64);
            }
            ends[at] = end;
        }
        symbols = base;
        for (b, start) in table.iter().enumerate() {
            let start = u64::from(start.get(endian));
            if start == 0 {
                continue;
            }
            if start < base {
                return Err(what(format!(
                    "bucket {b} starts at symbol {start}, below the first hashed symbol {base}"
                )));
            }
            let Some(last) = usize::try_from(start - base)
                .ok()
                .and_then(|at| ends.get(at).copied().flatten())
            else {
                return Err(what(format!(
                    "the chain of bucket {b} runs past the end of its segment"
                )));
            };
            symbols = symbols.max(base + last + 1);
        }
    }
    if let Some(addr) = sysv {
        let what = |e: String| format!("the hash table (DT_HASH 0x{addr:x}): {e}");
        let header = image
            .records::<elf::HashHeader<Endianness>>(addr, 1)
            .map_err(what)?[0];
        let buckets = u64::from(header.bucket_count.get(endian));
        let chains = u64::from(header.chain_count.get(endian));
        if buckets == 0 {
            return Err(what("no buckets".to_owned()));
        }
        let entries = image
            .records::<U32<Endianness>>(
                addr.saturating_add(size_of::<elf::HashHeader<Endianness>>() as u64),
                buckets + chains,
            )
            .map_err(what)?;
        if let Some(bad) = entries
            .iter()
            .position(|e| u64::from(e.get(endian)) >= chains)
        {
            return Err(what(format!(
                "entry {bad} names symbol {}, and the table has {chains}",
                entries[bad].get(endian)
            )));
        }
        symbols = symbols.max(chains);
    }
    Ok(symbols)
}

/// Checks the version records (`DT_VERNEED`, `DT_VERDEF`; the loader follows their links) and
/// returns the highest version index they define.
fn versions(dynamic: &Dynamic, image: &Image<'_>, strtab: &Strings<'_>) -> Result<u16, Damage> {
    let endian = Endianness::default();
    let mut highest = elf::VER_NDX_GLOBAL;
    // Records followed in all: the links only go forward, and this bounds the work.
    let mut steps = 0usize;
    let mut step = |what: &dyn Fn(String) -> String| {
        steps += 1;
        if steps > MAX_CHAIN {
            Err(what("more records than the file can hold".to_owned()))
        } else {
            Ok(())
        }
    };
    if let Some(start) = dynamic.get(elf::DT_VERNEED) {
        let what = |e: String| format!("the needed versions (DT_VERNEED 0x{start:x}): {e}");
        let mut addr = start;
        let mut count = 0u64;
        loop {
            let need = image
                .records::<elf::Verneed<Endianness>>(addr, 1)
                .map_err(|e| what(format!("record {count}: {e}")))?[0];
            if need.vn_version.get(endian) != elf::VER_NEED_CURRENT {
                return Err(what(format!(
                    "record {count} has version {}",
                    need.vn_version.get(endian)
                )));
            }
            strtab
                .get(u64::from(need.vn_file.get(endian)))
                .map_err(|e| what(format!("record {count}: its file name: {e}")))?;
            let mut aux = addr.saturating_add(u64::from(need.vn_aux.get(endian)));
            for k in 0.. {
                step(&what)?;
                let entry = image
                    .records::<elf::Vernaux<Endianness>>(aux, 1)
                    .map_err(|e| what(format!("record {count}, version {k}: {e}")))?[0];
                strtab
                    .get(u64::from(entry.vna_name.get(endian)))
                    .map_err(|e| what(format!("record {count}, version {k}: its name: {e}")))?;
                highest = highest.max(entry.vna_other.get(endian) & elf::VERSYM_VERSION);
                match entry.vna_next.get(endian) {
                    0 => break,
                    next => aux = aux.saturating_add(u64::from(next)),
                }
            }
            count += 1;
            step(&what)?;
            match need.vn_next.get(endian) {
                0 => break,
                next => addr = addr.saturating_add(u64::from(next)),
            }
        }
        if let Some(expected) = dynamic.get(elf::DT_VERNEEDNUM)
            && expected != count
        {
            return Err(what(format!(
                "{count} records, and DT_VERNEEDNUM says {expected}"
            )));
        }
    }
    if let Some(start) = dynamic.get(elf::DT_VERDEF) {
        let what = |e: String| format!("the defined versions (DT_VERDEF 0x{start:x}): {e}");
        let mut addr = start;
        let mut count = 0u64;
        loop {
            let def = image
                .records::<elf::Verdef<Endianness>>(addr, 1)
                .map_err(|e| what(format!("record {count}: {e}")))?[0];
            if def.vd_version.get(endian) != elf::VER_DEF_CURRENT {
                return Err(what(format!(
                    "record {count} has version {}",
                    def.vd_version.get(endian)
                )));
            }
            let aux = image
                .records::<elf::Verdaux<Endianness>>(
                    addr.saturating_add(u64::from(def.vd_aux.get(endian))),
                    1,
                )
                .map_err(|e| what(format!("record {count}: its name: {e}")))?[0];
            strtab
                .get(u64::from(aux.vda_name.get(endian)))
                .map_err(|e| what(format!("record {count}: its name: {e}")))?;
            highest = highest.max(def.vd_ndx.get(endian) & elf::VERSYM_VERSION);
            count += 1;
            step(&what)?;
            match def.vd_next.get(endian) {
                0 => break,
                next => addr = addr.saturating_add(u64::from(next)),
            }
        }
        if let Some(expected) = dynamic.get(elf::DT_VERDEFNUM)
            && expected != count
        {
            return Err(what(format!(
                "{count} records, and DT_VERDEFNUM says {expected}"
            )));
        }
    }
    Ok(highest)
}
