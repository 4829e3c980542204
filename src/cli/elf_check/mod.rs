//! Consistency checks of an ELF file before anything loads it.
//!
//! The dynamic loader (`dlopen`) trusts what it maps: the program headers, the dynamic section
//! and everything it points at (string and symbol tables, hash tables, version tables,
//! relocations, initializer arrays). A damaged value there makes the loader read or write out
//! of bounds, divide by zero, or jump to a wrong address, inside the process that loads the
//! file. These checks read the same structures from the file, as the loader would find them
//! once mapped, and name the first part that is inconsistent; a file that fails them is never
//! loaded. They cannot prove that a library's code is sound (nothing can, short of running
//! it), which is why what runs its code runs in a child process ([`crate::sandbox`]).

use cranelift_object::object::elf;
use cranelift_object::object::read::ReadRef;
use cranelift_object::object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use cranelift_object::object::{Endianness, Object, Pod};

mod dynamic;
mod relocations;

use dynamic::Dynamic;

/// A file as read by `object`.
pub type Elf<'data> = ElfFile64<'data, Endianness, &'data [u8]>;

/// What is wrong with a file: a sentence naming the part.
pub type Damage = String;

/// The ELF machine of this process (what `dlopen` accepts).
#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: Option<u16> = Some(elf::EM_X86_64);
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: Option<u16> = Some(elf::EM_AARCH64);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_MACHINE: Option<u16> = None;

/// The most entries followed in a linked list of the file (version records), and the most
/// relocations: far above what a real library has, and a bound on the work of a check.
const MAX_CHAIN: usize = 1 << 20;

/// Whether a file could be loaded into this process, after [`check`].
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Consistent, and for this machine: it may be loaded.
    Loadable,
    /// Consistent, but not something this process can load (an object file, another
    /// architecture): the reason.
    NotLoadable(String),
}

/// [`check`] on the bytes of a file: a file that is not a 64-bit ELF file is not loadable
/// here (and another reader says what it is).
pub fn check_bytes(bytes: &[u8]) -> Result<Verdict, Damage> {
    if bytes.get(..5) != Some(&[0x7f, b'E', b'L', b'F', elf::ELFCLASS64][..]) {
        return Ok(Verdict::NotLoadable("not a 64-bit ELF file".to_owned()));
    }
    let file = Elf::parse(bytes).map_err(|e| format!("its ELF headers: {e}"))?;
    check(&file)
}

/// Checks the sections of any ELF file, then, for a shared library of this machine, what the
/// dynamic loader reads.
pub fn check(file: &Elf<'_>) -> Result<Verdict, Damage> {
    let endian = file.endian();
    let header = file.elf_header();
    sections(file)?;
    if header.e_type(endian) != elf::ET_DYN {
        return Ok(Verdict::NotLoadable(
            "not a shared library: only read from the file".to_owned(),
        ));
    }
    if Some(header.e_machine(endian)) != HOST_MACHINE {
        return Ok(Verdict::NotLoadable(format!(
            "built for {}, not for this machine",
            format!("{:?}", file.architecture()).to_lowercase()
        )));
    }
    if endian != Endianness::default() {
        return Ok(Verdict::NotLoadable(
            "its byte order is not this machine's".to_owned(),
        ));
    }
    if usize::from(header.e_phentsize(endian)) != size_of::<elf::ProgramHeader64<Endianness>>() {
        return Err(format!(
            "the ELF header gives program headers of {} bytes (64-bit ELF has {})",
            header.e_phentsize(endian),
            size_of::<elf::ProgramHeader64<Endianness>>()
        ));
    }
    let image = Image::new(file)?;
    let dynamic = Dynamic::read(&image)?;
    dynamic.check(&image)
}

/// The section headers: each section's bytes lie in the file, its links name sections, and
/// in a shared library each allocated section lies in a loaded segment at its file offset.
fn sections(file: &Elf<'_>) -> Result<(), Damage> {
    let endian = file.endian();
    let data = file.data();
    let table = file.elf_section_table();
    let count = table.len();
    let loads: Vec<Segment> = file
        .elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| Segment::of(ph, endian))
        .collect();
    for (index, section) in table.iter().enumerate().skip(1) {
        let name = table
            .section_name(endian, section)
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_else(|_| format!("#{index}"));
        let what = || format!("section {index} ({name})");
        let kind = section.sh_type(endian);
        let (offset, size) = (section.sh_offset(endian), section.sh_size(endian));
        if kind != elf::SHT_NOBITS
            && kind != elf::SHT_NULL
            && offset
                .checked_add(size)
                .is_none_or(|end| end > data.len() as u64)
        {
            return Err(format!(
                "{}: its bytes 0x{offset:x}..+0x{size:x} run past the end of the file (0x{:x} bytes)",
                what(),
                data.len()
            ));
        }
        if section.sh_link(endian) as usize >= count {
            return Err(format!(
                "{}: it links to section {}, and the file has {count}",
                what(),
                section.sh_link(endian)
            ));
        }
        let entsize = section.sh_entsize(endian);
        let expected = match kind {
            elf::SHT_SYMTAB | elf::SHT_DYNSYM => size_of::<elf::Sym64<Endianness>>(),
            elf::SHT_RELA => size_of::<elf::Rela64<Endianness>>(),
            _ => 0,
        } as u64;
        if expected != 0 && entsize != expected {
            return Err(format!(
                "{}: entries of {entsize} bytes (64-bit ELF has {expected})",
                what()
            ));
        }
        let flags = section.sh_flags(endian);
        let addr = section.sh_addr(endian);
        if file.elf_header().e_type(endian) == elf::ET_DYN
            && flags & u64::from(elf::SHF_ALLOC) != 0
            && flags & u64::from(elf::SHF_TLS) == 0
            && size != 0
        {
            let Some(seg) = loads.iter().find(|s| s.contains(addr, size)) else {
                return Err(format!(
                    "{}: its addresses 0x{addr:x}..+0x{size:x} are in no loaded segment",
                    what()
                ));
            };
            if kind != elf::SHT_NOBITS && addr + size > seg.vaddr + seg.filesz {
                return Err(format!(
                    "{}: its addresses 0x{addr:x}..+0x{size:x} run past the bytes its segment \
                     has in the file (they would be zeros once loaded)",
                    what()
                ));
            }
            if kind != elf::SHT_NOBITS && offset.wrapping_sub(seg.offset) != addr - seg.vaddr {
                return Err(format!(
                    "{}: its file offset 0x{offset:x} does not match its address 0x{addr:x} \
                     in the segment that loads it",
                    what()
                ));
            }
        }
    }
    Ok(())
}

/// A `PT_LOAD` segment.
#[derive(Clone, Copy, Debug)]
struct Segment {
    vaddr: u64,
    memsz: u64,
    offset: u64,
    filesz: u64,
    flags: u32,
}

impl Segment {
    fn of(ph: &elf::ProgramHeader64<Endianness>, endian: Endianness) -> Segment {
        Segment {
            vaddr: ph.p_vaddr(endian),
            memsz: ph.p_memsz(endian),
            offset: ph.p_offset(endian),
            filesz: ph.p_filesz(endian),
            flags: ph.p_flags(endian),
        }
    }

    /// Whether `addr..addr+len` lies in its memory (`len` 0 at its end included).
    fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.vaddr
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.vaddr.saturating_add(self.memsz))
    }

    fn executable(&self) -> bool {
        self.flags & elf::PF_X != 0
    }

    fn writable(&self) -> bool {
        self.flags & elf::PF_W != 0
    }
}

/// The memory image the loader makes: the file's `PT_LOAD` segments at their addresses.
struct Image<'data> {
    data: &'data [u8],
    loads: Vec<Segment>,
    /// The dynamic section's address and size.
    dynamic: (u64, u64),
}

impl<'data> Image<'data> {
    /// Checks the program headers and keeps the loaded segments.
    fn new(file: &Elf<'data>) -> Result<Image<'data>, Damage> {
        let endian = file.endian();
        let data = file.data();
        let headers = file.elf_program_headers();
        let mut loads: Vec<Segment> = Vec::new();
        for (index, ph) in headers.iter().enumerate() {
            let kind = ph.p_type(endian);
            let seg = Segment::of(ph, endian);
            let what = || format!("program header {index} ({})", segment_kind(kind));
            let align = ph.p_align(endian);
            if matches!(
                kind,
                elf::PT_LOAD | elf::PT_TLS | elf::PT_DYNAMIC | elf::PT_NOTE
            ) && seg
                .offset
                .checked_add(seg.filesz)
                .is_none_or(|end| end > data.len() as u64)
            {
                return Err(format!(
                    "{}: its bytes 0x{:x}..+0x{:x} run past the end of the file (0x{:x} bytes)",
                    what(),
                    seg.offset,
                    seg.filesz,
                    data.len()
                ));
            }
            if matches!(kind, elf::PT_LOAD | elf::PT_TLS) {
                if seg.filesz > seg.memsz {
                    return Err(format!(
                        "{}: 0x{:x} bytes in the file but 0x{:x} in memory",
                        what(),
                        seg.filesz,
                        seg.memsz
                    ));
                }
                if align > 1 && !align.is_power_of_two() {
                    return Err(format!(
                        "{}: an alignment of 0x{align:x}, not a power of two",
                        what()
                    ));
                }
                if seg.vaddr.checked_add(seg.memsz).is_none() {
                    return Err(format!("{}: its addresses overflow", what()));
                }
            }
            if kind == elf::PT_LOAD {
                if align > 1 && seg.vaddr % align != seg.offset % align {
                    return Err(format!(
                        "{}: address 0x{:x} and file offset 0x{:x} disagree modulo its \
                         alignment 0x{align:x}",
                        what(),
                        seg.vaddr,
                        seg.offset
                    ));
                }
                if let Some(last) = loads.last()
                    && seg.vaddr < last.vaddr + last.memsz
                {
                    return Err(format!(
                        "{}: at 0x{:x}, below the end of the segment before it (0x{:x})",
                        what(),
                        seg.vaddr,
                        last.vaddr + last.memsz
                    ));
                }
                loads.push(seg);
            }
        }
        if loads.is_empty() {
            return Err("no loadable segment (PT_LOAD)".to_owned());
        }
        let mut image = Image {
            data,
            loads,
            dynamic: (0, 0),
        };
        let mut dynamic = 0;
        for (index, ph) in headers.iter().enumerate() {
            let kind = ph.p_type(endian);
            let seg = Segment::of(ph, endian);
            let what = || format!("program header {index} ({})", segment_kind(kind));
            match kind {
                elf::PT_DYNAMIC | elf::PT_NOTE | elf::PT_GNU_PROPERTY | elf::PT_GNU_EH_FRAME => {
                    image.bytes(seg.vaddr, seg.filesz).map_err(|e| {
                        format!("{}: at 0x{:x}..+0x{:x}, {e}", what(), seg.vaddr, seg.filesz)
                    })?;
                }
                elf::PT_TLS | elf::PT_GNU_RELRO | elf::PT_PHDR
                    if !image.loads.iter().any(|l| l.contains(seg.vaddr, seg.memsz)) =>
                {
                    return Err(format!(
                        "{}: its addresses 0x{:x}..+0x{:x} are in no loaded segment",
                        what(),
                        seg.vaddr,
                        seg.memsz
                    ));
                }
                _ => {}
            }
            if kind == elf::PT_DYNAMIC {
                dynamic += 1;
                image.dynamic = (seg.vaddr, seg.filesz);
                if image.bytes(seg.vaddr, seg.filesz).ok()
                    != data.get(seg.offset as usize..(seg.offset + seg.filesz) as usize)
                {
                    return Err(format!(
                        "{}: its file offset 0x{:x} does not match its address 0x{:x}",
                        what(),
                        seg.offset,
                        seg.vaddr
                    ));
                }
            }
            if matches!(kind, elf::PT_NOTE | elf::PT_GNU_PROPERTY)
                && let Some(mut notes) = ph
                    .notes(endian, data)
                    .map_err(|e| format!("{}: {e}", what()))?
            {
                while notes
                    .next()
                    .map_err(|e| format!("{}: {e}", what()))?
                    .is_some()
                {}
            }
        }
        match dynamic {
            0 => Err("no dynamic section (PT_DYNAMIC): not a loadable library".to_owned()),
            1 => Ok(image),
            n => Err(format!(
                "{n} dynamic sections (PT_DYNAMIC), where there is one"
            )),
        }
    }

    /// The file bytes the loader maps at `addr..addr+len`, which must come from the file (not
    /// the zero-filled rest of a segment).
    fn bytes(&self, addr: u64, len: u64) -> Result<&'data [u8], String> {
        let seg = self
            .loads
            .iter()
            .find(|s| addr >= s.vaddr && addr < s.vaddr.saturating_add(s.memsz.max(1)))
            .ok_or_else(|| "in no loaded segment".to_owned())?;
        if seg.flags & elf::PF_R == 0 {
            return Err("in a segment that is not readable".to_owned());
        }
        let at = addr - seg.vaddr;
        if at.checked_add(len).is_none_or(|end| end > seg.filesz) {
            return Err("past the bytes its segment has in the file".to_owned());
        }
        let start = seg.offset + at;
        Ok(&self.data[start as usize..(start + len) as usize])
    }

    /// The file bytes the loader maps from `addr` to the end of its segment's file part.
    fn bytes_from(&self, addr: u64) -> Result<&'data [u8], String> {
        let seg = self
            .loads
            .iter()
            .find(|s| addr >= s.vaddr && addr < s.vaddr + s.filesz)
            .ok_or_else(|| "in no loaded segment's file bytes".to_owned())?;
        self.bytes(addr, seg.filesz - (addr - seg.vaddr))
    }

    /// `count` records of type `T` at `addr`.
    fn records<T: Pod>(&self, addr: u64, count: u64) -> Result<&'data [T], String> {
        let len = count
            .checked_mul(size_of::<T>() as u64)
            .ok_or_else(|| "too many entries".to_owned())?;
        let bytes = self.bytes(addr, len)?;
        bytes
            .read_slice_at::<T>(0, count as usize)
            .map_err(|()| "misaligned".to_owned())
    }

    /// The segment whose memory holds `addr..addr+len`.
    fn segment(&self, addr: u64, len: u64) -> Option<&Segment> {
        self.loads.iter().find(|s| s.contains(addr, len))
    }

    /// Whether `addr` is in an executable segment (where code the loader calls must be).
    fn is_code(&self, addr: u64) -> bool {
        self.segment(addr, 1).is_some_and(Segment::executable)
    }
}

/// A segment type's name, for messages.
fn segment_kind(kind: u32) -> String {
    match kind {
        elf::PT_LOAD => "PT_LOAD".to_owned(),
        elf::PT_DYNAMIC => "PT_DYNAMIC".to_owned(),
        elf::PT_NOTE => "PT_NOTE".to_owned(),
        elf::PT_TLS => "PT_TLS".to_owned(),
        elf::PT_PHDR => "PT_PHDR".to_owned(),
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME".to_owned(),
        elf::PT_GNU_RELRO => "PT_GNU_RELRO".to_owned(),
        elf::PT_GNU_PROPERTY => "PT_GNU_PROPERTY".to_owned(),
        elf::PT_GNU_STACK => "PT_GNU_STACK".to_owned(),
        other => format!("type 0x{other:x}"),
    }
}
