//! The in-process linker on objects of both backends' shape, and on damaged ones: every
//! damage is an error naming what is wrong, never a panic.

use cranelift_object::object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use cranelift_object::object::{self, Endianness, Object, ObjectSection, ObjectSymbol, elf};

use super::{Settings, link};
use crate::target::{Arch, Target};

const MODULE: &str = include_str!("../../../examples/ir/add_one.scir");

const SYSTEM_LIB: &str = "module s;\nfn f(a: i64) -> i64 { return a; }\n";

fn object_for(arch: Arch, text: &str, system_lib: bool) -> Vec<u8> {
    let module = crate::ir::parse(text).expect("test IR parses");
    let mut options = crate::Options::for_target(Target::new(arch));
    if system_lib {
        options.lower.system_lib_prefix = Some("t_".to_owned());
    }
    crate::compile_object(&module, &options).expect("compiles")
}

/// The add_one module's object, for each target.
fn objects() -> Vec<(Arch, Vec<u8>)> {
    [Arch::X86_64, Arch::Aarch64]
        .into_iter()
        .map(|arch| (arch, object_for(arch, MODULE, false)))
        .collect()
}

fn dynamic(file: &ElfFile64<'_, Endianness>) -> Vec<(i64, u64)> {
    let table = file.elf_dynamic_table().expect("a dynamic table");
    table.iter().map(|d| (d.tag, d.val)).collect()
}

#[test]
fn a_module_links_into_a_shared_library_for_both_targets() {
    for (arch, object) in objects() {
        let bytes = link(&object, &Settings::default()).unwrap_or_else(|e| panic!("{arch:?}: {e}"));
        let file = ElfFile64::<Endianness>::parse(&*bytes).expect("a 64-bit ELF file");
        assert_eq!(file.kind(), object::ObjectKind::Dynamic, "{arch:?}");
        let exports: Vec<_> = file
            .dynamic_symbols()
            .filter(|s| !s.is_undefined())
            .filter_map(|s| s.name().ok())
            .collect();
        for name in ["__tvm_ffi_add_one", "__tvm_ffi__metadata_add_one"] {
            assert!(exports.contains(&name), "{arch:?}: {exports:?}");
        }
        let imports: Vec<_> = file
            .dynamic_symbols()
            .filter(|s| s.is_undefined())
            .filter_map(|s| s.name().ok())
            .collect();
        assert!(
            imports.contains(&"TVMFFIErrorSetRaisedFromCStrParts"),
            "{arch:?}: {imports:?}"
        );
        let tags = dynamic(&file);
        let flags = tags.iter().find(|t| t.0 == elf::DT_FLAGS);
        assert_eq!(
            flags.map(|t| t.1),
            Some(u64::from(elf::DF_BIND_NOW)),
            "{arch:?}"
        );
        assert!(!tags.iter().any(|t| t.0 == elf::DT_TEXTREL), "{arch:?}");
        let endian = file.endian();
        let segments: Vec<u32> = file
            .elf_program_headers()
            .iter()
            .map(|p| p.p_type(endian))
            .collect();
        for kind in [elf::PT_GNU_EH_FRAME, elf::PT_GNU_STACK, elf::PT_DYNAMIC] {
            assert!(segments.contains(&kind), "{arch:?}: segment {kind:#x}");
        }
        // No segment is both writable and executable.
        for p in file.elf_program_headers() {
            let f = p.p_flags(endian);
            assert!(f & elf::PF_W == 0 || f & elf::PF_X == 0, "{arch:?}");
        }
        // One FDE per function, sorted by address, in the header's table.
        let hdr = file
            .section_by_name(".eh_frame_hdr")
            .expect(".eh_frame_hdr");
        let data = hdr.data().unwrap();
        let count = u32::from_le_bytes(data[8..12].try_into().unwrap());
        assert!(count >= 2, "{arch:?}: {count} FDEs");
        let starts: Vec<i32> = (0..count as usize)
            .map(|i| i32::from_le_bytes(data[12 + 8 * i..16 + 8 * i].try_into().unwrap()))
            .collect();
        assert!(
            starts.windows(2).all(|w| w[0] < w[1]),
            "{arch:?}: {starts:?}"
        );
        assert_eq!(file.elf_header().e_type(endian), elf::ET_DYN);
    }
}

#[test]
fn a_system_library_has_its_constructor_in_init_array() {
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let object = object_for(arch, SYSTEM_LIB, true);
        let bytes = link(&object, &Settings::default()).unwrap_or_else(|e| panic!("{arch:?}: {e}"));
        let file = ElfFile64::<Endianness>::parse(&*bytes).unwrap();
        let tags = dynamic(&file);
        let init = tags.iter().find(|t| t.0 == elf::DT_INIT_ARRAYSZ);
        assert_eq!(init.map(|t| t.1), Some(8), "{arch:?}");
        // The constructor's pointer is a base-relative relocation to code.
        let section = file.section_by_name(".init_array").unwrap();
        let text = file.section_by_name(".text").unwrap();
        let target = u64::from_le_bytes(section.data().unwrap().try_into().unwrap());
        assert!(
            (text.address()..text.address() + text.size()).contains(&target),
            "{arch:?}: constructor at {target:#x}"
        );
    }
}

#[test]
fn the_soname_and_needed_libraries_are_recorded() {
    let (_, object) = objects().remove(0);
    let settings = Settings {
        soname: Some("libm.so".to_owned()),
        needed: vec!["libsafecall_runtime.so".to_owned()],
        runpath: Some("/opt/lib".to_owned()),
        as_needed: vec![("libnever.so".to_owned(), vec!["no_such_import".to_owned()])],
    };
    let bytes = link(&object, &settings).unwrap();
    let file = ElfFile64::<Endianness>::parse(&*bytes).unwrap();
    let table = file.elf_dynamic_table().unwrap();
    let mut strings = Vec::new();
    for d in table.iter() {
        if let Ok(s) = table.string(d) {
            strings.push((d.tag, String::from_utf8_lossy(s).into_owned()));
        }
    }
    assert!(strings.contains(&(elf::DT_SONAME, "libm.so".into())));
    assert!(strings.contains(&(elf::DT_NEEDED, "libsafecall_runtime.so".into())));
    assert!(strings.contains(&(elf::DT_RUNPATH, "/opt/lib".into())));
    assert!(!strings.iter().any(|s| s.1 == "libnever.so"), "{strings:?}");
}

/// The file offset of the first relocation of `.rela.text`.
fn first_text_relocation(object: &[u8]) -> usize {
    let file = object::File::parse(object).unwrap();
    let rela = file.section_by_name(".rela.text").expect(".rela.text");
    rela.file_range().unwrap().0 as usize
}

#[test]
fn an_unknown_relocation_type_is_named() {
    for (arch, mut object) in objects() {
        let at = first_text_relocation(&object) + 8;
        let info = u64::from_le_bytes(object[at..at + 8].try_into().unwrap());
        let info = (info & !0xffff_ffff) | 1000;
        object[at..at + 8].copy_from_slice(&info.to_le_bytes());
        let error = link(&object, &Settings::default()).unwrap_err();
        let arch_name = match arch {
            Arch::X86_64 => "x86-64",
            Arch::Aarch64 => "AArch64",
        };
        assert!(
            error.starts_with("section .text, offset 0x")
                && error.contains(&format!("unsupported {arch_name} relocation type 1000")),
            "{error}"
        );
    }
}

#[test]
fn a_relocation_past_its_section_is_named() {
    let (_, mut object) = objects().remove(0);
    let at = first_text_relocation(&object);
    object[at..at + 8].copy_from_slice(&0x7fff_fff0u64.to_le_bytes());
    let error = link(&object, &Settings::default()).unwrap_err();
    assert!(error.contains("reaches past the section's end"), "{error}");
}

#[test]
fn objects_that_are_not_ours_are_refused() {
    let (_, object) = objects().remove(0);
    let error = link(&object[..100], &Settings::default()).unwrap_err();
    assert!(
        error.starts_with("the object is not a valid ELF file"),
        "{error}"
    );
    let library = link(&object, &Settings::default()).unwrap();
    let error = link(&library, &Settings::default()).unwrap_err();
    assert!(
        error.starts_with("the input is not a relocatable object"),
        "{error}"
    );
    let error = link(b"hello", &Settings::default()).unwrap_err();
    assert!(
        error.starts_with("the object is not a valid ELF file"),
        "{error}"
    );
}

#[test]
fn an_object_without_code_is_refused() {
    let (_, mut object) = objects().remove(0);
    // Clear SHF_EXECINSTR of .text: its bytes become read-only data.
    let file = ElfFile64::<Endianness>::parse(&*object).unwrap();
    let index = file.section_by_name(".text").unwrap().index().0;
    let shoff = file.elf_header().e_shoff(Endianness::Little) as usize;
    let flags_at = shoff + 64 * index + 8;
    drop(file);
    object[flags_at..flags_at + 8].copy_from_slice(&u64::from(elf::SHF_ALLOC).to_le_bytes());
    let error = link(&object, &Settings::default()).unwrap_err();
    assert!(error.contains("has no code"), "{error}");
}

/// Every byte of the object replaced in turn (by a few values): the linker returns a library
/// or an error, and never panics.
#[test]
fn damaged_objects_give_errors_not_panics() {
    for (arch, object) in objects() {
        let mut errors = 0;
        for at in (0..object.len()).step_by(4) {
            for value in [0x00, 0xff, object[at] ^ 0x10] {
                let mut damaged = object.clone();
                damaged[at] = value;
                let outcome = std::panic::catch_unwind(|| link(&damaged, &Settings::default()));
                match outcome {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        assert!(!e.is_empty());
                        errors += 1;
                    }
                    Err(_) => {
                        panic!("{arch:?}: byte {at:#x} set to {value:#x}: the linker panicked")
                    }
                }
            }
        }
        assert!(errors > 0, "{arch:?}: no damage was noticed");
    }
}
