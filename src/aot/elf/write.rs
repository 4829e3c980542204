//! Laying out the shared library and writing it with `object`'s ELF writer.
//!
//! The file is written in address order, and each segment's addresses follow its file
//! offsets at a distance that is a multiple of the maximum page size (so the file has no
//! padding between segments, and each segment starts on a fresh page in memory).

use cranelift_object::object::Endianness;
use cranelift_object::object::elf;
use cranelift_object::object::write::elf::{
    FileHeader, ProgramHeader, SectionHeader, SectionIndex, Sym, Writer,
};

use super::eh_frame_hdr;
use super::input::{Input, Place};
use super::out::Out;
use super::resolve::{self, Addresses};
use super::settings::Settings;
use crate::target::Arch;

/// Small pages: the `PT_GNU_RELRO` region ends on one.
const PAGE: u64 = 0x1000;

/// The largest page size the library must load with (`p_align` of the segments).
fn max_page(arch: Arch) -> u64 {
    match arch {
        Arch::X86_64 => 0x1000,
        Arch::Aarch64 => 0x1_0000,
    }
}

/// A segment's file range and its distance to its addresses.
#[derive(Clone, Copy, Default)]
struct Segment {
    offset: u64,
    end: u64,
    bias: u64,
}

impl Segment {
    /// The segment that starts at `offset`, on the first fresh page after `previous`.
    fn after(previous: &Segment, offset: u64, page: u64) -> Segment {
        let start = (previous.end + previous.bias).next_multiple_of(page) + offset % page;
        Segment {
            offset,
            end: offset,
            bias: start - offset,
        }
    }

    fn addr(&self, offset: u64) -> u64 {
        offset + self.bias
    }
}

/// Lays out, relocates and writes the library.
pub(super) fn write(input: Input, settings: &Settings) -> Result<Vec<u8>, String> {
    let arch = input.arch;
    let page = max_page(arch);
    let tables = resolve::tables(&input)?;
    let names: Vec<String> = tables
        .dynsyms
        .iter()
        .map(|&s| input.symbols[s].name.clone())
        .collect();
    let eh_frame_len = input.contents(Out::EhFrame).bytes.len();
    let fdes = if eh_frame_len > 0 {
        Some(eh_frame_hdr::count(&input.contents(Out::EhFrame).bytes)?)
    } else {
        None
    };
    let lens = Out::ALL.map(|out| input.contents(out).bytes.len() as u64);
    let aligns = Out::ALL.map(|out| input.contents(out).align.max(1) as usize);
    let len = |out: Out| lens[out as usize];
    let align = |out: Out| aligns[out as usize];

    // The static symbol table: named local symbols, then the global ones. safecall's own local
    // data objects (`__safecall_*`: the messages' strings and tables, a hundred in a typical
    // module) are left out, as `ld --discard-locals` leaves out temporary labels: nothing
    // looks them up (the local TVM-FFI symbols of a system library, which `safecall inspect`
    // reads, stay), and each costs a string-table entry to write.
    let internal_data = |s: &super::input::Symbol| {
        s.kind == elf::STT_OBJECT
            && s.binding == elf::STB_LOCAL
            && s.name.starts_with(crate::lower::INTERNAL_PREFIX)
    };
    let listed = |s: &&super::input::Symbol| {
        !s.name.is_empty()
            && !matches!(s.place, Place::Unplaced(_))
            && !matches!(s.kind, elf::STT_SECTION | elf::STT_FILE)
            && !internal_data(s)
    };
    let mut symtab: Vec<usize> = (0..input.symbols.len())
        .filter(|&i| listed(&&input.symbols[i]))
        .collect();
    symtab.sort_by_key(|&i| input.symbols[i].binding != elf::STB_LOCAL);
    let num_local = 1 + symtab
        .iter()
        .filter(|&&i| input.symbols[i].binding == elf::STB_LOCAL)
        .count() as u32;
    let symtab_names: Vec<String> = symtab
        .iter()
        .map(|&i| input.symbols[i].name.clone())
        .collect();

    let mut buffer = Vec::new();
    let mut w = Writer::new(Endianness::Little, true, &mut buffer);

    // Names and dynamic strings.
    let name_ids: Vec<_> = names
        .iter()
        .map(|n| w.add_dynamic_string(n.as_bytes()))
        .collect();
    let soname = settings
        .soname
        .as_ref()
        .map(|s| w.add_dynamic_string(s.as_bytes()));
    let imported = &names[..tables.imports];
    let as_needed = settings
        .as_needed
        .iter()
        .filter(|(_, symbols)| symbols.iter().any(|s| imported.contains(s)))
        .map(|(library, _)| library);
    let needed: Vec<_> = settings
        .needed
        .iter()
        .chain(as_needed)
        .map(|s| w.add_dynamic_string(s.as_bytes()))
        .collect();
    let runpath = settings
        .runpath
        .as_ref()
        .map(|s| w.add_dynamic_string(s.as_bytes()));
    w.require_dynstr();

    // Section indices, in header order.
    w.reserve_null_section_index();
    w.reserve_gnu_hash_section_index();
    let dynsym_index = w.reserve_dynsym_section_index();
    let dynstr_index = w.reserve_dynstr_section_index();
    let section = |w: &mut Writer<'_>, name: &'static [u8], present: bool| {
        present.then(|| (w.add_section_name(name), w.reserve_section_index()))
    };
    let rela_sec = section(&mut w, b".rela.dyn", true);
    let rodata_sec = section(&mut w, b".rodata", len(Out::Rodata) > 0);
    let eh_sec = section(&mut w, b".eh_frame", fdes.is_some());
    let hdr_sec = section(&mut w, b".eh_frame_hdr", fdes.is_some());
    let text_sec = section(&mut w, b".text", true);
    let init_sec = section(&mut w, b".init_array", len(Out::InitArray) > 0);
    w.reserve_dynamic_section_index();
    let got_sec = section(&mut w, b".got", !tables.got.is_empty());
    let data_sec = section(&mut w, b".data", len(Out::Data) > 0);
    let bss_sec = section(&mut w, b".bss", len(Out::Bss) > 0);
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();
    w.reserve_shstrtab_section_index();
    let section_of = |out: Out| {
        let sec = match out {
            Out::Rodata => rodata_sec,
            Out::EhFrame => eh_sec,
            Out::Text => text_sec,
            Out::InitArray => init_sec,
            Out::Data => data_sec,
            Out::Bss => bss_sec,
        };
        sec.map(|(_, index)| index)
    };
    let symtab_ids: Vec<_> = symtab_names
        .iter()
        .map(|n| w.add_string(n.as_bytes()))
        .collect();
    w.reserve_null_symbol_index();
    for &s in &symtab {
        let section = match input.symbols[s].place {
            Place::Local(out, _) => section_of(out),
            Place::Import | Place::Unplaced(_) => None,
        };
        w.reserve_symbol_index(section);
    }

    // Dynamic symbols.
    w.reserve_null_dynamic_symbol_index();
    for _ in &names {
        w.reserve_dynamic_symbol_index();
    }

    // The dynamic section's entries (values filled in once addresses are known).
    let mut dynamic_count = 10 + needed.len() + 2; // + DT_FLAGS, DT_FLAGS_1
    dynamic_count += usize::from(soname.is_some()) + usize::from(runpath.is_some());
    dynamic_count += if len(Out::InitArray) > 0 { 2 } else { 0 };

    // File layout, in address order.
    let program_headers = 6 + u32::from(fdes.is_some());
    w.reserve_file_header();
    w.reserve_program_headers(program_headers);
    let hashed = (names.len() - tables.imports) as u32;
    let hash_buckets = resolve::gnu_hash_buckets(hashed as usize);
    let hash_off = w.reserve_gnu_hash(1, hash_buckets, hashed) as u64;
    let dynsym_off = w.reserve_dynsym() as u64;
    let dynstr_off = w.reserve_dynstr() as u64;
    let rela_off = w.reserve_relocations(tables.dynamic_relocs, true) as u64;
    let rodata_off = w.reserve(len(Out::Rodata) as usize, align(Out::Rodata)) as u64;
    let eh_off = w.reserve(eh_frame_len + 4, align(Out::EhFrame).max(4)) as u64;
    let hdr_len = fdes.map_or(0, eh_frame_hdr::size);
    let hdr_off = w.reserve(hdr_len, 4) as u64;
    let read_only = Segment {
        offset: 0,
        end: w.reserved_len() as u64,
        bias: 0,
    };

    let text_off = w.reserve(len(Out::Text) as usize, align(Out::Text).max(16)) as u64;
    let stubs_off = w.reserve(
        tables.stubs.len() * super::relocs::STUB_SIZE as usize,
        super::relocs::STUB_SIZE as usize,
    ) as u64;
    let mut code = Segment::after(&read_only, text_off, page);
    code.end = w.reserved_len() as u64;

    let init_off = w.reserve(len(Out::InitArray) as usize, align(Out::InitArray).max(8)) as u64;
    let mut data = Segment::after(&code, init_off, page);
    let dynamic_off = w.reserve_dynamic(dynamic_count) as u64;
    let got_off = w.reserve(8 * tables.got.len(), 8) as u64;
    let relro_end = w.reserved_len() as u64;
    let has_data = len(Out::Data) > 0 || len(Out::Bss) > 0;
    // The writable data starts on a fresh small page, so that PT_GNU_RELRO can end there.
    let data_align = if has_data {
        align(Out::Data).max(PAGE as usize)
    } else {
        1
    };
    let data_off = w.reserve(len(Out::Data) as usize, data_align) as u64;
    data.end = w.reserved_len() as u64;
    let bss_addr = data.addr(data.end).next_multiple_of(align(Out::Bss) as u64);
    let data_mem_end = bss_addr + len(Out::Bss);

    w.reserve_symtab();
    w.reserve_strtab();
    w.reserve_shstrtab();
    w.reserve_section_headers();

    let addresses = Addresses {
        out: [
            read_only.addr(rodata_off),
            read_only.addr(eh_off),
            code.addr(text_off),
            data.addr(init_off),
            data.addr(data_off),
            bss_addr,
        ],
        stubs: code.addr(stubs_off),
        got: data.addr(got_off),
    };
    let symbol = |s: usize, name| {
        let symbol = &input.symbols[s];
        let (section, value) = match symbol.place {
            Place::Local(out, offset) => (section_of(out), addresses.out[out as usize] + offset),
            Place::Import | Place::Unplaced(_) => (None, 0),
        };
        Sym {
            name: Some(name),
            section,
            st_info: (symbol.binding << 4) | (symbol.kind & 0xf),
            st_other: symbol.other,
            st_shndx: elf::SHN_UNDEF,
            st_value: value,
            st_size: if section.is_some() { symbol.size } else { 0 },
        }
    };
    let symtab_syms: Vec<Sym> = symtab
        .iter()
        .zip(&symtab_ids)
        .map(|(&s, &name)| symbol(s, name))
        .collect();
    let dynsyms: Vec<Sym> = tables
        .dynsyms
        .iter()
        .zip(&name_ids)
        .map(|(&s, &name)| Sym {
            st_other: elf::STV_DEFAULT,
            ..symbol(s, name)
        })
        .collect();
    let resolved = resolve::apply(input, &tables, &addresses)?;
    let eh_frame_hdr = match fdes {
        Some(_) => eh_frame_hdr::build(
            &resolved.contents[Out::EhFrame as usize],
            addresses.out[Out::EhFrame as usize],
            read_only.addr(hdr_off),
        )?,
        None => Vec::new(),
    };

    // The file.
    let machine = match arch {
        Arch::X86_64 => elf::EM_X86_64,
        Arch::Aarch64 => elf::EM_AARCH64,
    };
    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_DYN,
        e_machine: machine,
        e_entry: 0,
        e_flags: 0,
    })
    .map_err(|e| format!("writing the ELF header: {e}"))?;
    w.write_align_program_headers();
    let load = |s: &Segment, flags: u32, mem_end: u64| ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: flags,
        p_offset: s.offset,
        p_vaddr: s.addr(s.offset),
        p_paddr: s.addr(s.offset),
        p_filesz: s.end - s.offset,
        p_memsz: mem_end - s.addr(s.offset),
        p_align: page,
    };
    w.write_program_header(&load(&read_only, elf::PF_R, read_only.addr(read_only.end)));
    w.write_program_header(&load(&code, elf::PF_R | elf::PF_X, code.addr(code.end)));
    w.write_program_header(&load(&data, elf::PF_R | elf::PF_W, data_mem_end));
    let dynamic_size = (dynamic_count * 16) as u64;
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_DYNAMIC,
        p_flags: elf::PF_R | elf::PF_W,
        p_offset: dynamic_off,
        p_vaddr: data.addr(dynamic_off),
        p_paddr: data.addr(dynamic_off),
        p_filesz: dynamic_size,
        p_memsz: dynamic_size,
        p_align: 8,
    });
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_GNU_RELRO,
        p_flags: elf::PF_R,
        p_offset: init_off,
        p_vaddr: data.addr(init_off),
        p_paddr: data.addr(init_off),
        p_filesz: relro_end - init_off,
        p_memsz: relro_end - init_off,
        p_align: 1,
    });
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_GNU_STACK,
        p_flags: elf::PF_R | elf::PF_W,
        p_offset: 0,
        p_vaddr: 0,
        p_paddr: 0,
        p_filesz: 0,
        p_memsz: 0,
        p_align: 16,
    });
    if fdes.is_some() {
        w.write_program_header(&ProgramHeader {
            p_type: elf::PT_GNU_EH_FRAME,
            p_flags: elf::PF_R,
            p_offset: hdr_off,
            p_vaddr: read_only.addr(hdr_off),
            p_paddr: read_only.addr(hdr_off),
            p_filesz: hdr_len as u64,
            p_memsz: hdr_len as u64,
            p_align: 4,
        });
    }

    let imports = tables.imports;
    w.write_gnu_hash(1 + imports as u32, 6, 1, hash_buckets, hashed, |i| {
        elf::gnu_hash(names[imports + i as usize].as_bytes())
    });
    w.write_null_dynamic_symbol();
    for sym in &dynsyms {
        w.write_dynamic_symbol(sym);
    }
    w.write_dynstr();
    w.write_align_relocation();
    for rel in &resolved.dynamic {
        w.write_relocation(true, rel);
    }
    let blob = |w: &mut Writer<'_>, offset: u64, bytes: &[u8]| {
        w.pad_until(offset as usize);
        w.write(bytes);
    };
    blob(&mut w, rodata_off, &resolved.contents[Out::Rodata as usize]);
    blob(&mut w, eh_off, &resolved.contents[Out::EhFrame as usize]);
    blob(&mut w, eh_off + eh_frame_len as u64, &[0; 4]);
    blob(&mut w, hdr_off, &eh_frame_hdr);
    blob(&mut w, text_off, &resolved.contents[Out::Text as usize]);
    blob(&mut w, stubs_off, &resolved.stubs);
    blob(
        &mut w,
        init_off,
        &resolved.contents[Out::InitArray as usize],
    );

    w.write_align_dynamic();
    let dynstr_len = w.dynstr_len() as u64;
    let relative = resolved.dynamic.iter().filter(|r| r.r_sym == 0).count() as u64;
    let mut entries = vec![
        (elf::DT_GNU_HASH, read_only.addr(hash_off)),
        (elf::DT_STRTAB, read_only.addr(dynstr_off)),
        (elf::DT_SYMTAB, read_only.addr(dynsym_off)),
        (elf::DT_STRSZ, dynstr_len),
        (elf::DT_SYMENT, 24),
        (elf::DT_RELA, read_only.addr(rela_off)),
        (elf::DT_RELASZ, 24 * tables.dynamic_relocs as u64),
        (elf::DT_RELAENT, 24),
        (elf::DT_RELACOUNT, relative),
    ];
    if len(Out::InitArray) > 0 {
        entries.push((elf::DT_INIT_ARRAY, data.addr(init_off)));
        entries.push((elf::DT_INIT_ARRAYSZ, len(Out::InitArray)));
    }
    entries.push((elf::DT_FLAGS, u64::from(elf::DF_BIND_NOW)));
    entries.push((elf::DT_FLAGS_1, u64::from(elf::DF_1_NOW)));
    for id in needed {
        w.write_dynamic_string(elf::DT_NEEDED, id)
            .map_err(|e| format!("writing .dynamic: {e}"))?;
    }
    if let Some(id) = soname {
        w.write_dynamic_string(elf::DT_SONAME, id)
            .map_err(|e| format!("writing .dynamic: {e}"))?;
    }
    if let Some(id) = runpath {
        w.write_dynamic_string(elf::DT_RUNPATH, id)
            .map_err(|e| format!("writing .dynamic: {e}"))?;
    }
    entries.push((elf::DT_NULL, 0));
    for (tag, value) in entries {
        w.write_dynamic(tag, value)
            .map_err(|e| format!("writing .dynamic: {e}"))?;
    }
    blob(&mut w, got_off, &resolved.got);
    blob(&mut w, data_off, &resolved.contents[Out::Data as usize]);
    w.write_null_symbol();
    for sym in &symtab_syms {
        w.write_symbol(sym);
    }
    w.write_strtab();

    w.write_shstrtab();
    w.write_null_section_header();
    w.write_gnu_hash_section_header(read_only.addr(hash_off));
    w.write_dynsym_section_header(read_only.addr(dynsym_off), 1);
    w.write_dynstr_section_header(read_only.addr(dynstr_off));
    let header = |w: &mut Writer<'_>, sec: Option<(_, SectionIndex)>, h: SectionHeader| {
        if let Some((name, _)) = sec {
            w.write_section_header(&SectionHeader {
                name: Some(name),
                ..h
            });
        }
    };
    let plain =
        |sh_type: u32, flags: u32, addr: u64, offset: u64, size: u64, align: u64| SectionHeader {
            name: None,
            sh_type,
            sh_flags: u64::from(flags),
            sh_addr: addr,
            sh_offset: offset,
            sh_size: size,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: align,
            sh_entsize: 0,
        };
    let alloc = elf::SHF_ALLOC;
    header(
        &mut w,
        rela_sec,
        SectionHeader {
            sh_link: dynsym_index.0,
            sh_entsize: 24,
            ..plain(
                elf::SHT_RELA,
                alloc,
                read_only.addr(rela_off),
                rela_off,
                24 * tables.dynamic_relocs as u64,
                8,
            )
        },
    );
    let o = |out: Out| addresses.out[out as usize];
    header(
        &mut w,
        rodata_sec,
        plain(
            elf::SHT_PROGBITS,
            alloc,
            o(Out::Rodata),
            rodata_off,
            len(Out::Rodata),
            align(Out::Rodata) as u64,
        ),
    );
    header(
        &mut w,
        eh_sec,
        plain(
            elf::SHT_PROGBITS,
            alloc,
            o(Out::EhFrame),
            eh_off,
            eh_frame_len as u64 + 4,
            8,
        ),
    );
    header(
        &mut w,
        hdr_sec,
        plain(
            elf::SHT_PROGBITS,
            alloc,
            read_only.addr(hdr_off),
            hdr_off,
            hdr_len as u64,
            4,
        ),
    );
    header(
        &mut w,
        text_sec,
        plain(
            elf::SHT_PROGBITS,
            alloc | elf::SHF_EXECINSTR,
            o(Out::Text),
            text_off,
            code.end - text_off,
            16,
        ),
    );
    let write_flags = alloc | elf::SHF_WRITE;
    header(
        &mut w,
        init_sec,
        SectionHeader {
            sh_entsize: 8,
            ..plain(
                elf::SHT_INIT_ARRAY,
                write_flags,
                o(Out::InitArray),
                init_off,
                len(Out::InitArray),
                8,
            )
        },
    );
    w.write_dynamic_section_header(data.addr(dynamic_off));
    header(
        &mut w,
        got_sec,
        SectionHeader {
            sh_entsize: 8,
            ..plain(
                elf::SHT_PROGBITS,
                write_flags,
                addresses.got,
                got_off,
                8 * tables.got.len() as u64,
                8,
            )
        },
    );
    header(
        &mut w,
        data_sec,
        plain(
            elf::SHT_PROGBITS,
            write_flags,
            o(Out::Data),
            data_off,
            len(Out::Data),
            align(Out::Data) as u64,
        ),
    );
    header(
        &mut w,
        bss_sec,
        plain(
            elf::SHT_NOBITS,
            write_flags,
            bss_addr,
            data.end,
            len(Out::Bss),
            align(Out::Bss) as u64,
        ),
    );
    w.write_symtab_section_header(num_local);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    let _ = dynstr_index;
    debug_assert_eq!(w.reserved_len(), w.len());
    drop(w);
    Ok(buffer)
}
